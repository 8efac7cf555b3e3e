"""Truncated multivariate Taylor polynomials (jets) in D variables, stored by degree.

A jet of order r is a list [c_0, ..., c_r]; c_k holds the coefficients of the homogeneous
degree-k part in its last axis, one entry per monomial delta^alpha with |alpha| = k (in a
fixed order, see :func:`tables`); leading axes are batch axes.  Arithmetic is exact up to
rounding and works on float64 arrays and on object arrays (MPFR, mpmath or Arb balls), since
it only uses +, *, / and NumPy's gather and ``add.reduceat``.

* product of homogeneous parts of degrees j and m: the outer product of the coefficient
  vectors, gathered and summed onto the degree j + m monomials (:func:`hmul`);
* exp of a jet q with only degree 1 and 2 parts besides the constant (logits are quadratic):
  Euler's relation k E_k = sum_j j q_j E_{k-j} (:func:`exp_quadratic`);
* quotient N / S: P_k = (N_k - sum_{j>=1} S_j P_{k-j}) / S_0 (:func:`divide`);
* partial derivatives: d/d delta_l maps degree k to k - 1 with factor alpha_l (:func:`partials`).

>>> import numpy as np
>>> t = tables(2, 2)            # two variables, order 2
>>> t.monomials[2].tolist()      # degree-2 monomials as exponent vectors
[[2, 0], [1, 1], [0, 2]]
>>> x = [np.array([1.0]), np.array([1.0, 0.0]), np.zeros(3)]   # 1 + d0
>>> y = [np.array([2.0]), np.array([0.0, 3.0]), np.zeros(3)]   # 2 + 3 d1
>>> [c.tolist() for c in multiply(x, y, 2)]                   # (1 + d0)(2 + 3 d1)
[[2.0], [2.0, 3.0], [0.0, 3.0, 0.0]]
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from itertools import combinations_with_replacement
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Tables:
    D: int
    order: int
    monomials: tuple[np.ndarray, ...]  # monomials[k]: (n_k, D) exponents
    # products: (j, m) -> (permutation of the flattened n_j x n_m outer product, reduceat starts)
    products: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]]
    # partials[k]: (index into degree k for beta + e_l, factor beta_l + 1), each (D, n_{k-1})
    partials: tuple[tuple[np.ndarray, np.ndarray], ...]

    def size(self, k: int) -> int:
        return len(self.monomials[k])


@cache
def tables(D: int, order: int) -> Tables:
    """Index tables for jets in D variables up to ``order`` (cached)."""
    base = order + 1
    weights = base ** np.arange(D, dtype=np.int64)
    monos, codes = [], []
    for k in range(order + 1):
        m = np.zeros((len(list(combinations_with_replacement(range(D), k))), D), dtype=np.int64)
        for i, combo in enumerate(combinations_with_replacement(range(D), k)):
            for v in combo:
                m[i, v] += 1
        monos.append(m)
        codes.append(m @ weights)
    lookup = []
    for c in codes:
        order_ = np.argsort(c)
        lookup.append((c[order_], order_))

    def index(k: int, code: np.ndarray) -> np.ndarray:
        sorted_codes, perm = lookup[k]
        return perm[np.searchsorted(sorted_codes, code)]

    products = {}
    for j in range(order + 1):
        for m in range(order + 1 - j):
            out = index(j + m, (codes[j][:, None] + codes[m][None, :]).ravel())
            perm = np.argsort(out, kind="stable")
            starts = np.flatnonzero(np.r_[True, np.diff(out[perm]) != 0])
            products[(j, m)] = (perm, starts)
    partials = [(np.zeros((D, 0), dtype=np.int64), np.zeros((D, 0)))]
    for k in range(1, order + 1):
        lower = monos[k - 1]
        idx = np.stack([index(k, codes[k - 1] + weights[v]) for v in range(D)])
        fac = (lower.T + 1).astype(float)
        partials.append((idx, fac))
    return Tables(D, order, tuple(monos), products, tuple(partials))


def hmul(t: Tables, a: Any, j: int, b: Any, m: int) -> Any:
    """Product of homogeneous parts a (degree j, shape (..., n_j)) and b (degree m, (..., n_m))."""
    perm, starts = t.products[(j, m)]
    outer = (a[..., :, None] * b[..., None, :]).reshape(*np.broadcast_shapes(a.shape[:-1], b.shape[:-1]), -1)
    return np.add.reduceat(outer[..., perm], starts, axis=-1)


def multiply(a: list, b: list, order: int) -> list:
    """Truncated product of two jets (lists of homogeneous parts) up to ``order``."""
    t = tables(a[1].shape[-1] if len(a) > 1 else 1, order)
    return [sum(hmul(t, a[j], j, b[k - j], k - j) for j in range(k + 1)) for k in range(order + 1)]


def exp_quadratic(t: Tables, q: list, c0: Any, order: int) -> list:
    """exp(q) for a jet q = q_0 + q_1 + q_2 (no parts above degree 2); ``c0`` = exp(q_0)."""
    E = [c0[..., None] if np.ndim(c0) == np.ndim(q[0]) - 1 else c0]
    for k in range(1, order + 1):
        acc = hmul(t, q[1], 1, E[k - 1], k - 1)
        if k >= 2:
            acc = acc + 2 * hmul(t, q[2], 2, E[k - 2], k - 2)
        E.append(acc / k)
    return E


def divide(t: Tables, num: list, den: list, order: int) -> list:
    """num / den, with den broadcasting against num (batch axes)."""
    P = [num[0] / den[0]]
    for k in range(1, order + 1):
        acc = num[k]
        for j in range(1, k + 1):
            acc = acc - hmul(t, den[j], j, P[k - j], k - j)
        P.append(acc / den[0])
    return P


def partials(t: Tables, c: Any, k: int) -> Any:
    """All D partial derivatives of the degree-k part c (..., n_k): shape (..., D, n_{k-1})."""
    idx, fac = t.partials[k]
    return c[..., idx] * fac
