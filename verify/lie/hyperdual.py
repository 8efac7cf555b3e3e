"""Hyper-dual numbers: polynomials in nilpotent variables e_1, ..., e_j (e_i^2 = 0).

An element is an array ``a`` of shape (2^j, ...): ``a[S]`` is the coefficient of the monomial
prod_{i in S} e_(i+1), the subset S written as a bit mask.  So ``a[0]`` is the value, and a
function evaluated at x + e_1 w_1 + ... + e_j w_j carries in ``a[2^j - 1]`` its mixed derivative
D^j f(x)[w_1, ..., w_j] (and every lower one in the other entries), exactly up to rounding.
Products are subset convolutions, (ab)[S] = sum_{T subset of S} a[T] b[S \\ T]: 3^j products of
entries instead of the C(n + K, K)^2 of a dense multivariate jet, whatever the number of
variables the entries depend on.

Entries may be float64 or object arrays (MPFR, mpmath or Arb balls: :mod:`verify.model.backend`).

>>> import numpy as np
>>> x = np.array([2.0, 1.0, 1.0, 0.0])   # 2 + e1 + e2
>>> mul(x, x)                            # 4 + 4 e1 + 4 e2 + 2 e1 e2
array([4., 4., 4., 2.])
>>> p = softmax(np.array([[0.0, 0.0], [1.0, -1.0]]), np.ones(2))   # weights of logits (e, -e)
>>> p.tolist()                                              # 1/2 -+ e/2
[[0.5, 0.5], [0.5, -0.5]]
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np


def level(a: Any) -> int:
    """j for an element of 2^j coefficients."""
    return a.shape[0].bit_length() - 1


@cache
def _convolution(j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Index tables of the subset convolution on j variables: every pair (T, S \\ T) with T a
    subset of S, grouped by S in increasing order, and where each group starts."""
    S_, T_ = [], []
    for S in range(1 << j):
        T = S
        while True:  # the subsets of S, from S down to 0
            S_.append(S)
            T_.append(T)
            if T == 0:
                break
            T = (T - 1) & S
    S_a, T_a = np.array(S_), np.array(T_)
    starts = np.flatnonzero(np.r_[True, S_a[1:] != S_a[:-1]])
    return T_a, S_a ^ T_a, starts


def mul(a: Any, b: Any) -> Any:
    """The product of two elements of one level (their trailing axes broadcast)."""
    j = level(a)
    if j == 0:
        return a * b
    T, U, starts = _convolution(j)
    return np.add.reduceat(a[T] * b[U], starts, axis=0)


def softmax(a: Any, exp0: Any) -> Any:
    """softmax over the last axis, given ``exp0`` = exp(a[0] - row shift) on the admissible
    entries and 0 elsewhere (:func:`verify.model.attention.shifted_exp`).  With a = a' + e_i a''
    (a', a'' free of e_i, i the highest variable), softmax(a) = p' + e_i p' (a'' - sum_t p'_t a''_t):
    the derivative formula of the attention weights, with no quotient whose parts cancel (a row
    of one token gets exactly 1).  Entries of weight 0 stay 0 at every level."""
    out = np.empty_like(a)
    out[0] = exp0 / exp0.sum(axis=-1, keepdims=True)
    for i in range(level(a)):
        lo = 1 << i
        mean = mul(out[:lo], a[lo:2 * lo]).sum(axis=-1, keepdims=True)
        out[lo:2 * lo] = mul(out[:lo], a[lo:2 * lo] - mean)
    return out
