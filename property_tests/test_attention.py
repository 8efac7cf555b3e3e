"""The attention field and its analytic derivatives."""

from __future__ import annotations

import dataclasses

import mpmath
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from verify.model.attention import UNROLL, field, field_and_jacobian, field_numpy, jacobian, jvp
from verify.model.backend import namespace, precision, to_numpy
from verify.model.blocks import gaussian_blocks

from . import independent
from .strategies import blocks, collections, shapes

FD_DIGITS = 50
FD_STEP = mpmath.mpf(10) ** -20  # central differences: truncation ~ step^2 = 1e-40


def hp_finite_difference(block, X, U):
    """(F(X + hU) - F(X - hU)) / 2h at 50 digits: an independent check of the JVP."""
    with precision(FD_DIGITS):
        xp = namespace("mpmath")
        Xh, Uh = xp.asarray(X), xp.asarray(U)
        h = xp.asarray(FD_STEP)[()]
        return to_numpy((field(block, Xh + h * Uh) - field(block, Xh - h * Uh)) / (2 * h))


@st.composite
def field_cases(draw):
    N, n, d = draw(shapes())
    return draw(blocks(d)), draw(collections((N, n, d))), draw(collections((N, n, d)))


@given(field_cases())
def test_jvp_matches_high_precision_finite_differences(case):
    (b0, _), X, U = case
    expected = hp_finite_difference(b0, X, U)
    scale = 1 + np.abs(expected).max()
    assert np.abs(jvp(b0, X, U) - expected).max() <= 1e-12 * scale * (1 + np.abs(X).max()) ** 2


@given(field_cases())
def test_jacobian_columns_are_jvps(case):
    (b0, _), X, U = case
    N, n, d = X.shape
    J = jacobian(b0, X)
    assert J.shape == (N, n * d, n * d)
    via_J = np.einsum("sab,sb->sa", J, U.reshape(N, n * d)).reshape(X.shape)
    assert np.abs(via_J - jvp(b0, X, U)).max() <= 1e-13 * (1 + np.abs(via_J).max())


@given(field_cases())
def test_field_matches_independent_implementation(case):
    (b0, _), X, _ = case
    ours = field(b0, X)
    theirs = independent.field(b0.Q, b0.K, b0.V, X, b0.beta, b0.causal)
    assert np.abs(ours - theirs).max() <= 1e-13 * (1 + np.abs(theirs).max())


@given(field_cases(), st.randoms())
def test_full_attention_is_permutation_equivariant(case, rnd):
    (b0, _), X, _ = case
    b0 = dataclasses.replace(b0, causal=False)
    perm = list(range(X.shape[1]))
    rnd.shuffle(perm)
    assert np.abs(field(b0, X[:, perm]) - field(b0, X)[:, perm]).max() <= 1e-13 * (1 + np.abs(X).max()) ** 3


@given(field_cases(), st.integers(1, 4))
def test_causal_prefix_depends_only_on_prefix(case, i):
    (b0, _), X, U = case
    b0 = dataclasses.replace(b0, causal=True)
    i = min(i, X.shape[1])
    Y = X.copy()
    Y[:, i:] = U[:, i:]  # change the tokens after the prefix
    # masked entries contribute exact zeros, so the prefix rows are bit-for-bit the same
    assert np.array_equal(field(b0, X)[:, :i], field(b0, Y)[:, :i])


def test_softmax_is_stable_for_huge_logits():
    b0, _ = gaussian_blocks(0, 2)
    X = np.random.default_rng(0).normal(size=(2, 3, 2)) * 1e3  # logits ~ 1e6
    for causal in (False, True):
        F = field(dataclasses.replace(b0, causal=causal), X)
        assert np.all(np.isfinite(F))


@given(field_cases())
def test_array_api_strict_backend_agrees(case):
    """Field, JVP and Jacobian are bit-identical on the strict namespace."""
    xps = pytest.importorskip("array_api_strict")
    (b0, _), X, U = case
    Xs, Us = xps.asarray(X), xps.asarray(U)
    for ours, ref in [(field(b0, Xs), field(b0, X)), (jvp(b0, Xs, Us), jvp(b0, X, U)), (jacobian(b0, Xs), jacobian(b0, X))]:
        assert type(ours).__module__.startswith("array_api_strict")
        assert np.array_equal(to_numpy(ours), ref)


def test_cupy_is_optional():
    from verify.io.errors import InputError
    from verify.model.backend import namespace

    try:
        import cupy  # noqa: F401
    except ImportError:
        with pytest.raises(InputError, match=r"optional GPU extra"):
            namespace("cupy")
    else:  # pragma: no cover - only on machines with the GPU extra
        assert namespace("cupy") is not None
    with pytest.raises(InputError, match="unknown backend"):
        namespace("torch")


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("shape", [(4, 2, 2, 2), (3, 2, 3, 2), (3, 2, 4, 2), (2, 3, UNROLL + 2, 2), (1, 2, 3, UNROLL + 1)])
def test_float64_kernels_on_both_sides_of_the_unrolling_threshold(shape, causal):
    """The solver's kernels sum small products and rows of at most UNROLL entries term by term
    and hand larger ones to matmul/reduce (n = 2, 3 tokens below the product threshold, 4
    above it); each side must give the generic field and Jacobian."""
    b = gaussian_blocks(seed=5, d=shape[-1], causal=causal)[0]
    Z = np.random.default_rng(2).normal(size=shape)
    F, J = field_and_jacobian(b, Z)
    for k in range(shape[0]):
        assert np.abs(F[k] - field(b, Z[k])).max() <= 1e-12 * (1 + np.abs(F[k]).max())
        assert np.abs(J[k] - jacobian(b, Z[k])).max() <= 1e-11 * (1 + np.abs(J[k]).max())
    assert np.abs(field_numpy(b, Z) - F).max() <= 1e-13 * (1 + np.abs(F).max())
