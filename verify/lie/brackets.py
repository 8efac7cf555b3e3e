"""Iterated Lie brackets of the two attention fields, evaluated exactly on a collection.

Convention: [f, g](x) = Dg(x) f(x) - Df(x) g(x).  For each sequence (the field acts sequence
by sequence, so each needs only jets on R^(n d)), the Taylor jets of F_0 and F_1 at the
sequence are computed to order K - 1 by truncated multivariate Taylor arithmetic
(:mod:`verify.lie.jets`; no finite differences, no symbolic expansion); a Hall element
h = [u, v] of degree k then gets the jet of order K - k

    [u, v]_i = sum_l u_l d_l v_i - v_l d_l u_i        (truncated),

from the jets of u and v, and its value is the constant term.  The bracket matrix has one
row per (sequence, token, coordinate) and one column per Hall word of degree <= K.

Cost: dominated by the field jets and the low-degree brackets, polynomial in
C(n d + K, K); the whole batch of N sequences is vectorised.  Works in float64 and on object
arrays (MPFR or Arb balls) alike.  Beyond n d = DENSE_MAX_VARIABLES those jets are too many
(n d = 16 at degree 7: minutes), and :func:`bracket_values` takes the nested directional
derivatives of :mod:`verify.lie.directional` instead, whose cost does not grow with C(n d + K, K).

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> from verify.model.attention import field, jvp
>>> blocks = gaussian_blocks(0, 2)
>>> X = np.random.default_rng(1).normal(size=(2, 3, 2))
>>> M, words = bracket_matrix(blocks, X, 2)
>>> words
['0', '1', '[0,1]']
>>> F0, F1 = field(blocks[0], X), field(blocks[1], X)
>>> bool(np.allclose(M[:, 2], (jvp(blocks[1], X, F0) - jvp(blocks[0], X, F1)).ravel()))
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from verify.lie import directional
from verify.lie.hall import Word, basis, degree, str_word
from verify.lie.jets import Tables, divide, exp_quadratic, hmul, partials, tables
from verify.model.attention import causal_mask
from verify.model.backend import like, namespace_of
from verify.model.blocks import Block

# n d up to which the dense jets are the faster path (measured: docs/numerics.md, 2026-12-03, second entry)
DENSE_MAX_VARIABLES = 6


def field_jet(block: Block, X: Any, order: int) -> list:
    """Jet of F_theta at every sequence of X (N, n, d) up to ``order``.

    Returns [c_0, ..., c_order], c_k of shape (N, n d, n_k): component (token, coordinate),
    monomials of degree k in the n d displacement variables (token, coordinate).
    """
    xp = namespace_of(X)
    N, n, d = X.shape
    D = n * d
    t = tables(D, max(order, 2))
    Q, K, V = (like(X, m) for m in (block.Q, block.K, block.V))
    # linear jets of Q x_s, K x_s, V x_s: degree 0 (N, n, d) and degree 1 (N, n, d, D)
    unit = np.zeros((n, d, D))
    for s in range(n):
        for c in range(d):
            unit[s, c, s * d + c] = 1.0
    unit = like(X, unit)

    def linear(M):
        return X @ M.T, np.einsum("ab,sbv->sav", M, unit)[None].repeat(N, axis=0) if N else None

    qx0, qx1 = linear(Q)
    kx0, kx1 = linear(K)
    vx0, vx1 = linear(V)
    beta = block.beta
    # logits l_st: degree 0, 1, 2 parts, shape (N, n, n, n_k)
    l0 = beta * np.einsum("Nsc,Ntc->Nst", qx0, kx0)
    l1 = beta * (np.einsum("Nsc,Ntcv->Nstv", qx0, kx1) + np.einsum("Nscv,Ntc->Nstv", qx1, kx0))
    l2 = beta * sum(hmul(t, qx1[:, :, None, c, :], 1, kx1[:, None, :, c, :], 1) for c in range(d))
    if block.causal:
        mask = np.asarray(causal_mask(xp, n), dtype=bool)
        shift = np.max(np.where(mask, l0, np.min(l0, axis=-1, keepdims=True)), axis=-1, keepdims=True)
    else:
        mask = None
        shift = np.max(l0, axis=-1, keepdims=True)
    e0 = xp.exp(l0 - shift)
    if mask is not None:
        e0 = np.where(mask, e0, 0 * e0)
    E = exp_quadratic(t, [l0[..., None], l1, l2], e0[..., None], order)
    if mask is not None:
        E = [np.where(mask[..., None], e, 0 * e) for e in E]
    S = [e.sum(axis=2) for e in E]  # (N, n, n_k): sum over attended tokens t
    # numerator sum_t E_st (V x_t + V delta_t): (N, n, d, n_k)
    num = []
    for k in range(order + 1):
        acc = np.einsum("Nstk,Ntc->Nsck", E[k], vx0)
        if k >= 1:
            acc = acc + np.sum(hmul(t, E[k - 1][:, :, :, None, :], k - 1, vx1[:, None, :, :, :], 1), axis=2)
        num.append(acc)
    F = divide(t, num, [s[:, :, None, :] for s in S], order)
    return [f.reshape(N, D, -1) for f in F]


def bracket_jet(t: Tables, u: list, v: list, order: int) -> list:
    """Jet of [u, v] = Dv u - Du v up to ``order`` from jets of u, v (orders >= order + 1)."""
    du = [partials(t, u[k + 1], k + 1) for k in range(order + 1)]  # (N, D_i, D_l, n_k)
    dv = [partials(t, v[k + 1], k + 1) for k in range(order + 1)]
    out = []
    for k in range(order + 1):
        acc = 0
        for j in range(k + 1):
            # sum_l u_l (degree j) * d_l v_i (degree k - j), and the same with u, v swapped
            acc = acc + _contract(t, u[j], dv[k - j], j, k - j) - _contract(t, v[j], du[k - j], j, k - j)
        out.append(acc)
    return out


def _contract(t: Tables, a: Any, b: Any, j: int, m: int) -> Any:
    """sum_l a_l * b_{i,l} for a (N, D_l, n_j), b (N, D_i, D_l, n_m) -> (N, D_i, n_{j+m})."""
    perm, starts = t.products[(j, m)]
    A = np.swapaxes(a, 1, 2)[:, None, :, :]  # (N, 1, n_j, D_l)
    outer = np.matmul(A, b)  # (N, D_i, n_j, n_m)
    flat = outer.reshape(*outer.shape[:2], -1)
    return np.add.reduceat(flat[..., perm], starts, axis=-1)


def bracket_values(blocks: Sequence[Block], X: Any, max_degree: int, method: str = "auto",
                   columns: Sequence[int] | None = None) -> tuple[Any, list[Word]]:
    """Values of every Hall word of degree <= max_degree at every sequence: (N, n d, W).
    ``method``: "dense" (the jets here), "directional" (:mod:`verify.lie.directional`) or
    "auto": dense jets for n d <= DENSE_MAX_VARIABLES, where they are faster, else directional.
    ``columns``: only the words of these indices into the basis (the directional path then
    computes only them and the brackets below them: half the work for a certificate's minor)."""
    words = list(basis(max_degree))
    N, n, d = X.shape
    if method == "auto":
        method = "dense" if n * d <= DENSE_MAX_VARIABLES else "directional"
    if method == "directional":
        chosen = words if columns is None else [words[j] for j in columns]
        return directional.hall_values(blocks, X, chosen), chosen
    if method != "dense":
        raise ValueError(f"method must be 'auto', 'dense' or 'directional', not {method!r}")
    t = tables(n * d, max(max_degree - 1, 2))
    jets: dict[Word, list] = {0: field_jet(blocks[0], X, max_degree - 1), 1: field_jet(blocks[1], X, max_degree - 1)}
    for w in words[2:]:
        jets[w] = bracket_jet(t, jets[w[0]], jets[w[1]], max_degree - degree(w))
    chosen = words if columns is None else [words[j] for j in columns]
    return np.stack([jets[w][0][..., 0] for w in chosen], axis=-1), chosen


def bracket_matrix(blocks: Sequence[Block], X: Any, max_degree: int, method: str = "auto",
                   columns: Sequence[int] | None = None) -> tuple[Any, list[str]]:
    """The (N n d) x W bracket matrix (rows: sequence, token, coordinate) and its word labels;
    ``method`` and ``columns`` as in :func:`bracket_values`."""
    vals, words = bracket_values(blocks, X, max_degree, method, columns)
    N = vals.shape[0]
    return vals.reshape(N * vals.shape[1], -1), [str_word(w) for w in words]
