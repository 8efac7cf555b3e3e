"""Hall basis, jets and bracket evaluation."""

from __future__ import annotations

import dataclasses

import mpmath
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from property_tests.conftest import examples
from verify.lie import directional
from verify.lie.brackets import bracket_jet, bracket_matrix, bracket_values, field_jet
from verify.lie.hall import basis, counting_degree, degree, parse_word, str_word, witt
from verify.lie.jets import multiply, tables
from verify.lie.rank import NOISE_FACTOR
from verify.lie.scales import degree_scales
from verify.model.attention import field, jvp
from verify.model.backend import namespace, precision, to_numpy
from verify.model.blocks import gaussian_blocks

from .strategies import blocks as block_strategy
from .strategies import collections, shapes


def test_witt_counts_match_the_basis():
    for K in range(1, 11):
        words = basis(K)
        for k in range(1, K + 1):
            assert sum(degree(w) == k for w in words) == witt(k)
    assert [witt(k) for k in range(1, 9)] == [2, 1, 2, 3, 6, 9, 18, 30]
    assert len(basis(8)) == 71 and len(basis(10)) == 226
    assert counting_degree(64) == 8 and counting_degree(128) == 10


def test_words_print_and_parse():
    words = basis(6)
    assert [str_word(w) for w in words[:5]] == ["0", "1", "[0,1]", "[0,[0,1]]", "[1,[0,1]]"]
    assert all(parse_word(str_word(w)) == w for w in words)
    with pytest.raises(ValueError):
        parse_word("[0,1")


def test_hall_condition_holds():
    order = {w: i for i, w in enumerate(basis(7))}
    for w in basis(7):
        if isinstance(w, tuple):
            u, v = w
            assert order[u] < order[v]
            assert isinstance(v, int) or order[v[0]] <= order[u]


@given(st.integers(1, 3), st.integers(0, 3), st.data())
def test_jet_product_matches_brute_force_polynomial_product(D, order, data):
    t = tables(D, order)
    rng = np.random.default_rng(data.draw(st.integers(0, 1000)))
    a = [rng.normal(size=t.size(k)) for k in range(order + 1)]
    b = [rng.normal(size=t.size(k)) for k in range(order + 1)]
    expected: dict[tuple, float] = {}
    for j in range(order + 1):
        for m in range(order + 1 - j):
            for alpha, ca in zip(t.monomials[j], a[j], strict=True):
                for beta, cb in zip(t.monomials[m], b[m], strict=True):
                    key = tuple(alpha + beta)
                    expected[key] = expected.get(key, 0.0) + ca * cb
    got = multiply(a, b, order)
    for k in range(order + 1):
        for gamma, c in zip(t.monomials[k], got[k], strict=True):
            assert abs(c - expected[tuple(gamma)]) <= 1e-12 * (1 + abs(c))


@st.composite
def bracket_cases(draw, max_N=2, max_n=3, max_d=2):
    N, n, d = draw(shapes(max_N, max_n, max_d))
    return draw(block_strategy(d)), draw(collections((N, n, d)))


@given(bracket_cases())
def test_field_jet_constant_and_linear_terms(case):
    blocks, X = case
    N, n, d = X.shape
    jet = field_jet(blocks[0], X, 2)
    assert np.allclose(jet[0][..., 0], field(blocks[0], X).reshape(N, n * d), atol=1e-13)
    U = np.random.default_rng(0).normal(size=X.shape)
    lin = np.einsum("Nav,Nv->Na", jet[1], U.reshape(N, n * d))
    assert np.allclose(lin, jvp(blocks[0], X, U).reshape(N, n * d), atol=1e-12)


@given(bracket_cases())
def test_antisymmetry_and_jacobi(case):
    blocks, X = case
    N, n, d = X.shape
    t = tables(n * d, 4)
    f0, f1 = field_jet(blocks[0], X, 4), field_jet(blocks[1], X, 4)
    b01, b10 = bracket_jet(t, f0, f1, 3), bracket_jet(t, f1, f0, 3)
    scale = 1 + max(np.abs(c).max() for c in b01)
    for k in range(4):
        assert np.abs(b01[k] + b10[k]).max() <= 1e-13 * scale
    # Jacobi: [f0,[f1,b]] + [f1,[b,f0]] + [b,[f0,f1]] = 0 with b = [f0, f1]
    j1 = bracket_jet(t, f0, bracket_jet(t, f1, b01, 2), 1)
    j2 = bracket_jet(t, f1, bracket_jet(t, b01, f0, 2), 1)
    j3 = bracket_jet(t, b01, bracket_jet(t, f0, f1, 2), 1)
    total = j1[0] + j2[0] + j3[0]
    size = max(np.abs(j[0]).max() for j in (j1, j2, j3)) + 1
    assert np.abs(total).max() <= 1e-12 * size


def _hp_nested_fd(blocks, X):
    """Degree <= 3 brackets by 50-digit nested central differences of exact JVPs."""
    with precision(50):
        xp = namespace("mpmath")
        Xh = xp.asarray(X)
        h = xp.asarray(mpmath.mpf(10) ** -20)[()]

        def b01(Y):
            return jvp(blocks[1], Y, field(blocks[0], Y)) - jvp(blocks[0], Y, field(blocks[1], Y))

        def D(f, Y, W):
            return (f(Y + h * W) - f(Y - h * W)) / (2 * h)

        F0, F1, B = field(blocks[0], Xh), field(blocks[1], Xh), b01(Xh)
        out = {
            "[0,1]": B,
            "[0,[0,1]]": D(b01, Xh, F0) - jvp(blocks[0], Xh, B),
            "[1,[0,1]]": D(b01, Xh, F1) - jvp(blocks[1], Xh, B),
        }
        return {k: to_numpy(v).ravel() for k, v in out.items()}


@settings(max_examples=examples(10, "each example evaluates brackets at 30-50 digits"))
@given(bracket_cases(), st.sampled_from(["dense", "directional"]))
def test_degree_three_brackets_match_nested_high_precision_differences(case, method):
    blocks, X = case
    M, words = bracket_matrix(blocks, X, 3, method)
    for w, col in _hp_nested_fd(blocks, X).items():
        j = words.index(w)
        assert np.abs(M[:, j] - col).max() <= 1e-12 * (1 + np.abs(col).max())


@pytest.mark.parametrize("method", ["dense", "directional"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("d", [1, 2])
def test_sympy_agrees_on_tiny_cases(causal, d, method):
    symbolic = pytest.importorskip("property_tests.symbolic")
    blocks = gaussian_blocks(11 + d, d, causal=causal, beta=0.7)
    seq = np.random.default_rng(d).normal(size=(1, 2, d))
    M, words = bracket_matrix(blocks, seq, 3, method)
    cols = symbolic.bracket_columns(blocks, seq[0])
    for w, col in cols.items():
        assert np.abs(M[:, words.index(w)] - col).max() <= 1e-13 * (1 + np.abs(col).max())


@settings(max_examples=examples(5, "each example evaluates brackets at 30-50 digits"))
@given(bracket_cases(max_n=2))
def test_float64_and_high_precision_brackets_agree(case):
    blocks, X = case
    # the scaled-column error must stay inside the noise model the rank decision relies on
    assert _scaled_error(blocks, X, 5, "dense") <= NOISE_FACTOR * 2.0**-52


def _scaled_error(blocks, X, K, method):
    """Largest scaled column error (verify.lie.scales.degree_scales) of ``method`` in float64
    against the dense jets at 30 digits."""
    M, words = bracket_values(blocks, X, K, method=method)
    with precision(30):
        Mh, _ = bracket_values(blocks, namespace("mpmath").asarray(X), K, method="dense")
    W = len(words)
    M, Mh = M.reshape(-1, W), to_numpy(Mh).reshape(-1, W)
    scales = degree_scales(blocks, X, Mh, np.array([degree(w) for w in words]))
    return (np.linalg.norm(M - Mh, axis=0) / scales).max()


def test_arb_enclosures_contain_the_high_precision_values():
    blocks = gaussian_blocks(4, 2, causal=True)
    X = np.random.default_rng(4).normal(size=(2, 2, 2))
    with precision(30):
        Ma, _ = bracket_matrix(blocks, namespace("arb").asarray(X), 5)
    with precision(60):
        Mh, _ = bracket_matrix(blocks, namespace("mpmath").asarray(X), 5)
        import flint

        for a, h in zip(Ma.ravel(), Mh.ravel(), strict=True):
            assert a.contains(flint.arb(str(h)))  # the 60-digit value lies inside the 30-digit ball
            assert a.rad() < 1e-25


def test_degenerate_blocks_lose_rank():
    b0, b1 = gaussian_blocks(2, 2)
    X = np.random.default_rng(2).normal(size=(2, 3, 2))
    zero_v = dataclasses.replace(b0, V=np.zeros((2, 2)))
    M, _ = bracket_matrix((zero_v, zero_v), X, 4)
    assert np.all(M == 0)
    M, _ = bracket_matrix((b0, b0), X, 4)  # a single block: every bracket is [f, f] = 0, exactly
    assert np.all(M[:, 2:] == 0)


@settings(max_examples=examples(10, "each example evaluates brackets at 30-50 digits"))
@given(bracket_cases(max_n=2), st.booleans())
def test_directional_float64_brackets_stay_inside_the_rank_noise_model(case, causal):
    blocks, X = case
    blocks = tuple(dataclasses.replace(b, causal=causal) for b in blocks)
    assert _scaled_error(blocks, X, 5, "directional") <= NOISE_FACTOR * 2.0**-52


@settings(max_examples=examples(10, "each example evaluates brackets at 30-50 digits"))
@given(bracket_cases(max_n=3), st.booleans())
def test_runs_of_one_word_as_taylor_variables_equal_one_nilpotent_variable_per_step(case, causal):
    blocks, X = case
    blocks = tuple(dataclasses.replace(b, causal=causal) for b in blocks)
    words = basis(6)
    W = len(words)
    runs = directional.hall_values(blocks, X, words).reshape(-1, W)
    steps = directional.hall_values(blocks, X, words, runs=False).reshape(-1, W)
    # the column scales of the rank decision: columns that vanish identically are rounding noise
    scales = degree_scales(blocks, X, steps, np.array([degree(w) for w in words]))
    assert (np.linalg.norm(runs - steps, axis=0) <= 1e-12 * scales).all()


@pytest.mark.parametrize("shape, causal", [((2, 3, 2), False), ((2, 3, 2), True), ((1, 4, 2), False), ((3, 2, 1), True)])
def test_directional_brackets_match_30_digits_to_1e_12_and_the_dense_jets_as_far_as_they_are_right(shape, causal):
    blocks = gaussian_blocks(sum(shape), shape[2], causal=causal)
    X = np.random.default_rng(sum(shape)).normal(size=shape)
    dense, words = bracket_values(blocks, X, 7, method="dense")
    nested, same = bracket_values(blocks, X, 7, method="directional")
    with precision(30):
        truth = to_numpy(bracket_values(blocks, namespace("mpmath").asarray(X), 7, method="dense")[0])
    assert same == words
    size = np.abs(truth).max(axis=(0, 1))
    clear = size > 1e-8 * size.max()  # columns that vanish identically (d = 1) are rounding noise in both
    err = np.abs(nested - truth).max(axis=(0, 1))
    assert (err[clear] <= 1e-12 * size[clear]).all()
    # the dense jets lose up to 4e-11 relative here ((3, 2, 1), causal), the nested directions 4e-13
    assert (np.abs(nested - dense).max(axis=(0, 1)) <= np.abs(dense - truth).max(axis=(0, 1)) + err + 1e-300).all()


def test_a_lone_token_stays_inside_the_noise_model_on_the_directional_path():
    # Found by Hypothesis: one token at (0, 2); the dense jets' degree-6 columns reach 3.1e-10 scaled, past
    # NOISE_FACTOR u = 2.2e-10; the directional ones stay at 4e-16 (docs/numerics.md, 2026-12-03).
    blocks = gaussian_blocks(1, 2)
    X = np.array([[[0.0, 2.0]]])
    assert _scaled_error(blocks, X, 6, "directional") <= NOISE_FACTOR * 2.0**-52


def test_directional_brackets_agree_with_the_dense_jets_at_30_digits():
    blocks = gaussian_blocks(6, 2, causal=True)
    X = namespace("mpmath").asarray(np.random.default_rng(6).normal(size=(2, 2, 2)))
    with precision(30):
        dense, _ = bracket_values(blocks, X, 5, method="dense")
        nested, _ = bracket_values(blocks, X, 5, method="directional")
        assert max(abs(a - b) for a, b in zip(dense.ravel(), nested.ravel(), strict=True)) < mpmath.mpf(10) ** -25


@pytest.mark.parametrize("causal", [False, True])
def test_directional_float64_beyond_the_dense_range_stays_inside_the_rank_noise_model(causal):
    blocks = gaussian_blocks(7, 2, causal=causal)
    X = np.random.default_rng(7).normal(size=(1, 5, 2))  # n d = 10: "auto" takes the directional path
    assert _scaled_error(blocks, X, 5, "auto") <= NOISE_FACTOR * 2.0**-52


def test_directional_arb_enclosures_contain_the_high_precision_values():
    import flint

    blocks = gaussian_blocks(8, 2)
    X = np.random.default_rng(8).normal(size=(1, 5, 2))
    with precision(30):
        Ma, _ = bracket_matrix(blocks, namespace("arb").asarray(X), 4)
    with precision(60):
        Mh, _ = bracket_matrix(blocks, namespace("mpmath").asarray(X), 4)
        for a, h in zip(Ma.ravel(), Mh.ravel(), strict=True):  # nested variables widen the balls more than jets
            assert a.contains(flint.arb(str(h))) and a.rad() < 1e-20


@pytest.mark.parametrize("method", ["dense", "directional"])
def test_a_subset_of_columns_is_those_columns_of_the_whole_matrix_in_the_order_asked(method):
    blocks = gaussian_blocks(8, 2)
    X = np.random.default_rng(8).normal(size=(2, 2, 2))
    whole, words = bracket_matrix(blocks, X, 6, method)
    columns = [17, 3, 0, 22]  # out of order, as a pivoted QR picks them
    part, named = bracket_matrix(blocks, X, 6, method, columns)
    assert named == [words[j] for j in columns]
    assert np.array_equal(part, whole[:, columns])  # the same operations on the same numbers
