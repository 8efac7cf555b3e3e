"""Midpoint-radius balls in float64: rigorous enclosures at NumPy speed (the namespace ``fball``).

A ball array holds two float64 arrays of one shape, midpoints m and radii r >= 0, and stands
for every real array x with |x - m| <= r elementwise.  Every operation returns a ball array
that contains its result for every choice of the arguments in their balls, its own rounding
included, using round-to-nearest float64 arithmetic only (midpoint-radius arithmetic as in
Rump 1999, "Fast and parallel interval arithmetic"; the error bounds of Higham 2002, ch. 3).

**The rounding model, at every edge of the floats.**  With u = 2^-53 and eta = 2^-1074 (the
smallest subnormal), one IEEE 754 operation on floats with exact result z returns

* fl(z) = z (1 + delta) + epsilon, |delta| <= u, |epsilon| <= eta / 2, for a product or a
  quotient (epsilon: gradual underflow, where z lies among the subnormals or below them);
* fl(z) = z (1 + delta), |delta| <= u, for a sum or difference: one that lands among the
  subnormals is exact, so a sum never makes an absolute error;
* +-inf past the largest float (overflow).  A radius that overflows is infinite and a midpoint
  infinite or NaN; :func:`isfinite` (in the namespace) sees both, and every test of the
  validated flow refuses such balls.

Hence a sum or dot product of k terms in any order (pairwise, blocked, with or without FMA)
has |fl(x^T y) - x^T y| <= gamma_k |x|^T |y| + k eta / 2, gamma_k = k u / (1 - k u) <= 2 k u.

**Radii.**  A radius is an expression in nonnegative floats in which every rounded product or
quotient either combines two *inputs* (floats taken as exact: midpoints, radii, constants,
bounds returned by :func:`up`, or sums of such) or multiplies a rounded value by a constant
of at most 1; after it, only sums follow.  Walking up the expression, an exact sum of computed
terms is at most the computed sum over (1 - u), and an exact product of inputs at most the
computed product plus eta / 2, over (1 - u); a constant c <= 1 does not enlarge an absolute
error it multiplies.  So if at most K roundings lie on any path from an input to the result,
counting both factors' paths at a product, and P products or quotients are rounded, the exact
value is at most (1 - u)^(-K) (computed + P eta / 2).  :func:`up` returns at least
x (1 + 4 (K + 2) u) + (K + 2) eta, which covers that for P <= 2 (K + 2) (and K u < 0.01), P
counting also the midpoint's own product or quotient, whose underflow the radius must cover;
an operation with more (a dot product of k terms) adds the rest explicitly.  A product of a rounded value
by a *large* number would multiply its eta / 2 (an underflowed product of 1e-300 and 1e-30,
times 1e20, is 0 against a true 1e-310): no radius is formed that way; where a bound must
multiply bounds, each factor is first rounded up on its own (``up(x * y, 1)`` is an input).

Midpoints keep float64's sixteen digits, so a ball is never narrower than about 1e-16 of its
midpoint.  That is what the validated flow can afford where the balls only bound a remainder
or enclose a derivative that multiplies a small deviation (:mod:`verify.verdicts.enclosure`),
at the speed of vectorised float64: one validated step's series with n d tangents (order 28,
N n d = 18) take 0.022 s against Arb object arrays' 0.13 s (docs/verdicts.md, issue 51).

exp is the only transcendental function the attention field needs, and NumPy's carries no
error bound: :func:`exp` reduces x to r = x - k ln 2 and sums Taylor's polynomial of e^r in
balls, with its tail and the scaling by 2^k (exact, or rounded by eta / 2 among the
subnormals) counted.  (It delegated to Arb element by element before: 2.3 million Arb
exponentials were half the time of c32a's validated steps, docs/verdicts.md.)  Exact numbers that no float holds
(a Fraction, an integer beyond 2^53) become a ball around the nearest float with the distance
rounded up; beyond the float range, a ball of infinite radius (as overflow gives).

Each operation's docstring states its enclosure and why its radius is an upper bound; the
tests check every operation against exact rationals on operands drawn at the edges (zero,
signed zeros, subnormals, the smallest normal, all-ones mantissas, near overflow, mixed scales
from 1e-300 to 1e300): ``property_tests/test_float_balls.py``.

>>> import flint
>>> xp = namespace()
>>> a = xp.asarray(np.array([flint.arb(1) / 3]))          # a ball around 1/3
>>> b = xp.exp(a * a - a / 7)
>>> with flint.ctx.workprec(200):  # the exact value, to 60 digits
...     exact = (flint.arb(1) / 9 - flint.arb(1) / 21).exp()
>>> bool(flint.arb(b.m[0], b.r[0]).contains(exact))
True
"""

from __future__ import annotations

import math
import types
from fractions import Fraction
from typing import Any

import numpy as np

U = 2.0**-53  # unit roundoff of round-to-nearest float64
ETA = float(np.nextafter(0.0, 1.0))  # 2^-1074: twice the absolute error of a product or quotient that underflows


def up(x: np.ndarray, ops: int) -> np.ndarray:
    """An upper bound of the exact value of a nonnegative radius expression (module docstring:
    products of inputs, or of a rounded value by a constant <= 1, then sums) that was evaluated
    in float64 with at most ``ops`` roundings on any path and at most 2 (ops + 2) rounded
    products or quotients."""
    return _up(np.array(x, dtype=float), ops)[()]


def _up(x: np.ndarray, ops: int) -> np.ndarray:
    """:func:`up` in place, for a fresh array: x (1 + 4 (ops + 3) u) + (ops + 3) eta.  Its own two
    roundings are covered: fl(fl(x f) + e) >= x f (1 - 2u) + (e - eta/2)(1 - u), at least
    x (1 + 4 (ops + 2) u) + (ops + 2) eta, which bounds the exact value (module docstring)."""
    if not isinstance(x, np.ndarray):  # a NumPy scalar (a sum over every axis) cannot be written in place
        x = np.array(x, dtype=float)
    np.multiply(x, 1.0 + 4.0 * (ops + 3) * U, out=x)
    np.add(x, (ops + 3) * ETA, out=x)
    return x


class Balls:
    """Midpoints ``m`` and radii ``r`` (float64 arrays of one shape)."""

    __array_priority__ = 1000  # NumPy arrays and scalars defer to these operators
    dtype = np.dtype(float)  # of the midpoints and radii

    def __init__(self, m: Any, r: Any = None):
        self.m = np.asarray(m, dtype=float)
        if r is None:
            self.r = np.zeros(self.m.shape)
        elif isinstance(r, np.ndarray) and r.shape == self.m.shape:
            self.r = r
        else:
            self.r = np.broadcast_to(np.asarray(r, dtype=float), self.m.shape).copy()

    shape = property(lambda self: self.m.shape)
    ndim = property(lambda self: self.m.ndim)
    size = property(lambda self: self.m.size)

    def __repr__(self) -> str:
        return f"Balls(m={self.m!r}, r={self.r!r})"

    def in_arb(self) -> np.ndarray:
        """The balls as an object array of Arb balls (exact: Arb's radii round up)."""
        import flint

        return np.vectorize(lambda m, r: flint.arb(m, r), otypes=[object])(self.m, self.r)

    def reshape(self, *shape: Any) -> Balls:
        return Balls(self.m.reshape(*shape), self.r.reshape(*shape))

    def __getitem__(self, index: Any) -> Balls:
        return Balls(self.m[index], self.r[index])

    def __setitem__(self, index: Any, value: Any) -> None:
        value = lift(value)
        self.m[index] = value.m
        self.r[index] = value.r

    def __neg__(self) -> Balls:
        return Balls(-self.m, self.r)

    def __add__(self, other: Any) -> Balls:
        """x + y: around the rounded sum m, radius r_x + r_y + 2 u |m| (a sum rounds by at most
        u |x + y| <= 2 u |m|, and not at all among the subnormals)."""
        o = lift(other)
        m = self.m + o.m
        r = np.abs(m)
        r *= 2 * U
        r += self.r
        r += o.r
        return Balls(m, _up(r, 3))

    __radd__ = __add__

    def __sub__(self, other: Any) -> Balls:
        return self + (-lift(other))

    def __rsub__(self, other: Any) -> Balls:
        return lift(other) + (-self)

    def __mul__(self, other: Any) -> Balls:
        """x y: around the rounded product m, radius |m_x| r_y + r_x (|m_y| + r_y) (with a number
        y: r_x |y|), products of inputs, plus 2 u |m| for the midpoint's relative rounding; its
        absolute one, eta / 2 where the product underflows, is one more product in :func:`up`'s
        count (at most 4 against the 2 (K + 2) it covers)."""
        if _float_exactly(other):  # a number: one rounding
            m = self.m * float(other)
            r = np.abs(m)
            r *= 2 * U
            r += self.r * abs(float(other))
            return Balls(m, _up(r, 4))
        o = lift(other)
        m = self.m * o.m
        r = np.abs(self.m) * o.r  # the full (broadcast) shape
        r += self.r * (np.abs(o.m) + o.r)
        r += 2 * U * np.abs(m)
        return Balls(m, _up(r, 6))

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Balls:
        """x / y: by a number, around m_x / y with radius r_x / |y| + 2 u |m| (a quotient of inputs
        and the midpoint's rounding, as in :meth:`__mul__`); by a ball, x times :func:`reciprocal` (y)."""
        if _float_exactly(other):
            m = self.m / float(other)  # an exact divisor: one rounding
            return Balls(m, up(self.r / abs(float(other)) + 2 * U * np.abs(m), 4))
        return self * reciprocal(lift(other))

    def __rtruediv__(self, other: Any) -> Balls:
        return lift(other) * reciprocal(self)


def _float_exactly(v: Any) -> bool:
    """Whether v is a number (not a bool) that a float64 holds exactly."""
    if isinstance(v, (float, np.floating)):
        return True
    if not isinstance(v, (int, np.integer)) or isinstance(v, bool):
        return False
    try:
        return float(v) == int(v)
    except OverflowError:  # beyond the float range: lift() encloses it
        return False


def finite(a: Balls) -> np.ndarray:
    """Where both the midpoint and the radius are finite: a ball that is not stands for a value
    the arithmetic lost (overflow), and every operation keeps it so."""
    return np.isfinite(a.m) & np.isfinite(a.r)


def reciprocal(b: Balls) -> Balls:
    """1/x for x in the balls: around 1/m with radius r / (|m| low) + 2 u |1/m|, low <= |m| - r
    (for x between m - r and m + r, |1/x - 1/m| = |x - m| / (|x| |m|)); infinite where low is not
    above 0 (the ball holds 0, or nearly: nothing finite encloses 1/x there) or the ball is not
    finite.  The quotient is formed as up(r / |m|) / low, two quotients of inputs, so that a
    product |m| low that would underflow (|m| ~ 1e-200) never divides."""
    a = np.abs(b.m)
    low = np.nextafter(a - b.r, -np.inf)  # at most min |x|: a - r rounds to within half a float
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        m = 1.0 / b.m
        ratio = up(b.r / a, 1)  # at least r / |m|
        r = np.where((low > 0) & finite(b), up(ratio / low + 2 * U * np.abs(m), 4), np.inf)
    return Balls(m, r)


def _arb_midpoint(z: Any) -> float:
    return float(z.mid()) if z.is_finite() else np.nan


def from_arb(a: Any) -> Balls:
    """Arb balls (an object array or one ball) as float64 balls that contain them: the midpoint
    rounded to a float c and the radius |z - c|'s upper end, one float up (float() of an Arb
    number rounds to nearest).  An Arb ball that is not finite, or whose midpoint is beyond the
    float range, gives a ball that is not finite."""
    import flint

    arr = np.asarray(a, dtype=object)
    m = np.vectorize(_arb_midpoint, otypes=[float])(arr) if arr.size else np.zeros(arr.shape)
    with np.errstate(invalid="ignore"):
        r = np.vectorize(lambda z, c: float(abs(z - flint.arb(c)).upper()) if np.isfinite(c) else np.inf,
                         otypes=[float])(arr, m) if arr.size else m
    return Balls(m, np.nextafter(r, np.inf))


def _exact_number(x: Any) -> Balls:
    """An exact number that no float may hold (an integer beyond 2^53, a Fraction): the nearest
    float c and |x - c| rounded up, computed in exact rationals; beyond the float range a ball
    of infinite radius."""
    q = Fraction(x)
    try:
        c = float(q)  # correctly rounded
    except OverflowError:
        return Balls(np.inf if q > 0 else -np.inf, np.inf)
    gap = abs(q - Fraction(c))
    r = float(gap)
    return Balls(c, r if Fraction(r) >= gap else float(np.nextafter(r, np.inf)))


def lift(x: Any) -> Balls:
    """Balls as they are; Arb balls enclosed (:func:`from_arb`); floats and the integers a float
    holds exactly (radius 0); other integers and Fractions by :func:`_exact_number`."""
    if isinstance(x, Balls):
        return x
    if type(x).__name__ == "arb" or (isinstance(x, np.ndarray) and x.dtype == object):
        return from_arb(x)
    if isinstance(x, Fraction) or (isinstance(x, (int, np.integer)) and not isinstance(x, bool) and not _float_exactly(x)):
        return _exact_number(x)
    return Balls(x)


def matmul(a: Any, b: Any) -> Balls:
    """a @ b over the last two axes (broadcast batches): a dot product of k = a.shape[-1] terms."""
    a, b = lift(a), lift(b)
    k = a.shape[-1]
    return _summed(np.matmul, a, b, k, k + 6, lambda x: np.sum(x, axis=-1, keepdims=True))


def _summed(reduce: Any, a: Balls, b: Balls, terms: int, ops: int, along: Any) -> Balls:
    """reduce(a, b), a sum of ``terms`` products in any order, as balls: the midpoints reduced,
    with radius

        reduce(|a.m|, b.r + 2 k u |b.m|) + reduce(a.r, |b.m| + b.r) + eta along(|a.m|) + 2 k eta,

    k = terms, ``along(x)`` the sum of x over the reduced index (shaped like the result), at most
    ``ops`` roundings on any path.  For x, y in the balls each term's |x y - a.m b.m| is at most
    |a.m| b.r + a.r (|b.m| + b.r); the midpoints' sum rounds by at most gamma_k sum |a.m| |b.m|
    + k eta / 2 (gamma_k <= 2 k u).  The rounded fl(2 k u |b.m|) is multiplied by |a.m|, which
    the model of the module docstring forbids unless its absolute error is counted: it is at
    most eta / 2 (where |b.m| is subnormal it underflows: [[1e20]] @ [[3.98e-315]] got radius
    6e-323 against a rounding of 3e-311 when nothing counted it), so the exact sum exceeds the
    computed one by at most eta / 2 sum |a.m| over the reduced index: the term eta along(|a.m|).
    The other products are of inputs: with the midpoint's they leave 3 k eta / 2, covered by the
    2 k eta added and :func:`up`'s.  (Three reductions instead, with 2 k u times a separate
    reduce(|a.m|, |b.m|), made a matrix product 10-28 % slower.)"""
    am, bm = np.abs(a.m), np.abs(b.m)
    scaled = bm * (2 * terms * U)
    scaled += b.r
    bm += b.r
    r = reduce(am, scaled)
    r += reduce(a.r, bm)
    r += along(am) * ETA
    r += 2 * terms * ETA
    return Balls(reduce(a.m, b.m), _up(r, ops))


def cauchy(A: Any, B: Any) -> Balls:
    """sum_j A_j @ B_j over the first axis, as one matrix product whose inner dimension runs
    over j and the columns of A_j together (a dot product of that many terms)."""
    A, B = lift(A), lift(B)

    def joined(x: np.ndarray, axis: int) -> np.ndarray:
        order = list(range(1, x.ndim))
        order.insert(x.ndim + axis, 0)  # np.moveaxis(x, 0, axis), without its per-call axis checks (12% of a step)
        moved = x.transpose(order)
        shape = list(moved.shape)
        if axis == -2:  # A: (..., a, J, b) -> (..., a, J b)
            return moved.reshape(*shape[:-2], shape[-2] * shape[-1])
        return moved.reshape(*shape[:-3], shape[-3] * shape[-2], shape[-1])  # B: (..., J, b, c) -> (..., J b, c)

    return matmul(Balls(joined(A.m, -2), joined(A.r, -2)), Balls(joined(B.m, -3), joined(B.r, -3)))


def products(A: Any, B: Any) -> Balls:
    """sum_j A_j * B_j over the first axis (elementwise products): J products and their sum,
    |error| <= gamma_(J+1) sum |A_j| |B_j| + 2 (J + 1) eta."""
    A, B = lift(A), lift(B)
    J = A.shape[0]
    return _summed(lambda x, y: np.einsum("j...,j...->...", x, y), A, B, J + 1, J + 6, lambda x: np.sum(x, axis=0))


def on_dominant(a: Any, top: np.ndarray) -> Balls:
    """a less, row by row, its entry marked in ``top`` (one per row), which is then exactly 0:
    the marked entry is picked exactly (a sum of it and zeros), so only the difference rounds."""
    a = lift(a)
    picked = Balls(np.sum(a.m * top, axis=-1, keepdims=True), np.sum(a.r * top, axis=-1, keepdims=True))
    less = a - picked
    return Balls(np.where(top, 0.0, less.m), np.where(top, 0.0, less.r))


def total(a: Any, axis: Any = None, keepdims: bool = False) -> Balls:
    """The sum over ``axis``: k terms in any order, around their rounded sum, radius the sum of
    the radii plus 2 k u sum |m| (a sum rounds by at most gamma_(k-1) sum |m|, with no eta)."""
    a = lift(a)
    k = a.m.size if axis is None else int(np.prod([a.shape[i] for i in np.atleast_1d(axis)]))
    m = np.sum(a.m, axis=axis, keepdims=keepdims)
    r = np.sum(a.r, axis=axis, keepdims=keepdims) + 2 * k * U * np.sum(np.abs(a.m), axis=axis, keepdims=keepdims)
    return Balls(m, up(r, k + 4))


_LN2_HI = math.floor(math.log(2) * 2**42) / 2**42  # 42 bits: k ln2_hi is exact for |k| < 2^11
_EXP_DEGREE = 17  # e^r = sum_(j<=17) r^j / j! + a tail below _EXP_TAIL
_EXP_TAIL = 1e-23  # >= 0.35^18 / 18! e^0.35 = 1.4e-24: the Taylor tail of e^r, |r| <= ln 2 / 2 + 3e-13 < 0.35
_EXP_FROM, _EXP_TO = -745.2, 709.8  # e^x < eta / 2 below, above the largest float beyond


def _ln2_lo() -> Balls:
    """A ball holding ln 2 - _LN2_HI (Arb at 200 bits)."""
    import flint

    with flint.ctx.workprec(200):
        return from_arb(flint.arb(2).log() - flint.arb(_LN2_HI))


def _inverse_factorials() -> list:
    return [_exact_number(Fraction(1, math.factorial(j))) for j in range(_EXP_DEGREE + 1)]


def _exp_point(x: np.ndarray) -> Balls:
    """e^x for floats x (taken as exact) as balls: x = k ln 2 + r with k = rint(x / ln 2), so
    |r| <= ln 2 / 2 (plus 3e-13 from x / ln 2's rounding, |x| <= 746), r enclosed as
    (x - k ln2_hi) - k ln2_lo in balls (k ln2_hi exact: 11 bits times 42), e^r by Taylor's
    polynomial of degree 17 in balls plus its tail, and 2^k e^r by ``ldexp``: exact unless the
    result lands among the subnormals, where it rounds by at most eta / 2 (:func:`up` on the
    radius covers that, the midpoint's and the radius's).  Below -745.2, e^x < eta / 2 and the
    ball is [0, eta]; above 709.8 (e^x beyond the largest float) and at NaN it is not finite."""
    inside = (x >= _EXP_FROM) & (x <= _EXP_TO)
    y = np.where(inside, x, 0.0)
    k = np.rint(y / math.log(2))
    r = (Balls(y) - Balls(k * _LN2_HI)) - Balls(k) * _LN2_LO
    acc = _INVERSE_FACTORIALS[-1]
    for c in _INVERSE_FACTORIALS[-2::-1]:
        acc = acc * r + c
    kk = k.astype(int)
    m = np.ldexp(acc.m, kk)
    rad = up(np.ldexp(up(acc.r + _EXP_TAIL, 1), kk), 1)
    m = np.where(inside, m, np.where(x < _EXP_FROM, 0.0, np.nan))
    rad = np.where(inside, rad, np.where(x < _EXP_FROM, ETA, np.inf))
    return Balls(m, rad)


def exp(a: Any) -> Balls:
    """e^x for x in the balls, vectorised (NumPy's exp carries no error bound).  A ball of
    radius r <= 1: e^m enclosed by :func:`_exp_point` as a ball (M, e), and |e^x - e^m| <=
    e^m (e^r - 1) <= (|M| + e) (r + r^2) for |x - m| <= r (e^r - 1 - r is at most r^2 (e - 2)).
    A wider ball: from the lower end of e^(m - r) to the upper end of e^(m + r), those ends
    rounded outward (e^x is increasing; a logit of -1000 +- 900 is a weight below e^(-100), not
    e^(-1000) e^900).  A ball that is not finite stays so (e^(-inf) is not an exact 0 for an
    overflowed logit)."""
    a = lift(a)
    if not a.size:
        return a
    with np.errstate(all="ignore"):
        centre = _exp_point(a.m)
        narrow = up(up(np.abs(centre.m) + centre.r, 1) * up(a.r + a.r * a.r, 2) + centre.r, 2)
        wide = a.r > 1.0
        low = _exp_point(np.where(wide, np.nextafter(a.m - a.r, -np.inf), 0.0))
        high = _exp_point(np.where(wide, np.nextafter(a.m + a.r, np.inf), 0.0))
        lo = np.maximum(np.nextafter(low.m - low.r, -np.inf), 0.0)
        hi = up(high.m + high.r, 1)
        mid = 0.5 * (lo + hi)
        m = np.where(wide, mid, centre.m)
        r = np.where(wide, up(np.maximum(hi - mid, mid - lo), 1), narrow)
        lost = ~finite(a) | ~finite(Balls(m, r))
        return Balls(np.where(lost, np.nan, m), np.where(lost, np.inf, r))


def largest(a: Any, axis: Any = None, keepdims: bool = False) -> Balls:
    """The largest midpoint, an exact number (radius 0).  Used only as the shift of a softmax
    row, which is exactly invariant under any shift: no enclosure depends on it being the
    maximum."""
    return Balls(np.max(lift(a).m, axis=axis, keepdims=keepdims))


def where(cond: Any, a: Any, b: Any) -> Balls:
    a, b = lift(a), lift(b)
    return Balls(np.where(cond, a.m, b.m), np.where(cond, a.r, b.r))


def asarray(x: Any, dtype: Any = None, copy: Any = None) -> Any:
    """Balls from balls, Arb balls, floats or integers; Boolean arrays stay NumPy (masks)."""
    if isinstance(x, np.ndarray) and x.dtype == bool:
        return x
    return lift(x)


def _both(f: Any) -> Any:
    """A shape function of NumPy applied to midpoints and radii alike."""
    return lambda a, *args, **kw: Balls(f(lift(a).m, *args, **kw), f(lift(a).r, *args, **kw))


def namespace() -> types.SimpleNamespace:
    """The array namespace of :class:`Balls` (what :mod:`verify.model.taylor` and
    :mod:`verify.model.attention` use)."""
    return _NAMESPACE


_NAMESPACE = types.SimpleNamespace(
    __name__="fball",
    high_precision=False,
    balls=True,
    asarray=asarray,
    zeros=lambda shape, dtype=None: Balls(np.zeros(shape)),
    eye=lambda n, dtype=None: Balls(np.eye(n)),
    exp=exp,
    abs=lambda a: Balls(np.abs(lift(a).m), lift(a).r),
    isfinite=lambda a: finite(lift(a)),
    matmul=matmul,
    matrix_transpose=_both(lambda x: np.swapaxes(x, -1, -2)),
    permute_dims=_both(np.transpose),
    reshape=_both(np.reshape),
    stack=lambda arrays, axis=0: Balls(np.stack([lift(a).m for a in arrays], axis=axis),
                                       np.stack([lift(a).r for a in arrays], axis=axis)),
    sum=total,
    cauchy=cauchy,
    products=products,
    on_dominant=on_dominant,
    max=largest,
    where=where,
    expand_dims=_both(np.expand_dims),
    broadcast_to=_both(np.broadcast_to),
    all=np.all,
)

_LN2_LO = _ln2_lo()
_INVERSE_FACTORIALS = _inverse_factorials()
