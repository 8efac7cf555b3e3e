"""Float64 balls (:mod:`verify.model.float_balls`) against exact rationals, at the edges of the floats.

Every operation is checked on operands drawn where rounding is most hostile: zero and signed
zeros, subnormals (a few units of eta = 2^-1074 and random ones), the smallest normal and its
neighbours, mantissas of all ones, the largest floats, and mixed scales from 1e-300 to 1e300,
with radii 0, a few eta, or relative ones.  The exact range of each result entry over the
operands' balls is computed exactly (each entry is a sum of terms in which every operand entry
appears once, so interval arithmetic on the exact endpoints gives the exact range): in
integers, every float being a whole multiple of eta, and in Fractions where a quotient
enters; the ball returned must contain it.  A ball that is not finite claims
nothing and passes; one that is not finite where the exact range is moderate fails, so that
a mutant returning infinity everywhere cannot pass.  Under ``thorough`` each operation runs
10^4 draws.

Mutants that these tests were seen to fail (each by hand, then reverted): the eta term of
products dropped (``r += ETA`` in ``__mul__``, ``2 terms eta`` in sums of products), the
scaling of |b.m| by 2 k u moved before the product (the bug of issue 65), the reciprocal's
test of its lower bound's sign dropped, a Fraction lifted at radius 0.
"""

from __future__ import annotations

from fractions import Fraction

import flint
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from property_tests.conftest import examples
from verify.model import float_balls as fb
from verify.model.backend import precision

TINY = 2.0**-1022  # the smallest normal
HUGE = float(np.finfo(float).max)
ONES = float.fromhex("0x1.fffffffffffffp+0")  # a mantissa of all ones
MODERATE = 2.0**400  # operands within it (and divisors above its inverse) must give finite balls
EDGES = [0.0, -0.0, fb.ETA, 2 * fb.ETA, 3 * fb.ETA, 7 * fb.ETA, TINY - fb.ETA, TINY, TINY + 2 * fb.ETA, 2 * TINY,
         1.0, ONES, 3.0, 0.1, 1e-300, 1e-200, 3.98e-315, 1e20, 1e200, 1e300, HUGE / 4, HUGE]
CI_DRAWS, WHY = 500, "small arrays of exact rationals; 10^4 draws per operation under thorough"


def _edge_floats(rng: np.random.Generator, size: int) -> np.ndarray:
    """Floats from a mixture of the hostile kinds: the table EDGES, subnormals, all-ones
    mantissas at every exponent, mixed scales 10^-300..10^300, any finite bit pattern; either sign."""
    kind = rng.integers(0, 5, size=size)
    bits = rng.integers(0, 2**63 - 2**52, size=size, dtype=np.int64).view(np.float64)  # every finite positive float
    out = np.select([kind == 0, kind == 1, kind == 2, kind == 3], [
        np.array(EDGES)[rng.integers(0, len(EDGES), size=size)],
        rng.integers(1, 2**20, size=size) * fb.ETA,
        np.ldexp(ONES, rng.integers(-1074, 1024, size=size)),
        rng.uniform(1.0, 10.0, size=size) * 10.0 ** rng.integers(-300, 301, size=size)], bits)
    return np.where(rng.random(size) < 0.5, -out, out)


def _edge_balls(rng: np.random.Generator, shape: tuple[int, ...]) -> fb.Balls:
    size = int(np.prod(shape))
    m = _edge_floats(rng, size)
    kind = rng.integers(0, 4, size=size)
    r = np.select([kind == 0, kind == 1, kind == 2], [
        0.0, np.array([fb.ETA, 3 * fb.ETA, TINY])[rng.integers(0, 3, size=size)],
        np.abs(m) * np.array([1e-16, 1e-8, 0.5])[rng.integers(0, 3, size=size)]], np.abs(_edge_floats(rng, size)))
    return fb.Balls(m.reshape(shape), r.reshape(shape))


def balls(shape: tuple[int, ...]) -> st.SearchStrategy[fb.Balls]:
    """Balls at the edges of the floats, from a drawn seed (the mixture needs no shrinking: the
    failing seed is printed and reproduces the draw)."""
    return st.integers(0, 2**64 - 1).map(lambda seed: _edge_balls(np.random.default_rng(seed), shape))


def _edge_float() -> st.SearchStrategy[float]:
    return st.integers(0, 2**64 - 1).map(lambda seed: float(_edge_floats(np.random.default_rng(seed), 1)[0]))


SCALE = 2**1074  # every float is a whole multiple of eta = 1 / SCALE


def _fixed(x: float) -> int:
    """x * SCALE, exactly (a float's denominator is a power of 2 dividing SCALE)."""
    n, d = float(x).as_integer_ratio()
    return n * (SCALE // d)


def _hull(b: fb.Balls, exact: type = int) -> tuple[np.ndarray, np.ndarray]:
    """The exact endpoints m - r, m + r of every entry, as object arrays of integers times
    1 / SCALE (cheap: sums of products of them are exact integers times 1 / SCALE^2), or of
    Fractions (``exact=Fraction``) where quotients follow."""
    conv = _fixed if exact is int else Fraction
    lo = np.vectorize(lambda m, r: conv(m) - conv(r), otypes=[object])(b.m, b.r)
    hi = np.vectorize(lambda m, r: conv(m) + conv(r), otypes=[object])(b.m, b.r)
    return lo, hi


def _times(alo, ahi, blo, bhi):
    """The exact range of x y over two intervals (elementwise, object arrays)."""
    corners = [alo * blo, alo * bhi, ahi * blo, ahi * bhi]
    return (np.vectorize(min, otypes=[object])(*corners), np.vectorize(max, otypes=[object])(*corners))


def _moderate(*operands: fb.Balls) -> bool:
    """Every operand within +-MODERATE: then no product, sum or radius overflows."""
    with np.errstate(over="ignore"):
        return all(bool(np.all(np.abs(b.m) + b.r < MODERATE)) for b in operands)


def _away_from_zero(b: fb.Balls) -> np.ndarray:
    """Where |x| >= 1 / MODERATE on the whole ball: a reciprocal stays finite."""
    return np.abs(b.m) - b.r > 1 / MODERATE


def _check(got: fb.Balls, lo: np.ndarray, hi: np.ndarray, what: str, finite_expected: object = False,
           level: int | None = 1) -> None:
    """Every exact range [lo, hi] inside the ball; a ball that is not finite passes, except
    where ``finite_expected`` (a mask or a bool) says the operands are moderate.  ``level``: lo
    and hi are integers times SCALE^-level (None: Fractions)."""
    lo, hi = np.broadcast_to(lo, got.shape), np.broadcast_to(hi, got.shape)
    expected = np.broadcast_to(finite_expected, got.shape)
    with np.errstate(invalid="ignore"):
        finite = fb.finite(got)
    for idx in np.ndindex(got.shape):
        low, high = lo[idx], hi[idx]
        if not finite[idx]:
            assert not expected[idx], (what, idx, "not finite on moderate operands", got.m[idx], got.r[idx])
            continue
        if level is None:
            m, r = Fraction(got.m[idx]), Fraction(got.r[idx])
        else:
            m, r = _fixed(got.m[idx]) * SCALE ** (level - 1), _fixed(got.r[idx]) * SCALE ** (level - 1)
        assert got.r[idx] >= 0 and m - r <= low and high <= m + r, (what, idx, got.m[idx], got.r[idx])


def _ops_of_two():
    return st.tuples(st.sampled_from(["+", "-", "*", "/"]), balls((2, 3)), balls((2, 3)))


@settings(max_examples=examples(CI_DRAWS, WHY), deadline=None)
@given(case=_ops_of_two())
def test_elementwise_operations_contain_the_exact_ranges(case):
    op, a, b = case
    exact = Fraction if op == "/" else int
    (alo, ahi), (blo, bhi) = _hull(a, exact), _hull(b, exact)
    moderate = _moderate(a, b)
    with np.errstate(all="ignore"):
        if op == "+":
            _check(a + b, alo + blo, ahi + bhi, op, moderate)
        elif op == "-":
            _check(a - b, alo - bhi, ahi - blo, op, moderate)
        elif op == "*":
            _check(a * b, *_times(alo, ahi, blo, bhi), op, moderate, level=2)
            _check(b[0] * a, *_times(alo, ahi, blo[0], bhi[0]), "a broadcast *", moderate, level=2)
        else:
            got = a / b
            crosses = np.vectorize(lambda lo, hi: lo <= 0 <= hi, otypes=[bool])(blo, bhi)
            assert not np.any(fb.finite(got)[crosses]), "a quotient by a ball holding 0 must not be finite"
            one = Fraction(1)  # a stand-in where the ball holds 0 (checked above)
            inv_lo = np.where(crosses, one, np.vectorize(lambda h: 1 / h if h else one, otypes=[object])(bhi))
            inv_hi = np.where(crosses, one, np.vectorize(lambda lo: 1 / lo if lo else one, otypes=[object])(blo))
            lo, hi = _times(alo, ahi, np.minimum(inv_lo, inv_hi), np.maximum(inv_lo, inv_hi))
            shown = fb.Balls(np.where(crosses, np.nan, got.m), np.where(crosses, np.inf, got.r))
            _check(shown, lo, hi, op, moderate & _away_from_zero(b), level=None)


@settings(max_examples=examples(CI_DRAWS, WHY), deadline=None)
@given(b=balls((6,)))
@example(b=fb.Balls(np.array([1e-200]), np.array([0.5e-200])))  # |m| (|m| - r) underflows (issue 65)
@example(b=fb.Balls(np.array([3 * fb.ETA]), np.array([fb.ETA])))
def test_the_reciprocal_contains_1_over_x_or_is_not_finite(b):
    lo, hi = _hull(b, Fraction)
    with np.errstate(all="ignore"):
        got = fb.reciprocal(b)
    expected = _moderate(b) & _away_from_zero(b)
    for i in range(b.size):
        if lo[i] <= 0 <= hi[i]:
            assert not fb.finite(got)[i], (b.m[i], b.r[i], got.m[i], got.r[i])
        else:
            _check(got[i:i + 1], np.array([1 / hi[i]], dtype=object), np.array([1 / lo[i]], dtype=object), "1/x",
                   expected[i], level=None)


@settings(max_examples=examples(CI_DRAWS, WHY), deadline=None)
@given(a=balls((2, 3)), b=balls((3, 2)), c=balls((3, 2, 2)))
@example(a=fb.Balls(np.array([[1e20, 0, 0], [0, 0, 0]])), b=fb.Balls(np.array([[3.98e-315, 0], [0, 0], [0, 0]])),
         c=fb.Balls(np.zeros((3, 2, 2))))  # the rounding term underflowed (issue 65)
def test_sums_of_products_contain_the_exact_ranges(a, b, c):
    (alo, ahi), (blo, bhi), (clo, chi) = _hull(a), _hull(b), _hull(c)
    moderate = _moderate(a, b, c)
    with np.errstate(all="ignore"):
        # matmul: entry (i, k) is sum_j a_ij b_jk, each a_ij and b_jk once
        lo = np.empty((2, 2), dtype=object)
        hi = np.empty((2, 2), dtype=object)
        for i in range(2):
            for k in range(2):
                t = _times(alo[i], ahi[i], blo[:, k], bhi[:, k])
                lo[i, k], hi[i, k] = sum(t[0]), sum(t[1])
        _check(fb.matmul(a, b), lo, hi, "matmul", moderate, level=2)
        # products: sum_j A_j * B_j over the first axis (A = b, B = c[:, :, 0])
        t = _times(blo, bhi, clo[:, :, 0], chi[:, :, 0])
        got = fb.products(b, fb.Balls(c.m[:, :, 0], c.r[:, :, 0]))
        _check(got, t[0].sum(axis=0), t[1].sum(axis=0), "products", moderate, level=2)
        # cauchy: sum_j A_j @ B_j, A_j = a[:, j] as a 2 x 1 matrix, B_j = c[j, :1] as 1 x 2
        A = fb.Balls(a.m.T[:, :, None], a.r.T[:, :, None])
        B = fb.Balls(c.m[:, :1, :], c.r[:, :1, :])
        t = _times(alo.T[:, :, None], ahi.T[:, :, None], clo[:, :1, :], chi[:, :1, :])
        _check(fb.cauchy(A, B), t[0].sum(axis=0), t[1].sum(axis=0), "cauchy", moderate, level=2)
        # total over an axis, and over all
        _check(fb.total(a, axis=1), alo.sum(axis=1), ahi.sum(axis=1), "sum", moderate)
        _check(fb.total(a), np.array(alo.sum()), np.array(ahi.sum()), "sum of all", moderate)


@settings(max_examples=examples(CI_DRAWS, WHY), deadline=None)
@given(a=balls((2, 3)), c=_edge_float(), top=st.lists(st.integers(0, 2), min_size=2, max_size=2))
def test_numbers_absolute_values_and_the_dominant_entry(a, c, top):
    alo, ahi = _hull(a, Fraction)
    q = Fraction(c)
    moderate = _moderate(a, fb.Balls(c))
    with np.errstate(all="ignore"):
        _check(a * c, *_times(alo, ahi, np.array(q), np.array(q)), "times a float", moderate, level=None)
        if c != 0:
            _check(a / c, *_times(alo, ahi, np.array(1 / q), np.array(1 / q)), "divided by a float",
                   moderate and abs(c) > 1 / MODERATE, level=None)
        away = np.vectorize(lambda lo, hi: lo > 0 or hi < 0, otypes=[bool])(alo, ahi)  # c / x: x away from 0
        got = c / a
        assert not np.any(fb.finite(got)[~away]), "a number over a ball holding 0 must not be finite"
        inv = [np.where(away, np.vectorize(lambda v: 1 / v if v else Fraction(1), otypes=[object])(e), Fraction(1))
               for e in (alo, ahi)]
        lo, hi = _times(np.array(q), np.array(q), np.minimum(*inv), np.maximum(*inv))
        _check(fb.Balls(np.where(away, got.m, np.nan), np.where(away, got.r, np.inf)), lo, hi, "a float over a ball",
               moderate & _away_from_zero(a), level=None)
        _check(fb.namespace().abs(a), np.where(alo * ahi <= 0, Fraction(0), np.minimum(abs(alo), abs(ahi))),
               np.maximum(abs(alo), abs(ahi)), "abs", _moderate(a), level=None)
        mask = np.arange(3) == np.array(top)[:, None]
        less = fb.on_dominant(a, mask)
        assert not np.any(less.m[mask]) and not np.any(less.r[mask])
        picked_lo = np.array([alo[i, top[i]] for i in range(2)], dtype=object)[:, None]
        picked_hi = np.array([ahi[i, top[i]] for i in range(2)], dtype=object)[:, None]
        lo, hi = np.where(mask, Fraction(0), alo - picked_hi), np.where(mask, Fraction(0), ahi - picked_lo)
        _check(less, lo, hi, "less the dominant entry", _moderate(a), level=None)


@settings(max_examples=examples(CI_DRAWS, WHY), deadline=None)
@given(num=st.integers(-10**400, 10**400), den=st.integers(1, 10**400), a=balls((2,)))
@example(num=2**60 + 1, den=1, a=fb.Balls(np.array([2.0, -3.0])))
@example(num=10**400, den=1, a=fb.Balls(np.array([2.0, 0.0])))  # beyond the float range: not an OverflowError
@example(num=1, den=3, a=fb.Balls(np.array([1.0, 1.0])))
@example(num=1, den=10**400, a=fb.Balls(np.array([1.0, 1.0])))
def test_exact_numbers_no_float_holds_are_enclosed(num, den, a):
    q = Fraction(num, den)
    alo, ahi = _hull(a, Fraction)
    small = abs(q) < MODERATE and abs(num) < MODERATE and _moderate(a)
    with np.errstate(all="ignore"):
        _check(fb.lift(q), np.array(q), np.array(q), "a Fraction", abs(q) < MODERATE, level=None)
        _check(fb.lift(num), np.array(Fraction(num)), np.array(Fraction(num)), "an integer", abs(num) < MODERATE, level=None)
        n = np.array(Fraction(num))
        _check(a * num, *_times(alo, ahi, n, n), "times an integer", small, level=None)
        _check(a * q, *_times(alo, ahi, np.array(q), np.array(q)), "times a Fraction", small, level=None)


@settings(max_examples=examples(CI_DRAWS, WHY), deadline=None)
@given(a=balls((4,)))
@example(a=fb.Balls(np.array([-800.0, -1e308, 709.0, 0.0]), np.array([1.0, 0.0, 1.0, fb.ETA])))
@example(a=fb.Balls(np.array([-745.2, -745.13, 709.78, 709.79]), np.array([0.0, 0.0, 0.0, 0.0])))  # the range's ends
@example(a=fb.Balls(np.array([1.5 * np.log(2), -0.5 * np.log(2), -1e308, -740.0]),
                    np.array([1.0, 1.0000000000000002, 1e308, 0.0])))
@example(a=fb.Balls(np.array([-1022.5 * np.log(2), 1023.5 * np.log(2), 3e-320, -1e-300]), np.array([1e-12, 0.0, 5e-324, 2.0])))
def test_exp_contains_the_exact_range(a):
    """e^x over the ball, against Arb at 4000 bits; the examples sit at the ends of the range
    reduction (k from -1075 to 1024, r = +-ln 2 / 2) and on both sides of a radius of 1."""
    with np.errstate(all="ignore"):
        got = fb.exp(a)
    lo, hi = _hull(a, Fraction)
    with flint.ctx.workprec(4000):  # the float endpoints are exact at this precision
        for i in range(a.size):
            e_lo, e_hi = flint.arb(flint.fmpq(lo[i].numerator, lo[i].denominator)), flint.arb(
                flint.fmpq(hi[i].numerator, hi[i].denominator))
            if abs(e_hi) > 10**6:  # e^(10^6) is beyond every float: the ball must not be finite
                assert not fb.finite(got)[i] or e_hi < 0
                if e_hi > 0:
                    continue
            ball = flint.arb(got.m[i], got.r[i])
            if not fb.finite(got)[i]:  # only where e^x overflows, or Arb gives up on a radius beyond 700
                assert e_hi > 700 or a.r[i] > 700, (a.m[i], a.r[i])
                continue
            assert ball.contains(e_lo.exp()) and ball.contains(e_hi.exp()), (a.m[i], a.r[i], got.m[i], got.r[i])


def test_a_ball_that_is_not_finite_stays_so():
    """Overflow is lost information: no operation may turn it back into a finite ball (Arb
    takes e^(-inf) as an exact 0; 1/inf rounds to 0)."""
    lost = fb.Balls(np.array([-np.inf, np.inf, np.nan, 1.0]), np.array([0.0, 0.0, 0.0, np.inf]))
    with np.errstate(all="ignore"):
        for got in (fb.exp(lost), fb.reciprocal(lost), lost * 0.0, lost + 1.0, fb.matmul(lost.reshape(1, 4),
                                                                                       fb.Balls(np.ones((4, 1))))):
            assert not np.any(fb.finite(got)), got


@settings(max_examples=examples(CI_DRAWS, WHY), deadline=None)
@given(m=_edge_float(), r=_edge_float().map(abs), extra=st.integers(-60, 60))
def test_arb_balls_are_enclosed(m, r, extra):
    """from_arb: an Arb ball (its midpoint beyond float64's digits) inside the float ball."""
    with precision(100):
        z = flint.arb(m) * (1 + flint.arb(2) ** -80) + flint.arb(0, r) * flint.arb(2) ** extra
        got = fb.from_arb(np.array([z], dtype=object))
        if fb.finite(got)[0]:
            assert flint.arb(got.m[0], got.r[0]).contains(z)
        else:
            assert not z.is_finite() or abs(z).upper() > HUGE / 2


@pytest.mark.parametrize("ops", [0, 1, 7, 40])
def test_up_bounds_every_value_it_promises_also_at_the_edges_of_the_floats(ops):
    """Constructed values where rounding is most hostile: zero, subnormals, the smallest normal,
    mantissas of all ones, the largest floats.  up(x, K) must be at least the real number
    x (1 + 4 (K + 2) u) + (K + 2) eta, in exact rational arithmetic (what every radius relies on)."""
    edges = [0.0, fb.ETA, 3 * fb.ETA, 1e-310, TINY, 1.0, ONES, 1e300, HUGE / 2, HUGE]
    x = np.array(edges)
    with np.errstate(over="ignore"):  # the largest floats round up to infinity, which bounds them
        got = fb.up(x, ops)
    for v, g in zip(edges, got, strict=True):
        need = Fraction(v) * (1 + 4 * (ops + 2) * Fraction(fb.U)) + (ops + 2) * Fraction(fb.ETA)
        assert g == np.inf or Fraction(float(g)) >= need
    assert float(fb.up(fb.ETA, ops)) >= (ops + 2) * fb.ETA  # a NumPy scalar, as a sum over every axis gives


def test_sums_of_many_underflowing_products_keep_their_eta_terms():
    """The worst case of a dot product among the subnormals, k = 64 terms: every product of the
    midpoint and of the radius rounds down by almost eta / 2 (0.166 x 3 eta = 0.498 eta -> 0,
    0.083 x 6 eta -> 0), so the computed sums are 0 while the products reach 96 eta; what
    counts them is the sum's own eta terms (about 11 eta from the row sum of |a.m|) and
    :func:`up`'s 73 eta for k + 6 roundings: short of 96.  Dropping the explicit 2 k eta of
    sums of products fails here."""
    k = 64
    a = fb.Balls(np.full((1, k), 0.166), np.full((1, k), 0.083))
    b = fb.Balls(np.full((k, 1), 3 * fb.ETA), np.full((k, 1), 3 * fb.ETA))
    (alo, ahi), (blo, bhi) = _hull(a), _hull(b)
    t = _times(alo[0], ahi[0], blo[:, 0], bhi[:, 0])
    lo, hi = np.array([[sum(t[0])]], dtype=object), np.array([[sum(t[1])]], dtype=object)
    _check(fb.matmul(a, b), lo, hi, "matmul", True, level=2)
    _check(fb.products(a.reshape(k, 1), b), lo[0], hi[0], "products", True, level=2)
    _check(fb.cauchy(fb.Balls(a.m.reshape(k, 1, 1), a.r.reshape(k, 1, 1)), b.reshape(k, 1, 1)), lo, hi, "cauchy", True,
           level=2)
