"""Named checks: the unit in which every verdict of the suite is returned and reported.

A check holds the measured ``value``, the ``bound`` it is held against, where that bound comes
from (``origin``), the verdict, and its ``kind``: "certified" (every rounding enclosed: Arb
balls or exact rational arithmetic; ``certified`` is then true), "estimate" (a floating-point
measurement, however well tested: not a proof) or "exact" (a decision on the data's exact
values, such as a refusal).  ``passed`` is computed, never set: value <= bound, both finite
(:func:`passes`).

>>> c = check("reversibility", 3e-15, 1e-12, "10 x integration error estimate")
>>> c.passed, c.certified, c.kind
(True, False, 'estimate')
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
    kind: str = "estimate"

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


KINDS = ("certified", "estimate", "exact")


def kind_of(c: dict[str, Any]) -> str:
    """The kind of a check as a dict (reports written before kinds were recorded: certified or estimate)."""
    return str(c.get("kind") or ("certified" if c["certified"] else "estimate"))


def passes(value: Any, bound: Any) -> bool:
    """value <= bound, both finite numbers (an infinite bound would be a check that cannot fail)."""
    try:
        value, bound = float(value), float(bound)
    except (TypeError, ValueError):
        return False
    return math.isfinite(value) and math.isfinite(bound) and value <= bound


def check(name: str, value: float, bound: float, origin: str, *, certified: bool = False, kind: str | None = None,
          **details: Any) -> Check:
    """A check that passes when ``value <= bound`` (:func:`passes`); its kind is "certified" when
    ``certified``, else ``kind`` (default "estimate")."""
    kind = "certified" if certified else (kind or "estimate")
    return Check(name, float(value), float(bound), origin, passes(value, bound), bool(certified), details, kind)
