"""Numbers printed in the direction that keeps a claim true.

A certified upper bound printed to three digits by rounding to nearest can understate it by
half a unit of the last digit, and then "<= 2.37e-12" is a claim the arithmetic never made.
:func:`up` and :func:`down` round a float's exact binary value towards +inf or -inf at the
given significant digits; upper bounds and values held below a bound are printed with
:func:`up`, lower bounds and the bounds a value is held against with :func:`down`.

>>> up(2.3749e-12), down(2.3749e-12), up(0.0)
('2.38e-12', '2.37e-12', '0.00e+00')
>>> up(1e-10), down(1e-10)  # the float 1e-10 lies just above 10^-10
('1.01e-10', '1.00e-10')
>>> bound(math.nextafter(1.0, 0.0)), bound(1e-10, "g")  # a strict "< 1" is held as <= the float below 1
('< 1', '<= 1e-10')
>>> up(0.0123456, 3, "g"), down(-0.0123456, 3, "g"), up(float("inf"))
('0.0124', '-0.0124', 'inf')
"""

from __future__ import annotations

import math
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal


def _directed(x: float, digits: int, style: str, rounding: str) -> str:
    x = float(x)
    if not math.isfinite(x) or x == 0:
        return f"{x:.{digits - 1}e}" if style == "e" else f"{x:.{digits}g}"
    exact = Decimal(x)  # the float's exact value: no rounding before the directed one
    r = exact.quantize(Decimal(1).scaleb(exact.adjusted() - digits + 1), rounding=rounding)
    # r has at most digits + 1 significant digits (9.99 -> 10.0), so float(r) prints back exactly
    return f"{float(r):.{digits - 1}e}" if style == "e" else f"{float(r):.{digits}g}"


def up(x: float, digits: int = 3, style: str = "e") -> str:
    """``x`` rounded towards +inf to ``digits`` significant digits ("e": 2.38e-12, "g": 0.0124)."""
    return _directed(x, digits, style, ROUND_CEILING)


def down(x: float, digits: int = 3, style: str = "e") -> str:
    """``x`` rounded towards -inf to ``digits`` significant digits."""
    return _directed(x, digits, style, ROUND_FLOOR)


def strict_below(x: float) -> int | None:
    """k when ``x`` is the float just below a whole number k other than 0 (how the suite holds a
    strict inequality value < k: value <= nextafter(k, 0)), else None."""
    k = round(x) if math.isfinite(x) else 0
    return k if k != 0 and x == math.nextafter(float(k), 0.0) else None


def bound(x: float, style: str = "e") -> str:
    """A bound a value is held below: '< k' for a strict one (:func:`strict_below`), else '<= '
    and ``x`` rounded down."""
    k = strict_below(x)
    return f"< {k}" if k is not None else f"<= {down(x, 3, style)}"
