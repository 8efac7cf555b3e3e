"""Rigorous enclosures of a witness's image in Arb ball arithmetic (``verify check``).

A ball array encloses the image of the inputs: every rounding of every operation is enclosed
(python-flint's ``arb``), and the inputs, block matrices and steps are the exact numbers the
witness writes (binary floats exactly, decimal strings in balls that contain them; the blocks'
entries and beta as :meth:`verify.model.blocks.Block.in_arb` holds them).

**Networks.** X_l = X_(l-1) + h_l F_(b_l)(X_(l-1)) evaluated directly on balls.

**Flows.** A validated Taylor method, one step [0, h] at a time, on a set of states held in
Lohner's representation (:mod:`verify.verdicts.lohner`: x in c + A sigma + B r, which follows
the flow instead of wrapping).  With c the set's centre (exact), X a box about c that holds
the set, |x - c| <= s componentwise, and p = ORDER:

1. *The Taylor polynomial* T_x(t) = sum_(k<=p) X_k(x) t^k of the trajectory through each x in
   X (the recurrences of :mod:`verify.model.taylor`).
2. *Its defect* D(t) = F(T_x(t)) - T_x'(t) = sum_(k>=p) F_k t^k, where F_k are the Taylor
   coefficients of t -> F(T_x(t)) (:func:`verify.model.taylor.along_polynomial`): computed for
   p <= k <= q = p + DEFECT_ORDERS, and beyond q bounded by Cauchy's estimate |F_k| <= M / rho^k
   on a complex disc |t| <= rho.  There T_x(t) is complex and the centred logits move by at
   most Delta_ij = sum_k |L_k,ij| rho^k from their values at t = 0 (a polynomial of degree 2p),
   so the real part of every softmax denominator is at least sum_j E_ij Re e^(delta_ij) with
   Re e^delta >= e^(-Delta) cos Delta (Delta < pi/2) or >= -e^Delta, the weights are at most
   E_ij e^(Delta_ij) / that where it is positive, and M = max over the disc of |F(T_x(t))| is at
   most |V a| + sum_j |P_ij| sum_k |V (X_k,j - a)| rho^k, componentwise (a: each sequence's
   anchor, its mean token; the weights sum to 1).  So for |t| <= h < rho,

       |D(t)| <= g |t|^p,   g = sum_(k=p..q) |F_k| h^(k-p) + M h^(q+1-p) / (rho^(q+1) (1 - h/rho)).

   The disc is the best of a few (:func:`_remainder`); logits of tokens hardly attended to may
   move far without costing much.
3. *The remainder* (a Gronwall argument per sequence): the error e = x(t) - T_x(t) has
   e' = F(x) - F(T_x) + D, so while x stays in the tube U = {T_x(t) + [-cap, cap]} (L: the
   largest row sum of |DF| over U, a bound of F's Lipschitz constant in the max-norm there),
   |e(t)| <= g |t|^(p+1) / (p+1) e^(L |t|) =: r.  If r < cap, x never leaves the tube (the
   bound holds on [0, h] by continuity), and x(h) lies in T_x(h) + [-r, r].  The tube is
   enclosed piece by piece in t (:func:`_tube`).  Unlike an a-priori box with interval Taylor
   coefficients of order p + 1 (whose overestimate, about 1e20 at order 21, kept the steps
   near 0.01), this costs the real coefficients of the defect and a bound of the field on a
   disc, so the steps are about as long as the float64 flow's.
4. *Every bound in mean-value form*: |F_k|, |L_k| and |V X_k| over the set are their values
   at c plus sum_i |d/dx_i| s_i with the derivatives over X (:func:`_centred`; evaluated on X
   directly, the recurrences widen X by about 10 per order), and the step is
   x(h) in T_c(h) + J (x - c) + [-r, r] with J = DT over X (Lohner 1987), whose Lohner image
   is the next set.

The heavy parts (the recurrences with n d tangents over X, the bounds of steps 2-3) run in
float64 balls (:mod:`verify.model.float_balls`: rigorous, NumPy's speed, float64's width); the
centre's Taylor step T_c(h) and the Lohner set run in Arb at ``digits``.

A duration that is not a binary float (a decimal string) is integrated to the float nearest it
and the rest, a tiny ball, is covered by a first-order step over an a-priori box (Picard:
X + [0, s] F(B) inside B).  *Free durations* (the existence proof,
:func:`verify.verdicts.krawczyk.certify_control`): a free duration tau_j + sigma_j, sigma_j
in [-rho, rho], adds sigma_j F(c) to the set exactly (column j of its slope A) and the rest,
in [-rho, rho] (F(B) - F(c)) with B an a-priori box over the extra time, to its balls: the
image then lies in c + A sigma + (balls) for every sigma, a first-order Taylor model of the
end point in the free durations whose nonlinearity is second order in rho.

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
from verify.model.attention import basis_directions, beta_in, columns_to_jacobians, field, jacobian
from verify.model.backend import namespace, precision, round_down, round_up, to_arb
from verify.model.blocks import Block
from verify.model.float_balls import ETA, Balls, U, from_arb, up
from verify.model.flow import lognorms, refuse, step_size
from verify.model.network import apply_in_namespace
from verify.model.taylor import along_polynomial, centred, coefficients, evaluate
from verify.verdicts.lohner import LohnerSet

ORDER = 18  # Taylor order p of the validated steps
DEFECT_ORDERS = 10  # the defect's coefficients are computed to order q = p + this, the rest bounded by Cauchy
DIGITS = 30  # Arb's working precision: the widths come from the remainders, not from the digits
INFLATIONS = 6  # tries at an a-priori box (a duration's decimal rest, a free duration's extra time)
MAX_STEPS = 20_000  # validated Taylor steps over the whole control
REMAINDER_DIGITS = 10  # a step's remainder may add 10^(10 - digits) max(1, |x|): well above the rounding
TOO_WIDE = "the balls are too wide"  # the one failure that more digits can cure
PROGRESS_SECONDS = 10.0  # between progress lines of a long enclosure
LOGIT_MOVE = 1.2  # the first disc tried: no logit moves by more than this (< pi/2, so every denominator is bounded)
FAINT = 0.1  # ... unless its weight stays below FAINT / n: such weights cost the denominators at most FAINT
DISCS = 9  # discs tried, each sqrt 2 wider, while the remainder's bound improves
MAX_RATIO = 0.8  # h / rho: the tail of Cauchy's estimate is a geometric series in h / rho
PIECES = 8  # the tube around T_x(t), t in [0, h], is enclosed piece by piece
TUBE = 1e-8  # the tube's radius around the Taylor polynomial, relative to max(1, |x|): the remainders are far below
RULE_EPS = 1e-16  # the float64 step rule's relative tolerance (as the float64 flow's): it proposes, the remainder decides
SHARE = 1e-3  # of the tolerance, for all the remainders together (before the flow amplifies them)


@dataclass(frozen=True)
class Enclosure:
    """``end``: object array of ``flint.arb`` balls enclosing the image (the inputs' shape);
    ``width``: the largest radius; ``steps``: validated Taylor steps (0 for networks).  With
    free durations sigma in [-radius, radius]^m: the image lies in ``centre`` + ``slope`` sigma
    + ``rest`` for every sigma (``centre``, ``rest``: balls of the inputs' shape, ``centre``
    exact; ``slope``: floats, shape (N n d, m), rows ordered as the inputs flattened)."""

    end: np.ndarray
    width: float
    steps: int
    centre: np.ndarray | None = None
    slope: np.ndarray | None = None
    rest: np.ndarray | None = None


def _arb(v: Any) -> Any:
    import flint

    return flint.arb(float(v)) if isinstance(v, (float, int, np.floating)) else flint.arb(str(v))


def _radius(a: np.ndarray) -> float:
    return max((float(x.rad()) for x in a.ravel()), default=0.0)


def enclose_network(blocks: Sequence[Block], layers: Sequence[tuple[int, Any]], X: Any,
                    digits: int = DIGITS) -> Enclosure:
    """The network's image in balls (see the module docstring)."""
    with precision(digits):
        xp = namespace("arb")
        balls = [blk.in_arb() for blk in blocks]  # the entries as written, enclosed
        end = apply_in_namespace(balls, [(b, _arb(h)) for b, h in layers], xp.asarray(X), False).end
        if not all(x.is_finite() for x in end.ravel()):
            raise IntegrationError(f"the network's image is not finite in ball arithmetic: {TOO_WIDE}, or its steps "
                                  "too large")
        return Enclosure(end=end, width=_radius(end), steps=0)


def _inflate(B: np.ndarray) -> np.ndarray:
    """Each ball with twice its radius plus a little (relative 1e-12 of its midpoint, and 1e-30)."""
    import flint

    return np.vectorize(lambda b: flint.arb(b.mid(), 2 * b.rad() + 1e-12 * abs(b.mid()) + 1e-30), otypes=[object])(B)


def _inside(inner: np.ndarray, outer: np.ndarray) -> bool:
    return all(o.contains_interior(i) for i, o in zip(inner.ravel(), outer.ravel(), strict=True))


def _hi(a: Balls) -> np.ndarray:
    """Floats at or above |x| for every x in the balls."""
    return up(np.abs(a.m) + a.r, 1)


def _down(x: np.ndarray, ops: int) -> np.ndarray:
    """A lower bound of the exact value of a nonnegative expression evaluated in float64 with at
    most ``ops`` roundings (the counterpart of :func:`verify.model.float_balls.up`)."""
    return np.maximum(np.nextafter(x * (1.0 - 4.0 * (ops + 2) * U) - (ops + 2) * ETA, -np.inf), 0.0)


def _powers(rho: float, k: int) -> np.ndarray:
    """Upper bounds of rho^1 .. rho^k (rho >= 0), each by at most k roundings."""
    return up(np.cumprod(np.full(k, rho)), k)


def _disc(moves: np.ndarray, on: np.ndarray, weights: np.ndarray) -> float:
    """The largest rho (to 1e-9 relative, at most 1e6) on which every unmasked logit either moves
    by less than LOGIT_MOVE (sum_k |L_k| rho^k) or keeps its weight E_ij e^(Delta_ij) below
    FAINT / n (``weights``: upper bounds of E_0): this only chooses the disc; the bound checks
    what it needs.  A token hardly attended to (E ~ 1e-300) may have a logit that moves at
    rates of thousands while the field does not notice (c32a, docs/verdicts.md: a disc of 2.5e-4
    where float64 steps 0.2)."""
    powers = np.arange(1, len(moves) + 1)
    faint = np.log(FAINT / weights.shape[-1]) - np.log(np.maximum(weights, 1e-300))  # Delta allowed by the weight
    allowed = np.where(on, np.maximum(LOGIT_MOVE, faint), np.inf)

    def fits(rho: float) -> bool:
        return bool(np.all(np.tensordot(rho ** powers, moves, axes=1) < allowed))

    lo, hi = 0.0, 1.0
    while hi < 1e6 and fits(hi):
        lo, hi = hi, 2 * hi
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


def _centred(at_centre: Balls, tangent: Balls, spread: np.ndarray) -> np.ndarray:
    """Upper bounds of |f(x)| for x in the set from f at its centre c and the derivative of f
    over the box in the n d unit directions (``tangent``: (n d, N, ...)), |x - c| <= ``spread``
    (N, n d) componentwise: |f(c)| + sum_i |df_i| spread_i (the mean-value form; evaluating
    f on the box instead multiplies the box's width by about 10 per Taylor order)."""
    N, nd = spread.shape
    sizes = _hi(tangent).reshape(nd, N, -1)
    dev = up(np.einsum("isk,si->sk", sizes, spread), nd + 2).reshape(at_centre.shape)
    return up(_hi(at_centre) + dev, 1)


def _logit_moves(block: Block, sc: Any, sb: Any, spread: np.ndarray, p: int) -> np.ndarray:
    """Upper bounds of |L_k| (k = 1..2p) of the centred logits along T_x for every x in the set,
    (2p, N, n, n): the series ``sc`` at the centre and ``sb`` over the box with tangents, both
    centred on the same entries (:func:`verify.model.taylor.centred`), and above their order
    L_k = beta sum_j (Q X_j)(K X_(k-j))^T directly (T has degree p, so the logits have degree 2p)."""
    xp = namespace("fball")
    beta = beta_in(block, xp)
    known = sb["L"].shape[0]
    out = []
    for k in range(1, 2 * p + 1):
        if k < known:
            L, dL = sc["L"][k], sb["dL"][k]
        else:
            lo, hi = k - p, p  # both factors vanish above order p

            def product(A: Any, B: Any, k: int = k, lo: int = lo, hi: int = hi) -> Any:
                return xp.cauchy(A[lo: hi + 1], B[k - lo: k - hi - 1: -1])

            L = centred(xp, beta * product(sc["QX"], sc["KXt"]), sc["P"][0], sc.dominant)
            dL = beta * (product(sb["dQX"], sb["KXt"][:, None]) + product(sb["QX"][:, None], sb["dKXt"]))
            dL = centred(xp, dL, sb["P"][0], sb.dominant)
        out.append(_centred(L, dL, spread))
    return np.stack(out)


def _damping(delta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For upper bounds Delta of |delta| (delta complex): lower bounds of Re e^delta (e^(-Delta)
    cos Delta where Delta < pi/2, else -e^Delta) and upper bounds of |e^delta| <= e^Delta, in Arb."""
    import flint

    def pair(v: float) -> tuple[float, float]:
        D = flint.arb(v)
        low = (-D).exp() * D.cos() if D < flint.arb.pi() / 2 else -D.exp()
        return float(low.lower()), float(D.exp().upper())

    low, high = np.vectorize(pair, otypes=[float, float])(delta) if delta.size else (delta, delta)
    return np.nextafter(low, -np.inf), np.nextafter(high, np.inf)  # float() of Arb's ends rounds to nearest


def _field_on_disc(E0: Balls, moves: np.ndarray, values: list, va: Balls, on: np.ndarray,
                   rho: float) -> np.ndarray | None:
    """Upper bounds M (N, n, d) of |F(T_x(t))| for complex |t| <= rho (module docstring, step 2),
    or None where a softmax denominator may vanish there; ``values``: upper bounds of
    |V (X_k - a)| (a: the series' anchor, so only k = 0 differs from |V X_k|), k = 0..p, ``va``:
    V a (F = V a + sum_j P_ij V (x_j - a), :func:`verify.model.taylor._recur`).  Every logit
    moves by at most Delta from t = 0; a weight that stays far from the others may move much
    more than pi/2 and only costs the denominator E_ij e^Delta: the largest useful disc is not
    limited by the logits of tokens that are hardly attended to."""
    n, p = E0.shape[-1], len(values) - 1
    delta = np.where(on, up(np.tensordot(_powers(rho, len(moves)), moves, axes=1), 2 * len(moves) + 2), 0.0)
    damp, grow = _damping(delta)
    E0_low = np.maximum(np.nextafter(E0.m - E0.r, -np.inf), 0.0)
    gain = _down(np.sum(E0_low * np.maximum(damp, 0.0), axis=-1, keepdims=True), n + 2)
    loss = up(np.sum(_hi(E0) * np.maximum(-damp, 0.0), axis=-1, keepdims=True), n + 2)
    low = np.nextafter(gain - loss, -np.inf)  # the denominators' real parts, at least
    if not np.all(low > 0):
        return None
    weights = up(_hi(E0) * grow / low, 3)  # |P_ij| on the disc
    on_disc = up(np.tensordot(np.concatenate([[1.0], _powers(rho, p)]), np.stack(values), axes=1), 3 * p + 4)
    return up(np.matmul(weights, on_disc) + _hi(va), n + 3)


def _remainder(block: Block, sc: Any, sb: Any, spread: np.ndarray, h: Fraction, sign: int,
               eps: float) -> tuple[Any, Fraction]:
    """The remainder of one validated Taylor step of length h (an exact binary rational: the
    steps must add up to the duration exactly) for every x in the set (module docstring, steps
    2 and 3), from the series ``sc`` of :func:`verify.model.taylor.along_polynomial` at its
    centre and ``sb`` over its box with tangents (float balls, :mod:`verify.model.float_balls`)
    and the set's ``spread`` about the centre: (r, an upper bound per sequence (N,), h), or
    (None, a shorter h to try) where r exceeds ``eps`` or no disc gives a bound.  Every number
    is an upper bound evaluated in float64 with its roundings counted
    (:func:`verify.model.float_balls.up`), or a lower bound where it divides.  The disc is the
    best of DISCS radii from the one where no logit moves by more than LOGIT_MOVE, growing by
    sqrt 2, while the bound improves."""
    p, q = ORDER, ORDER + DEFECT_ORDERS
    box = sb["X"][0]
    N, n, d = box.shape
    on = np.broadcast_to(np.tril(np.ones((n, n), bool)) if block.causal else np.ones((n, n), bool), (N, n, n))
    moves = _logit_moves(block, sc, sb, spread, p)  # masked entries never weigh: their E_0 is exactly 0
    values = [_centred(sc["VX"][k], sb["dVX"][k], spread) for k in range(p + 1)]
    H = float(h) if Fraction(float(h)) == h else float(np.nextafter(float(h), np.inf))  # at least h
    F = np.stack([_centred(sc["F"][k], sb["dF"][k], spread) for k in range(p, q + 1)])
    near = up(np.tensordot(np.concatenate([[1.0], _powers(H, q - p)]), F, axes=1), 3 * (q - p) + 4).reshape(N, -1)
    g, rho = None, _disc(moves, on, _hi(sb["E"][0]))
    for _ in range(DISCS):
        M = _field_on_disc(sb["E"][0], moves, values, sc.va, on, rho) if rho > H / MAX_RATIO else None
        if M is not None:
            rho_low = _down(np.cumprod(np.full(q + 1, rho))[-1], q + 1)
            tail = up(_powers(H, q + 1 - p)[-1] / _down(rho_low * _down(1.0 - up(np.array(H / rho), 1), 1), 1), 2)
            candidate = np.max(up(near + M.reshape(N, -1) * tail, 3), axis=1)  # per sequence
            if g is not None and np.max(candidate) >= np.max(g):
                break
            g = candidate
        rho *= math.sqrt(2)
    if g is None:
        return None, _shorter(h, 0.5)
    cap = TUBE * max(1.0, float(np.max(_hi(box))))
    J = jacobian(block, _tube(sb, p, sign, H, cap).reshape(PIECES * N, n, d))
    L = np.max(up(np.sum(_hi(J), axis=2), n * d + 2).reshape(PIECES, N, -1), axis=(0, 2))  # per sequence: |DF|'s rows
    r = up(g * _powers(H, p + 1)[-1] / (p + 1) * _exp_up(up(L * H, 1)), 8)
    if not (np.all(np.isfinite(r)) and np.all(r < cap)):
        return None, _shorter(h, 0.5)
    worst = float(np.max(r))
    if worst > eps:  # r falls like h^(p+1): shrink to meet eps, at least halving
        return None, _shorter(h, min(0.5, max(1 / 16, 0.9 * (eps / worst) ** (1 / (p + 1)))))
    return r, h


def _tube(sb: Any, p: int, sign: int, H: float, cap: float) -> Balls:
    """Balls (PIECES, N, n, d) holding T_x(t) + [-cap, cap] for every x in the box and every t
    between 0 and sign H: on each of PIECES equal pieces of [0, H], T_x(t_m) at its midpoint
    plus [-H / 2 PIECES, H / 2 PIECES] T_x'(piece) (the mean-value form in t; the polynomial
    evaluated on all of [0, H] at once adds up |X_k| H^k, which for a series of small radius
    of convergence is far wider than the states, and a wide tube makes F's Lipschitz bound
    and e^(L h) huge)."""
    half = H / (2 * PIECES)  # exact: H / 2^k
    mids = Balls((sign * (2 * np.arange(PIECES) + 1) * half).reshape(PIECES, 1, 1, 1))
    piece = Balls(mids.m, np.full(mids.shape, half))
    X = [sb["X"][k] for k in range(p + 1)]
    slope = evaluate([(k + 1) * X[k + 1] for k in range(p)], piece)
    return evaluate(X, mids) + slope * Balls(np.zeros(()), np.full((), half)) + Balls(np.zeros(()), np.full((), cap))


def _exp_up(x: np.ndarray) -> np.ndarray:
    """Upper bounds of e^x (x: floats, taken as exact), in Arb."""
    import flint

    return np.nextafter(np.vectorize(lambda v: float(flint.arb(v).exp().upper()), otypes=[float])(x), np.inf)


def _signed(h: Fraction, sign: int) -> Any:
    """sign * h as a ball holding it exactly (h is a binary rational)."""
    import flint

    return sign * flint.arb(h.numerator) / h.denominator


def _shorter(h: Fraction, factor: float) -> Fraction:
    """A binary float below h, about factor h."""
    return Fraction(float(h) * factor)


def enclose_flow(blocks: Sequence[Block], control: Sequence[tuple[int, Any]], X: Any, digits: int = DIGITS,
                 max_steps: int = MAX_STEPS, deadline: float = math.inf, tolerance: float | None = None,
                 share: float = SHARE, free: Sequence[int] = (), radius: float = 0.0,
                 progress: Callable[[str], None] | None = None) -> Enclosure:
    """The flow's image in balls (see the module docstring).  Durations that are not binary
    floats (decimal strings) are integrated to the float nearest them and the rest, a ball of
    at most a unit of the working precision, is covered by one first-order step over it.

    Each step's remainder may add 10^(10 - digits) max(1, |x|) or, with ``tolerance`` (the
    width the enclosure is for), the larger share tolerance h / (total duration): the
    remainders together take ``share`` of the tolerance before the flow amplifies them (the
    Lohner set carries them with the flow's Jacobians); the remainder falls like h^19, so a
    thousandfold smaller share costs 1.44x more steps.

    With ``free`` step indices and a ``radius`` rho, every free duration may lie anywhere
    within rho of the one written: the balls enclose the image for every such choice, and
    ``centre``, ``slope`` and ``rest`` describe it as a first-order Taylor model in the free
    durations (module docstring).

    ``progress`` hears of the validated steps every PROGRESS_SECONDS."""
    import flint

    started = told = time.perf_counter()
    count = 0
    total = sum(abs(float(_arb(t).mid())) for _, t in control) or 1.0
    rate = 0.0 if tolerance is None else share * tolerance / total  # remainder allowed per unit of duration
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
        directions = basis_directions(fb, n, d)
        for k, (b, tau) in enumerate(control):
            exact = _arb(tau)
            f = float(exact.mid())
            sign = 1 if f >= 0 else -1
            left = Fraction(abs(f))  # exact: the steps add up to the duration without rounding
            last = math.inf  # the last step taken: the next tries at most a quarter longer
            while left > 0:
                c = xp.reshape(held.centre, (N, n, d))
                box, centre = from_arb(xp.reshape(held.box(), (N, n, d))), from_arb(c)
                spread = up(np.abs(box.m - centre.m) + box.r, 2)  # |x - c| on the set
                # the box about c that holds the set: c itself may lie outside the set's box (c rounds
                # the last centre), and the mean-value forms need every segment from c to the set
                region = Balls(centre.m, spread)
                spread = spread.reshape(N, n * d)
                sc = along_polynomial(fast[b], centre, ORDER, ORDER + DEFECT_ORDERS + 1)
                sb = along_polynomial(fast[b], region, ORDER, ORDER + DEFECT_ORDERS + 1, U=directions,
                                      top=sc.dominant)  # centred alike, as the mean-value forms combine them
                logs = lognorms([sc["X"][k].m for k in range(ORDER + 1)])  # the centre's coefficients guide the step
                rule = float(step_size(logs, ORDER, math.log(RULE_EPS) + max(0.0, logs[0])))
                h = min(left, Fraction(min(1.25 * last, rule)))
                floor = 10.0 ** (REMAINDER_DIGITS - digits) * max(1.0, float(np.max(np.abs(centre.m))))
                while True:
                    remainder, h = _remainder(fast[b], sc, sb, spread, h, sign, max(floor, rate * float(h)))
                    if remainder is not None:
                        DT = evaluate([sb["dX"][k] for k in range(ORDER + 1)], from_arb(_signed(h, sign)))  # D T over X
                        if np.all(np.isfinite(DT.m) & np.isfinite(DT.r)):
                            break
                        remainder, h = None, _shorter(h, 0.5)
                    if h < 1e-12 * max(1.0, abs(f)):
                        raise IntegrationError(f"no validated step for block {b} (duration {f:g}) "
                                               f"after {count} validated steps; {TOO_WIDE}")
                t = _signed(h, sign)
                J = columns_to_jacobians(fb, DT).in_arb()
                rests = np.array([flint.arb(0, r) for r in remainder], dtype=object)[:, None]
                z = xp.reshape(evaluate(coefficients(balls[b], c, ORDER)[0], t), (N, n * d)) + rests
                held = held.image(z, J)
                left, count, last = left - h, count + 1, float(h)
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
                         slope=held.slope.reshape(N * n * d, -1), rest=xp.reshape(held.rest(), (N, n, d)))


def _in_float_balls(block: Block) -> Block:
    """The block with its Arb entries (and beta) as float64 balls that contain them."""
    return dataclasses.replace(block, Q=from_arb(block.Q), K=from_arb(block.K), V=from_arb(block.V),
                               beta=from_arb(block.beta))


def _apriori(block: Block, X: np.ndarray, span: Any) -> np.ndarray:
    """A box B holding x(s) for every x in the box X and every |s| <= |span| (a ball): Picard's
    X + [-|span|, |span|] F(B) inside B, B found by inflating."""
    import flint

    T = flint.arb(0, round_up(abs(span).upper()))  # rounded up: the box must cover every |s| <= |span|
    B = _inflate(X)
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
