"""Named checks: the unit in which every verdict of the suite is returned and reported.

A check holds the measured ``value``, the ``bound`` it is held against, where that bound comes
from (``origin``), the verdict, and whether the verdict is ``certified`` (every rounding
enclosed) or an estimate.  ``passed`` is computed, never set: value <= bound, both finite.

>>> c = check("reversibility", 3e-15, 1e-12, "10 x integration error estimate")
>>> c.passed, c.certified
(True, False)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass(frozen=True)
class Check:
    name: str
    value: float
    bound: float
    origin: str
    passed: bool
    certified: bool = False
    details: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def check(name: str, value: float, bound: float, origin: str, *, certified: bool = False, **details: Any) -> Check:
    """A check that passes when ``value <= bound``; a non-finite value or bound never passes (an
    infinite bound would be a check that cannot fail)."""
    value, bound = float(value), float(bound)
    ok = math.isfinite(value) and math.isfinite(bound) and value <= bound
    return Check(name, value, bound, origin, bool(ok), certified, details)
