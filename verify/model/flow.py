"""Continuous depth: the flow of a control, with an error estimate and exact sensitivities.

A control is a list of steps (b_k, tau_k), b_k in {0, 1}, tau_k a signed duration.  Its flow is

    Phi = exp(tau_K F_{b_K}) o ... o exp(tau_1 F_{b_1}).

**Integrator.** Adaptive Taylor series method (Jorba and Zou, 2005) on the coefficients of
:mod:`verify.model.taylor`: order p = ceil(-ln(tol) / 2) + 2 (21 at the float64 default 1e-16, about
1.15 dps + 3 in arbitrary precision), step

    h = s * min((eps/|X_{p-1}|)^(1/(p-1)), (eps/|X_p|)^(1/p)),  eps = tol * max(1, |X|),

with safety s = exp(-0.7/(p-1)); every step lands exactly on the end of each control step.
The error **estimate** (not a bound) adds, over all steps, the size of the last series term
kept, |X_p| |h|^p, and one unit of rounding of the state.  The flow is refused
(:class:`IntegrationError`) when the state overflows (max |x| > 1e150), when, at the current
step size, the remaining duration would take the step count past ``max_steps`` (large logits
shrink the series' radius of convergence like 1/|x|^2), or when a step ends after
``deadline`` (a ``time.perf_counter()`` value: a caller with a time budget, such as the
solver, whose 30-digit flows of long controls can take a minute each).

**Sensitivities.** The same recurrences carry the n d unit directions of one sequence (the
Jacobian is block diagonal over sequences, so one batch serves all N), giving the exact
derivative of each computed step.  Then, with J_k the Jacobian of step k and G_k = J_K ... J_{k+1},

    d Phi / d tau_k = G_k F_{b_k}(X_k),        d Phi / d X_0 = J_K ... J_1,

X_k the state after step k (the identity d/dtau exp(tau F) = F o exp(tau F), evaluated on the
computed states).  Rows are ordered (sequence, token, coordinate).

**Precision.** ``dps=None`` runs in the namespace of ``X`` (float64 NumPy, array-api-strict,
CuPy); ``dps=D`` runs in mpmath at D significant digits (tolerance 10^(3-D) by default).  In
high precision each step's series is split (:func:`split_order`): the orders whose terms
X_k h^k matter to the working precision's rounding are computed at D digits, the others in
float64, and their float64 rounding is added to the estimate.  At 30 digits that halves the
orders kept in precision, and a 180-step control at m = 18 flows in 7.5 s instead of 20 s.

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> blocks = gaussian_blocks(seed=0, d=2)
>>> X = np.random.default_rng(1).normal(size=(2, 3, 2))
>>> there = flow(blocks, [(0, 0.5), (1, -0.3)], X)
>>> back = flow(blocks, [(1, 0.3), (0, -0.5)], there.end)
>>> bool(np.abs(back.end - X).max() < 1e-12)
True
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import mpmath
import numpy as np

from verify.io import validate
from verify.io.errors import IntegrationError
from verify.model.attention import basis_directions, block_arrays, columns_to_jacobians, field, logits, softmax_weights
from verify.model.backend import UNIT, is_mp, namespace, namespace_of, precision
from verify.model.blocks import Block
from verify.model.taylor import coefficients, evaluate

DEFAULT_TOL = 1e-16  # at 1e-14 a solver witness (80 steps, total |tau| 17) was off by 1.6e-10 against an estimate of 1.9e-12
MAX_TAYLOR_STEPS = 10_000
PROGRESS_SECONDS = 8.0  # between progress lines of a long flow (a step more stays under 10 s)
PROJECTION = 10  # a flow is refused when its current step, kept, would take 10 max_steps steps
MAX_HALVINGS = 60  # a step the defect check halves 60 times (2^-60 of the rule's) is refused
DEFECT_SLACK = 16.0  # a good step's h |X' - F(X)| is about p |X_p| h^p plus the field's rounding
OVERFLOW = validate.MAX_MAGNITUDE


@dataclass(frozen=True)
class FlowResult:
    """End point (same namespace and shape as the input), the integration error estimate
    (max-norm, float), the number of Taylor steps, and, when asked for, ``d_durations``
    (shape (N n d, K)) and ``d_initial`` (per-sequence Jacobians, shape (N, n d, n d)).  With
    ``propagate``, ``amplification``: the largest ||J_K ... J_(k+1)||_inf over the Taylor steps
    k, how much an error made inside the flow can grow by its end (1 otherwise), and
    ``amplifications``: the same largest norm per control step (over its Taylor steps and the
    point where it starts; empty otherwise)."""

    end: Any
    error_estimate: float
    taylor_steps: int
    d_durations: Any = None
    d_initial: Any = None
    amplification: float = 1.0
    amplifications: tuple[float, ...] = ()


def taylor_order(tol: float) -> int:
    return max(8, math.ceil(-math.log(tol) / 2) + 2)


def _maxabs(xp: Any, a: Any) -> float:
    return float(xp.max(xp.abs(a))) if math.prod(a.shape) else 0.0


def _log(v: Any) -> float:
    """ln v of a number >= 0 of any backend (-inf at 0), also where float(v) would overflow."""
    f = float(v)
    if f == 0:
        return -math.inf
    return math.log(f) if math.isfinite(f) else float(mpmath.log(mpmath.mpf(str(v))))


def lognorms(coeffs: list, batch: int | None = None) -> np.ndarray:
    """ln max |entry| of each coefficient (orders, or (orders, batch) for controls in lock step);
    in logarithms because at many digits the high orders of a fast series overflow float64."""
    rows = []
    for c in coeffs:
        a = np.abs(np.asarray(c)).reshape(1 if batch is None else batch, -1)
        rows.append([_log(v) for v in a.max(axis=1)] if a.size else [-math.inf] * a.shape[0])
    out = np.array(rows, dtype=float)
    return out[:, 0] if batch is None else out


def step_size(lognorms: Any, p: int, logeps: Any) -> np.ndarray:
    """The step rule of the module docstring for the log coefficient norms ``lognorms`` (orders
    0..p, each a float or, for controls in lock step, an array of them) and ln eps (likewise)."""
    lognorms = np.asarray(lognorms, dtype=float)
    h = np.full(lognorms.shape[1:], math.inf)
    for k in (p - 1, p):
        h = np.minimum(h, np.exp((logeps - lognorms[k]) / k))  # ln |X_k| = -inf: no limit
    return h * math.exp(-0.7 / (p - 1))


def defect(block: Block, Xk: list, t: Any, h: Any, unit: float, axis: tuple | None) -> tuple[Any, Any, Any]:
    """The step's end point X(t) = sum_k X_k t^k and two checks of it: h times the defect
    |X'(s) - F(X(s))| at s = t/2 and s = t (max-norm, over ``axis``), and the rounding a step
    of length h from X(t) carries in this arithmetic.

    The coefficient rule cannot see a softmax weight that is exponentially small at the start
    and grows within the step (its series terms are e^-100 (l' h)^k / k!, negligible to order
    p, while the weight itself reaches 1): the series then describes another trajectory, and
    the defect, which evaluates the field afresh, is of the size of the field.  For a good step
    it is about p times the last term kept.  The rounding model is that of the field: each
    logit l carries unit |l|, which moves a weight row by 2 unit max|l| (1 - sum_j P_ij^2)
    (zero on a saturated row), times |V x|."""
    dXk = [k * c for k, c in enumerate(Xk)][1:]
    worst, X1 = None, None
    for s in (t / 2, t):
        Xs = evaluate(Xk, s)
        xp = namespace_of(Xs)
        _, _, Vt = block_arrays(block, xp, Xs)
        P = softmax_weights(block, Xs)
        VX = xp.matmul(Xs, Vt)
        D = xp.abs(evaluate(dXk, s) - xp.matmul(P, VX))
        D = np.asarray(D, dtype=float)
        D = np.max(D.reshape(D.shape[0], -1), axis=1) if axis else float(np.max(D))
        worst = D if worst is None else np.maximum(worst, D)
        X1 = Xs
    Pf = np.asarray(P, dtype=float)
    Lf = np.abs(np.asarray(logits(block, X1), dtype=float))
    spread = 1 - np.sum(Pf * Pf, axis=-1)
    big = (lambda a: np.max(a.reshape(a.shape[0], -1), axis=1)) if axis else (lambda a: float(np.max(a)))
    xs, vx = big(np.abs(np.asarray(X1, dtype=float))), big(np.abs(np.asarray(VX, dtype=float)))
    rounding = unit * (xs + h * vx * (1 + 2 * big(Lf) * big(spread)))
    return X1, h * worst, rounding


def split_order(lognorms: list[float], h: float, unit: float) -> tuple[int, float]:
    """The fewest orders K of a step's Taylor series to compute in high precision, the others
    in float64, and the estimate of what the float64 part adds to the step's rounding.

    The terms X_k h^k with k > K are computed from float64 roundings of the lower orders, so
    each carries a relative error of a few units of 2^-52 per order of the recurrence; K is
    the smallest order with 2^-52 p sum_{k>K} |X_k| h^k <= ``unit`` (the working precision's
    rounding of the state), and the second value is that sum times 2^-52 p.  The terms fall
    like exp(-2k) at the chosen steps, so at 30 digits K is about 16 of 34 orders, and the
    high-precision work, quadratic in the orders, falls about fourfold.

    ``lognorms`` holds ln |X_k|.

    >>> K, tail = split_order([-k * math.log(10) for k in range(31)], 1.0, 1e-30)
    >>> K, f"{tail:.1e}"  # terms 10^-16 and smaller, times 30 units of 2^-52, stay under 1e-30
    (15, '7.4e-31')
    """
    p = len(lognorms) - 1
    tail, K = 0.0, p
    while K > 0:
        term = UNIT * p * math.exp(min(700.0, lognorms[K] + K * math.log(h)))
        if tail + term > unit:
            break
        tail, K = tail + term, K - 1
    return K, tail


def flow(
    blocks: Sequence[Block],
    control: Sequence[tuple[int, Any]],
    X: Any,
    *,
    tol: float | None = None,
    dps: int | None = None,
    sensitivities: bool = False,
    propagate: bool = False,
    max_steps: int = MAX_TAYLOR_STEPS,
    deadline: float = math.inf,
    progress: Callable[[str], None] | None = None,
) -> FlowResult:
    """Integrate the control from X (N, n, d); see the module docstring (``max_steps`` Taylor
    steps beyond the one each control step takes at least; ``progress`` hears of them every
    PROGRESS_SECONDS).  With ``propagate``
    the error estimate carries each Taylor step's local error to the end of the flow through
    the Jacobian of the rest of the flow (float64 tangents), as an expanding flow amplifies it;
    where that exceeds sqrt(unit) max(1, |x|) (half the digits lost) the linearisation no longer
    describes the error (two chaotic draws: estimates 6e-4 and 2e6 against errors 6 and 4 times
    larger) and the estimate is infinite."""
    control = validate.steps(control)
    max_steps += len(control)  # the cap counts Taylor steps beyond one per control step: many tiny steps are not "too large"
    if dps is not None:
        with precision(dps):
            xp = namespace("mpmath")
            return _flow(blocks, control, xp.asarray(X), tol or 10.0 ** (3 - dps), 10.0**-dps, sensitivities, propagate,
                         max_steps, deadline, progress)
    return _flow(blocks, control, X, tol or DEFAULT_TOL, UNIT, sensitivities, propagate, max_steps, deadline, progress)


def _propagated(local: list[float], jacobians: list[Any], owners: list[int],
                controls: int) -> tuple[float, tuple[float, ...]]:
    """sum_k ||J_K ... J_{k+1}||_inf local_k: each Taylor step's local error (max-norm) carried to
    the end by the (per-sequence) Jacobian of the steps after it; and per control step (Taylor
    step k belongs to control step ``owners[k]``) the largest of those norms over its Taylor
    steps and its start (||J_K ... J_k|| for its first Taylor step k)."""
    total, G, after = 0.0, None, 1.0  # after: the norm of the steps after the current one
    profile = [1.0] * controls
    for e, J, k in zip(reversed(local), reversed(jacobians), reversed(owners), strict=True):
        G = J if G is None else np.matmul(G, J)
        start = float(np.max(np.sum(np.abs(G), axis=-1)))  # an error made as the step starts
        total, profile[k] = total + e * after, max(profile[k], after, start)
        after = start
    return total, tuple(profile)


def _flow(blocks, control, X, tol, unit, sensitivities, propagate, max_steps, deadline, progress=None) -> FlowResult:
    """:func:`flow` in the namespace of X.  One piece: each Taylor step's order split, step
    rule, defect check and tangents decide one another."""
    xp = namespace_of(X)
    N, n, d = X.shape
    p = taylor_order(tol)
    basis = basis_directions(xp, n, d, X) if sensitivities else None
    count, told = 0, time.perf_counter()
    step_jacobians, end_fields, local, taylor_jacobians, owners = [], [], [], [], []
    scale0 = _maxabs(xp, X)
    unit_basis = basis_directions(namespace("numpy"), n, d) if propagate else None
    hp = is_mp(xp) and xp.element != "arb"  # balls keep every order: a float64 tail has no radius
    exact = p  # orders computed in the working precision (high precision: chosen step by step)
    for k, (b, tau) in enumerate(control):
        T = basis
        tau = xp.asarray(tau)[()] if is_mp(xp) else float(tau)
        sign = 1 if tau >= 0 else -1
        left = abs(tau)  # exact in the working precision: every step taken is subtracted
        while left > 0:
            where = f"after {count} Taylor steps, in step (block {b}, duration {float(tau):g})"
            while True:
                Xk, dXk = coefficients(blocks[b], X, p, T, exact_orders=exact if hp else None)
                logs = lognorms(Xk)
                logeps = math.log(tol) + max(0.0, logs[0])
                h = float(step_size(logs, p, logeps))
                if not h > 0:  # NaN or 0: the coefficients overflowed
                    raise IntegrationError(f"the Taylor coefficients overflow float64 {where} (max |x| = "
                                           f"{math.exp(logs[0]):.3g}); the durations or the data are too large")
                h = left if h >= float(left) * (1 - 1e-12) else h
                need, tail = split_order(list(logs), h, unit * max(1.0, math.exp(logs[0]))) if hp else (p, 0.0)
                if need <= exact:
                    break
                exact = need  # the float64 tail was too large for this step: more orders in precision
            exact = min(p, need + 1)  # for the next step, one order to spare
            for _ in range(MAX_HALVINGS):  # the defect check: halve a step the series does not describe
                X1, hdefect, rounding = defect(blocks[b], Xk, sign * h, h, unit, None)
                if hdefect <= DEFECT_SLACK * (p * math.exp(logeps) + rounding):
                    break
                h = h / 2
            else:
                raise IntegrationError(f"the Taylor series does not describe the flow {where} (defect "
                                       f"{hdefect:.2g} at step {float(h):.2g}); the state is too large for the durations")
            refuse(float(np.max(np.abs(np.asarray(X1, dtype=float)))), count + 1, count + 1 + float(left - h) / h,
                    max_steps, deadline, f"{where}, step {float(h):.2g}")
            if propagate:  # this Taylor step's Jacobian, in float64 (it only scales the estimate)
                _, dXf = coefficients(blocks[b], np.asarray(X, dtype=float), p, unit_basis)
                taylor_jacobians.append(columns_to_jacobians(namespace("numpy"), evaluate(dXf, sign * float(h))))
                owners.append(k)
            X = X1
            if T is not None:
                T = evaluate(dXk, sign * h)
            local.append(max(math.exp(min(700.0, logs[p] + p * math.log(h))), hdefect / p) + rounding + tail)
            left -= h
            count += 1
            if progress and time.perf_counter() - told > PROGRESS_SECONDS:
                told = time.perf_counter()
                progress(f"flow: {count} Taylor steps, control step {k + 1} of {len(control)}")
        if sensitivities:
            step_jacobians.append(columns_to_jacobians(xp, T))
            end_fields.append(field(blocks[b], X))
    estimate, profile = _propagated(local, taylor_jacobians, owners, len(control)) if propagate else (sum(local), ())
    amplification = max(profile, default=1.0)
    if propagate and estimate > math.sqrt(unit) * max(1.0, _maxabs(xp, X), scale0):
        estimate = math.inf  # half the digits lost: the linearised propagation no longer describes the error
    if not sensitivities:
        return FlowResult(X, estimate, count, amplification=amplification, amplifications=profile)
    d_dur, G = backward_products(xp, step_jacobians, end_fields, n * d, X)
    return FlowResult(X, estimate, count, d_dur, G, amplification, profile)


def refuse(scale: float, taken: int, steps_needed: float, max_steps: int, deadline: float, where: str) -> None:
    """Raise :class:`IntegrationError` for a flow whose state overflowed (max |x| = ``scale``
    above OVERFLOW, or not finite), that took more than ``max_steps`` Taylor steps (``taken``)
    or would take more than PROJECTION times as many at the current step size (``steps_needed``:
    the defect check shortens steps near a switch of attention for a while, so the projection
    alone does not refuse), or that ran past ``deadline``; ``where`` says at which step."""
    if not scale <= OVERFLOW:
        raise IntegrationError(f"the flow overflowed (max |x| = {scale:.3g}) {where}; shorten the durations or rescale the data")
    if taken > max_steps or steps_needed > PROJECTION * max_steps:
        raise IntegrationError(f"the flow would need more than {max_steps} Taylor steps (max |x| = {scale:.3g}) {where}; "
                               "the durations or the data are too large")
    if time.perf_counter() > deadline:
        raise IntegrationError(f"the flow was stopped at its deadline {where}; allow more time")


def backward_products(xp: Any, jacobians: list, vectors: list, nd: int, X: Any) -> tuple[Any, Any]:
    """Columns G_k v_k with G_k = J_K ... J_{k+1}, and the full product J_K ... J_1.

    ``jacobians[k]`` has shape (N, nd, nd), ``vectors[k]`` shape (N, n, d); the columns are
    returned as an (N n d, K) matrix (rows: sequence, token, coordinate).
    """
    N = X.shape[0]
    eye = xp.eye(nd) if is_mp(xp) else xp.eye(nd, dtype=X.dtype)
    G = xp.broadcast_to(eye, (N, nd, nd))
    cols = [None] * len(jacobians)
    for k in range(len(jacobians) - 1, -1, -1):
        v = xp.reshape(vectors[k], (N, nd, 1))
        cols[k] = xp.reshape(xp.matmul(G, v), (N * nd,))
        G = xp.matmul(G, jacobians[k])
    m = N * nd
    D = xp.stack(cols, axis=1) if cols else xp.zeros((m, 0)) if is_mp(xp) else xp.zeros((m, 0), dtype=X.dtype)
    return D, G
