"""Rigorous enclosures of a witness's image in Arb ball arithmetic (``verify check``).

A ball array encloses the image of the inputs: every rounding of every operation is enclosed
(python-flint's ``arb``), and the inputs, block matrices and steps are the exact numbers the
witness writes (binary floats exactly, decimal strings in balls that contain them; the blocks'
entries and beta as :meth:`verify.model.blocks.Block.in_arb` holds them).

**Networks.** X_l = X_(l-1) + h_l F_(b_l)(X_(l-1)) evaluated directly on balls.

**Flows.**  A validated Taylor method, one step [0, h] at a time, on a set of states held in
Lohner's representation (:mod:`verify.verdicts.lohner`: x in c + A sigma + B r, which follows
the flow instead of wrapping).  With c the set's centre (exact), |x - c| <= s componentwise on
the set, and p = ORDER:

1. *One polynomial for the whole set*, T(t, x) = T(t) + U(t) (x - c), with exact
   coefficients: T from c by the Taylor recurrences in Arb, each order's ball replaced by its
   midpoint (:func:`verify.model.taylor.with_defects`), up to the order K beyond which the
   float64 series at c's float, whose error the step then bounds, costs the remainder little
   (:func:`_exact_orders`: K = 2-13 on c32a's and c32e's steps at 30 digits, where the Arb recurrence to order p was a
   sixth of a step), U the float64 tangent series at c (U_0 = I).  Its coefficients are
   numbers, not balls: a ball recurrence feeds each order's radius into the next through
   logits, weights and field, which grew the radii by about 500 per order at |x| ~ 190 while
   the coefficients grew by 6 (c32a, docs/verdicts.md).
2. *Its defect* D(t, x) = F(T(t, x)) - d/dt T(t, x), bounded at every order: below p by the
   balls the Arb recurrence dropped at c (above K, by the float-ball series along T at c)
   plus the tangent series' defect times s; from p to
   q = p + DEFECT_ORDERS by the field's series along T over the set
   (:func:`verify.model.taylor.along_given`, float64 balls: at order p in mean-value form, the
   value at c plus the derivatives over the set times s, above p by the balls over the set);
   beyond q by Cauchy's estimate on a complex disc.
3. *The remainder* |x(t) - T(t, x)| <= r by a Gronwall argument in a thin tube around T
   (:mod:`verify.verdicts.remainder`; e(0) = 0 as T(0, x) = x exactly), so that
   x(h) in T(h) + U(h) (x - c) + [-r, r] for every x in the set, with T(h) and U(h) evaluated
   in Arb: the Lohner image of the set under z + J (x - c) with J = U(h) exact.

The series over the set run in float64 balls (:mod:`verify.model.float_balls`: rigorous,
NumPy's speed, float64's width); T, its low defects and the Lohner set run in Arb at ``digits``.

Step lengths: the float64 rule proposes at most; after a step the next aims at 0.9^19 of its
allowance as the last remainder predicts it (r falls like h^19; at most twice as long); a
remainder above its allowance shortens the step by 0.9 (allowance / r)^(1/19).  The rule of
before (a quarter longer each step, at least halving on a miss) left the median remainder at
3e-4 of its allowance on c18c (docs/verdicts.md).

A duration that is not a binary float (a decimal string) is integrated to the float nearest it
and the rest, a tiny ball, is covered by a first-order step over an a-priori box (Picard: X +
[0, s] F(B) inside B). *Free durations* (the existence proof,
:func:`verify.verdicts.exact_durations.certify_control`): a free duration tau_j + sigma_j,
sigma_j in [-rho, rho], adds sigma_j F(c) to the set exactly (column j of its slope A) and the
rest, in [-rho, rho] (F(B) - F(c)) with B an a-priori box over the extra time, to its
generators: the image then lies in c + A sigma + (generators and balls) for every sigma, a
first-order Taylor model of the end point in the free durations whose nonlinearity is second
order in rho.

Verdicts (:func:`verdict`): CERTIFIED when every ball of image - target lies within the
tolerance, FAIL when one lies wholly outside, UNDECIDED otherwise (with the width).

>>> import flint, numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> from verify.model.flow import flow
>>> blocks = gaussian_blocks(0, 2)
>>> X = np.random.default_rng(1).normal(size=(1, 2, 2))
>>> ball = enclose_flow(blocks, [(0, 0.5), (1, -0.3)], X)
>>> Y = flow(blocks, [(0, 0.5), (1, -0.3)], X, dps=40).end
>>> with precision(40):  # the 40-digit image lies in the balls, which are narrow
...     inside = all(b.contains(flint.arb(str(y))) for b, y in zip(ball.end.ravel(), Y.ravel()))
>>> inside, ball.width < 1e-15
(True, True)
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

from verify.io.errors import IntegrationError
from verify.model.attention import basis_directions, columns_to_jacobians, field, jacobian
from verify.model.backend import namespace, precision, round_down, round_up, to_arb
from verify.model.blocks import Block
from verify.model.float_balls import Balls, from_arb, lift, up
from verify.model.flow import lognorms, refuse, step_size
from verify.model.network import apply_in_namespace
from verify.model.taylor import along_given_pair, coefficients, evaluate, with_defects
from verify.verdicts.lohner import LohnerSet, exact
from verify.verdicts.remainder import DEFECT_ORDERS, ORDER, lower_orders, step_remainder

DIGITS = 30  # Arb's working precision: the widths come from the remainders, not from the digits
INFLATIONS = 6  # tries at an a-priori box (a duration's decimal rest, a free duration's extra time)
MAX_STEPS = 20_000  # validated Taylor steps over the whole control
REMAINDER_DIGITS = 4  # a remainder may add 10^(4 - digits) max(1, |x|), above the rounding (10: c18c needed 60 digits)
TOO_WIDE = "the balls are too wide"  # the one failure that more digits can cure
PROGRESS_SECONDS = 8.0  # between progress lines of a long enclosure (a step more stays under 10 s)
RULE_EPS = 1e-16  # the float64 step rule's relative tolerance (as the float64 flow's): it proposes, the remainder decides
SHARE = 1e-3  # of the tolerance, for all the remainders together (before the flow amplifies them)
FLOAT_ERROR = 1e-11  # relative: float balls along T wrap to 1e-12 of a coefficient by order 18 (c32e), midpoints 1e-15
FLOAT_ORDERS_SHARE = 0.1  # of a step's allowance, at most, for T's float64 orders (else every order from Arb)


@dataclass(frozen=True)
class Enclosure:
    """``end``: object array of ``flint.arb`` balls enclosing the image (the inputs' shape);
    ``width``: the largest radius; ``steps``: validated Taylor steps (0 for networks).  With
    free durations sigma in [-radius, radius]^m: the image lies in ``centre`` + ``slope`` sigma
    + ``rest`` + ``generators`` epsilon for every sigma and some epsilon in [-1, 1]^(N, g)
    (``centre``, ``rest``: balls of the inputs' shape, ``centre`` exact; ``slope``: exact balls
    at the working precision, shape (N n d, m), rows ordered as the inputs flattened;
    ``generators``: floats (N, n d, g), sequence s's rows moved by its own epsilon_s)."""

    end: np.ndarray
    width: float
    steps: int
    centre: np.ndarray | None = None
    slope: np.ndarray | None = None
    rest: np.ndarray | None = None
    generators: np.ndarray | None = None


def _arb(v: Any) -> Any:
    import flint

    return flint.arb(float(v)) if isinstance(v, (float, int, np.floating)) else flint.arb(str(v))


def _radius(a: np.ndarray) -> float:
    return max((float(x.rad()) for x in a.ravel()), default=0.0)


def enclose_network(blocks: Sequence[Block], layers: Sequence[tuple[int, Any]], X: Any,
                    digits: int = DIGITS, free: Sequence[int] = (), radius: float = 0.0,
                    deadline: float = math.inf, progress: Callable[[str], None] | None = None) -> Enclosure:
    """The network's image in balls (see the module docstring); with ``free`` layer indices,
    every free step h_j + sigma_j, |sigma_j| <= ``radius``, in a Lohner set
    (:func:`enclose_network_set`)."""
    if free:
        return enclose_network_set(blocks, layers, X, digits, free, radius, deadline, progress)
    with precision(digits):
        xp = namespace("arb")
        balls = [blk.in_arb() for blk in blocks]  # the entries as written, enclosed
        end = apply_in_namespace(balls, [(b, _arb(h)) for b, h in layers], xp.asarray(X), False).end
        if not all(x.is_finite() for x in end.ravel()):
            raise IntegrationError(f"the network's image is not finite in ball arithmetic: {TOO_WIDE}, or its steps "
                                  "too large")
        return Enclosure(end=end, width=_radius(end), steps=0)


def enclose_network_set(blocks: Sequence[Block], layers: Sequence[tuple[int, Any]], X: Any, digits: int = DIGITS,
                        free: Sequence[int] = (), radius: float = 0.0, deadline: float = math.inf,
                        progress: Callable[[str], None] | None = None) -> Enclosure:
    """The network's image as a first-order Taylor model in the free steps, carried layer by
    layer in a Lohner set (:mod:`verify.verdicts.lohner`) instead of plain balls, whose
    dependency wraps through hundreds of layers.  A layer y = x + h F(x) over the set
    (centre c, box X) is z + J (x - c) with z = c + h F(c) in Arb and J = I + h DF(X) enclosed
    over the box in Arb (a float64 J's relative 1e-16 times the slope, first order in rho, put
    K(B) at 5000 radii on an m = 64 network of 384 layers); a free
    layer's step h + sigma_j adds sigma_j F(c) to column j of the slope and
    [-rho, rho] (F(X) - F(c)) to the balls, as a free duration does in :func:`enclose_flow`.
    Then the image lies in ``centre`` + ``slope`` sigma + ``rest`` for every sigma in the cube."""
    import flint

    column = {int(k): j for j, k in enumerate(free)}
    started = told = time.perf_counter()
    with precision(digits), np.errstate(all="ignore"):
        xp = namespace("arb")
        balls = [blk.in_arb() for blk in blocks]
        X0 = xp.asarray(X)
        N, n, d = X0.shape
        eye = xp.asarray(np.eye(n * d))
        held = LohnerSet.around(xp.reshape(X0, (N, n * d)), len(column), radius)
        for k, (b, h) in enumerate(layers):
            step = _arb(h)
            c = xp.reshape(held.centre, (N, n, d))
            box = xp.reshape(held.box(), (N, n, d))
            Fc = field(balls[b], c)
            J = step * jacobian(balls[b], box) + eye  # in Arb: J multiplies the slope, whose rounding stays first order in rho
            if not all(v.is_finite() for v in J.ravel()):
                raise IntegrationError(f"layer {k + 1} of {len(layers)}: the Jacobian over the set is not finite: "
                                       f"{TOO_WIDE}, or the steps too large")
            held = held.image(xp.reshape(c + step * Fc, (N, n * d)), J)
            if k in column:
                moved = flint.arb(0, radius) * (field(balls[b], box) - Fc)
                held = held.plus_slope(column[k], xp.reshape(Fc, (N, n * d))).plus(xp.reshape(moved, (N, n * d)))
            if time.perf_counter() > deadline:
                raise IntegrationError(f"the enclosure stopped at the deadline after {k + 1} of {len(layers)} layers")
            if progress and time.perf_counter() - told > PROGRESS_SECONDS:
                told = time.perf_counter()
                progress(f"certify: layer {k + 1} of {len(layers)} in a Lohner set, {told - started:.0f} s")
        end = xp.reshape(held.box(), (N, n, d))
        if not all(x.is_finite() for x in end.ravel()):
            raise IntegrationError(f"the network's image is not finite in ball arithmetic: {TOO_WIDE}")
        return Enclosure(end=end, width=_radius(end), steps=0, centre=xp.reshape(held.centre, (N, n, d)),
                         slope=held.slope.reshape(N * n * d, -1), rest=xp.reshape(held.boxed(), (N, n, d)),
                         generators=held.generators)


def _inflate(B: np.ndarray) -> np.ndarray:
    """Each ball with twice its radius plus a little (relative 10^(5 - digits) of its midpoint,
    and 1e-30): no more, as a decimal duration's rest times the box's width enters the
    enclosure (the relative 1e-12 of before was far above the rounding at 50 digits)."""
    import flint

    little = 10.0 ** (5 - flint.ctx.dps)
    return np.vectorize(lambda b: flint.arb(b.mid(), 2 * b.rad() + little * abs(b.mid()) + 1e-30), otypes=[object])(B)


def _inside(inner: np.ndarray, outer: np.ndarray) -> bool:
    return all(o.contains_interior(i) for i, o in zip(inner.ravel(), outer.ravel(), strict=True))


def _signed(h: Fraction, sign: int) -> Any:
    """sign * h as a ball holding it exactly (h is a binary rational)."""
    import flint

    return sign * flint.arb(h.numerator) / h.denominator


def enclose_flow(blocks: Sequence[Block], control: Sequence[tuple[int, Any]], X: Any, digits: int = DIGITS,
                 max_steps: int = MAX_STEPS, deadline: float = math.inf, tolerance: float | None = None,
                 share: float | Sequence[float] = SHARE, free: Sequence[int] = (), radius: float = 0.0,
                 progress: Callable[[str], None] | None = None) -> Enclosure:
    """The flow's image in balls (see the module docstring).  Durations that are not binary
    floats (decimal strings) are integrated to the float nearest them and the rest, a ball of
    at most a unit of the working precision, is covered by one first-order step over it.

    Each step's remainder may add 10^(10 - digits) max(1, |x|) or, with ``tolerance`` (the
    width the enclosure is for), the larger share tolerance h / (total duration): the
    remainders together take ``share`` of the tolerance before the flow amplifies them (the
    Lohner set carries them with the flow's Jacobians); the remainder falls like h^19, so a
    thousandfold smaller share costs 1.44x more steps.  ``share`` may be given per control step:
    a flow amplifies a remainder made early far more than one made late (c18c of
    docs/verdicts.md: 6e7 at its start, below 4e3 over its second half), and a step whose
    remainder is amplified less may leave a larger one.

    With ``free`` step indices and a ``radius`` rho, every free duration may lie anywhere
    within rho of the one written: the balls enclose the image for every such choice, and
    ``centre``, ``slope`` and ``rest`` describe it as a first-order Taylor model in the free
    durations (module docstring).

    ``progress`` hears of the validated steps every PROGRESS_SECONDS."""
    import flint

    started = told = time.perf_counter()
    count = 0
    total = sum(abs(float(_arb(t).mid())) for _, t in control) or 1.0
    shares = np.broadcast_to(np.asarray(share, dtype=float), (len(control),))
    rates = np.zeros(len(control)) if tolerance is None else shares * tolerance / total  # remainder per unit of duration
    column = {int(k): j for j, k in enumerate(free)}
    # float balls that overflow become infinite or NaN, which every test below refuses: no warnings
    with precision(digits), np.errstate(all="ignore"):
        xp = namespace("arb")
        balls = [blk.in_arb() for blk in blocks]  # the entries as written, enclosed; blocks guide the steps
        X0 = xp.asarray(X)
        N, n, d = X0.shape
        held = LohnerSet.around(xp.reshape(X0, (N, n * d)), len(column), radius)
        fb = namespace("fball")
        fast = [_in_float_balls(blk) for blk in balls]  # the same enclosed entries, as float64 balls
        guides = [dataclasses.replace(f, Q=f.Q.m, K=f.K.m, V=f.V.m, beta=float(f.beta.m)) for f in fast]  # their midpoints
        directions = basis_directions(fb, n, d)
        for k, (b, tau) in enumerate(control):
            exact = _arb(tau)
            f = float(exact.mid())
            sign = 1 if f >= 0 else -1
            left = Fraction(abs(f))  # exact: the steps add up to the duration without rounding
            grow = math.inf  # the next step's length as the last one's remainder predicts it (none yet)
            while left > 0:
                c = xp.reshape(held.centre, (N, n, d))
                box, centre = from_arb(xp.reshape(held.box(), (N, n, d))), from_arb(c)
                # |x - c| on the set, about c itself (c may lie outside the set's box: it rounds the last centre)
                spread = up(np.abs(box.m - centre.m) + box.r + centre.r, 3).reshape(N, n * d)
                floor = 10.0 ** (REMAINDER_DIGITS - digits) * max(1.0, float(np.max(np.abs(centre.m))))
                exact_orders = None  # T's orders from the Arb recurrence: chosen from the float64 series first
                while True:
                    polynomial = _polynomial(balls[b], guides[b], c, centre, spread, directions, exact_orders,
                                             (float(left), grow, rates[k], floor))
                    # at the centre, and over the set with tangents, centred alike as the mean-value forms combine them
                    sc, sb = along_given_pair(fast[b], polynomial.at_centre, polynomial.on_set, ORDER + DEFECT_ORDERS + 1,
                                              polynomial.tangents)
                    rule = _rule(lognorms([sc["X"][k].m for k in range(ORDER + 1)]))  # the centre's coefficients guide
                    # no limit (the centre's coefficients all vanish: V = 0, tokens at 0, or underflow): the whole
                    # remaining duration, which the remainder's bound then accepts or shortens
                    limit = min(grow, rule)
                    h = min(left, Fraction(limit)) if math.isfinite(limit) else left
                    low = lower_orders(polynomial.all_defects(sc), sb, polynomial.tangents, spread)
                    K = len(polynomial.defects)  # D_K.. come from the float balls along T: T's float64 orders
                    H = float(h)
                    taken = float(np.max(np.tensordot(H ** np.arange(K + 1, ORDER + 1) / np.arange(K + 1, ORDER + 1),
                                                      low[0][K:], axes=1))) if K < ORDER else 0.0
                    if taken <= FLOAT_ORDERS_SHARE * max(floor, rates[k] * H):
                        break
                    exact_orders = ORDER  # the float64 orders took more of the allowance than they may: T from Arb
                while True:
                    allowed = max(floor, rates[k] * float(h))
                    remainder, h, counted = step_remainder(fast[b], sc, sb, spread, h, sign, allowed, low)
                    if remainder is not None:
                        break
                    if h < 1e-12 * max(1.0, abs(f)):
                        raise IntegrationError(f"no validated step for block {b} (duration {f:g}) "
                                               f"after {count} validated steps; {TOO_WIDE}")
                t = _signed(h, sign)
                # x(h) in T(h) + J (x - c) + [-r, r]; where the set has no slope and r = 0, J moves only float
                # generators and float balls enclose it (evaluated in Arb, U(h) took a twentieth of a step)
                if not column and held.r_zero():
                    J = columns_to_jacobians(fb, evaluate(polynomial.tangents, sign * lift(h)))
                else:
                    J = columns_to_jacobians(xp, evaluate(polynomial.exact_tangents(), t))
                rests = np.array([flint.arb(0, r) for r in remainder], dtype=object)[:, None]
                held = held.image(xp.reshape(evaluate(polynomial.exact, t), (N, n * d)) + rests, J)
                # r falls like h^(p+1): the next step is 0.9 of the length that meets its allowance, at most twice this one
                grow = float(h) * min(2.0, 0.9 * (allowed / max(counted, 1e-300)) ** (1 / (ORDER + 1)))
                left, count = left - h, count + 1
                if progress and time.perf_counter() - told > PROGRESS_SECONDS:
                    told = time.perf_counter()
                    progress(f"certify: {count} validated Taylor steps, control step {k + 1} of {len(control)}, "
                             f"{told - started:.0f} s")
                refuse(float(np.max(np.abs(centre.m))), count, float(left) / rule, max_steps, deadline,
                       f"at control step {k + 1} of {len(control)} after {count} validated Taylor steps")
            rest = exact - flint.arb(f)  # a decimal duration's distance from its float (a ball)
            if not rest.is_zero():
                Xb = xp.reshape(held.box(), (N, n, d))
                moved = rest * field(balls[b], _apriori(balls[b], Xb, rest))
                held = held.plus(xp.reshape(moved, (N, n * d)))
            if k in column:
                c, Xb = xp.reshape(held.centre, (N, n, d)), xp.reshape(held.box(), (N, n, d))
                Fc = field(balls[b], c)
                moved = flint.arb(0, radius) * (field(balls[b], _apriori(balls[b], Xb, flint.arb(0, radius))) - Fc)
                held = held.plus_slope(column[k], xp.reshape(Fc, (N, n * d))).plus(xp.reshape(moved, (N, n * d)))
        end = xp.reshape(held.box(), (N, n, d))
        if not column:
            return Enclosure(end=end, width=_radius(end), steps=count)
        return Enclosure(end=end, width=_radius(end), steps=count, centre=xp.reshape(held.centre, (N, n, d)),
                         slope=held.slope.reshape(N * n * d, -1), rest=xp.reshape(held.boxed(), (N, n, d)),
                         generators=held.generators)


@dataclass(frozen=True)
class _Polynomial:
    """T(t, x) = T(t) + U(t) (x - c), one validated step's polynomial over the set: ``exact``
    T_0..T_p (Arb, exact; T_0 = c), ``defects`` D_0..D_(p-1) of T at c (float balls),
    ``at_centre`` T_k as float balls, ``on_set`` T_k + U_k (x - c) over the set and ``tangents``
    U_0..U_p (float balls of radius 0: exact floats, (n d, N, n, d), U_0 the unit directions)."""

    exact: list
    defects: list
    at_centre: list
    on_set: list
    tangents: list

    def exact_tangents(self) -> list:
        """U_0..U_p as exact Arb balls."""
        return [exact(Uk.m) for Uk in self.tangents]

    def all_defects(self, sc: Any) -> list:
        """D_0..D_(p-1): ``defects`` (T's orders from Arb), then F_k - (k + 1) T_(k+1) with F_k
        from the float-ball series along T at the centre, ``sc``."""
        K = len(self.defects)
        return self.defects + [sc["F"][k] - (k + 1) * self.at_centre[k + 1] for k in range(K, len(self.exact) - 1)]


def _rule(logs: np.ndarray) -> float:
    """The float64 step rule's length for a series whose coefficients' log norms are ``logs``
    (:func:`verify.model.flow.lognorms`, :func:`verify.model.flow.step_size`)."""
    return float(step_size(logs, ORDER, math.log(RULE_EPS) + max(0.0, logs[0])))


def _exact_orders(X: list, left: float, grow: float, rate: float, floor: float) -> int:
    """How many orders K of T to take from the Arb recurrence, the rest being the float64
    series X at the centre's float: T_k then errs by about FLOAT_ERROR |X_k|, which adds about
    FLOAT_ERROR sum_(k>K) |X_k| h^k to the step's remainder (through its defect D_(k-1), times
    h^k / k); K is the least order at which that stays below a tenth of FLOAT_ORDERS_SHARE of
    the allowance, at the length the float64 rule proposes (ORDER where none: every order)."""
    logs = lognorms(X)
    h = min(left, grow, _rule(logs))
    if not 0 < h < math.inf:
        return ORDER
    with np.errstate(all="ignore"):
        tail = np.cumsum((FLOAT_ERROR * np.exp(logs + np.arange(ORDER + 1) * math.log(h)))[::-1])[::-1]  # sum_(j>=k)
    fits = np.nonzero(tail[2:] <= FLOAT_ORDERS_SHARE / 10 * max(floor, rate * h))[0]  # K with sum_(j>K) small, K >= 1
    return int(fits[0]) + 1 if fits.size else ORDER


def _polynomial(block: Block, guide: Block, c: np.ndarray, centre: Balls, spread: np.ndarray,
                directions: Balls, exact_orders: int | None = None,
                step: tuple[float, float, float, float] | None = None) -> _Polynomial:
    """The step's polynomial (:class:`_Polynomial`): T from the centre c by
    :func:`verify.model.taylor.with_defects` in Arb (``block``: the entries as written) to
    order ``exact_orders`` K (by default as :func:`_exact_orders` chooses for ``step``: the
    duration left, the last step's forecast, the allowance per unit of duration and its floor;
    with neither, every order), above K the float64 series at c's float; U the float64 tangent
    series at c's float (``guide``: any T_k above K and any U will do, as T(t, x)'s defect is
    bounded whatever they are), and T_k + U_k (x - c) for |x - c| <= ``spread`` (N, n d).
    ``defects`` then holds D_0..D_(K-1) only: the rest come from the series along T."""
    N, n, d = centre.shape
    X, tangents = coefficients(guide, centre.m, ORDER, U=directions.m)
    K = exact_orders if exact_orders is not None else ORDER if step is None else _exact_orders(X, *step)
    T, D = with_defects(block, c, K)
    T = T + [exact(Xk) for Xk in X[K + 1:]]
    at_centre = [from_arb(Tk) for Tk in T]
    on_set = []
    for Tk, Uk in zip(at_centre, tangents, strict=True):
        moved = up(np.einsum("isj,si->sj", np.abs(Uk).reshape(n * d, N, -1), spread), n * d + 2).reshape(N, n, d)
        on_set.append(Balls(Tk.m, up(Tk.r + moved, 1)))
    return _Polynomial(exact=T, defects=[from_arb(Dk) for Dk in D],
                       at_centre=at_centre, on_set=on_set, tangents=[Balls(Uk) for Uk in tangents])


def _in_float_balls(block: Block) -> Block:
    """The block with its Arb entries (and beta) as float64 balls that contain them."""
    return dataclasses.replace(block, Q=from_arb(block.Q), K=from_arb(block.K), V=from_arb(block.V),
                               beta=from_arb(block.beta))


def _apriori(block: Block, X: np.ndarray, span: Any) -> np.ndarray:
    """A box B holding x(s) for every x in the box X and every |s| <= |span| (a ball): Picard's
    X + [-|span|, |span|] F(B) inside B, B found by inflating."""
    import flint

    T = flint.arb(0, round_up(abs(span).upper()))  # rounded up: the box must cover every |s| <= |span|
    B = _inflate(X + T * field(block, X))  # the first guess holds the motion from X's own field
    for _ in range(INFLATIONS):
        candidate = X + T * field(block, B)
        if _inside(candidate, B):
            return B
        B = _inflate(candidate)
    raise IntegrationError(f"no a-priori enclosure over a duration's rest or a free duration's range; {TOO_WIDE}")


def verdict(enclosure: Enclosure, targets: Any, tolerance: Any, digits: int = DIGITS) -> dict[str, Any]:
    """CERTIFIED, FAIL or UNDECIDED for max |image - target| <= tolerance (module docstring),
    the targets and the tolerance taken exactly as written (decimal strings in balls that hold
    them); with ``error_upper`` (a rigorous upper bound of max |image - target|) and ``width``."""
    with precision(digits):
        T = namespace("arb").asarray(targets)
        tol = to_arb(tolerance)
        gaps = [abs(e - t) for e, t in zip(enclosure.end.ravel(), T.ravel(), strict=True)]
        upper = max(round_up(g.upper()) for g in gaps)  # rounded up: a float never understates the bound
        lower = max(max(0.0, round_down(g.lower())) for g in gaps)
        inside = all(g <= tol for g in gaps)  # Arb's comparisons hold for every point of the balls
        outside = any(g > tol for g in gaps)
    word = "CERTIFIED" if inside else "FAIL" if outside else "UNDECIDED"
    return {"verdict": word, "certified": word == "CERTIFIED", "error_upper": upper, "error_lower": lower,
            "width": enclosure.width,
            "gap_width": max(float(g.rad()) for g in gaps), "validated_steps": enclosure.steps}
