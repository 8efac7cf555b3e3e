"""Truncated polynomials in several variables, each with its own order:
R[t_1, ..., t_B] / (t_1^(k_1 + 1), ..., t_B^(k_B + 1)).

An element is an array ``a`` of shape (prod (k_b + 1), ...) with ``orders`` = (k_1, ..., k_B):
``a[i]`` is the coefficient of t_1^(m_1) ... t_B^(m_B), i = m_1 + (k_1 + 1) (m_2 + (k_2 + 1) (...))
(mixed radix, t_1 least significant), so ``a[0]`` is the value.  Orders all 1 are hyper-dual
numbers (nilpotent e_i, e_i^2 = 0; a[S] the coefficient of prod_{i in S} e_i, S a bit mask);
an order k is a univariate Taylor polynomial of degree k.  The nested directional derivatives
of :mod:`verify.lie.directional` need both: k steps along one word are symmetric in their k
nilpotent variables e_1..e_k, and a symmetric element is a polynomial in t = e_1 + ... + e_k
of degree k (e_1 e_2 = t^2 / 2 on the symmetric part), which costs (k + 1)(k + 2) / 2 products
of entries instead of 3^k.

The product multiplies the coefficient pairs whose exponents add up to at most k_b in every
variable: prod_b (k_b + 1)(k_b + 2) / 2 products of entries, whatever the number of
coordinates the entries depend on.  Entries may be float64 or object arrays (MPFR, mpmath or
Arb balls: :mod:`verify.model.backend`); only +, - and * of entries, and products and
quotients by small integers, are used.

>>> import numpy as np
>>> x = np.array([2.0, 1.0, 1.0, 0.0])   # 2 + e1 + e2, orders (1, 1)
>>> mul(x, x, (1, 1))                    # 4 + 4 e1 + 4 e2 + 2 e1 e2
array([4., 4., 4., 2.])
>>> y = np.array([2.0, 1.0, 0.0])        # 2 + t, order 2
>>> mul(y, y, (2,))                      # 4 + 4 t + t^2
array([4., 4., 1.])
>>> p = softmax(np.array([[0.0, 0.0], [1.0, -1.0]]), np.ones(2), (1,))   # logits (e, -e)
>>> p.tolist()                                                         # 1/2 -+ e/2
[[0.5, 0.5], [0.5, -0.5]]
"""

from __future__ import annotations

from functools import cache
from math import prod
from typing import Any

import numpy as np

Orders = tuple[int, ...]


def size(orders: Orders) -> int:
    """The number of coefficients, prod (k_b + 1)."""
    return prod(k + 1 for k in orders)


@cache
def _products(orders: Orders) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Index tables of the truncated product: every pair (i, j) of coefficients whose exponents
    add up to at most k_b in every variable, grouped by the index of the sum in increasing
    order, and where each group starts."""
    first, second, total = np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)
    stride = 1
    for k in orders:
        i, j = np.array([(i, j) for i in range(k + 1) for j in range(k + 1 - i)]).T
        first = (first[:, None] + stride * i).ravel()
        second = (second[:, None] + stride * j).ravel()
        total = (total[:, None] + stride * (i + j)).ravel()
        stride *= k + 1
    order = np.argsort(total, kind="stable")
    total = total[order]
    starts = np.flatnonzero(np.r_[True, total[1:] != total[:-1]])
    return first[order], second[order], starts


def mul(a: Any, b: Any, orders: Orders) -> Any:
    """The product of two elements with these ``orders`` (their trailing axes broadcast)."""
    if not orders:
        return a * b
    first, second, starts = _products(orders)
    return np.add.reduceat(a[first] * b[second], starts, axis=0)


def matmul(a: Any, b: Any, orders: Orders) -> Any:
    """The product of two elements whose entries are matrices (``@`` on the trailing two axes)."""
    if not orders:
        return a @ b
    first, second, starts = _products(orders)
    return np.add.reduceat(a[first] @ b[second], starts, axis=0)


def softmax(a: Any, exp0: Any, orders: Orders) -> Any:
    """softmax over the last axis, given ``exp0`` = exp(a[0] - row shift) on the admissible
    entries and 0 elsewhere (:func:`verify.model.attention.shifted_exp`).

    Variable by variable, from t_1 up: with p the weights in the lower variables (known) and
    a = sum_m t^m a_m in the next one, d p / dt = p (a' - sum_s p_s a'_s) (the derivative of the
    attention weights), so coefficient by coefficient

        (m + 1) p_(m+1) = sum_(j <= m) p_j (a'_(m-j) - h_(m-j)),   h_i = sum_s (sum_(j <= i) p_j a'_(i-j))_s,

    with a'_i = (i + 1) a_(i+1): no quotient whose parts cancel (a row of one token gets exactly
    1), and entries of weight 0 stay 0 at every order."""
    out = np.empty_like(a)
    out[0] = exp0 / exp0.sum(axis=-1, keepdims=True)
    stride = 1
    for b, k in enumerate(orders):
        lower, top = orders[:b], stride * (k + 1)
        # coefficients of t^0 .. t^k, each an element of the lower variables; P is a view of out
        A, P = (x[:top].reshape((k + 1, stride) + a.shape[1:]) for x in (a, out))
        da = [(i + 1) * A[i + 1] for i in range(k)]
        h = []
        for m in range(k):
            h.append(sum(mul(P[j], da[m - j], lower) for j in range(m + 1)).sum(axis=-1, keepdims=True))
            P[m + 1] = sum(mul(P[j], da[m - j] - h[m - j], lower) for j in range(m + 1)) / (m + 1)
        stride = top
    return out
