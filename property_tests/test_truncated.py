"""Truncated polynomials in several variables of their own orders (verify.lie.truncated)."""

from __future__ import annotations

from itertools import product
from math import factorial

import mpmath
import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from verify.lie.truncated import matmul, mul, size, softmax

orders_lists = st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple)


def _exponents(orders):
    """Exponent vectors in storage order (t_1 least significant)."""
    return [tuple(reversed(m)) for m in product(*(range(k + 1) for k in reversed(orders)))]


@given(orders_lists, st.integers(0, 1000))
def test_product_is_the_polynomial_product_truncated_in_every_variable(orders, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(2, size(orders), 3))
    exps = _exponents(orders)
    index = {e: i for i, e in enumerate(exps)}
    expected = np.zeros_like(a)
    for i, e in enumerate(exps):
        for j, f in enumerate(exps):
            g = tuple(x + y for x, y in zip(e, f, strict=True))
            if g in index:
                expected[index[g]] += a[i] * b[j]
    assert np.allclose(mul(a, b, orders), expected, rtol=1e-13, atol=1e-13)


@given(orders_lists, st.integers(0, 1000))
def test_matrix_product_is_the_product_of_matrix_entries(orders, seed):
    rng = np.random.default_rng(seed)
    a, b = rng.normal(size=(size(orders), 2, 3)), rng.normal(size=(size(orders), 3, 4))
    by_entries = mul(a[..., :, :, None], b[..., None, :, :], orders).sum(axis=-2)
    assert np.allclose(matmul(a, b, orders), by_entries, rtol=1e-13, atol=1e-13)


def _taylor_softmax(coeffs, exps, orders):
    """Coefficients of softmax(a(t)) by mpmath's own derivatives of the closed form at t = 0."""
    def f(*t):
        logits = [sum(c[i] * mpmath.fprod(x**m for x, m in zip(t, e, strict=True)) for i, e in enumerate(exps))
                  for c in coeffs]
        z = [mpmath.exp(v) for v in logits]
        return [v / mpmath.fsum(z) for v in z]

    out = np.zeros((len(exps), len(coeffs)))
    for i, e in enumerate(exps):
        for s in range(len(coeffs)):
            d = mpmath.diff(lambda *t, s=s: f(*t)[s], (0,) * len(orders), e)
            out[i, s] = d / mpmath.fprod(factorial(m) for m in e)
    return out


@given(st.sampled_from([(3,), (1, 1), (2, 1), (1, 2)]), st.integers(0, 1000))
def test_softmax_matches_derivatives_of_the_closed_form(orders, seed):
    rng = np.random.default_rng(seed)
    exps = _exponents(orders)
    a = rng.normal(size=(size(orders), 3))
    with mpmath.workdps(30):
        expected = _taylor_softmax([list(a[:, s]) for s in range(3)], exps, orders)
    got = softmax(a, np.exp(a[0] - a[0].max()), orders)
    assert np.allclose(got, expected, rtol=1e-12, atol=1e-12)


def test_a_single_admissible_entry_has_weight_exactly_one_at_every_order():
    a = np.random.default_rng(0).normal(size=(size((3, 2)), 2))
    p = softmax(a, np.array([1.0, 0.0]), (3, 2))  # the second entry masked
    assert p[0].tolist() == [1.0, 0.0] and np.all(p[1:] == 0)
