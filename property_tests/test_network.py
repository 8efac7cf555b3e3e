"""Finite depth: residual networks, exact step derivatives, splitting of controls."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from hypothesis import given, settings

from property_tests.conftest import examples
from verify.model.backend import to_mpmath, to_numpy
from verify.model.blocks import gaussian_blocks
from verify.model.flow import flow
from verify.model.network import apply, control_to_network, propagated_rounding

from . import independent
from .strategies import problems


@given(problems())
def test_network_matches_independent_implementation(p):
    blocks, X, control = p
    layers = control_to_network(control, 3)
    mats = [(b.Q, b.K, b.V) for b in blocks]
    theirs = independent.network(mats, layers, X, blocks[0].beta, blocks[0].causal)
    assert np.abs(apply(blocks, layers, X).end - theirs).max() <= 1e-12 * (1 + np.abs(theirs).max())


@settings(max_examples=examples(10, "each example evaluates networks at 30-50 digits"))
@given(problems(max_N=2, max_n=3, max_d=2))
def test_propagated_rounding_covers_the_float64_error(p):
    """The estimate the solver uses as a margin holds the float64 network's distance to the
    same network evaluated at 40 digits, and to the independent implementation's replay."""
    blocks, X, control = p
    layers = control_to_network([(b, 4 * t) for b, t in control], 2)  # longer steps: more amplification
    ours = apply(blocks, layers, X).end
    estimate = propagated_rounding(blocks, layers, X)
    exact = to_numpy(apply(blocks, layers, X, dps=40).end)
    theirs = independent.network([(b.Q, b.K, b.V) for b in blocks], layers, X, blocks[0].beta, blocks[0].causal)
    assert np.abs(ours - exact).max() <= estimate
    assert np.abs(theirs - exact).max() <= estimate


def test_propagated_rounding_is_inf_when_the_amplification_overflows():
    """A network whose layer Jacobians multiply past float64 (200 layers of step 3 grow
    rounding beyond 1e308) is reported as inf, without a NumPy warning, so the solver can refuse
    it instead of crashing on a NaN; so is one whose forward pass itself overflows (steps of
    1e300).  50 such layers give a finite estimate, but which one depends on the BLAS kernel
    (2e91 by default, 1.8e52 under OPENBLAS_CORETYPE=Sandybridge on one AVX2 machine: a forward
    pass this unstable amplifies the kernel's last bits), so only its finiteness and size are held."""
    blocks, X = gaussian_blocks(0, 2), np.random.default_rng(1).normal(size=(2, 3, 2))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        short = propagated_rounding(blocks, [(j % 2, 3.0) for j in range(50)], X)
        long = propagated_rounding(blocks, [(j % 2, 3.0) for j in range(200)], X)
        huge = propagated_rounding(blocks, [(j % 2, 1e300) for j in range(3)], X)
    assert 1e20 < short < math.inf and long == math.inf and huge == math.inf


@settings(max_examples=examples(10, "each example evaluates networks at 30-50 digits"))
@given(problems(max_N=2, max_n=3, max_d=2))
def test_step_derivatives_match_high_precision_finite_differences(p):
    blocks, X, control = p
    layers = control_to_network(control, 2)
    res = apply(blocks, layers, X, sensitivities=True)
    import mpmath

    from verify.model.backend import precision

    with precision(40):
        h = mpmath.mpf(10) ** -15
        for k in range(len(layers)):
            plus = [(b, mpmath.mpf(t) + (h if j == k else 0)) for j, (b, t) in enumerate(layers)]
            minus = [(b, mpmath.mpf(t) - (h if j == k else 0)) for j, (b, t) in enumerate(layers)]
            diff = to_mpmath(apply(blocks, plus, X, dps=40).end) - to_mpmath(apply(blocks, minus, X, dps=40).end)
            fd = to_numpy(diff / (2 * h)).ravel()
            assert np.abs(res.d_steps[:, k] - fd).max() <= 1e-11 * (1 + np.abs(fd).max())


@settings(max_examples=examples(5, "each example evaluates networks at 30-50 digits"))
@given(problems(max_N=2, max_n=3, max_d=2))
def test_splitting_converges_at_first_order(p):
    blocks, X, control = p
    exact = flow(blocks, control, X).end
    errs = [np.abs(apply(blocks, control_to_network(control, m), X).end - exact).max() for m in (64, 128)]
    if errs[0] > 1e-9:  # otherwise the control is too short for the error to be seen
        assert 1.7 <= errs[0] / errs[1] <= 2.3


def test_split_counts():
    assert control_to_network([(0, 1.0), (1, -0.5)], [2, 1]) == [(0, 0.5), (0, 0.5), (1, -0.5)]
    with pytest.raises(ValueError):
        control_to_network([(0, 1.0)], [1, 2])
