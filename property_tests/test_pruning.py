"""Pruning found controls and networks (verify.search.pruning, verify.search.solver.prune_found): shorter
witnesses that still replay within tolerance, here and under the independent implementation,
and removals that cannot be made are refused."""

from __future__ import annotations

import json

import numpy as np
import pytest

from theorems.reach import instance
from verify.model.blocks import gaussian_blocks
from verify.model.flow import flow
from verify.search.pruning import prune_found, shrink
from verify.search.settings import Settings
from verify.search.solution import Solution
from verify.search.solver import solve

from . import independent
from .test_cli import run, save_npy


@pytest.mark.parametrize("depth", ["finite", "continuous"])
def test_pruned_witness_is_shorter_and_replays_independently(depth):
    """A reach instance (m = 8, finite) and a small one (m = 2, continuous), solved and pruned
    for 5 s: fewer steps than before, the same tolerance under the independent implementation
    (networks at the witness's digits; flows at 30 digits by extrapolation, as the reach bench
    does).  Measured with longer budgets: 48 layers to 18 in 7 s, 17 steps to 2 in 10 s."""
    if depth == "finite":
        X, Y, blocks = instance(8, 0, 11)
    else:
        rng = np.random.default_rng(3)
        X, Y = np.sort(rng.normal(size=(1, 2, 1)), axis=1), np.sort(rng.normal(size=(1, 2, 1)), axis=1)
        blocks = gaussian_blocks(3, 1)
    sol = solve(blocks, X, Y, Settings(depth=depth, seed=0, time_budget=60, prune=5))
    assert sol.success, sol.message
    assert sol.pruned_from is not None and sol.depth < sol.pruned_from, sol.message
    assert f"pruned from {sol.pruned_from} to {sol.depth} steps" in sol.message
    mats = [(b.Q, b.K, b.V) for b in blocks]
    steps = [(b, str(t)) if sol.dps else (b, float(t)) for b, t in sol.steps]
    if depth == "finite":
        theirs = independent.network(mats, steps, X, dps=sol.dps)
    else:
        theirs = independent.flow(mats, steps, X, dps=max(30, sol.dps or 0))
    assert float(np.abs((theirs - Y).astype(float)).max()) <= 1e-10


def test_a_removal_that_leaves_too_few_durations_is_refused():
    """m = 4 and four durations: dropping an end step leaves three for four equations, an inner
    one two (its neighbours merge), so the solver's corrections cannot put the image back on
    the targets; the removals tried fail, and the control comes back as it was.  (With a fifth
    step the first one did go: four durations for four equations.)"""
    blocks = gaussian_blocks(0, 2)
    X = np.random.default_rng(1).normal(size=(1, 2, 2))
    control = [(0, 0.4), (1, -0.3), (0, 0.2), (1, 0.5)]
    Y = flow(blocks, control, X).end
    found = Solution(success=True, message="found", steps=control, error=0.0, depth=len(control), total_duration=2.0,
                     moves=1, jacobians=1, wall_time=0.0)
    sol = prune_found(blocks, X, Y, found, Settings(prune=60))
    assert sol.steps == control and sol.pruned_from is None
    assert "no step could be pruned" in sol.message  # (PATIENCE tried, unless a slow machine hits the 60 s first)


def test_shrink_takes_short_stages_where_long_ones_fail():
    """A correction that only succeeds for stages up to 0.3 of the duration: the continuation
    still reaches 0, through stages no longer than that."""
    last, taken = [2.0], []

    def correct(trial, k, aim):
        stage = abs(trial[k] - last[0]) / 2.0  # as a fraction of h_k = 2
        if stage > 0.3 + 1e-12:
            return trial, 1.0
        taken.append(stage)
        last[0] = trial[k]
        return trial, 0.0

    out = shrink(correct, np.array([1.0, 2.0, 3.0]), 1, 1e-12)
    assert out is not None and out[1] == 0.0 and out[0] == 1.0 and min(taken) > 0 and max(taken) <= 0.3 + 1e-12


@pytest.mark.parametrize("value", ["-1", "nan"])
def test_interpolate_refuses_a_bad_prune_budget(tmp_path, value):
    X, Y = np.random.default_rng(0).normal(size=(2, 1, 2, 2))
    r = run("interpolate", "--inputs", str(save_npy(tmp_path, "x.npy", X)), "--targets", str(save_npy(tmp_path, "y.npy", Y)),
            "--seed", "1", "--prune", value)
    assert r.returncode == 2 and "--prune must be" in r.stderr and "Traceback" not in r.stderr


def test_interpolate_prunes_and_records_the_depth_before(tmp_path):
    X, Y = np.random.default_rng(0).normal(size=(2, 1, 2, 2))
    out = tmp_path / "w.json"
    r = run("interpolate", "--inputs", str(save_npy(tmp_path, "x.npy", X)), "--targets", str(save_npy(tmp_path, "y.npy", Y)),
            "--seed", "1", "--depth", "finite", "--prune", "5", "--out", str(out), "--json")
    assert r.returncode == 0, r.stdout + r.stderr
    res, doc = json.loads(r.stdout), json.loads(out.read_text())
    assert res["depth"] < res["depth_before_pruning"] == doc["provenance"]["depth_before_pruning"]
    assert len(doc["layers"]) == res["depth"] and doc["provenance"]["settings"]["prune"] == 5
    assert run("check", str(out)).returncode == 0
