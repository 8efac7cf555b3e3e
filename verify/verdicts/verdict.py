"""A verdict on a witness as a typed result: :func:`verify.verdicts.replay.certify` and
:func:`~verify.verdicts.replay.replay` return their full record as a dict (the JSON that ``verify
check --json`` prints); :class:`Verdict` holds its main fields by name and the record whole.

>>> v = Verdict.of({"verdict": "CERTIFIED", "passed": True, "certified": True, "kind": "certificate",
...                 "depth": "finite", "length": 1, "precision": "Arb balls at 30 digits", "tolerance": 1e-12,
...                 "error_upper": 0.0})
>>> v.verdict, v.passed, v.error_upper, v.existence is None
('CERTIFIED', True, 0.0, True)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """A witness's verdict.  ``verdict``: CERTIFIED, FAIL or UNDECIDED for a certificate
    (``kind`` "certificate"); WITHIN, OUTSIDE or UNDECIDED for an estimate (``kind`` "estimate",
    never a proof).  ``passed``: CERTIFIED, or WITHIN for an estimate.  ``error``:
    ``max |image - target|`` of a replay (estimates); ``error_upper``: its Arb upper bound (certificates);
    ``tolerance``: the witness's.  ``existence``: the Krawczyk-type proof that exact durations
    (a control) or step sizes (a network) exist near those written (its record), when it was
    tried.  ``reason`` says why a verdict
    is UNDECIDED.  ``record``: everything the check returned."""

    verdict: str
    passed: bool
    certified: bool
    kind: str
    depth: str
    length: int
    precision: str
    tolerance: float
    error: float = math.nan
    error_upper: float = math.nan
    reason: str | None = None
    existence: dict[str, Any] | None = field(default=None, repr=False)  # its centre and radii: long; .existence has them
    record: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def of(cls, record: dict[str, Any]) -> Verdict:
        """The verdict of a check's record (the dict of :mod:`verify.verdicts.replay`)."""
        return cls(verdict=record["verdict"], passed=bool(record["passed"]), certified=bool(record.get("certified")),
                   kind=record.get("kind", ""), depth=record.get("depth", ""), length=int(record.get("length", 0)),
                   precision=record.get("precision", ""), tolerance=float(record.get("tolerance", math.nan)),
                   error=float(record.get("error", math.nan)), error_upper=float(record.get("error_upper", math.nan)),
                   reason=record.get("reason"), existence=record.get("existence"), record=dict(record))
