"""Tight pairs (verify.search.pair_expansion): the two exact facts the large layer rests on, the
parking fit, and the solver's use of them, replayed by the independent implementation."""

from __future__ import annotations

import json
import math
import time

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from property_tests.conftest import examples
from theorems.reach import instance
from verify.io import witness
from verify.model.attention import field
from verify.model.blocks import gaussian_blocks
from verify.model.network import apply
from verify.search.newton import chord
from verify.search.pair_expansion import expansion, expansion_step, has_equilibria, park, symmetric_logits
from verify.search.settings import Settings
from verify.search.shape_speed import shape_speeds
from verify.search.solver import solve
from verify.verdicts import replay

from . import independent

# Reach instance (seed 49, m = 8, index 0): input pair 0 has shape speed 0.013, and every
# network to its targets has total |step| at least 39; the search from X alone missed it in 60 s,
# as the default and with three variants (docs/solver-reach.md).
TIGHT = (8, 0, 49)


@settings(deadline=None, max_examples=examples(40, "40 cover its four parameters"))
@given(st.integers(0, 2**16), st.integers(0, 1), st.floats(-1e4, 1e4), st.floats(1e-3, 3.0))
def test_a_centred_pair_stays_centred_and_its_difference_moves_linearly(seed, b, h, size):
    """x_2 = -x_1: one layer keeps the mean at 0 and maps delta to (I + h tanh(q / 4) V) delta,
    q = delta^T S delta, for any step (odd symmetry of the field; exact up to rounding)."""
    rng = np.random.default_rng(seed)
    block = gaussian_blocks(seed, 2)[b]
    delta = size * rng.normal(size=2)
    Z = np.array([[delta / 2, -delta / 2]])
    out = Z + h * field(block, Z)
    q = delta @ symmetric_logits(block) @ delta
    expected = (np.eye(2) + h * math.tanh(q / 4) * block.V) @ delta
    scale = 1 + abs(h) * np.abs(field(block, Z)).max() + np.abs(delta).max()
    assert np.abs(out[0].mean(axis=0)).max() <= 1e-14 * scale
    assert np.abs((out[0, 0] - out[0, 1]) - expected).max() <= 1e-13 * scale


@given(st.integers(0, 2**16), st.floats(0.1, 3.0))
def test_a_centred_pair_on_an_isotropic_line_is_an_equilibrium(seed, size):
    """Where S is indefinite, delta on a line with delta^T S delta = 0 gives F = 0; where it is
    definite there is no such line, and has_equilibria says so."""
    for block in gaussian_blocks(seed, 2):
        lam, E = np.linalg.eigh(symmetric_logits(block))
        if not has_equilibria(block):
            assert lam[0] * lam[1] >= 0
            continue
        delta = size * (math.sqrt(-lam[0]) * E[:, 1] + math.sqrt(lam[1]) * E[:, 0]) / math.sqrt(lam[1] - lam[0])
        Z = np.array([[delta / 2, -delta / 2]])
        assert np.abs(field(block, Z)).max() <= 1e-15 * (1 + size**2)


def test_parking_then_the_large_layer_expands_the_tight_pair():
    """The parking network meets its conditions (means at their offsets, the other pair near an
    isotropic line, its length kept: the first fit, which keeps it, succeeds here), and the
    large layer after it gives the tight pair the length of its target's difference, leaving
    the other pair near where it was parked."""
    X, Y, blocks = instance(*TIGHT)
    tight = [int(np.argmin(shape_speeds(blocks, X)))]
    layers = expansion(blocks, X, Y, tight, np.random.default_rng(0), time.perf_counter() + 30)
    assert layers is not None
    b, h = layers[-1]
    Z1, Z2 = apply(blocks, layers[:-1], X).end, apply(blocks, layers, X).end
    s, other = tight[0], 1 - tight[0]
    assert abs(h) > 100  # a tight pair needs a large step
    assert np.abs(Z1.mean(axis=1)).max() <= 0.3 * 10 / abs(h)  # offsets kappa / |h|, a few sigma
    delta = Z1[other, 0] - Z1[other, 1]
    assert abs(delta @ symmetric_logits(blocks[b]) @ delta) / (delta @ delta) <= 3 / abs(h)
    assert math.isclose(delta @ delta, np.sum((X[other, 0] - X[other, 1]) ** 2), rel_tol=1e-10)
    length = max(1.0, np.linalg.norm(Y[s, 0] - Y[s, 1]))
    assert math.isclose(np.linalg.norm(Z2[s, 0] - Z2[s, 1]), length, rel_tol=0.05)
    assert shape_speeds(blocks, Z2)[s] > 10 * shape_speeds(blocks, X)[s]
    assert np.abs(Z2[other] - Z1[other]).max() <= 3.0  # displaced by about kappa ||V||, not by h


def test_park_reports_failure_by_its_deadline():
    X, _, blocks = instance(*TIGHT)
    assert park(blocks, X, 0, [0], 1e-3, np.random.default_rng(0), time.perf_counter() - 1) is None


def test_expansion_step_is_nan_without_a_logit_gap():
    """delta^T S delta = 0: no step of that block moves the pair (it is an equilibrium)."""
    block = next(b for b in gaussian_blocks(2, 2) if has_equilibria(b))
    lam, E = np.linalg.eigh(symmetric_logits(block))
    delta = math.sqrt(-lam[0]) * E[:, 1] + math.sqrt(lam[1]) * E[:, 0]
    assert math.isnan(expansion_step(block, np.array([[delta / 2, -delta / 2]]), 0, 1.0))


def test_the_solver_expands_a_tight_pair_and_the_witness_replays_independently():
    """Finite depth on the tight instance: solved by the expansion, the witness passes its own
    replay, and the independent implementation (at the witness's digits, 40 where it has none)
    agrees within tolerance.  Without the expansion (tight_speed 0) the search from X is what
    runs (its message says nothing of it; that it then misses is measured, not asserted)."""
    X, Y, blocks = instance(*TIGHT)
    sol = solve(blocks, X, Y, Settings(depth="finite", seed=TIGHT[1], time_budget=60))
    assert sol.success and "expanding the tight input pair(s) [0]" in sol.message, sol.message
    doc = witness.make(blocks, X, Y, "finite", sol.steps, 1e-10, precision=witness.precision_label(sol.dps))
    assert replay.replay(witness.from_dict(json.loads(json.dumps(doc))), sol.dps)["passed"]
    layers = [(b, witness._jsonable(t)) for b, t in sol.steps]
    theirs = independent.network([(b.Q, b.K, b.V) for b in blocks], layers, X, dps=sol.dps or 40)
    assert float(np.abs(theirs - Y).max()) <= 1e-10
    plain = solve(blocks, X, Y, Settings(depth="finite", seed=TIGHT[1], time_budget=1, tight_speed=0))
    assert "expanding" not in plain.message


def test_unit_column_steps_keep_what_the_cut_off_drops():
    """A linear system whose columns differ 1e19-fold in scale (as after a large layer): the
    plain least-squares step cuts the small singular value (below 1e-13 of the largest) and
    stalls with the residual untouched; with unit columns (scaled=True) one step solves it."""
    J = np.diag([1e19, 1.0])
    b = np.array([1.0, 1.0])

    def residual(x):
        return J @ x - b

    _, plain, _ = chord(residual, lambda x: J, np.zeros(2), 1e-12)
    x, scaled, _ = chord(residual, lambda x: J, np.zeros(2), 1e-12, scaled=True)
    assert plain == 1.0 and scaled <= 1e-12 and math.isclose(x[1], 1.0)
