"""The shape speed: the exact two-token shape equation, the bound it gives, and the first-order
rate for more tokens, each against the attention field itself; the minimal duration against
flows of random controls and the minimal total step against random networks, and their
sharpness for two close tokens."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from verify.model.attention import field
from verify.model.blocks import Block, gaussian_blocks
from verify.model.flow import flow
from verify.model.network import apply
from verify.search.shape_speed import diameters, minimal_duration, minimal_step_total, shape_speeds

from .strategies import blocks, collections, controls


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
            rounding = 8 * 2.0**-52 * (np.abs(F[s]).sum() + np.abs(X[s]).max() * np.abs(b.V).sum())  # F_1 - F_2 cancels
            assert np.linalg.norm(F[s, 0] - F[s, 1]) <= own * np.linalg.norm(delta) * (1 + 1e-12) + rounding
            np.testing.assert_allclose(shape_speeds([b], X[s:s + 1])[0], own, rtol=1e-12)  # ||C|| = |delta|^2 / 4
    assert np.array_equal(shape_speeds((b0, b1), X), np.maximum(shape_speeds([b0], X), shape_speeds([b1], X)))


def test_first_order_rate_of_more_tokens():
    """Any n, tokens scaled by eps: the differences move by V C M^T (x_i - x_k) up to O(eps^2)
    relative error, C the sequence's covariance; its norm is at most the shape speed's factor
    ||V|| ||M|| ||C||."""
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


@given(st.integers(1, 3).flatmap(lambda d: st.tuples(collections((2, 3, d)), blocks(d, causal=False),
                                                     controls(max_len=4, max_abs=1.5))))
def test_no_control_is_shorter_than_the_minimal_duration(case):
    """The diameter bound |d(D^-2)/dt| <= c / 2: the flow of any control changes each
    sequence's D^-2 by at most its total duration times max(c_0, c_1) / 2."""
    X, pair, control = case
    assume(diameters(X).min() > 1e-3)
    Z = flow(pair, control, X).end
    total = sum(abs(t) for _, t in control)
    assert minimal_duration(pair, X, Z) <= total * (1 + 1e-9) + 1e-9


def test_minimal_duration_is_sharp_for_two_close_tokens():
    """d = 1, two tokens at +-delta/2: g = tanh(M delta^2 / 4) ~ M delta^2 / 4 and the mean
    stays at 0, so D^-2 changes at the bound's rate c / 2 up to O(delta^4): the bound is
    within 0.1 % of the duration (a constant 0.1 % larger would exceed it)."""
    block = Block(np.array([[1.3]]), np.array([[0.8]]), np.array([[0.9]]))
    X = np.array([[[-0.025], [0.025]]])
    for t in (1.0, -1.0, 3.0):
        Z = flow([block], [(0, t)], X).end
        assert 0.999 * abs(t) <= minimal_duration([block], X, Z) <= abs(t) * (1 + 1e-9)


def test_diameter_bounds_of_coincident_tokens_and_causal_blocks():
    blocks = gaussian_blocks(1, 2)
    apart, together = np.array([[[0.0, 0.0], [1.0, 0.0]]]), np.zeros((1, 2, 2))
    assert minimal_duration(blocks, apart, together) == np.inf
    assert minimal_duration(blocks, together, together) == 0.0
    assert minimal_duration(blocks, np.zeros((1, 1, 2)), np.ones((1, 1, 2))) == 0.0
    assert minimal_step_total(blocks, together, apart) == np.inf  # a layer keeps coincident tokens together
    assert minimal_step_total(blocks, apart, together) == 0.0  # merging them is contraction: no bound
    assert minimal_step_total(blocks, together, together) == 0.0
    with pytest.raises(ValueError, match="full attention"):
        minimal_duration(gaussian_blocks(1, 2, causal=True), apart, apart)


@given(st.integers(1, 3).flatmap(lambda d: st.tuples(collections((2, 3, d)), blocks(d, causal=False),
                                                     controls(max_len=4, max_abs=4.0))))
def test_no_network_has_a_smaller_total_step_than_the_bound(case):
    """One layer lowers D^-2 by at most |h| max(c_0, c_1) / 2 (``minimal_step_total``), large
    steps included: no network's total |step| is below the bound on what it expanded."""
    X, pair, network = case
    assume(diameters(X).min() > 1e-3)
    with np.errstate(all="ignore"):
        Z = apply(pair, network, X).end
    assume(np.all(np.isfinite(Z)) and np.abs(Z).max() < 1e6)
    total = sum(abs(h) for _, h in network)
    assert minimal_step_total(pair, X, Z) <= total * (1 + 1e-9) + 1e-9


def test_minimal_step_total_is_sharp_for_small_steps_and_void_for_contraction():
    """d = 1, two tokens at +-delta/2 (as for the minimal duration): 1000 layers of step t/1000
    expand the pair with D^-2 falling at nearly the bound's rate c / 2, so the bound is within
    1 % of t.  One layer with step h = -0.99 / (v g), g = tanh(M D^2 / 4), contracts D = 1 to
    D = 0.01 exactly (D' = (1 + h v g) D): far faster than any flow could (minimal duration
    above 100 |h|), and the network bound is 0, as it must be."""
    block = Block(np.array([[1.3]]), np.array([[0.8]]), np.array([[0.9]]))
    X = np.array([[[-0.025], [0.025]]])
    for t in (1.0, 3.0):
        Z = apply([block], [(0, t / 1000)] * 1000, X).end
        assert 0.99 * t <= minimal_step_total([block], X, Z) <= t * (1 + 1e-9)
    wide = np.array([[[-0.5], [0.5]]])
    g = np.tanh(_M(block)[0, 0] / 4)
    h = -0.99 / (block.V[0, 0] * g)
    Z = apply([block], [(0, h)], wide).end
    assert np.isclose(diameters(Z)[0], 0.01, rtol=1e-9)
    assert minimal_duration([block], wide, Z) > 100 * abs(h)
    assert minimal_step_total([block], wide, Z) == 0.0
    with pytest.raises(ValueError, match="minimal_step_total assumes full attention"):
        minimal_step_total(gaussian_blocks(1, 1, causal=True), wide, wide)
