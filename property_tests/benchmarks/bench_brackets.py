"""Bracket-witness cost (``make bench``): by degree, by m, against the SymPy baseline.

* all Hall words up to degree K at N=8, n=4, d=2 (m = 64), K = 4 ... 8 (target: K = 8 in < 2 s);
* degree 10 at N=16, n=4, d=2 (m = 128: 226 words, the first degree that can span it);
* degree 6 against m = 8 ... 128;
* tiny case n = 2, d = 2, degree 3: our jets vs SymPy's symbolic brackets (baseline);
* the Arb enclosure used by the certificate, at m = 12 and degree 5;
* the two paths of :func:`verify.lie.brackets.bracket_values` against n d (4, 8, 16, 32) and
  degree (4, 6, 8, 10): the dense jets where they run within seconds (n d <= 8) as the baseline of
  the nested directional derivatives; the directional path at m = 128, degree 10 beside the dense
  one and beside the directional path with one nilpotent variable per step (before runs of one
  word became Taylor variables), and against N (n d = 16, degree 6).
"""

from __future__ import annotations

import numpy as np
import pytest

from verify.lie import directional
from verify.lie.brackets import bracket_matrix, bracket_values
from verify.lie.hall import basis
from verify.model.backend import namespace, precision
from verify.model.blocks import gaussian_blocks

SHAPES = {8: (2, 2, 2), 18: (3, 3, 2), 32: (4, 4, 2), 64: (8, 4, 2), 128: (16, 4, 2)}


def instance(m, seed=0):
    N, n, d = SHAPES[m]
    return gaussian_blocks(seed, d), np.random.default_rng(m).normal(size=(N, n, d))


@pytest.mark.parametrize("K", [4, 5, 6, 7, 8])
def test_brackets_by_degree_m64(benchmark, K):
    blocks, X = instance(64)
    benchmark.group = "brackets m=64 by degree"
    benchmark.pedantic(bracket_matrix, (blocks, X, K), rounds=3 if K < 8 else 2, iterations=1)


@pytest.mark.parametrize("method", ["dense", "directional", "directional, a variable per step"])
def test_brackets_degree10_m128(benchmark, method):
    blocks, X = instance(128)
    benchmark.group = "brackets m=128 degree 10"
    if method == "directional, a variable per step":  # the directional path before runs became Taylor variables
        benchmark.pedantic(directional.hall_values, (blocks, X, basis(10), False), rounds=1, iterations=1)
    else:
        benchmark.pedantic(bracket_values, (blocks, X, 10, method), rounds=1, iterations=1)


BY_ND = {4: (2, 2, 2), 8: (2, 4, 2), 16: (2, 8, 2), 32: (2, 8, 4)}  # n d -> (N, n, d)


@pytest.mark.parametrize("method", ["dense", "directional"])
@pytest.mark.parametrize("K", [4, 6, 8, 10])
@pytest.mark.parametrize("nd", sorted(BY_ND))
def test_brackets_by_nd(benchmark, nd, K, method):
    if method == "dense" and nd > 8:
        pytest.skip("the dense jets need minutes beyond n d = 8")
    N, n, d = BY_ND[nd]
    blocks, X = gaussian_blocks(0, d), np.random.default_rng(nd).normal(size=(N, n, d))
    benchmark.group = f"brackets by n d, degree {K}"
    benchmark.pedantic(bracket_values, (blocks, X, K, method), rounds=2, iterations=1)


@pytest.mark.parametrize("N", [1, 2, 4, 8])
def test_directional_brackets_by_N(benchmark, N):
    blocks, X = gaussian_blocks(0, 2), np.random.default_rng(N).normal(size=(N, 8, 2))
    benchmark.group = "directional brackets n d = 16, degree 6, by N"
    benchmark.pedantic(bracket_values, (blocks, X, 6, "directional"), rounds=2, iterations=1)


@pytest.mark.parametrize("m", sorted(SHAPES))
def test_brackets_by_m_degree6(benchmark, m):
    blocks, X = instance(m)
    benchmark.group = "brackets degree 6 by m"
    benchmark.pedantic(bracket_matrix, (blocks, X, 6), rounds=3, iterations=1)


def test_tiny_jets(benchmark):
    blocks = gaussian_blocks(1, 2)
    X = np.random.default_rng(1).normal(size=(1, 2, 2))
    benchmark.group = "tiny n=2 d=2 degree 3"
    benchmark(bracket_matrix, blocks, X, 3)


def test_tiny_baseline_sympy(benchmark):
    from property_tests.symbolic import bracket_columns

    blocks = gaussian_blocks(1, 2)
    X = np.random.default_rng(1).normal(size=(1, 2, 2))
    benchmark.group = "tiny n=2 d=2 degree 3"
    benchmark.pedantic(bracket_columns, (blocks, X[0], 17), rounds=1, iterations=1)


def test_arb_enclosure_m12(benchmark):
    blocks = gaussian_blocks(2, 2)
    X = np.random.default_rng(2).normal(size=(2, 3, 2))

    def run():
        with precision(30):
            return bracket_matrix(blocks, namespace("arb").asarray(X), 5)

    benchmark.group = "Arb enclosure m=12 degree 5"
    benchmark.pedantic(run, rounds=2, iterations=1)
