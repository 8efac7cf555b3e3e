"""Through a hub (verify.search.hub): the hub's spread, and a composed control that replays."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from verify.io.errors import InputError
from verify.model.blocks import gaussian_blocks
from verify.model.flow import flow
from verify.search import hub
from verify.search.settings import Settings
from verify.search.solver import solve


@given(st.integers(0, 10_000), st.sampled_from([(1, 2, 2), (2, 3, 2), (3, 4, 2), (2, 2, 3)]), st.floats(0.01, 100.0))
def test_the_hub_spreads_tokens_and_bounds_their_norms_at_any_scale(seed, shape, scale):
    X, Y = scale * np.random.default_rng(seed).normal(size=(2, *shape))
    H = hub.hub(X, Y)
    rho = hub.rms(X, Y)
    n = shape[1]
    dist = np.linalg.norm(H[:, :, None] - H[:, None, :], axis=-1)[:, ~np.eye(n, dtype=bool)]
    norms = np.linalg.norm(H, axis=-1)
    slack = 1e-9 * rho
    assert dist.min() >= hub.SEPARATION * rho - slack
    assert hub.NORM_RANGE[0] * rho - slack <= norms.min() and norms.max() <= hub.NORM_RANGE[1] * rho + slack


def test_a_composed_control_replays_on_the_exact_flows():
    blocks = gaussian_blocks(3, 2)
    X = np.random.default_rng(1).normal(size=(1, 2, 2))
    Y = flow(blocks, [(0, 0.4), (1, -0.3), (0, 0.2)], X).end  # a reachable target
    sol = solve(blocks, X, Y, Settings(method="hub", time_budget=120))
    assert sol.success and sol.error <= 1e-10
    assert np.abs(flow(blocks, sol.steps, X).end - Y).max() <= 1e-10


def test_the_hub_refuses_finite_depth():
    blocks = gaussian_blocks(3, 2)
    X = np.random.default_rng(1).normal(size=(1, 2, 2))
    with pytest.raises(InputError, match="continuous controls only"):
        solve(blocks, X, X + 0.1, Settings(method="hub", depth="finite"))
