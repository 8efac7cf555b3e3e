"""Costate shooting (verify.search.costate): the recursion, its exact derivatives, Pontryagin's
identity, and a search that ends in a witness."""

from __future__ import annotations

import numpy as np
import pytest

from verify.io.errors import InputError
from verify.model.blocks import gaussian_blocks
from verify.model.flow import flow
from verify.model.rk4 import integrate_batch
from verify.search import costate
from verify.search.settings import Settings
from verify.search.solver import solve

BLOCKS = gaussian_blocks(3, 2)
X = np.random.default_rng(1).normal(size=(2, 2, 2))


def _central(f, v, h=1e-6):
    """Central differences of f at v, column by column (an independent check only)."""
    cols = []
    for j in range(len(v)):
        e = np.zeros_like(v)
        e[j] = h
        cols.append((f(v + e) - f(v - e)) / (2 * h))
    return np.stack(cols, axis=1)


def test_the_embedded_system_jacobian_matches_central_differences():
    shot = costate.Costate(BLOCKS, X, steps=12, substeps=3)
    rng = np.random.default_rng(5)
    v = np.concatenate([rng.uniform(-0.5, 0.5, 12), rng.normal(size=8) * 0.1])
    J = shot.embedded(v[:12], v[12:])[2]
    fd = _central(lambda w: np.concatenate(shot.embedded(w[:12], w[12:])[:2]), v)
    assert np.abs(J - fd).max() <= 1e-6 * np.abs(fd).max()


def test_the_recursion_solves_the_embedded_system_with_no_defect():
    shot = costate.Costate(BLOCKS, X, steps=10, substeps=2)
    p0 = np.random.default_rng(6).normal(size=8) * 0.1
    end = shot.endpoint(p0)
    x, g, _ = shot.embedded(end.taus, p0)
    assert np.abs(g).max() <= 1e-13 and np.abs(x - end.x.ravel()).max() <= 1e-13


def test_durations_are_the_end_jacobian_transposed_times_the_final_costate():
    # Pontryagin: tau = (d x_K / d tau)^T p_K for the exact flows; on RK4 steps up to O(h^4)
    p0 = np.random.default_rng(2).normal(size=8) * 0.1
    misses = []
    for substeps in (4, 16):
        shot = costate.Costate(BLOCKS, X, steps=16, substeps=substeps)
        end = shot.endpoint(p0)
        G = integrate_batch(BLOCKS, shot.pattern(), end.taus[None], X[None], substeps=substeps,
                            sensitivities=True).d_steps[0].reshape(8, 16)
        misses.append(np.abs(G.T @ end.p.ravel() - end.taus).max() / np.abs(end.taus).max())
    assert misses[1] <= 1e-7 and misses[1] <= misses[0] / 100  # fourth order: 4^4 = 256 in theory


def test_a_search_reaches_targets_of_a_least_energy_control_and_the_witness_replays_on_the_exact_flows():
    X1 = np.random.default_rng(1).normal(size=(1, 2, 2))
    shot = costate.Costate(BLOCKS, X1, 2 * X1.size, costate.SUBSTEPS)
    Y = shot.endpoint(np.random.default_rng(3).normal(size=X1.size) * 0.3).x
    sol = solve(BLOCKS, X1, Y, Settings(method="costate", time_budget=120))
    assert sol.success and sol.error <= 1e-10
    assert np.abs(flow(BLOCKS, sol.steps, X1).end - Y).max() <= 1e-10


def test_costate_shooting_refuses_finite_depth():
    with pytest.raises(InputError, match="continuous controls only"):
        solve(BLOCKS, X, X + 0.1, Settings(method="costate", depth="finite"))
