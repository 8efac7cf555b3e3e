"""Engine cost against m = N n d, with named baselines in the same run (``make bench``).

* field and per-sequence Jacobian, m = 8 ... 128;
* a flow of one control: our Taylor integrator vs SciPy's DOP853 (baseline) on the same field,
  both at the tolerances that give ~1e-13 agreement;
* sensitivities (duration Jacobian and initial-data Jacobians): Taylor tangents vs DOP853 on
  the variational equations (baseline);
* one high-precision flow at 30 digits with MPFR elements vs mpmath.mpf elements (baseline);
* a 30-digit flow of 20 steps at m = 18 with split Taylor series (the default: the orders
  whose terms matter at 30 digits in precision, the rest in float64) vs every order at 30
  digits (baseline);
* the exact flows of the 30 segments of a continuous shooting fit at m = 18 (6 steps each,
  durations up to 2, as the solver's finish evaluates them): in lock step (``flow_batch``) vs one
  :func:`flow` per segment (baseline), residuals alone and with sensitivities;
* the solver's inner loop, m = 8 and 32: step and initial-data Jacobians of 16 networks of 10 m
  layers at once (``apply_batch``, closed-form attention Jacobians) vs the generic per-network
  ``apply`` for one network (baseline): the ratio is the cost of 16 starts in units of one;
* parts of one validated step at m = 32 (``verify.verdicts.enclosure``): the field's series at
  the centre and over the set in one batch vs two calls (baseline), and the step's polynomial
  with T's orders above 8 from float64 vs every order from the Arb recurrence (baseline).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.integrate import solve_ivp

from verify.model import flow as flow_module
from verify.model.attention import field, jacobian, jvp
from verify.model.backend import namespace, precision
from verify.model.blocks import gaussian_blocks
from verify.model.flow import flow
from verify.model.flow_batch import flow_batch
from verify.model.network import apply, apply_batch

SHAPES = {8: (2, 2, 2), 18: (3, 3, 2), 32: (4, 4, 2), 64: (8, 4, 2), 128: (8, 8, 2)}
CONTROL = [(0, 0.6), (1, -0.8), (0, 0.3), (1, 0.5)]


def instance(m):
    N, n, d = SHAPES[m]
    return gaussian_blocks(0, d), np.random.default_rng(m).normal(size=(N, n, d))


@pytest.mark.parametrize("m", sorted(SHAPES))
def test_field(benchmark, m):
    blocks, X = instance(m)
    benchmark.group = "field"
    benchmark(field, blocks[0], X)


@pytest.mark.parametrize("m", sorted(SHAPES))
def test_jacobian(benchmark, m):
    blocks, X = instance(m)
    benchmark.group = "jacobian"
    benchmark(jacobian, blocks[0], X)


def dop853_flow(blocks, control, X):
    Y = X
    for b, tau in control:
        def rhs(t, y, block=blocks[b]):
            return field(block, y.reshape(X.shape)).ravel()

        sol = solve_ivp(rhs, (0, tau), Y.ravel(), method="DOP853", rtol=1e-13, atol=1e-14)
        Y = sol.y[:, -1].reshape(X.shape)
    return Y


def dop853_sensitivities(blocks, control, X):
    """Baseline: DOP853 on state + n d tangent directions (variational equations)."""
    N, n, d = X.shape
    T = np.broadcast_to(np.eye(n * d).reshape(n * d, 1, n, d), (n * d, N, n, d))
    Y = X
    for b, tau in control:
        def rhs(t, z, b=b):
            s, w = z[: X.size].reshape(X.shape), z[X.size:].reshape(T.shape)
            return np.concatenate([field(blocks[b], s).ravel(), jvp(blocks[b], s, w).ravel()])
        sol = solve_ivp(rhs, (0, tau), np.concatenate([Y.ravel(), T.ravel()]), method="DOP853", rtol=1e-12, atol=1e-13)
        Y = sol.y[: X.size, -1].reshape(X.shape)
    return Y


@pytest.mark.parametrize("m", [8, 32, 64])
def test_flow_taylor(benchmark, m):
    blocks, X = instance(m)
    benchmark.group = f"flow m={m}"
    benchmark(flow, blocks, CONTROL, X)


@pytest.mark.parametrize("m", [8, 32, 64])
def test_flow_baseline_scipy_dop853(benchmark, m):
    blocks, X = instance(m)
    benchmark.group = f"flow m={m}"
    benchmark(dop853_flow, blocks, CONTROL, X)


@pytest.mark.parametrize("m", [8, 64])
def test_sensitivities_taylor(benchmark, m):
    blocks, X = instance(m)
    benchmark.group = f"sensitivities m={m}"
    benchmark(flow, blocks, CONTROL, X, sensitivities=True)


@pytest.mark.parametrize("m", [8, 64])
def test_sensitivities_baseline_scipy_dop853(benchmark, m):
    blocks, X = instance(m)
    benchmark.group = f"sensitivities m={m}"
    benchmark(dop853_sensitivities, blocks, CONTROL, X)


@pytest.mark.parametrize("element", [pytest.param("mpmath", id="mpmath"),
                                     pytest.param("mpmath-pure", id="baseline-mpmath-pure")])
def test_high_precision_flow_30_digits(benchmark, element):
    blocks, X = instance(8)
    benchmark.group = "30-digit flow m=8 (mpmath = MPFR elements, mpmath-pure = mpf elements)"

    def run():
        with precision(30):
            return flow(blocks, CONTROL, namespace(element).asarray(X), tol=1e-27)

    benchmark.pedantic(run, rounds=2, iterations=1)


@pytest.mark.parametrize("series", ["split", "baseline-every-order"])
def test_high_precision_flow_split_series(benchmark, monkeypatch, series):
    blocks, X = instance(18)
    control = [(k % 2, float(t)) for k, t in enumerate(np.random.default_rng(0).uniform(-0.5, 0.5, 20))]
    if series != "split":
        monkeypatch.setattr(flow_module, "split_order", lambda norms, h, unit: (len(norms) - 1, 0.0))
    benchmark.group = "30-digit flow m=18, 20 steps (split series vs every order at 30 digits)"
    benchmark.pedantic(flow, (blocks, control, X), {"dps": 30}, rounds=2, iterations=1)


def solver_networks(m, starts):
    blocks, X = instance(m)
    H = np.random.default_rng(1).uniform(-0.5, 0.5, size=(starts, 10 * m))
    return blocks, [j % 2 for j in range(10 * m)], H, np.broadcast_to(X, (starts,) + X.shape)


@pytest.mark.parametrize("m", [8, 32])
def test_solver_jacobians_16_starts_batched(benchmark, m):
    blocks, pattern, H, Z = solver_networks(m, 16)
    benchmark.group = f"solver jacobians m={m}"
    benchmark(apply_batch, blocks, pattern, H, Z, sensitivities=True)


@pytest.mark.parametrize("m", [8, 32])
def test_solver_jacobians_baseline_generic_one_start(benchmark, m):
    blocks, pattern, H, Z = solver_networks(m, 1)
    benchmark.group = f"solver jacobians m={m}"
    benchmark(apply, blocks, list(zip(pattern, H[0], strict=True)), Z[0], sensitivities=True)


def segments_18():
    blocks, _ = instance(18)
    rng = np.random.default_rng(18)
    return blocks, [0, 1] * 3, rng.uniform(-2, 2, (30, 6)), rng.normal(size=(30,) + SHAPES[18])


@pytest.mark.parametrize("sensitivities", [False, True])
def test_segment_flows_lock_step(benchmark, sensitivities):
    blocks, pattern, durations, Z = segments_18()
    benchmark.group = f"30 segment flows, m = 18, sensitivities={sensitivities}"
    benchmark(flow_batch, blocks, pattern, durations, Z, sensitivities=sensitivities)


@pytest.mark.parametrize("sensitivities", [False, True])
def test_segment_flows_baseline_one_at_a_time(benchmark, sensitivities):
    blocks, pattern, durations, Z = segments_18()
    benchmark.group = f"30 segment flows, m = 18, sensitivities={sensitivities}"
    benchmark(lambda: [flow(blocks, list(zip(pattern, t, strict=True)), z, sensitivities=sensitivities)
                       for t, z in zip(durations, Z, strict=True)])


def validated_step_parts(shape):
    """One validated step's inputs at a state of shape (N, n, d) (``enclosure.enclose_flow``'s
    first step from Gaussian tokens at 30 digits): the block in Arb and float balls, its
    float64 guide, the centre, and the polynomial with every order of T from Arb."""
    import dataclasses

    from verify.model import float_balls
    from verify.model.attention import basis_directions
    from verify.verdicts import enclosure

    N, n, d = shape
    block = gaussian_blocks(0, d)[0].in_arb()
    fast = enclosure._in_float_balls(block)
    guide = dataclasses.replace(fast, Q=fast.Q.m, K=fast.K.m, V=fast.V.m, beta=float(fast.beta.m))
    X = np.random.default_rng(0).normal(size=shape)
    with precision(enclosure.DIGITS):
        c = namespace("arb").asarray(X)
    directions = basis_directions(float_balls.namespace(), n, d)
    return block, fast, guide, c, float_balls.from_arb(c), np.full((N, n * d), 1e-12), directions


@pytest.mark.parametrize("shape", [(2, 4, 4), (4, 4, 2)], ids=["m32-2x4x4", "m32-4x4x2"])
@pytest.mark.parametrize("series", ["pair", "baseline-two-calls"])
def test_validated_step_series(benchmark, shape, series):
    """The field's series along a validated step's polynomial at the centre and over the set
    with tangents: one batch (``along_given_pair``) vs two calls (baseline)."""
    from verify.model.taylor import along_given, along_given_pair
    from verify.verdicts import enclosure, remainder

    block, fast, guide, c, centre, spread, directions = validated_step_parts(shape)
    with precision(enclosure.DIGITS):
        poly = enclosure._polynomial(block, guide, c, centre, spread, directions)
    q = remainder.ORDER + remainder.DEFECT_ORDERS + 1

    def two_calls():
        sc = along_given(fast, poly.at_centre, q)
        return sc, along_given(fast, poly.on_set, q, poly.tangents, top=sc.dominant)

    benchmark.group = f"validated step's series {shape} (one batch vs two calls)"
    if series == "pair":
        benchmark(along_given_pair, fast, poly.at_centre, poly.on_set, q, poly.tangents)
    else:
        benchmark(two_calls)


@pytest.mark.parametrize("shape", [(2, 4, 4), (4, 4, 2)], ids=["m32-2x4x4", "m32-4x4x2"])
@pytest.mark.parametrize("orders", [8, "baseline-every-order"])
def test_validated_step_polynomial(benchmark, shape, orders):
    """A validated step's polynomial at 30 digits: T's orders above 8 from the float64 series
    (where ``enclosure._exact_orders`` put K at c32e's and c32a's steps) vs every order from the
    Arb recurrence (baseline)."""
    from verify.verdicts import enclosure

    block, _, guide, c, centre, spread, directions = validated_step_parts(shape)
    K = orders if isinstance(orders, int) else None

    def run():
        with precision(enclosure.DIGITS):
            return enclosure._polynomial(block, guide, c, centre, spread, directions, K)

    benchmark.group = f"validated step's polynomial {shape} (float64 orders above 8 vs every order in Arb)"
    benchmark(run)
