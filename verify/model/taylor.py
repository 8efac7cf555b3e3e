"""Taylor coefficients of attention trajectories (the jet of the flow), with tangents.

The trajectory of dX/dt = F_theta(X), X(0) = X_0, has a Taylor series X(t) = sum_k X_k t^k
whose coefficients follow from the field's structure by the classical recurrences of
automatic Taylor arithmetic (exact up to rounding; no finite differences):

    L_k = beta sum_{j<=k} (X_j Q^T)(X_{k-j} K^T)^T                  logits
    E_0 = exp(L_0 - c),  E_k = (1/k) sum_{j=1..k} j L~_j E_{k-j}       exp (c: row maxima)
    S_k = sum_cols E_k,  P_k = (E_k - sum_{j=1..k} S_j P_{k-j}) / S_0   softmax
    F_k = sum_{j<=k} P_j (X_{k-j} V^T),       X_{k+1} = F_k / (k + 1).

with L~_k = L_k - <P_0, L_k> row by row (k >= 1): softmax ignores a shift of each row by any
function of t, and without the centring the exp series grows with the rows' common motion
and cancels in P_k (where tokens reach |x| ~ 10, a 30-digit flow whose high orders are taken
in float64 lost up to 8 digits that way; float64 flows lost about one).

Under a causal mask E_0 vanishes on the excluded entries, and by the recurrence so does every
E_k, so masking needs no further care.

Tangents: the same recurrences differentiated once (forward-mode automatic differentiation
of the series) give the coefficients dX_k of the derivative of X(t) with respect to X_0 in a
batch of directions U (leading axis r).  Summing them, sum_k dX_k h^k, is the exact
derivative of the computed Taylor step.

Cost: O(order^2) batched matrix products per step; every series is one preallocated array, so
each coefficient is a single batched product over slices and the work vectorises in every backend.

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> from verify.model.attention import field
>>> b, _ = gaussian_blocks(seed=0, d=2)
>>> X = np.random.default_rng(1).normal(size=(2, 3, 2))
>>> Xk, _ = coefficients(b, X, order=4)
>>> bool(np.allclose(Xk[1], field(b, X)))
True
"""

from __future__ import annotations

from typing import Any

import numpy as np

from verify.model.attention import beta_in, block_arrays, shifted_exp
from verify.model.backend import namespace, namespace_of
from verify.model.blocks import Block


def _cauchy(xp: Any, A: Any, B: Any, k: int) -> Any:
    """sum_{j=0..k} A_j @ B_{k-j}, one batched matrix product over the series axis."""
    return xp.sum(xp.matmul(A[: k + 1, ...], B[k::-1, ...]), axis=0)


def _products(xp: Any, A: Any, B: Any, k: int) -> Any:
    """sum_{j=1..k} A_j * B_{k-j} (elementwise)."""
    return xp.sum(A[1 : k + 1, ...] * B[k - 1 :: -1, ...], axis=0)


class _Series(dict):
    """Named Taylor series, each stored as one preallocated array with the order as first axis
    (slices of it are views, so the Cauchy products need no stacking)."""

    def __init__(self, xp: Any, size: int):
        super().__init__()
        self.xp, self.size = xp, size

    def put(self, name: str, k: int, value: Any) -> Any:
        if name not in self:
            dtype = getattr(value, "dtype", None)
            self[name] = self.xp.zeros((self.size, *value.shape), dtype=dtype)
        self[name][k, ...] = value
        return value

    def rounded(self, K: int) -> _Series:
        """A float64 NumPy copy holding orders 0..K (the rest zero), to continue the series in."""
        out = _Series(namespace("numpy"), self.size)
        for name, a in self.items():
            out[name] = np.zeros(a.shape)
            out[name][: K + 1, ...] = a[: K + 1, ...].astype(float)
        return out


def coefficients(
    block: Block, X: Any, order: int, U: Any | None = None, exact_orders: int | None = None
) -> tuple[list[Any], list[Any] | None]:
    """Taylor coefficients X_0..X_order of the trajectory through X (shape (..., n, d)).

    With a batch of directions ``U`` (shape (r, ..., n, d)), also the coefficients of the
    tangent trajectories, each of shape (r, ..., n, d); otherwise the second item is None.

    ``exact_orders = K`` (high precision only) computes the coefficients of orders up to K in
    the namespace of X and the rest in float64 NumPy, from float64 roundings of the lower ones
    (a split series; see :func:`verify.model.flow.flow`, which picks K so that the float64 tail of
    every step it takes is far below its rounding unit).  The coefficients above K are then
    float64 arrays.
    """
    xp = namespace_of(X)
    tan = U is not None
    if tan:
        X = xp.expand_dims(X, axis=0)
        U = xp.broadcast_to(U, (U.shape[0], *X.shape[1:]))
    s = _Series(xp, order + 1)
    s.put("X", 0, X)
    if tan:
        s.put("dX", 0, U)
    K = order if exact_orders is None else max(1, min(exact_orders, order))
    _recur(s, block, 0, K, tan)
    tail = s
    if K < order:
        tail = s.rounded(K)
        _recur(tail, block, K, order, tan)

    def series(name: str) -> list[Any]:
        return [(s if k <= K else tail)[name][k, ...] for k in range(order + 1)]

    if tan:
        return [x[0, ...] for x in series("X")], series("dX")
    return series("X"), None


def _recur(s: _Series, block: Block, start: int, stop: int, tan: bool) -> None:
    """The recurrences for orders start..stop - 1, giving X_{start+1}..X_stop (and dX), in the
    namespace of ``s``."""
    xp = s.xp
    Qt, Kt, Vt = block_arrays(block, xp, s["X"])
    beta = beta_in(block, xp)
    for k in range(start, stop):
        Xk = s["X"][k, ...]
        s.put("QX", k, xp.matmul(Xk, Qt))
        s.put("KXt", k, xp.matrix_transpose(xp.matmul(Xk, Kt)))
        s.put("VX", k, xp.matmul(Xk, Vt))
        L = beta * _cauchy(xp, s["QX"], s["KXt"], k)
        if k:  # centred: each row less its P_0-weighted mean (softmax ignores row shifts)
            L = L - xp.sum(s["P"][0, ...] * L, axis=-1, keepdims=True)
        s.put("L", k, L)
        s.put("jL", k, k * L)
        E = s.put("E", k, shifted_exp(xp, L, block.causal) if k == 0 else _products(xp, s["jL"], s["E"], k) / k)
        s.put("S", k, xp.sum(E, axis=-1, keepdims=True))
        S0 = s["S"][0, ...]
        P = s.put("P", k, (E - _products(xp, s["S"], s["P"], k)) / S0 if k else E / S0)
        s.put("X", k + 1, _cauchy(xp, s["P"], s["VX"], k) / (k + 1))
        if not tan:
            continue
        dXk = s["dX"][k, ...]
        s.put("dQX", k, xp.matmul(dXk, Qt))
        s.put("dKXt", k, xp.matrix_transpose(xp.matmul(dXk, Kt)))
        s.put("dVX", k, xp.matmul(dXk, Vt))
        dL = s.put("dL", k, beta * (_cauchy(xp, s["dQX"], s["KXt"], k) + _cauchy(xp, s["QX"], s["dKXt"], k)))
        s.put("jdL", k, k * dL)
        if k == 0:
            dE = s.put("dE", k, E * dL)
        else:
            dE = s.put("dE", k, (_products(xp, s["jdL"], s["E"], k) + _products(xp, s["jL"], s["dE"], k)) / k)
        s.put("dS", k, xp.sum(dE, axis=-1, keepdims=True))
        rest = (_products(xp, s["dS"], s["P"], k) + _products(xp, s["S"], s["dP"], k)) if k else 0
        s.put("dP", k, (dE - rest - s["dS"][0, ...] * P) / S0)
        s.put("dX", k + 1, (_cauchy(xp, s["dP"], s["VX"], k) + _cauchy(xp, s["P"], s["dVX"], k)) / (k + 1))


def evaluate(coeffs: list[Any], h: Any) -> Any:
    """sum_k coeffs[k] h^k by Horner's rule."""
    acc = coeffs[-1]
    for c in coeffs[-2::-1]:
        acc = acc * h + c
    return acc
