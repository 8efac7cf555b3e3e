"""The remainder of one validated Taylor step of the attention flow (:func:`step_remainder`),
for every state of a set at once: the step x(h) in T_x(h) + [-r, r] of
:mod:`verify.verdicts.enclosure`, with T_x(t) = sum_(k<=p) X_k(x) t^k the Taylor polynomial
of order p = ORDER of the trajectory through x, the set's centre c, its box X and its spread
|x - c| <= s componentwise.

1. *The defect* D(t) = F(T_x(t)) - T_x'(t) = sum_(k>=p) F_k t^k, where F_k are the Taylor
   coefficients of t -> F(T_x(t)) (:func:`verify.model.taylor.along_polynomial`): computed for
   p <= k <= q = p + DEFECT_ORDERS, and beyond q bounded by Cauchy's estimate |F_k| <= M / rho^k
   on a complex disc |t| <= rho.  There T_x(t) is complex and the centred logits move by at
   most Delta_ij = sum_k |L_k,ij| rho^k from their values at t = 0 (a polynomial of degree 2p),
   so the real part of every softmax denominator is at least sum_j E_ij Re e^(delta_ij) with
   Re e^delta >= e^(-Delta) cos Delta (Delta < pi/2) or >= -e^Delta, the weights are at most
   E_ij e^(Delta_ij) / that where it is positive (E_ij e^Delta taken as e^(l_ij + Delta) from
   the centred logit l_ij = log E_ij where E_ij underflows), and M = max over the disc of |F(T_x(t))| is at
   most |V a| + sum_j |P_ij| sum_k |V (X_k,j - a)| rho^k, componentwise (a: each sequence's
   anchor, its mean token; the weights sum to 1).  So for |t| <= h < rho,

       |D(t)| <= g |t|^p,   g = sum_(k=p..q) |F_k| h^(k-p) + M h^(q+1-p) / (rho^(q+1) (1 - h/rho)).

   The disc is the best of a few (:func:`step_remainder`); logits of tokens hardly attended
   to may move far without costing much.
2. *The remainder* (a Gronwall argument per sequence): the error e = x(t) - T_x(t) has
   e' = F(x) - F(T_x) + D, so while x stays in the tube U = {T_x(t) + [-cap, cap]} (L: the
   largest row sum of |DF| over U, a bound of F's Lipschitz constant in the max-norm there),
   |e(t)| <= g |t|^(p+1) / (p+1) e^(L |t|) =: r.  If r < cap, x never leaves the tube (the
   bound holds on [0, h] by continuity), and x(h) lies in T_x(h) + [-r, r].  The tube is
   enclosed piece by piece in t (:func:`_tube`).  Unlike an a-priori box with interval Taylor
   coefficients of order p + 1 (whose overestimate, about 1e20 at order 21, kept the steps
   near 0.01), this costs the real coefficients of the defect and a bound of the field on a
   disc, so the steps are about as long as the float64 flow's.

Every bound over the set is in mean-value form (:func:`_centred`): its value at c plus the
derivatives over X times s; only the defect's coefficients above the tangents' orders (along a
given polynomial, above p) are bounded by their balls over the set.  Every number is an upper
bound evaluated in float64 with its roundings counted (:func:`verify.model.float_balls.up`,
whose model asks that a rounded product be multiplied further only by constants <= 1: a
product of bounds that a larger factor or a small divisor follows is rounded up on its own
first), or a lower bound where it divides;
the series come from :func:`verify.model.taylor.along_polynomial` in float64 balls.

>>> from verify.model.attention import basis_directions
>>> from verify.model.blocks import gaussian_blocks
>>> from verify.model.float_balls import namespace as balls
>>> from verify.model.taylor import along_polynomial
>>> b, _ = gaussian_blocks(0, 2)
>>> X = Balls(np.random.default_rng(1).normal(size=(1, 2, 2)))  # one point: spread 0
>>> q = ORDER + DEFECT_ORDERS + 1
>>> sc = along_polynomial(b, X, ORDER, q)
>>> sb = along_polynomial(b, X, ORDER, q, U=basis_directions(balls(), 2, 2), top=sc.dominant)
>>> r, h, _ = step_remainder(b, sc, sb, np.zeros((1, 4)), Fraction(1, 4), 1, 1e-14)  # |x(1/4) - T_x(1/4)| <= r
>>> h, bool(0 < r[0] <= 1e-14)
(Fraction(1, 4), True)
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np

from verify.model.attention import beta_in, dominant, jacobian
from verify.model.backend import namespace
from verify.model.blocks import Block
from verify.model.float_balls import ETA, Balls, U, on_dominant, up
from verify.model.taylor import cauchy, centred, evaluate

ORDER = 18  # Taylor order p of the validated steps
DEFECT_ORDERS = 10  # the defect's coefficients are computed to order q = p + this, the rest bounded by Cauchy
LOGIT_MOVE = 1.2  # the first disc tried: no logit moves by more than this (< pi/2, so every denominator is bounded)
FAINT = 0.1  # ... unless its weight stays below FAINT / n: such weights cost the denominators at most FAINT
DISCS = 9  # discs tried, each sqrt 2 wider, while the remainder's bound improves
MAX_RATIO = 0.8  # h / rho: the tail of Cauchy's estimate is a geometric series in h / rho
PIECES = 8  # the tube around T_x(t), t in [0, h], is enclosed piece by piece ...
MAX_PIECES = 512  # ... in up to L h / STIFF times as many (a power of 4) while L h > STIFF: F's Jacobian over a wide piece wraps
STIFF = 1.0  # L h at which finer pieces are tried (e^(L h) multiplies the remainder)
TUBE = 1e-8  # the tube's radius around the Taylor polynomial, relative to max(1, |x|): the remainders are far below


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


def _disc(moves: np.ndarray, on: np.ndarray, weights: np.ndarray, logits: np.ndarray) -> float:
    """The largest rho (to 1e-9 relative, at most 1e6) on which every unmasked logit either moves
    by less than LOGIT_MOVE (sum_k |L_k| rho^k) or keeps its weight E_ij e^(Delta_ij) below
    FAINT / n (``weights``: upper bounds of E_0; ``logits``: of log E_0, :func:`_log_weights`):
    this only chooses the disc; the bound checks what it needs.  A token hardly attended to
    (E ~ 1e-300) may have a logit that moves at rates of thousands while the field does not
    notice (c32a, docs/verdicts.md: a disc of 2.5e-4 where float64 steps 0.2); one whose weight
    underflows, 1e-2000 say, may move by thousands."""
    powers = np.arange(1, len(moves) + 1)
    log_weight = np.minimum(np.log(np.maximum(weights, 1e-300)), logits)
    faint = np.log(FAINT / weights.shape[-1]) - log_weight  # Delta allowed by the weight
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
    # a series to order q holds orders below q only; along a given polynomial the tangents stop at its degree
    held, known = sc["L"].shape[0] - 1, sb["dL"].shape[0]
    out = []
    for k in range(1, 2 * p + 1):
        lo, hi = max(0, k - p), min(k, p)  # both factors vanish above order p

        def product(A: Any, B: Any, k: int = k, lo: int = lo, hi: int = hi) -> Any:
            return cauchy(xp, A, B, k, lo, hi)

        # the same products, centred alike, as the series' own (taylor._recur), where it holds them
        L = sc["L"][k] if k < held else centred(xp, beta * product(sc["QX"], sc["KXt"]), sc["P"][0], sc.dominant)
        if k < min(known, held):
            dL = sb["dL"][k]
        else:
            dL = beta * (product(sb["dQX"], sb["KXt"][:, None]) + product(sb["QX"][:, None], sb["dKXt"]))
            dL = centred(xp, dL, sb["P"][0], sb.dominant)
        out.append(_centred(L, dL, spread))
    return np.stack(out)


def _log_weights(L: Balls, causal: bool) -> np.ndarray:
    """Upper bounds of log E_0 (floats) for the weights E_0 = e^(L - L_D) of
    :func:`verify.model.taylor.along_polynomial` (``L``: its order-0 logits over the box; D each
    row's dominant logit, the entry E_0 is centred on): the centred logits' upper ends.  A
    weight that underflows (logits thousands apart, c32a's states at |x| ~ 130) is a ball about
    0 that says only E_0 <= 5e-324; its logit says E_0 <= e^(-5000)."""
    centred = on_dominant(L, dominant(L, causal))
    return np.nextafter(centred.m + centred.r, np.inf)  # the sum rounded to nearest, one ulp up


def _damping(delta: np.ndarray, weights: np.ndarray, logits: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For upper bounds Delta of |delta| (delta complex), w of E_0 >= 0 and l of log E_0: lower
    bounds of Re e^delta (e^(-Delta) cos Delta where Delta < pi/2, else -e^Delta) and upper
    bounds of |E_0 e^delta|, the smaller of w e^Delta and e^(l + Delta), in Arb (e^Delta
    overflows a float where E_0 underflows)."""
    import flint

    def pair(v: float, w: float, lw: float) -> tuple[float, float]:
        D = flint.arb(v)
        low = (-D).exp() * D.cos() if D < flint.arb.pi() / 2 else -D.exp()
        high = float((w * D.exp()).upper())
        if math.isfinite(lw):
            high = min(high, float((D + lw).exp().upper()))
        return float(low.lower()), high

    low, high = np.vectorize(pair, otypes=[float, float])(delta, weights, logits) if delta.size else (delta, delta)
    return np.nextafter(low, -np.inf), np.nextafter(high, np.inf)  # float() of Arb's ends rounds to nearest


def _field_on_disc(E0: Balls, logits: np.ndarray, moves: np.ndarray, values: list, va: Balls, on: np.ndarray,
                   rho: float) -> np.ndarray | None:
    """Upper bounds M (N, n, d) of |F(T_x(t))| for complex |t| <= rho (module docstring, step 1),
    or None where a softmax denominator may vanish there; ``values``: upper bounds of
    |V (X_k - a)| (a: the series' anchor, so only k = 0 differs from |V X_k|), k = 0..p, ``va``:
    V a (F = V a + sum_j P_ij V (x_j - a), :func:`verify.model.taylor._recur`).  Every logit
    moves by at most Delta from t = 0; a weight that stays far from the others may move much
    more than pi/2 and only costs the denominator E_ij e^Delta: the largest useful disc is not
    limited by the logits of tokens that are hardly attended to.  ``logits``: upper bounds of
    log E_0 (:func:`_log_weights`), which bound E_ij e^Delta where E_0 underflows."""
    n, p = E0.shape[-1], len(values) - 1
    delta = np.where(on, up(np.tensordot(_powers(rho, len(moves)), moves, axes=1), 2 * len(moves) + 2), 0.0)
    damp, high = _damping(delta, _hi(E0), logits)  # high >= |E_ij e^delta| >= E_ij (-Re e^delta) where that is > 0
    E0_low = np.maximum(np.nextafter(E0.m - E0.r, -np.inf), 0.0)
    gain = _down(np.sum(E0_low * np.maximum(damp, 0.0), axis=-1, keepdims=True), n + 2)
    loss = up(np.sum(np.where(damp < 0, high, 0.0), axis=-1, keepdims=True), n + 2)
    low = np.nextafter(gain - loss, -np.inf)  # the denominators' real parts, at least
    if not np.all(low > 0):
        return None
    weights = up(high / low, 1)  # |P_ij| on the disc
    on_disc = up(np.tensordot(np.concatenate([[1.0], _powers(rho, p)]), np.stack(values), axes=1), 3 * p + 4)
    return up(np.matmul(weights, on_disc) + _hi(va), n + 3)


def step_remainder(block: Block, sc: Any, sb: Any, spread: np.ndarray, h: Fraction, sign: int,
                   eps: float, low: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[Any, Fraction, float]:
    """The remainder of one validated Taylor step of length h (an exact binary rational: the
    steps must add up to the duration exactly) for every x in the set (module docstring), from
    the series ``sc`` of :func:`verify.model.taylor.along_polynomial` at its centre and ``sb``
    over its box with tangents (float balls, :mod:`verify.model.float_balls`) and the set's
    ``spread`` about the centre: (r, an upper bound per sequence (N,), h, the largest part of r
    that counts against ``eps``), or (None, a shorter h to try, inf) where that part exceeds
    ``eps`` or no disc gives a bound.  The disc is the best of DISCS
    radii from :func:`_disc`'s, growing by sqrt 2, while the bound improves.

    ``low``: where T is a given polynomial (:func:`verify.model.taylor.along_given`) rather than
    each state's own Taylor polynomial, whose defect starts at order p, upper bounds of its
    coefficients |D_k| below order p over the set, (p, N, n d) twice: at the centre, and what
    the set's spread adds (the mean-value form's second term).  They add
    sum_(k<p) |D_k| h^(k+1) / (k + 1) to the integral of |D| that Gronwall's bound multiplies;
    only the centre's part counts against ``eps``: the spread's is second order in the set's
    width (and a tangent's rounding times it), the part a Jacobian's width over the set adds
    to a Lohner step, which no shorter step removes."""
    p, q = ORDER, ORDER + DEFECT_ORDERS
    box = sb["X"][0]
    N, n, d = box.shape
    on = np.broadcast_to(np.tril(np.ones((n, n), bool)) if block.causal else np.ones((n, n), bool), (N, n, n))
    moves = _logit_moves(block, sc, sb, spread, p)  # masked entries never weigh: their E_0 is exactly 0
    values = [_centred(sc["VX"][k], sb["dVX"][k], spread) for k in range(p + 1)]
    H = float(h) if Fraction(float(h)) == h else float(np.nextafter(float(h), np.inf))  # at least h
    # above the tangents' orders (a given polynomial's), F_k over the set from its balls
    F = np.stack([_centred(sc["F"][k], sb["dF"][k], spread) if k < sb["dF"].shape[0] else _hi(sb["F"][k])
                  for k in range(p, q + 1)])
    near = up(np.tensordot(np.concatenate([[1.0], _powers(H, q - p)]), F, axes=1), 3 * (q - p) + 4).reshape(N, -1)
    logits = _log_weights(sb["L"][0], block.causal)
    g, rho = None, _disc(moves, on, _hi(sb["E"][0]), logits)
    for _ in range(DISCS):
        M = _field_on_disc(sb["E"][0], logits, moves, values, sc.va, on, rho) if rho > H / MAX_RATIO else None
        if M is not None:
            rho_low = _down(np.cumprod(np.full(q + 1, rho))[-1], q + 1)
            tail = up(_powers(H, q + 1 - p)[-1] / _down(rho_low * _down(1.0 - up(np.array(H / rho), 1), 1), 1), 2)
            candidate = np.max(up(near + M.reshape(N, -1) * tail, 3), axis=1)  # per sequence
            if g is not None and np.max(candidate) >= np.max(g):
                break
            g = candidate
        rho *= math.sqrt(2)
    if g is None:
        return None, shorter(h, 0.5), math.inf
    cap = TUBE * max(1.0, float(np.max(_hi(box))))
    pieces = PIECES
    while True:  # at |x| ~ 190 pieces of width 0.08 gave L ~ 1e4 where |DF| ~ 9 (c32a, docs/verdicts.md)
        J = jacobian(block, _tube(sb, p, sign, H, cap, pieces).reshape(pieces * N, n, d))
        L = np.max(up(np.sum(_hi(J), axis=2), n * d + 2).reshape(pieces, N, -1), axis=(0, 2))  # per sequence: |DF|'s rows
        stiff = float(np.max(L)) * H / STIFF
        if stiff <= 1.0 or pieces >= MAX_PIECES:  # NaN too: a piece so wide that its weights overflow
            break
        pieces = min(MAX_PIECES, pieces * 4 ** max(1, math.ceil(math.log(stiff, 4)) if math.isfinite(stiff) else 4))
    growth = _exp_up(up(L * H, 1))
    integral = up(g * _powers(H, p + 1)[-1], 1) / (p + 1)  # of |D(t)| <= g |t|^p over [0, h]
    spreads = np.zeros(N)
    if low is not None:  # and of the defect's lower orders, per component
        weights = up(_powers(H, p) / np.arange(1, p + 1), 1)  # H^(k+1) / (k + 1), k < p
        at_centre, spread_part = (up(np.tensordot(weights, part, axes=1), p + 2) for part in low)
        integral = np.max(up(at_centre + up(integral, 1)[:, None], 2), axis=1)
        spreads = up(up(np.max(spread_part, axis=1), 1) * growth, 2)
    r = up(up(integral, 1) * growth, 2)
    total = up(r + spreads, 1)
    if not (np.all(np.isfinite(total)) and np.all(total < cap)):
        return None, shorter(h, 0.5), math.inf
    worst = float(np.max(r))
    if worst > eps:  # r falls like h^(p+1): shrink to meet eps (by 0.78 where r is 20 eps, not by half)
        return None, shorter(h, max(1 / 16, min(0.9, 0.9 * (eps / worst) ** (1 / (p + 1))))), worst
    return total, h, worst


def lower_orders(defects: list, sb: Any, tangents: list, spread: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ``low`` of :func:`step_remainder` for a given polynomial T(t, x) = T(t) + U(t) (x - c):
    upper bounds (p, N, n d) of |D_k(c)| (``defects``: balls of T's defect at the centre, k < p)
    and of sum_i |dD_k / dx_i| s_i over the set, with dD_k = dF_k - (k + 1) U_(k+1) (``sb``: the
    series along T over the set with the tangents U, ``tangents``: U_k as balls)."""
    N, nd = spread.shape
    zero = Balls(np.zeros(defects[0].shape))
    at_centre = np.stack([_hi(D) for D in defects])
    spread_part = np.stack([_centred(zero, sb["dF"][k] - (k + 1) * tangents[k + 1], spread) for k in range(len(defects))])
    return at_centre.reshape(-1, N, nd), spread_part.reshape(-1, N, nd)


def _tube(sb: Any, p: int, sign: int, H: float, cap: float, pieces: int) -> Balls:
    """Balls (pieces, N, n, d) holding T_x(t) + [-cap, cap] for every x in the box and every t
    between 0 and sign H: on each of ``pieces`` equal pieces of [0, H], T_x(t_m) at its midpoint
    plus [-H / 2 pieces, H / 2 pieces] T_x'(piece) (the mean-value form in t; the polynomial
    evaluated on all of [0, H] at once adds up |X_k| H^k, which for a series of small radius
    of convergence is far wider than the states, and a wide tube makes F's Lipschitz bound
    and e^(L h) huge)."""
    half = H / (2 * pieces)  # exact: H / 2^k
    mids = Balls((sign * (2 * np.arange(pieces) + 1) * half).reshape(pieces, 1, 1, 1))
    piece = Balls(mids.m, np.full(mids.shape, half))
    X = [sb["X"][k] for k in range(p + 1)]
    slope = evaluate([(k + 1) * X[k + 1] for k in range(p)], piece)
    return evaluate(X, mids) + slope * Balls(np.zeros(()), np.full((), half)) + Balls(np.zeros(()), np.full((), cap))


def _exp_up(x: np.ndarray) -> np.ndarray:
    """Upper bounds of e^x (x: floats, taken as exact), in Arb."""
    import flint

    return np.nextafter(np.vectorize(lambda v: float(flint.arb(v).exp().upper()), otypes=[float])(x), np.inf)


def shorter(h: Fraction, factor: float) -> Fraction:
    """A binary float below h, about factor h."""
    return Fraction(float(h) * factor)
