"""Taylor coefficients of attention trajectories (the jet of the flow), with tangents.

The trajectory of dX/dt = F_theta(X), X(0) = X_0, has a Taylor series X(t) = sum_k X_k t^k
whose coefficients follow from the field's structure by the classical recurrences of
automatic Taylor arithmetic (exact up to rounding; no finite differences):

    L_k = beta sum_{j<=k} (X_j Q^T)(X_{k-j} K^T)^T                  logits
    E_0 = exp(L_0 - c),  E_k = (1/k) sum_{j=1..k} j L_j E_{k-j}        exp (c: row maxima)
    S_k = sum_cols E_k,  P_k = (E_k - sum_{j=1..k} S_j P_{k-j}) / S_0   softmax
    F_k = sum_{j<=k} P_j (X_{k-j} V^T),       X_{k+1} = F_k / (k + 1).

Under a causal mask E_0 vanishes on the excluded entries, and by the recurrence so does every
E_k, so masking needs no further care.

Tangents: the same recurrences differentiated once (forward-mode automatic differentiation
of the series) give the coefficients dX_k of the derivative of X(t) with respect to X_0 in a
batch of directions U (leading axis r).  Summing them, sum_k dX_k h^k, is the exact
derivative of the computed Taylor step.

Cost: O(order^2) batched matrix products per step; every coefficient is a stacked product, so
the work vectorises in every backend.

>>> import numpy as np
>>> from verify.blocks import gaussian_blocks
>>> from verify.attention import field
>>> b, _ = gaussian_blocks(seed=0, d=2)
>>> X = np.random.default_rng(1).normal(size=(2, 3, 2))
>>> Xk, _ = coefficients(b, X, order=4)
>>> bool(np.allclose(Xk[1], field(b, X)))
True
"""

from __future__ import annotations

from typing import Any

from .attention import block_arrays, shifted_exp
from .backend import namespace_of
from .blocks import Block


def _cauchy(xp: Any, a: list, b: list, k: int) -> Any:
    """sum_{j=0..k} a_j @ b_{k-j}, as one stacked matrix product."""
    return xp.sum(xp.matmul(xp.stack(a[: k + 1]), xp.stack(b[k::-1])), axis=0)


def _weighted(xp: Any, a: list, b: list, k: int) -> Any:
    """sum_{j=1..k} j a_j * b_{k-j} (elementwise)."""
    return xp.sum(xp.stack([j * a[j] for j in range(1, k + 1)]) * xp.stack(b[k - 1 :: -1]), axis=0)


def _products(xp: Any, a: list, b: list, k: int) -> Any:
    """sum_{j=1..k} a_j * b_{k-j} (elementwise)."""
    return xp.sum(xp.stack(a[1 : k + 1]) * xp.stack(b[k - 1 :: -1]), axis=0)


def coefficients(
    block: Block, X: Any, order: int, U: Any | None = None
) -> tuple[list[Any], list[Any] | None]:
    """Taylor coefficients X_0..X_order of the trajectory through X (shape (..., n, d)).

    With a batch of directions ``U`` (shape (r, ..., n, d)), also the coefficients of the
    tangent trajectories, each of shape (r, ..., n, d); otherwise the second item is None.
    """
    xp = namespace_of(X)
    Qt, Kt, Vt = block_arrays(block, xp, X)
    beta = block.beta
    tan = U is not None
    if tan:
        X = xp.expand_dims(X, axis=0)
        U = xp.broadcast_to(U, (U.shape[0], *X.shape[1:]))
    Xs, QX, KXt, VX, L, E, S, P = [X], [], [], [], [], [], [], []
    dX, dQX, dKXt, dVX, dL, dE, dS, dP = [U], [], [], [], [], [], [], []
    for k in range(order):
        QX.append(xp.matmul(Xs[k], Qt))
        KXt.append(xp.matrix_transpose(xp.matmul(Xs[k], Kt)))
        VX.append(xp.matmul(Xs[k], Vt))
        L.append(beta * _cauchy(xp, QX, KXt, k))
        if k == 0:
            E.append(shifted_exp(xp, L[0], block.causal))
        else:
            E.append(_weighted(xp, L, E, k) / k)
        S.append(xp.sum(E[k], axis=-1, keepdims=True))
        P.append((E[k] - (_products(xp, S, P, k) if k else 0)) / S[0])
        Xs.append(_cauchy(xp, P, VX, k) / (k + 1))
        if not tan:
            continue
        dQX.append(xp.matmul(dX[k], Qt))
        dKXt.append(xp.matrix_transpose(xp.matmul(dX[k], Kt)))
        dVX.append(xp.matmul(dX[k], Vt))
        dL.append(beta * (_cauchy(xp, dQX, KXt, k) + _cauchy(xp, QX, dKXt, k)))
        if k == 0:
            dE.append(E[0] * dL[0])
        else:
            dE.append((_weighted(xp, dL, E, k) + _weighted(xp, L, dE, k)) / k)
        dS.append(xp.sum(dE[k], axis=-1, keepdims=True))
        rest = (_products(xp, dS, P, k) + _products(xp, S, dP, k)) if k else 0
        dP.append((dE[k] - rest - dS[0] * P[k]) / S[0])
        dX.append((_cauchy(xp, dP, VX, k) + _cauchy(xp, P, dVX, k)) / (k + 1))
    if tan:
        return [x[0, ...] for x in Xs], dX
    return Xs, None


def evaluate(coeffs: list[Any], h: Any) -> Any:
    """sum_k coeffs[k] h^k by Horner's rule."""
    acc = coeffs[-1]
    for c in coeffs[-2::-1]:
        acc = acc * h + c
    return acc
