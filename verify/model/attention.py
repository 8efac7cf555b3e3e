"""The attention field F_theta and its exact first derivatives.

For one sequence X = (x_1, ..., x_n), x_i in R^d, stored as rows of an (n, d) array,

    l_ij = beta <Q x_i, K x_j>,    P_ij = softmax_j(l_ij)  (j <= i only when causal),
    F(X)_i = sum_j P_ij V x_j.

On a collection of shape (N, n, d) the field acts sequence by sequence with the same block, so
its Jacobian is block diagonal; :func:`jacobian` returns the N diagonal blocks, each
(n d) x (n d) with rows and columns ordered (token, coordinate).

The Jacobian-vector product is analytic (no finite differences): with U the direction,

    dl_ij = beta (<Q u_i, K x_j> + <Q x_i, K u_j>),
    dP_ij = P_ij (dl_ij - sum_r P_ir dl_ir),
    dF_i  = sum_j dP_ij V x_j + P_ij V u_j.

Everything is written against the array API standard: the namespace is the one of ``X``
(NumPy, array-api-strict, CuPy, or NumPy object arrays of mpmath numbers).

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> b0, _ = gaussian_blocks(seed=1, d=2)
>>> X = np.random.default_rng(0).normal(size=(3, 4, 2))
>>> field(b0, X).shape, jacobian(b0, X).shape
((3, 4, 2), (3, 8, 8))
"""

from __future__ import annotations

from typing import Any

import numpy as np

from verify.model.backend import is_mp, midpoints, namespace_of
from verify.model.blocks import Block


def block_arrays(block: Block, xp: Any, like: Any = None) -> tuple[Any, Any, Any]:
    """Q^T, K^T, V^T in namespace ``xp`` (transposed: tokens are rows, so Q x_i = (X Q^T)_i)."""
    kw = {} if like is None or not hasattr(like, "dtype") or xp.__name__ == "mpmath" else {"dtype": like.dtype}
    return tuple(xp.matrix_transpose(xp.asarray(m, **kw)) for m in (block.Q, block.K, block.V))  # type: ignore[return-value]


def beta_in(block: Block, xp: Any) -> Any:
    """The block's beta as a number of namespace ``xp`` (a float64 series of a high-precision block
    takes its beta rounded, as it takes its matrices)."""
    if is_mp(xp):
        return block.beta
    return xp.asarray(block.beta) if getattr(xp, "balls", False) else float(block.beta)  # balls: enclosed, not rounded


def causal_mask(xp: Any, n: int) -> Any:
    """Boolean (n, n) array, True where j <= i."""
    return _bool_matrix(xp, np.tril(np.ones((n, n), dtype=bool)))


def _bool_matrix(xp: Any, m: np.ndarray) -> Any:
    return m if xp.__name__ == "mpmath" else xp.asarray(m)


def logits(block: Block, X: Any) -> Any:
    """l_ij = beta <Q x_i, K x_j> of shape (..., n, n), every entry (the causal mask is not applied)."""
    xp = namespace_of(X)
    Qt, Kt, _ = block_arrays(block, xp, X)
    return beta_in(block, xp) * xp.matmul(xp.matmul(X, Qt), xp.matrix_transpose(xp.matmul(X, Kt)))


def softmax_weights(block: Block, X: Any) -> Any:
    """Attention weights P of shape (..., n, n), computed stably.

    Rows are shifted by their largest admissible logit before exponentiation; under a causal
    mask the excluded logits are first replaced by the diagonal one, so no infinities appear in
    any backend.
    """
    xp = namespace_of(X)
    E = shifted_exp(xp, logits(block, X), block.causal)
    return E / xp.sum(E, axis=-1, keepdims=True)


def dominant(W: Any, causal: bool = False) -> np.ndarray:
    """The Boolean mask (..., n, n) of each row's largest entry of W (weights or logits; by
    midpoint for balls; among j <= i when ``causal``)."""
    mids = midpoints(W)
    n = mids.shape[-1]
    if causal:
        mids = np.where(np.tril(np.ones((n, n), bool)), mids, -np.inf)
    return np.arange(n) == np.argmax(mids, axis=-1)[..., None]


def on_dominant(xp: Any, A: Any, top: np.ndarray) -> Any:
    """A less, row by row, its entry marked in ``top``, which is then exactly 0."""
    if hasattr(xp, "on_dominant"):  # a namespace that picks the entry without arithmetic (float balls)
        return xp.on_dominant(A, top)
    return xp.where(top, xp.zeros(A.shape), A - xp.sum(A * top.astype(float), axis=-1, keepdims=True))


def shifted_exp(xp: Any, L: Any, causal: bool) -> Any:
    """exp(L - rowmax) on the admissible entries (j <= i when causal), 0 elsewhere.

    In ball arithmetic (``xp.balls``) each row is shifted by its largest entry as a ball, which
    is then exactly 1: shifted by a number instead, the dominant weight of nearly hard
    attention is a ball e^(+-delta) that softmax's division cannot narrow again."""
    if getattr(xp, "balls", False):
        admissible = np.tril(np.ones(L.shape[-2:], bool)) if causal else np.ones(L.shape[-2:], bool)
        E = xp.exp(xp.where(admissible, on_dominant(xp, L, dominant(L, causal)), xp.zeros(L.shape)))
        return xp.where(admissible, E, xp.zeros(L.shape))
    if not causal:
        return xp.exp(L - xp.max(L, axis=-1, keepdims=True))
    n = L.shape[-1]
    mask = causal_mask(xp, n)
    zero = 0 * L
    diag = xp.sum(xp.where(_bool_matrix(xp, np.eye(n, dtype=bool)), L, zero), axis=-1, keepdims=True)
    Lm = xp.where(mask, L, diag + zero)
    return xp.where(mask, xp.exp(Lm - xp.max(Lm, axis=-1, keepdims=True)), zero)


def field(block: Block, X: Any) -> Any:
    """F_theta(X) for X of shape (..., n, d); same shape and namespace as X."""
    xp = namespace_of(X)
    _, _, Vt = block_arrays(block, xp, X)
    P = softmax_weights(block, X)
    return xp.matmul(P, xp.matmul(X, Vt))


def jvp(block: Block, X: Any, U: Any) -> Any:
    """DF_theta(X)[U]; U has the shape of X, or extra leading axes (a batch of directions)."""
    xp = namespace_of(X)
    Qt, Kt, Vt = block_arrays(block, xp, X)
    P = softmax_weights(block, X)
    QX, KX, VX = xp.matmul(X, Qt), xp.matmul(X, Kt), xp.matmul(X, Vt)
    dL = beta_in(block, xp) * (
        xp.matmul(xp.matmul(U, Qt), xp.matrix_transpose(KX))
        + xp.matmul(QX, xp.matrix_transpose(xp.matmul(U, Kt)))
    )
    if getattr(xp, "balls", False):  # softmax ignores row shifts: on the dominant entry the cancellation is exact
        dL = on_dominant(xp, dL, dominant(P, block.causal))
    dP = P * (dL - xp.sum(P * dL, axis=-1, keepdims=True))
    return xp.matmul(dP, VX) + xp.matmul(P, xp.matmul(U, Vt))


def basis_directions(xp: Any, n: int, d: int, like: Any = None) -> Any:
    """The n d unit directions of one sequence, shape (n d, 1, n, d).

    Because the Jacobian is block diagonal over sequences, pushing this batch through a
    linearisation of a whole collection (N, n, d) yields every sequence's Jacobian at once.
    """
    E = np.eye(n * d).reshape(n * d, 1, n, d)
    if xp.__name__ == "mpmath":
        return xp.asarray(E)
    return xp.asarray(E, dtype=like.dtype) if like is not None else xp.asarray(E)


def columns_to_jacobians(xp: Any, T: Any) -> Any:
    """Pushed-forward basis directions (n d, N, n, d) -> per-sequence Jacobians (N, n d, n d)."""
    r, N = T.shape[0], T.shape[1]
    return xp.permute_dims(xp.reshape(T, (r, N, r)), (1, 2, 0))


def jacobian(block: Block, X: Any) -> Any:
    """Per-sequence Jacobians of F_theta at X (N, n, d): shape (N, n d, n d)."""
    xp = namespace_of(X)
    _, n, d = X.shape
    return columns_to_jacobians(xp, jvp(block, X, basis_directions(xp, n, d, X)))


def field_and_jacobian(block: Block, Z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """F_theta(Z) and its per-sequence Jacobians in closed form, float64 NumPy only.

    ``Z`` has shape (..., n, d) with any leading axes (sequences, batches of collections); the
    Jacobians have shape (..., n d, n d).  With M = beta Q^T K (so l_ij = x_i^T M x_j),
    VX_j = V x_j, B_i = M^T x_i and W_ik = P_ik (V x_k - F_i), the derivative of F_i with
    respect to x_k is the d x d matrix

        dF_i/dx_k = W_ik B_i^T + P_ik V + delta_ik sum_j W_ij (M x_j)^T,

    the JVP formula of :func:`jvp` written out (sum_j P_ij = 1 turns its diagonal term
    sum_j P_ij (V x_j)(M x_j)^T - F_i (P MX)_i^T into the last sum), so a whole batch costs a
    few array operations instead of n d directional derivatives.  Masked entries (causal) have
    P_ij = 0 and drop out.

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> b0, _ = gaussian_blocks(seed=1, d=2)
    >>> Z = np.random.default_rng(0).normal(size=(5, 3, 4, 2))
    >>> F, J = field_and_jacobian(b0, Z)
    >>> bool(np.abs(J[2] - jacobian(b0, Z[2])).max() < 1e-13), J.shape
    (True, (5, 3, 8, 8))
    """
    n, d = Z.shape[-2:]
    M = float(block.beta) * block.Q.T @ block.K
    VX, B, MX = _times(Z, block.V.T), _times(Z, M), _times(Z, M.T)
    P = _weights(B, Z, block.causal)
    F = _small_matmul(P, VX)
    W = (VX[..., None, :, :] - F[..., :, None, :]) * P[..., None]  # (..., i, k, a)
    J = np.multiply(np.swapaxes(W, -1, -2)[..., None], B[..., :, None, None, :], order="C")  # (..., i, a, k, b)
    J += P[..., :, None, :, None] * block.V[:, None, :]
    diag = W[..., :, 0, :, None] * MX[..., None, 0, None, :]  # (..., i, a, b)
    for k in range(1, n):
        diag += W[..., :, k, :, None] * MX[..., None, k, None, :]
    idx = np.arange(n)
    J[..., idx, :, idx, :] += np.moveaxis(diag, -3, 0)
    return F, J.reshape(Z.shape[:-2] + (n * d, n * d))


def field_jet(block: Block, Z0: np.ndarray, Z1: np.ndarray, Z2: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Taylor coefficients F0, F1, F2 of e -> F_theta(Z0 + e Z1 + e^2 Z2) to second order,
    float64 NumPy only, shapes (..., n, d) as for :func:`field_and_jacobian`.

    With B_k = Z_k M (M = beta Q^T K) the logits are quadratic in e, L = L0 + e L1 + e^2 L2 with
    L1 = B1 Z0^T + B0 Z1^T and L2 = B2 Z0^T + B1 Z1^T + B0 Z2^T.  Row-wise log P = L - logsumexp(L)
    expands as log P0 + e a1 + e^2 a2 with a1 = L1 - <P0, L1>, a2 = L2 - <P0, L2> - <P0, a1^2> / 2
    (<., .> summing a row), so P1 = P0 a1 and P2 = P0 (a2 + a1^2 / 2), and with VZ_k = Z_k V^T

        F0 = P0 VZ0,   F1 = P1 VZ0 + P0 VZ1,   F2 = P2 VZ0 + P1 VZ1 + P0 VZ2.

    F1 = DF[Z1] (:func:`jvp`) and, with Z2 = 0, 2 F2 = D^2F[Z1, Z1]; masked entries have
    P0 = 0 and drop out of every coefficient.

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> b0, _ = gaussian_blocks(seed=1, d=2)
    >>> Z0, Z1 = np.random.default_rng(0).normal(size=(2, 3, 4, 2))
    >>> F0, F1, F2 = field_jet(b0, Z0, Z1, np.zeros_like(Z0))
    >>> bool(np.abs(F1 - jvp(b0, Z0, Z1)).max() < 1e-13)
    True
    """
    M = float(block.beta) * block.Q.T @ block.K
    B0, B1, B2 = _times(Z0, M), _times(Z1, M), _times(Z2, M)
    T0, T1, T2 = (np.swapaxes(Z, -1, -2) for Z in (Z0, Z1, Z2))
    P = _weights(B0, Z0, block.causal)
    L1 = _small_matmul(B1, T0) + _small_matmul(B0, T1)
    L2 = _small_matmul(B2, T0) + _small_matmul(B1, T1) + _small_matmul(B0, T2)
    a1 = L1 - _row_reduce(np.add, P * L1)
    a2 = L2 - _row_reduce(np.add, P * L2) - 0.5 * _row_reduce(np.add, P * a1 * a1)
    P1, P2 = P * a1, P * (a2 + 0.5 * a1 * a1)
    VZ0, VZ1, VZ2 = _times(Z0, block.V.T), _times(Z1, block.V.T), _times(Z2, block.V.T)
    F0 = _small_matmul(P, VZ0)
    F1 = _small_matmul(P1, VZ0) + _small_matmul(P, VZ1)
    F2 = _small_matmul(P2, VZ0) + _small_matmul(P1, VZ1) + _small_matmul(P, VZ2)
    return F0, F1, F2


def field_numpy(block: Block, Z: np.ndarray) -> np.ndarray:
    """F_theta(Z) for float64 NumPy Z (..., n, d): :func:`field` without the namespace layer."""
    P = _weights(_times(Z, float(block.beta) * block.Q.T @ block.K), Z, block.causal)
    return _small_matmul(P, _times(Z, block.V.T))


# The float64 kernels run on large batches of tiny matrices (n, d <= 4 in the solver), where a
# stacked matmul or a reduction along an axis of length 2-4 costs NumPy a short inner loop per
# matrix (measured 60-90 us for 448 products of 2 x 2 matrices, against 6 us for the same work as
# one 2-D product).  So products with a fixed matrix run as one 2-D product, row reductions over
# at most UNROLL terms run as that many whole-array operations, and so do stacked products of at
# most UNROLL_PRODUCT multiply-adds per matrix (p q r: 8 for 2 x 2 matrices, 18 for n = 3 and
# d = 2).  Larger ones go to matmul, whose per-matrix loop is then the cheaper: with 4 tokens
# (m = 32 and up) the population fit ran 92 -> 110 Jacobians per second at m = 32 and 18 -> 21
# at m = 64, and unchanged at m = 18.
UNROLL = 8
UNROLL_PRODUCT = 18


def _times(Z: np.ndarray, A: np.ndarray) -> np.ndarray:
    """Z (..., d) @ A (d, e) as one 2-D product."""
    return (Z.reshape(-1, Z.shape[-1]) @ A).reshape(Z.shape[:-1] + (A.shape[-1],))


def _small_matmul(A: np.ndarray, B: np.ndarray) -> np.ndarray:
    """A (..., p, q) @ B (..., q, r), summed term by term when p q r <= UNROLL_PRODUCT."""
    p, q = A.shape[-2:]
    if p * q * B.shape[-1] > UNROLL_PRODUCT:
        return A @ B
    out = A[..., :, 0, None] * B[..., None, 0, :]
    for k in range(1, q):
        out += A[..., :, k, None] * B[..., None, k, :]
    return out


def _weights(B: np.ndarray, Z: np.ndarray, causal: bool) -> np.ndarray:
    """Softmax of the logits l_ij = <B_i, x_j> (B = Z M), row-shifted by the largest admissible one."""
    L = _small_matmul(B, np.swapaxes(Z, -1, -2))
    if causal:
        L = np.where(np.tril(np.ones(L.shape[-2:], dtype=bool)), L, -np.inf)
    L -= _row_reduce(np.maximum, L)
    np.exp(L, out=L)
    L /= _row_reduce(np.add, L)
    return L


def _row_reduce(ufunc: np.ufunc, L: np.ndarray) -> np.ndarray:
    """ufunc.reduce over the last axis (kept, length 1), term by term when it has <= UNROLL entries."""
    if L.shape[-1] > UNROLL:
        return ufunc.reduce(L, axis=-1, keepdims=True)
    out = L[..., 0].copy()
    for j in range(1, L.shape[-1]):
        ufunc(out, L[..., j], out=out)
    return out[..., None]
