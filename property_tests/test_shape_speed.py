"""The shape speed: the exact two-token shape equation, the bound it gives, and the first-order
rate for more tokens, each against the attention field itself."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from verify.attention import field
from verify.shape_speed import shape_speeds

from .strategies import blocks, collections


def _M(block):
    return block.beta * block.Q.T @ block.K


@given(st.integers(1, 3).flatmap(lambda d: st.tuples(collections((2, 2, d)), blocks(d, causal=False))))
def test_two_tokens_move_their_difference_along_v_delta(case):
    """n = 2: F(X)_1 - F(X)_2 = g V delta with g = sigma(x_1^T M delta) - sigma(x_2^T M delta),
    and its size is at most the shape speed times |delta| (for the block's own speed, and so
    for the larger of the two)."""
    X, (b0, b1) = case
    for b in (b0, b1):
        F = field(b, X)
        for s in range(X.shape[0]):
            x1, x2 = X[s]
            delta = x1 - x2
            M = _M(b)
            g = 1 / (1 + np.exp(-(x1 @ M @ delta))) - 1 / (1 + np.exp(-(x2 @ M @ delta)))
            np.testing.assert_allclose(F[s, 0] - F[s, 1], g * (b.V @ delta), atol=1e-12)
            own = np.linalg.norm(b.V, 2) * np.linalg.norm(M, 2) * (delta @ delta) / 4
            assert np.linalg.norm(F[s, 0] - F[s, 1]) <= own * np.linalg.norm(delta) * (1 + 1e-12) + 1e-300
            np.testing.assert_allclose(shape_speeds([b], X[s:s + 1])[0], own, rtol=1e-12)  # ||C|| = |delta|^2 / 4
    assert np.array_equal(shape_speeds((b0, b1), X), np.maximum(shape_speeds([b0], X), shape_speeds([b1], X)))


def test_first_order_rate_of_more_tokens():
    """Any n, tokens scaled by eps: the differences move by V C M^T (x_i - x_k) up to O(eps^2)
    relative error, C the sequence's covariance; its norm is at most the shape speed's factor
    ||V|| ||M|| ||C||."""
    from verify.blocks import gaussian_blocks

    b = gaussian_blocks(4, 3)[0]
    X = np.random.default_rng(0).normal(size=(1, 5, 3))
    for eps in (1e-1, 1e-2):
        Z = eps * X
        centred = Z[0] - Z[0].mean(axis=0)
        C = centred.T @ centred / Z.shape[1]
        F = field(b, Z)[0]
        predicted = (b.V @ C @ _M(b).T @ (Z[0] - Z[0, -1]).T).T
        assert np.abs((F - F[-1]) - predicted).max() <= 10 * eps**2 * np.abs(predicted).max()
        rate = np.linalg.norm(b.V @ C @ _M(b).T, 2)
        assert rate <= shape_speeds([b], Z)[0] * (1 + 1e-12)
