"""The solver's batched machinery: closed-form attention Jacobians, batched networks, the RK4
surrogate and its derivatives, the multiple-shooting system, the population of LM starts."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from unittest import mock

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from property_tests.conftest import examples
from theorems.reach import instance
from verify.model.attention import field, field_and_jacobian, field_jet, jacobian
from verify.model.flow import flow
from verify.model.network import apply, apply_batch
from verify.model.rk4 import integrate_batch
from verify.search import population as population_module
from verify.search import shooting as shooting_module
from verify.search.newton import damped_step
from verify.search.population import population_lm
from verify.search.shooting import Shooting, jacobian_times, shooting_step

from . import independent
from .benchmarks.bench_models import BoundedSteps
from .strategies import problems


def _batch(p, copies=3, seed=0):
    """Blocks, a batch of ``copies`` perturbed collections and a step array for the control's pattern."""
    blocks, X, control = p
    rng = np.random.default_rng(seed)
    Z = X[None] + 0.1 * rng.normal(size=(copies,) + X.shape)
    pattern = [b for b, _ in control]
    H = np.array([t for _, t in control]) * (1 + 0.2 * rng.normal(size=(copies, len(control))))
    return blocks, Z, pattern, H


@given(problems())
def test_closed_form_jacobian_matches_the_jvp_columns(p):
    blocks, X, _ = p
    for b in blocks:
        F, J = field_and_jacobian(b, X)
        assert np.abs(F - field(b, X)).max() <= 1e-12 * (1 + np.abs(F).max())
        assert np.abs(J - jacobian(b, X)).max() <= 1e-11 * (1 + np.abs(J).max())


@given(problems())
def test_batched_network_matches_one_network_at_a_time(p):
    blocks, Z, pattern, H = _batch(p)
    res = apply_batch(blocks, pattern, H, Z, sensitivities=True)
    for j in range(len(Z)):
        one = apply(blocks, list(zip(pattern, H[j], strict=True)), Z[j], sensitivities=True)
        scale = 1 + np.abs(one.d_steps).max() + np.abs(one.d_initial).max()
        assert np.abs(res.end[j] - one.end).max() <= 1e-12 * (1 + np.abs(one.end).max())
        assert np.abs(res.d_steps[j] - one.d_steps).max() <= 1e-10 * scale
        assert np.abs(res.d_initial[j] - one.d_initial).max() <= 1e-10 * scale
        mats = [(b.Q, b.K, b.V) for b in blocks]
        theirs = independent.network(mats, list(zip(pattern, H[j], strict=True)), Z[j], blocks[0].beta, blocks[0].causal)
        assert np.abs(res.end[j] - theirs).max() <= 1e-12 * (1 + np.abs(theirs).max())


@settings(max_examples=examples(10, "each example builds dense Jacobians and central differences"))
@given(problems(max_N=2, max_n=3, max_d=2))
def test_rk4_derivatives_match_central_differences(p):
    """Exact chain-rule derivatives of the RK4 scheme against central differences (step 1e-6,
    truncation ~1e-12 times the third derivative, rounding ~1e-10)."""
    blocks, Z, pattern, H = _batch(p, copies=2)
    res = integrate_batch(blocks, pattern, H, Z, substeps=2, sensitivities=True)
    e = 1e-6
    scale = 1 + np.abs(res.d_steps).max()
    for k in range(len(pattern)):
        dH = np.zeros_like(H)
        dH[:, k] = e
        fd = (integrate_batch(blocks, pattern, H + dH, Z, substeps=2).end
              - integrate_batch(blocks, pattern, H - dH, Z, substeps=2).end) / (2 * e)
        assert np.abs(fd.reshape(len(Z), -1) - res.d_steps[..., k]).max() <= 1e-6 * scale
    U = np.random.default_rng(1).normal(size=Z.shape)
    fd = (integrate_batch(blocks, pattern, H, Z + e * U, substeps=2).end
          - integrate_batch(blocks, pattern, H, Z - e * U, substeps=2).end) / (2 * e)
    N, n, d = Z.shape[1:]
    an = (res.d_initial @ U.reshape(len(Z), N, n * d, 1))[..., 0]
    assert np.abs(fd.reshape(an.shape) - an).max() <= 1e-6 * (1 + np.abs(res.d_initial).max())


@settings(max_examples=examples(10, "each example builds dense Jacobians and central differences"))
@given(problems(max_N=2, max_n=3, max_d=2))
def test_rk4_is_fourth_order_against_the_taylor_flow(p):
    """Halving the RK4 step divides the error of one control step against the flow by about
    2^4 = 16: the ratio must exceed 8 wherever the error is well above rounding (1e-11).  (One
    step: over several, errors of opposite steps can cancel at leading order.)"""
    blocks, X, control = p
    b, tau = control[0]
    exact = flow(blocks, [(b, tau)], X).end
    errs = [np.abs(integrate_batch(blocks, [b], np.array([[tau]]), X[None], substeps=k).end[0] - exact).max()
            for k in (8, 16)]
    if errs[1] > 1e-11:
        assert errs[0] / errs[1] > 8


def assert_central_differences(shoot: Shooting, x: np.ndarray, J: np.ndarray) -> None:
    """Every column of the Jacobian J (1, S m, unknowns) of the member x (1, unknowns) within
    1e-6 (relative to max |J|) of its central difference with step 1e-6."""
    e = 1e-6
    for j in range(shoot.unknowns):
        dx = np.zeros_like(x)
        dx[0, j] = e
        fd = (shoot.system(x + dx)[0] - shoot.system(x - dx)[0]) / (2 * e)
        assert np.abs(fd[0] - J[0, :, j]).max() <= 1e-6 * (1 + np.abs(J).max())


@settings(max_examples=examples(10, "each example builds dense Jacobians and central differences"))
@given(problems(max_N=2, max_n=3, max_d=2), st.integers(1, 3), st.sampled_from(["euler", "rk4"]))
def test_shooting_jacobian_matches_central_differences(p, segments, scheme):
    blocks, X, _ = p
    Y = X + 0.3
    shoot = Shooting(blocks, X, Y, segments, 3, 1, scheme)
    x = shoot.fresh(np.random.default_rng(0), 0.5, "images")[None]
    r, J = shoot.system(x, sensitivities=True)
    assert_central_differences(shoot, x, J)
    if segments > 1:  # an "images" start chains the first segments exactly: only the last one misses
        assert np.abs(r[0, : (segments - 1) * X.size]).max() <= 1e-12 * (1 + np.abs(x).max())
    path = shoot.fresh(np.random.default_rng(0), 0.5)  # the default start: states on the straight path
    _, W = shoot.split(path[None])
    assert np.array_equal(path[: segments * 3], x[0, : segments * 3])  # the same step sizes
    for s in range(segments):
        assert np.allclose(W[0, s], X + (s / segments) * (Y - X), rtol=0, atol=1e-15)


@settings(max_examples=examples(10, "each example builds dense Jacobians and central differences"))
@given(problems(max_N=2, max_n=3, max_d=2), st.integers(1, 3), st.sampled_from([0.3, 1.0]))
def test_bounded_step_shooting_of_the_models_bench_matches_central_differences(p, segments, bound):
    """``make models`` fits networks with steps bound * tanh(u); its Jacobian in u is the chain rule."""
    blocks, X, _ = p
    shoot = BoundedSteps(blocks, X, X + 0.3, segments, 3, bound=bound)
    x = shoot.fresh(np.random.default_rng(0), 1.5, "path")[None]
    r, J = shoot.system(x, sensitivities=True)
    plain = Shooting(blocks, X, X + 0.3, segments, 3)
    h = segments * 3
    assert np.array_equal(r, plain.system(np.concatenate([bound * np.tanh(x[:, :h]), x[:, h:]], axis=1))[0])
    assert_central_differences(shoot, x, J)


@settings(max_examples=examples(10, "each example builds dense Jacobians and central differences"))
@given(problems(max_N=2, max_n=3, max_d=2), st.integers(1, 3), st.sampled_from(["euler", "rk4"]))
def test_shooting_curvature_matches_second_differences(p, segments, scheme):
    """The exact second directional derivative (second-order jets) against central second
    differences along the same direction: step 1e-3, so truncation ~1e-7 times the fourth
    derivative and rounding ~1e-10; and the field's jet with a curved path (Z2 != 0) against the
    field along that path."""
    blocks, X, _ = p
    shoot = Shooting(blocks, X, X + 0.3, segments, 3, 2, scheme)
    rng = np.random.default_rng(0)
    x = np.array([shoot.fresh(rng, 0.5) for _ in range(2)])
    v = 0.5 * rng.normal(size=x.shape)
    exact = shoot.curvature(x, v)
    e = 1e-3
    fd = (shoot.system(x + e * v)[0] - 2 * shoot.system(x)[0] + shoot.system(x - e * v)[0]) / e**2
    assert np.abs(fd - exact).max() <= 1e-4 * (1 + np.abs(exact).max())
    Z0, Z1, Z2 = rng.normal(size=(3,) + X.shape)
    for b in blocks:
        F0, F1, F2 = field_jet(b, Z0, Z1, Z2)
        along = [field(b, Z0 + t * Z1 + t * t * Z2) for t in (-e, 0.0, e)]
        assert np.abs(F0 - along[1]).max() <= 1e-13 * (1 + np.abs(F0).max())
        assert np.abs((along[2] - along[0]) / (2 * e) - F1).max() <= 1e-5 * (1 + np.abs(F1).max())
        assert np.abs((along[2] - 2 * along[1] + along[0]) / (2 * e * e) - F2).max() <= 1e-4 * (1 + np.abs(F2).max())


def test_exact_flow_segments_agree_with_the_rk4_surrogate_as_it_refines():
    X, Y, blocks = instance(4, 0, seed=5)
    x = Shooting(blocks, X, Y, 2, 4).fresh(np.random.default_rng(0), 0.5)[None]
    exact = Shooting(blocks, X, Y, 2, 4).system(x, exact_flow=True)[0]
    gaps = [np.abs(Shooting(blocks, X, Y, 2, 4, k, "rk4").system(x)[0] - exact).max() for k in (1, 4)]
    assert gaps[1] < gaps[0] / 16 or gaps[1] < 1e-11


def test_exact_flow_jacobian_of_the_segments_matches_central_differences():
    """The shooting Jacobian on the exact flows (the finish's chord steps on the segments):
    the durations' and the intermediate states' columns against central differences of the
    exact-flow residuals (step 1e-6, so agreement to about 1e-7 relative)."""
    X, Y, blocks = instance(8, 2, seed=5)
    shoot = Shooting(blocks, X, Y, 3, 4, 1, "rk4")
    x = shoot.fresh(np.random.default_rng(1), 0.8, "images")
    r, J = shoot.system(x[None], True, exact_flow=True)
    e = 1e-6
    for k in range(0, shoot.unknowns, 3):
        dx = np.zeros_like(x)
        dx[k] = e
        fd = (shoot.system((x + dx)[None], exact_flow=True)[0][0] - shoot.system((x - dx)[None], exact_flow=True)[0][0]) / (2 * e)
        assert np.abs(fd - J[0][:, k]).max() <= 1e-7 * (1 + np.abs(J[0]).max())
    assert np.abs(r[0] - shoot.system(x[None], exact_flow=True)[0][0]).max() == 0.0


@pytest.mark.parametrize("acceleration", [0.0, 0.75])
def test_population_is_deterministic_and_finds_a_zero_residual_member(acceleration):
    X, Y, blocks = instance(4, 1, seed=5)
    shoot = Shooting(blocks, X, Y, 2, 20)

    def run():
        return population_lm([shoot], size=4, start=lambda _, i: shoot.fresh(np.random.default_rng([7, i]), 0.5),
                             tol=1e-11, max_iter=300, max_starts=16, acceleration=acceleration)

    a, b = run(), run()
    assert a.found is not None and np.array_equal(a.found, b.found)
    assert (a.starts, a.jacobians) == (b.starts, b.jacobians)
    assert np.abs(shoot.system(a.found[None])[0]).max() <= 1e-11


def test_population_gives_up_after_its_starts():
    X, Y, blocks = instance(8, 0, seed=5)
    shoot = Shooting(blocks, X, Y, 2, 2)  # four layers cannot reach eight coordinates
    rec = population_lm([shoot], size=3, start=lambda _, i: shoot.fresh(np.random.default_rng(i), 0.5),
                        tol=1e-11, max_iter=20, max_starts=5)
    assert rec.found is None and rec.starts == 5 and rec.best > 1e-3 and not rec.timed_out


def test_populations_of_several_shootings_take_turns():
    """Two problems fitted in turn: one that four layers cannot solve and one they can; the
    member found is the second one's, ``finish`` is told so, and the record counts the starts
    of both."""
    X8, Y8, blocks8 = instance(8, 0, seed=5)
    X4, Y4, blocks4 = instance(4, 1, seed=5)
    shootings = [Shooting(blocks8, X8, Y8, 2, 2), Shooting(blocks4, X4, Y4, 2, 20)]
    told = []

    def finish(k, x):
        told.append(k)
        return x

    rec = population_lm(shootings, size=4, start=lambda k, i: shootings[k].fresh(np.random.default_rng([7, i]), 0.5),
                        tol=1e-11, max_iter=300, max_starts=16, finish=finish)
    assert told == [1] and np.abs(shootings[1].system(rec.found[None])[0]).max() <= 1e-11
    assert rec.starts > 4 and rec.best <= 1e-11


def _ticking(monkeypatch, jacobian: float, trial: float) -> tuple[list[float], type]:
    """A clock for verify.search.shooting, and a Shooting whose evaluations advance it: by
    ``jacobian`` seconds per member evaluated with sensitivities, by ``trial`` per call without."""
    clock = [0.0]
    monkeypatch.setattr(population_module, "time", SimpleNamespace(perf_counter=lambda: clock[0]))

    @dataclass(frozen=True)
    class Ticking(Shooting):
        def parts(self, x, sensitivities=False, exact_flow=False):
            clock[0] += jacobian * len(x) if sensitivities else trial
            return super().parts(x, sensitivities, exact_flow)

    return clock, Ticking


def test_population_does_not_begin_an_iteration_that_would_end_past_the_deadline(monkeypatch):
    """On a clock that each trial evaluation of the shooting system (one per iteration)
    advances by one second, every iteration takes one: with the deadline at 10.5 the population
    begins its last iteration at 9 and returns at 10, where one that began at 10 would have
    ended past the deadline.  (Eight coordinates that four layers cannot reach, so no member
    finishes first.)"""
    clock, Ticking = _ticking(monkeypatch, jacobian=0.0, trial=1.0)
    X, Y, blocks = instance(8, 0, seed=5)
    shoot = Ticking(blocks, X, Y, 2, 2)
    rec = population_lm([shoot], size=3, start=lambda _, i: shoot.fresh(np.random.default_rng(i), 0.5),
                        tol=1e-11, max_iter=1000, max_starts=3, deadline=10.5)
    assert rec.found is None and rec.starts == 3 and clock[0] == 10.0 and rec.timed_out


def test_population_draws_its_members_in_chunks_that_end_by_the_deadline(monkeypatch):
    """With one second per member's Jacobian and the deadline at 5.5, a population of 8 draws
    chunks of 1 and 2 members (done at 3) and not the chunk of 4, which would end at 7; a
    deadline already past draws none.  Either way the record says that time, not starts, ran out."""
    clock, Ticking = _ticking(monkeypatch, jacobian=1.0, trial=0.0)
    X, Y, blocks = instance(8, 0, seed=5)
    shoot = Ticking(blocks, X, Y, 2, 2)

    def run(deadline):
        return population_lm([shoot], size=8, start=lambda _, i: shoot.fresh(np.random.default_rng(i), 0.5),
                             tol=1e-11, max_iter=1000, max_starts=8, deadline=deadline)

    rec = run(5.5)
    assert rec.starts == 3 and rec.timed_out
    clock[0] = 0.0
    rec = run(0.0)
    assert rec.starts == 0 and clock[0] == 0.0 and rec.timed_out


def test_damped_step_gives_nan_for_a_member_whose_system_overflows():
    """Regression (make reach, m = 128 continuous): one member's J J^T overflowed and
    np.linalg.solve raised for the whole batch; now that member gets a NaN step (rejected)."""
    J = np.random.default_rng(0).normal(size=(3, 4, 6))
    J[1] = 1e200
    step = damped_step(J, np.ones((3, 4)), np.full(3, 1e-3))
    assert np.isnan(step[1]).all() and np.isfinite(step[[0, 2]]).all()
    alone = damped_step(J[2], np.ones(4), 1e-3)
    assert np.allclose(step[2], alone)


@settings(deadline=None)
@given(st.sampled_from([4, 8, 18]), st.integers(1, 6), st.integers(1, 9), st.sampled_from([1e-6, 1e-3, 1.0, 1e3]),
       st.integers(0, 2**16))
def test_block_elimination_step_is_the_dense_step(m, segments, steps, lam, seed):
    """shooting_step (block-tridiagonal elimination) against damped_step on the assembled
    Jacobian, for any number of segments (one: single shooting) and damping from weak to strong;
    members of different damping in one batch.  Where the system is near singular (few layers,
    weak damping) both are judged relative to the step's size and the matrix's conditioning."""
    X, Y, blocks = instance(m, seed % 5, seed=seed)
    shoot = Shooting(blocks, X, Y, segments, steps)
    x = np.array([shoot.fresh(np.random.default_rng([seed, k]), 0.5) for k in range(3)])
    r, parts = shoot.parts(x, sensitivities=True)
    J = shoot.dense(parts)
    lams = lam * np.array([1.0, 10.0, 0.1])
    ours, dense = shooting_step(parts, r, lams), damped_step(J, r, lams)
    for k in range(3):
        A = J[k] @ J[k].T
        mu = lams[k] * np.mean(np.sum(J[k] ** 2, axis=0))
        cond = np.linalg.cond(A + mu * np.eye(len(A)))
        assert np.abs(ours[k] - dense[k]).max() <= 1e-13 * cond * (1 + np.abs(dense[k]).max())


@settings(deadline=None)
@given(st.sampled_from([4, 8, 18]), st.integers(1, 6), st.integers(2, 9), st.integers(0, 2**16))
def test_pseudo_inverse_is_the_least_squares_step_of_the_dense_jacobian(m, segments, steps, seed):
    """Shooting.pseudo_inverse by block elimination and refinement (forced here: these systems
    are small enough for its dense path) against lstsq on the assembled Jacobian: the
    minimum-norm solution of J dx = b, for b the residual of a random member.  Both are judged
    relative to the step's size and the conditioning of J J^T (the elimination works on J J^T,
    lstsq on J)."""
    X, Y, blocks = instance(m, seed % 5, seed=seed)
    shoot = Shooting(blocks, X, Y, segments, steps)
    x = shoot.fresh(np.random.default_rng(seed), 0.5)
    r, parts = shoot.parts(x[None], sensitivities=True)
    J = shoot.dense(parts)[0]
    assume(np.linalg.matrix_rank(J) == len(J))  # J J^T regular (else the elimination's step is not finite)
    with mock.patch.object(shooting_module, "DENSE_LIMIT", 0):
        ours = shoot.pseudo_inverse(x)(-r[0])
    dense = np.linalg.lstsq(J, -r[0], rcond=1e-13)[0]
    cond = np.linalg.cond(J @ J.T)
    assert np.abs(ours - dense).max() <= 1e-12 * cond * (1 + np.abs(dense).max())


@settings(deadline=None)
@given(st.sampled_from([4, 8, 18]), st.integers(1, 6), st.integers(1, 9), st.integers(0, 2**16))
def test_structured_jacobian_product_is_the_dense_product(m, segments, steps, seed):
    """jacobian_times (the blocks of Shooting.parts) against the assembled Jacobian."""
    X, Y, blocks = instance(m, seed % 5, seed=seed)
    shoot = Shooting(blocks, X, Y, segments, steps)
    x = shoot.fresh(np.random.default_rng(seed), 0.5)
    _, parts = shoot.parts(x[None], sensitivities=True)
    v = np.random.default_rng(seed + 1).normal(size=shoot.unknowns)
    dense = shoot.dense(parts)[0] @ v
    assert np.abs(jacobian_times(parts, v) - dense).max() <= 1e-12 * (1 + np.abs(dense).max())
