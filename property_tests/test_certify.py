"""Certificates: full rank in Arb, gl(d) over the rationals; and that they can fail."""

from __future__ import annotations

import numpy as np
import pytest

from verify.lie.brackets import bracket_matrix
from verify.lie.certify import generates_gl, rank_at_least
from verify.lie.hall import basis, degree
from verify.lie.pivoting import select_columns
from verify.lie.rank import analyse, degree_scales, singular_values
from verify.model.blocks import gaussian_blocks


@pytest.mark.parametrize("shape, causal", [((2, 3, 2), False), ((1, 4, 2), False), ((3, 2, 1), False), ((2, 2, 2), True)])
def test_full_rank_is_certified_on_generic_data(shape, causal):
    X = np.random.default_rng(7).normal(size=shape)
    blocks = gaussian_blocks(7, shape[2], causal=causal)
    r = analyse(blocks, X, certify=False)
    c = rank_at_least(blocks, X, r.bound, max_degree=r.max_degree)
    assert c["certified"], c
    assert 0 < c["sigma_min_lower"] and c["norm_I_minus_RA_upper"] < 1
    assert len(c["columns"]) == r.bound
    # a lower bound of the smallest singular value of the same selected, scaled columns, and
    # so of the sigma_min the rank analysis reports
    M, words = bracket_matrix(blocks, X, r.max_degree)
    cols = [words.index(w) for w in c["columns"]]
    sub = M[:, cols] / np.array(c["column_scales"])
    assert c["sigma_min_lower"] <= np.linalg.svd(sub, compute_uv=False)[-1] * (1 + 1e-10)
    assert c["sigma_min_lower"] <= r.sigma_min * (1 + 1e-10)


def test_certificate_fails_on_rank_deficient_data():
    X = np.random.default_rng(8).normal(size=(2, 3, 2))
    X[0, 2] = X[0, 0]  # coincident tokens: rank 10 of 12 at every degree
    c = rank_at_least(gaussian_blocks(8, 2), X, 12, max_degree=6)
    assert not c["certified"] and c["reason"]
    assert rank_at_least(gaussian_blocks(8, 2), X, 10, max_degree=6)["certified"]


def test_decimal_strings_enter_arb_exactly():
    """Tokens "0.1" and "-0.1" as decimals are an exactly odd pair (rank 1 in d = 1): no 2 x 2
    minor can be proved nonsingular, while the doubles 0.1 and -0.100000001 give rank 2."""
    blocks = gaussian_blocks(0, 1)
    X = np.array([[["0.1"], ["-0.1"]]], dtype=object)
    assert rank_at_least(blocks, X, 1, max_degree=6)["certified"]
    assert not rank_at_least(blocks, X, 2, max_degree=6)["certified"]
    assert rank_at_least(blocks, np.array([[[0.1], [-0.100000001]]]), 2, max_degree=6)["certified"]


def test_certificate_fails_with_too_few_words():
    X = np.random.default_rng(8).normal(size=(2, 3, 2))
    c = rank_at_least(gaussian_blocks(8, 2), X, 12, max_degree=3)
    assert not c["certified"] and "has no 12 x 12 minor" in c["reason"]


def test_select_columns_picks_an_independent_set():
    X = np.random.default_rng(9).normal(size=(2, 2, 2))
    blocks = gaussian_blocks(9, 2)
    M, _ = bracket_matrix(blocks, X, 5)
    degs = np.array([degree(w) for w in basis(5)])
    scales = degree_scales(blocks, X, M, degs)
    cols = select_columns(M / scales, 8)
    assert singular_values(M[:, cols], scales[cols])[-1] > 1e-8


def test_the_chosen_columns_do_not_follow_rounding_or_scale():
    """Pivots that tie within 1 % go to the lowest index, so a perturbation at rounding level
    (what another BLAS kernel makes) changes no choice, and neither does a scale of 1e-200 or
    1e200 (the squared norms would underflow or overflow unscaled).  LAPACK's pivoted QR made 8
    different choices over these 20 perturbations."""
    rng = np.random.default_rng(3)
    base = rng.normal(size=(4, 3))
    M = np.concatenate([base, base, rng.normal(size=(4, 2))], axis=1)  # columns j and j + 3 tie exactly
    chosen = select_columns(M, 4)
    for trial in range(20):
        noisy = M * (1 + 1e-14 * np.random.default_rng(trial).normal(size=M.shape))
        assert select_columns(noisy, 4) == chosen
    assert select_columns(1e-200 * M, 4) == select_columns(1e200 * M, 4) == chosen
    assert chosen[:3] == [0, 1, 2]  # the lower of each tied pair


@pytest.mark.parametrize("d", [1, 2, 3])
def test_gl_d_generated_by_gaussian_values(d):
    b0, b1 = gaussian_blocks(d, d)
    g = generates_gl(b0.V, b1.V)
    assert g["certified"] and g["rank"] == d * d


def test_gl_d_refused_for_commuting_values():
    A = np.array([[1.0, 2.0], [3.0, 4.0]])
    g = generates_gl(A, 2 * A + 3 * np.eye(2))  # commuting exactly: the span is 2-dimensional
    assert not g["certified"] and g["rank"] == 2
    g = generates_gl(np.diag([1.0, 2.0]), np.diag([3.0, -1.0]))
    assert not g["certified"] and g["rank"] == 2


def test_gl_d_modulo_the_prime_only_proves_and_an_unlucky_prime_falls_back_to_the_rationals():
    for d in (2, 3, 4):  # on Gaussian values the prime decides, with the rank over Q
        b0, b1 = gaussian_blocks(10 + d, d)
        g = generates_gl(b0.V, b1.V)
        assert g["certified"] and g["method"].startswith("rank modulo the prime")
    p = str(2**61 - 1)  # a decimal entry divisible by the prime: V0 vanishes mod p, not over Q
    V0 = np.array([[p, "0"], ["0", "0"]], dtype=object)
    V1 = np.array([["1", "1"], ["1", "2"]], dtype=object)
    g = generates_gl(V0, V1)
    assert g["certified"] and g["rank"] == 4 and g["method"].startswith("exact rank over Q")
