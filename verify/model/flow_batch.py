"""Flows of many controls in lock step: one batched Taylor series per step for all of them.

Multiple shooting (:meth:`verify.search.shooting.Shooting.parts`) needs the exact flows of one
control per segment, all with the same blocks; :func:`flow_batch` integrates them together by
the integrator of :mod:`verify.model.flow` (its order, step rule, defect check and landing on
the end of every control step), each control choosing its own Taylor steps, so each result
agrees with its :func:`verify.model.flow.flow` to rounding.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from verify.io.errors import IntegrationError
from verify.model.attention import basis_directions, columns_to_jacobians, field
from verify.model.backend import UNIT, is_mp, namespace, namespace_of, precision
from verify.model.blocks import Block
from verify.model.flow import (
    DEFAULT_TOL,
    DEFECT_SLACK,
    MAX_HALVINGS,
    MAX_TAYLOR_STEPS,
    FlowResult,
    backward_products,
    defect,
    lognorms,
    refuse,
    split_order,
    step_size,
    taylor_order,
)
from verify.model.taylor import coefficients, evaluate


def flow_batch(
    blocks: Sequence[Block],
    pattern: Sequence[int],
    durations: np.ndarray,
    Z: np.ndarray,
    *,
    tol: float | None = None,
    dps: int | None = None,
    sensitivities: bool = False,
    max_steps: int = MAX_TAYLOR_STEPS,
    deadline: float = math.inf,
) -> FlowResult:
    """The flows of B controls that share their blocks, the controls (pattern[l], durations[j, l])
    from Z[j], by the integrator of :func:`flow` (the same order, step rule and landing on the end
    of every control step), in lock step: one batched Taylor series per step serves every control
    still moving, and each control chooses its own Taylor steps, so each result agrees with its
    :func:`flow` to rounding.

    ``durations`` has shape (B, L), ``Z`` shape (B, N, n, d).  The result holds the end points
    (B, N, n, d) and, with ``sensitivities`` (float64 only), the exact derivatives of each
    computed flow as :func:`flow` gives them: ``d_durations`` (B, N n d, L) and ``d_initial``
    (B, N, n d, n d); ``error_estimate`` is not computed (NaN) and ``taylor_steps`` counts the
    batched steps.  ``dps=D`` integrates at D digits as :func:`flow` does (mpmath numbers, the
    series split between D digits and float64 by :func:`split_order`, with the orders kept in
    precision the most that any control's step needs); the end points are then an object array.
    Multiple shooting needs these of the exact flows (:meth:`verify.search.shooting.Shooting.parts`):
    one control per segment.  Raises :class:`IntegrationError` as :func:`flow` does (overflow,
    a control past the step cap, the deadline).

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> from verify.model.flow import flow
    >>> blocks = gaussian_blocks(seed=0, d=2)
    >>> Z = np.random.default_rng(1).normal(size=(3, 2, 2, 2))
    >>> taus = np.array([[0.5, -0.3], [0.0, 1.2], [-0.7, 0.0]])
    >>> res = flow_batch(blocks, [0, 1], taus, Z, sensitivities=True)
    >>> one = flow(blocks, [(0, 0.0), (1, 1.2)], Z[1], sensitivities=True)
    >>> res.end.shape, bool(np.abs(res.end[1] - one.end).max() < 1e-14)
    ((3, 2, 2, 2), True)
    >>> bool(np.abs(res.d_durations[1] - one.d_durations).max() < 1e-13)
    True
    >>> hp = flow_batch(blocks, [0, 1], taus, Z, dps=30).end
    >>> bool(abs(hp[2] - flow(blocks, [(0, -0.7), (1, 0.0)], Z[2], dps=30).end).max() < 1e-28)
    True
    """
    if dps is None:
        return _flow_batch(blocks, pattern, np.asarray(durations, dtype=float), np.array(Z, dtype=float),
                           tol or DEFAULT_TOL, UNIT, sensitivities, max_steps, deadline)
    if sensitivities:
        raise ValueError("flow_batch gives sensitivities in float64 only")
    with precision(dps):
        xp = namespace("mpmath")
        return _flow_batch(blocks, pattern, xp.asarray(durations), xp.asarray(Z), tol or 10.0 ** (3 - dps), 10.0**-dps,
                           False, max_steps, deadline)


def _flow_batch(blocks, pattern, durations, X, tol, unit, sensitivities, max_steps, deadline) -> FlowResult:
    """:func:`flow_batch` in the namespace of X; one piece, as :func:`verify.model.flow._flow`."""
    xp = namespace_of(X)
    hp = is_mp(xp)
    B, N, n, d = X.shape
    nd = n * d
    p = taylor_order(tol)
    exact = p  # high precision: the orders computed in precision (as in flow, for the whole batch)
    counts = np.zeros(B, dtype=int)
    step_jacobians, end_fields = [], []
    taylor_steps = 0
    for b, tau in zip(pattern, durations.T, strict=True):
        left = np.abs(tau)
        sign = np.where(tau >= 0, 1, -1)
        # the tangents of this control step: the unit directions of one sequence, for every control
        T = np.broadcast_to(basis_directions(xp, n, d, X)[:, None], (nd, B, N, n, d)).copy() if sensitivities else None
        while True:
            active = np.flatnonzero(left > 0)
            if not active.size:
                break
            while True:
                Xk, dXk = coefficients(blocks[b], X[active], p, None if T is None else T[:, active],
                                       exact_orders=exact if hp else None)
                logs = lognorms(Xk, active.size)  # (p + 1, active)
                logeps = math.log(tol) + np.maximum(0.0, logs[0])
                h = step_size(logs, p, logeps)
                lands = h >= left[active].astype(float, copy=False) * (1 - 1e-12)  # land on the end of the step
                h = np.where(lands, left[active], h)
                need = max(split_order(list(logs[:, j]), float(h[j]), unit * max(1.0, math.exp(logs[0, j])))[0]
                           for j in range(active.size)) if hp else p
                if need <= exact:
                    break
                exact = need  # a float64 tail was too large for its step: more orders in precision
            exact = min(p, need + 1)  # for the next step, one order to spare (float64: all p)
            for _ in range(MAX_HALVINGS):  # the defect check of flow, control by control
                X1, hdefect, rounding = defect(blocks[b], Xk, (sign[active] * h)[:, None, None, None], h, unit, (1,))
                bad = hdefect > DEFECT_SLACK * (p * np.exp(logeps) + rounding)
                if not bad.any():
                    break
                h = np.where(bad, h / 2, h)
            else:
                raise IntegrationError(f"the Taylor series does not describe the flow after {taylor_steps} batched "
                                       f"Taylor steps, in a step of block {b}; the state is too large for the durations")
            X[active] = X1
            if T is not None:
                T[:, active] = evaluate(dXk, (sign[active] * h)[:, None, None, None])
            left[active] -= h
            counts[active] += 1
            taylor_steps += 1
            scale = np.abs(X[active]).reshape(active.size, -1).max(axis=1).astype(float, copy=False)
            worst = int(np.argmax(np.where(np.isnan(scale), np.inf, scale)))  # NaN: an overflow too
            needed = counts[active] + left[active].astype(float, copy=False) / h.astype(float, copy=False)
            refuse(float(scale[worst]), int(np.max(counts[active])), float(np.max(needed)), max_steps, deadline,
                    f"after {taylor_steps} batched Taylor steps, in a step of block {b} (control {int(active[worst])})")
        if T is not None:  # the controls' sequences side by side, B N of them, for backward_products
            step_jacobians.append(columns_to_jacobians(xp, T.reshape(nd, B * N, n, d)))
            end_fields.append(field(blocks[b], X).reshape(B * N, n, d))
    if not sensitivities:
        return FlowResult(X, math.nan, taylor_steps)
    D, G = backward_products(xp, step_jacobians, end_fields, nd, X.reshape(B * N, n, d))
    return FlowResult(X, math.nan, taylor_steps, D.reshape(B, N * nd, -1), G.reshape(B, N, nd, nd))
