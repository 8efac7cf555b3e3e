"""Continuous depth: flows, their error estimates and sensitivities."""

from __future__ import annotations

import dataclasses
import time

import mpmath
import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from property_tests.conftest import examples
from theorems.reach import instance as reach_instance
from verify.io.errors import InputError, IntegrationError
from verify.model.backend import namespace, precision, to_mpmath, to_numpy
from verify.model.blocks import gaussian_blocks
from verify.model.flow import flow
from verify.model.flow_batch import flow_batch
from verify.model.network import apply
from verify.model.taylor import coefficients

from . import independent
from .strategies import problems

SAFETY = 10.0  # integration error *estimates* enter bounds with this factor


def bound(*results, scale=1.0):
    return SAFETY * sum(r.error_estimate for r in results) + 1e-13 * scale


# Found by Hypothesis: the state grows 12x, and the backward flow amplifies the forward error 16x
# (3e-11 against an unamplified bound of 8e-12 at tol 1e-14; 1.3e-12 against 9e-13 at 1e-16).
REVERSAL_REGRESSION = (gaussian_blocks(0, 3), np.array([[[0.0, 1.0, 1.0], [1.0, 1.0, 1.0]]]),
                       [(0, 1.0), (0, 1.0), (1, 1.0)])


@example(REVERSAL_REGRESSION)
@given(problems())
def test_flow_then_reverse_returns_to_start(p):
    """The forward error reaches the start through the backward flow, so it enters the bound
    multiplied by the backward flow's Jacobian norm (computed, not assumed)."""
    blocks, X, control = p
    fwd = flow(blocks, control, X)
    back = flow(blocks, [(b, -t) for b, t in reversed(control)], fwd.end, sensitivities=True)
    amplification = max(float(np.linalg.norm(G, 2)) for G in back.d_initial)
    allowed = SAFETY * (amplification * fwd.error_estimate + back.error_estimate) + 1e-13 * (1 + np.abs(X).max())
    assert np.abs(back.end - X).max() <= allowed


@given(problems(), st.floats(0.05, 0.95))
def test_two_steps_of_one_block_compose(p, frac):
    blocks, X, control = p
    b, tau = control[0]
    one = flow(blocks, [(b, tau)], X)
    two = flow(blocks, [(b, frac * tau), (b, (1 - frac) * tau)], X)
    assert np.abs(one.end - two.end).max() <= bound(one, two, scale=1 + np.abs(X).max())


@given(problems())
def test_flow_matches_independent_dop853(p):
    blocks, X, control = p
    ours = flow(blocks, control, X)
    mats = [(b.Q, b.K, b.V) for b in blocks]
    theirs = independent.flow(mats, control, X, blocks[0].beta, blocks[0].causal)
    assert np.abs(ours.end - theirs).max() <= 1e-10 * (1 + np.abs(theirs).max())


@given(problems(causal=False), st.randoms())
def test_flow_is_permutation_equivariant(p, rnd):
    blocks, X, control = p
    perm = list(range(X.shape[1]))
    rnd.shuffle(perm)
    a, b = flow(blocks, control, X), flow(blocks, control, X[:, perm])
    assert np.abs(a.end[:, perm] - b.end).max() <= bound(a, b, scale=1 + np.abs(X).max())


@given(problems(causal=False), st.data())
def test_coincident_tokens_stay_coincident(p, data):
    blocks, X, control = p
    if X.shape[1] < 2:
        X = np.concatenate([X, X], axis=1)
    i, j = data.draw(st.lists(st.integers(0, X.shape[1] - 1), min_size=2, max_size=2, unique=True))
    X = X.copy()
    X[:, j] = X[:, i]
    end = flow(blocks, control, X).end
    assert np.abs(end[:, i] - end[:, j]).max() <= 1e-13 * (1 + np.abs(end).max())


@given(problems(causal=True), st.integers(1, 4), st.data())
def test_causal_prefix_evolves_independently(p, i, data):
    blocks, X, control = p
    i = min(i, X.shape[1])
    Y = X.copy()
    Y[:, i:] += data.draw(st.floats(0.1, 1.0))
    a, b = flow(blocks, control, X), flow(blocks, control, Y)
    # same trajectory of the prefix; step sizes may differ, so compare within the estimates
    assert np.abs(a.end[:, :i] - b.end[:, :i]).max() <= bound(a, b, scale=1 + np.abs(X).max())


@given(problems(causal=True))
def test_causal_first_token_moves_by_matrix_exponential(p):
    blocks, X, control = p
    end = flow(blocks, control, X)
    with precision(40):
        x1 = mpmath.matrix(X[:, 0, :].T.tolist())
        for b, tau in control:
            x1 = mpmath.expm(mpmath.mpf(tau) * mpmath.matrix(blocks[b].V.tolist())) * x1
        expected = np.array(x1.tolist(), dtype=float).T
    assert np.abs(end.end[:, 0, :] - expected).max() <= bound(end, scale=1 + np.abs(expected).max())


@given(problems())
def test_growth_bound(p):
    blocks, X, control = p
    R = float(np.linalg.norm(X, axis=-1).max())
    growth = np.exp(sum(np.linalg.norm(blocks[b].V, 2) * abs(t) for b, t in control))
    end = flow(blocks, control, X)
    assert float(np.linalg.norm(end.end, axis=-1).max()) <= R * growth * (1 + 1e-12) + bound(end)


@settings(max_examples=examples(6, "each example integrates flows at 30-50 digits"))
@given(problems(max_N=2, max_n=3, max_d=2))
def test_float64_and_mpmath_agree_to_the_float64_estimate(p):
    blocks, X, control = p
    f64 = flow(blocks, control, X)
    hp = flow(blocks, control, X, dps=30)
    assert hp.error_estimate < 1e-20
    assert np.abs(to_numpy(hp.end) - f64.end).max() <= bound(f64, scale=1 + np.abs(X).max())


@settings(max_examples=examples(8, "each example integrates flows at 30-50 digits"))
@given(problems(max_N=2, max_n=3, max_d=2))
def test_sensitivities_match_high_precision_finite_differences(p):
    blocks, X, control = p
    res = flow(blocks, control, X, sensitivities=True)
    N, n, d = X.shape
    with precision(40):
        h = mpmath.mpf(10) ** -15
        for k in range(len(control)):
            plus = [(b, mpmath.mpf(t) + (h if j == k else 0)) for j, (b, t) in enumerate(control)]
            minus = [(b, mpmath.mpf(t) - (h if j == k else 0)) for j, (b, t) in enumerate(control)]
            fd = (to_mpmath(flow(blocks, plus, X, dps=40).end) - to_mpmath(flow(blocks, minus, X, dps=40).end)) / (2 * h)
            col = to_numpy(fd).ravel()
            assert np.abs(res.d_durations[:, k] - col).max() <= 1e-9 * (1 + np.abs(col).max())
        U = np.random.default_rng(0).normal(size=X.shape)
        fd = (flow(blocks, control, X + 1e-15 * U, dps=40).end - flow(blocks, control, X - 1e-15 * U, dps=40).end)
        # X +- 1e-15 U are not exact in float64; use the exact perturbations actually made
        dX = (np.asarray(X + 1e-15 * U) - np.asarray(X - 1e-15 * U))
    ratio = to_numpy(fd).reshape(N, n * d)
    pred = np.einsum("sab,sb->sa", res.d_initial, dX.reshape(N, n * d))
    assert np.abs(pred - ratio).max() <= 1e-9 * (1 + np.abs(ratio).max()) * np.abs(dX).max()


@settings(max_examples=examples(8, "each example integrates flows at 30-50 digits"))
@given(problems(max_N=2, max_n=3, max_d=2))
def test_array_api_strict_flow_and_sensitivities(p):
    """The backend-neutral code gives bit-identical results on the strict namespace."""
    xps = pytest.importorskip("array_api_strict")
    blocks, X, control = p
    ref = flow(blocks, control, X, sensitivities=True)
    got = flow(blocks, control, xps.asarray(X), sensitivities=True)
    for a, b in [(got.end, ref.end), (got.d_durations, ref.d_durations), (got.d_initial, ref.d_initial)]:
        assert type(a).__module__.startswith("array_api_strict")
        assert np.array_equal(to_numpy(a), b)


def test_pure_mpmath_elements_agree_with_mpfr():
    blocks = gaussian_blocks(1, 2)
    X = np.random.default_rng(2).normal(size=(1, 2, 2))
    with precision(30):
        pure = flow(blocks, [(0, 0.3)], namespace("mpmath-pure").asarray(X), tol=1e-27)
        fast = flow(blocks, [(0, 0.3)], namespace("mpmath").asarray(X), tol=1e-27)
    assert type(pure.end.flat[0]).__name__ == "mpf"
    assert np.abs(pure.end.astype(float) - fast.end.astype(float)).max() <= 1e-15


@given(problems(), st.integers(0, 2**31))
def test_lock_step_flows_agree_with_one_at_a_time(p, seed):
    """:func:`flow_batch` on three controls of one pattern (one of them the drawn control, one
    with a zero duration, one with durations of the other signs) from three collections: end
    points, duration and initial-data derivatives as :func:`flow` gives each, to rounding (each
    control takes its own Taylor steps, so the numbers agree bit for bit but for the batched
    products' summation order)."""
    blocks, X, control = p
    pattern, taus = [b for b, _ in control], np.array([t for _, t in control])
    rng = np.random.default_rng(seed)
    durations = np.stack([taus, np.where(np.arange(len(taus)) == 0, 0.0, -taus), rng.uniform(-1, 1, len(taus))])
    Z = np.stack([X, X[::-1] if X.shape[0] > 1 else -X, X + 0.1 * rng.normal(size=X.shape)])
    batch = flow_batch(blocks, pattern, durations, Z, sensitivities=True)
    for j in range(3):
        one = flow(blocks, list(zip(pattern, durations[j], strict=True)), Z[j], sensitivities=True)
        scale = 1 + np.abs(one.end).max()
        assert np.abs(batch.end[j] - one.end).max() <= 1e-12 * scale
        assert np.abs(batch.d_durations[j] - one.d_durations).max() <= 1e-10 * (1 + np.abs(one.d_durations).max())
        assert np.abs(batch.d_initial[j] - one.d_initial).max() <= 1e-10 * (1 + np.abs(one.d_initial).max())


@settings(max_examples=examples(5, "each example integrates flows at 30-50 digits"), deadline=None)
@given(problems(), st.integers(0, 2**31))
def test_lock_step_flows_at_high_precision_agree_with_one_at_a_time(p, seed):
    """``flow_batch(dps=30)`` (the solver's segments at high precision): each end point as
    :func:`flow` gives it at 30 digits, to far below float64 (the batch keeps in precision the
    most orders any control's step needs, so the two may differ by its rounding, not more)."""
    blocks, X, control = p
    pattern = [b for b, _ in control]
    rng = np.random.default_rng(seed)
    durations = np.stack([[t for _, t in control], rng.uniform(-1, 1, len(control))])
    Z = np.stack([X, X + 0.1 * rng.normal(size=X.shape)])
    batch = flow_batch(blocks, pattern, durations, Z, dps=30).end
    assert batch.dtype == object
    for j in range(2):
        one = flow(blocks, list(zip(pattern, durations[j], strict=True)), Z[j], dps=30).end
        with precision(30):
            gap = float(np.abs(batch[j] - one).max())
        assert gap <= 1e-26 * (1 + float(np.abs(one.astype(float)).max()))
    with pytest.raises(ValueError, match="float64 only"):
        flow_batch(blocks, pattern, durations, Z, dps=30, sensitivities=True)


def test_lock_step_flows_refuse_what_flow_refuses():
    """Overflow, the Taylor-step cap and the deadline stop a batch as they stop one flow."""
    b0, b1 = gaussian_blocks(0, 2)
    big = dataclasses.replace(b0, V=np.eye(2) * 50.0, Q=np.zeros((2, 2)))
    Z = np.ones((2, 1, 2, 2))
    with pytest.raises(IntegrationError, match="overflowed"):
        flow_batch((big, b1), [0], np.array([[0.1], [10.0]]), Z)
    far = np.random.default_rng(0).normal(size=(2, 1, 3, 2)) * 30
    with pytest.raises(IntegrationError, match="more than 50 Taylor steps"):
        flow_batch((b0, b1), [0], np.array([[0.0], [5.0]]), far, max_steps=50)
    with pytest.raises(IntegrationError, match="deadline"):
        flow_batch((b0, b1), [0, 1], np.array([[1.0, -1.0], [0.5, 0.5]]), Z, deadline=time.perf_counter())


def test_overflow_is_reported():
    b0, b1 = gaussian_blocks(0, 2)
    big = dataclasses.replace(b0, V=np.eye(2) * 50.0, Q=np.zeros((2, 2)))
    X = np.ones((1, 2, 2))
    with pytest.raises(IntegrationError, match="overflowed"):
        flow((big, b1), [(0, 10.0)], X)


def test_step_budget_is_reported():
    blocks = gaussian_blocks(0, 2)
    X = np.random.default_rng(0).normal(size=(1, 3, 2)) * 30  # logits ~ 1e3: tiny Taylor radius
    with pytest.raises(IntegrationError, match="would need more than 51 Taylor steps"):  # 50 beyond the one step
        flow(blocks, [(0, 5.0)], X, max_steps=50)


def test_many_tiny_steps_are_not_too_large():
    """10 001 control steps of 1e-6 were refused as "durations or data too large" (issue 50):
    the cap counts Taylor steps beyond the one each control step takes."""
    blocks = gaussian_blocks(0, 2)
    X = np.random.default_rng(0).normal(size=(1, 2, 2))
    res = flow(blocks, [(0, 1e-6)] * 2001, X, max_steps=100)
    assert res.taylor_steps == 2001
    assert np.abs(res.end - flow(blocks, [(0, 2001e-6)], X).end).max() < 1e-13


def test_deadline_is_reported():
    """A flow still running at its deadline stops with an IntegrationError (the solver's
    30-digit flows of long controls took a minute each and overran its time budget 3-fold);
    without one, or with a later one, the same flow finishes."""
    blocks = gaussian_blocks(0, 2)
    X = np.random.default_rng(0).normal(size=(1, 3, 2))
    with pytest.raises(IntegrationError, match="stopped at its deadline"):
        flow(blocks, [(0, 1.0), (1, -1.0)], X, dps=30, deadline=time.perf_counter())
    late = flow(blocks, [(0, 1.0), (1, -1.0)], X, dps=30, deadline=time.perf_counter() + 600)
    assert np.abs(to_numpy(late.end) - flow(blocks, [(0, 1.0), (1, -1.0)], X).end).max() < 1e-12


@pytest.mark.parametrize("control, message", [
    ([(2, 1.0)], "unknown block index 2"),
    ([(0, float("nan"))], "not a finite number"),
    ([(True, 1.0)], "unknown block index"),
    ([(0,)], "expected a pair"),
])
def test_bad_controls_are_refused(control, message):
    blocks = gaussian_blocks(0, 2)
    with pytest.raises(InputError, match=message):
        flow(blocks, control, np.zeros((1, 2, 2)))


@pytest.mark.parametrize("seed, scale", [(0, 8.0), (2, 8.0), (3, 4.0)])
def test_split_series_keeps_the_working_precision_at_large_logits(seed, scale):
    """A 30-digit flow, whose steps take their high orders in float64, stays within its estimate
    of a 50-digit one where tokens reach |x| ~ 10-25 (large logits: without the centred logits of
    :mod:`verify.model.taylor` these were 1e-24 to 4e-20 off, against estimates near 1e-26)."""
    blocks = gaussian_blocks(seed, 2)
    X = scale * np.random.default_rng(seed).normal(size=(2, 3, 2))
    control = [(0, 0.3), (1, -0.2)]
    hp, ref = flow(blocks, control, X, dps=30), flow(blocks, control, X, dps=50)
    assert np.abs((hp.end - ref.end).astype(float)).max() <= SAFETY * hp.error_estimate


def test_split_coefficients_keep_the_low_orders_and_round_the_high_ones():
    """``coefficients(..., exact_orders=K)``: orders up to K exactly as in the unsplit series, the
    higher ones (state and tangents) float64 arrays within float64 accuracy of the unsplit ones."""
    block = gaussian_blocks(1, 2)[0]
    X = np.random.default_rng(4).normal(size=(2, 3, 2))
    U = np.random.default_rng(5).normal(size=(3, 2, 3, 2))
    with precision(30):
        xp = namespace("mpmath")
        full, dfull = coefficients(block, xp.asarray(X), 16, xp.asarray(U))
        split, dsplit = coefficients(block, xp.asarray(X), 16, xp.asarray(U), exact_orders=6)
    for k in range(17):
        for a, b in ((split[k], full[k]), (dsplit[k], dfull[k])):
            if k <= 6:
                assert a.dtype == object and np.array_equal(a, b)
            else:
                assert a.dtype == np.float64
                assert np.abs(a - b.astype(float)).max() <= 1e-13 * np.abs(b.astype(float)).max()


@pytest.mark.parametrize("index", [0, 1])
def test_flows_reach_fewer_directions_at_second_order_than_networks(index):
    """Why continuous depth is the harder one (docs/solver-reach.md): with steps eps u (80
    alternating steps, u uniform in [-1, 1], eps = 1e-2) the end point's Jacobian has singular
    values of relative size eps^(k-1) for the directions of order k.  A flow moves along Lie
    brackets only, so exactly 2 + 1 of them are of size eps^0 or eps^1 (F_0, F_1, [F_0, F_1]);
    residual layers also move along products such as DF_a F_b, which are not brackets."""
    X, _, blocks = reach_instance(8, index, seed=200)
    eps, u = 1e-2, np.random.default_rng(index).uniform(-1, 1, 80)
    steps = [(j % 2, eps * t) for j, t in enumerate(u)]

    def reached(J):  # singular values above eps^1.5 of the largest: the orders 1 and 2
        s = np.linalg.svd(J, compute_uv=False)
        return int(np.sum(s >= eps**1.5 * s[0]))

    assert reached(flow(blocks, steps, X, sensitivities=True).d_durations) == 3
    assert reached(apply(blocks, steps, X, sensitivities=True).d_steps) >= 4


@settings(max_examples=examples(10, "float64 flows with sensitivities, one per control step"), deadline=None)
@given(seed=st.integers(0, 2**16))
def test_the_amplification_profile_covers_the_rest_of_the_flow(seed):
    """Per control step k, the guide's amplification is at least ||J||_inf of the flow from the
    start of step k to the end (computed independently, by sensitivities of that rest), and the
    largest of them is the flow's amplification."""
    rng = np.random.default_rng(seed)
    blocks = gaussian_blocks(seed, 2)
    X = rng.normal(size=(2, 3, 2))
    control = [(int(b), float(t)) for b, t in zip(rng.integers(0, 2, 6), rng.uniform(-1.5, 1.5, 6), strict=True)]
    res = flow(blocks, control, X, propagate=True)
    assert len(res.amplifications) == len(control) and max(res.amplifications) == res.amplification
    for k in range(len(control)):
        start = flow(blocks, control[:k], X).end
        rest = flow(blocks, control[k:], start, sensitivities=True).d_initial
        assert res.amplifications[k] >= (1 - 1e-9) * float(np.max(np.sum(np.abs(rest), axis=-1)))
