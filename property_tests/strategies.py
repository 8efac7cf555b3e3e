"""Hypothesis strategies for collections, blocks and controls (small sizes, moderate scales)."""

from __future__ import annotations

import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from verify.model.blocks import gaussian_blocks

coords = st.floats(-2.0, 2.0, allow_nan=False, allow_subnormal=False)


@st.composite
def shapes(draw, max_N: int = 3, max_n: int = 4, max_d: int = 3) -> tuple[int, int, int]:
    return draw(st.integers(1, max_N)), draw(st.integers(1, max_n)), draw(st.integers(1, max_d))


@st.composite
def collections(draw, shape=None) -> np.ndarray:
    shape = shape or draw(shapes())
    return draw(hnp.arrays(np.float64, shape, elements=coords))


@st.composite
def blocks(draw, d: int, causal: bool | None = None):
    causal = draw(st.booleans()) if causal is None else causal
    beta = draw(st.sampled_from([1.0, 0.5, 2.0]))
    return gaussian_blocks(draw(st.integers(0, 2**32 - 1)), d, beta=beta, causal=causal)


@st.composite
def controls(draw, max_len: int = 4, max_abs: float = 1.0) -> list[tuple[int, float]]:
    k = draw(st.integers(1, max_len))
    durs = st.floats(-max_abs, max_abs, allow_nan=False, allow_subnormal=False)
    return [(draw(st.integers(0, 1)), draw(durs)) for _ in range(k)]


@st.composite
def problems(draw, causal: bool | None = None, max_N: int = 3, max_n: int = 4, max_d: int = 3):
    """(blocks, X, control) for one random small instance."""
    N, n, d = draw(shapes(max_N, max_n, max_d))
    return draw(blocks(d, causal)), draw(collections((N, n, d))), draw(controls())


SYMMETRIES = ("generic", "coincident", "permuted", "negated", "odd", "odd-zero", "prefix", "negated-prefix")


@st.composite
def symmetric_collections(draw, causal: bool = False, max_m: int = 12, near: bool = False):
    """(blocks, X, kind): Gaussian tokens with one exact symmetry of the field imposed (two tokens
    equal; a sequence a token permutation, or minus one, of another; a sequence equal to minus a
    permutation of itself, with or without a zero token; shared or opposite causal prefixes).
    ``near``: the structure broken by a relative 1e-12, so that no invariant holds exactly."""
    d = draw(st.integers(1, 2))
    n = draw(st.integers(2, 3))
    N = draw(st.integers(1, max(1, max_m // (n * d))))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    X = rng.normal(size=(N, n, d))
    kind = draw(st.sampled_from(SYMMETRIES))
    s = draw(st.integers(0, N - 1))
    if kind == "coincident":
        X[s, n - 1] = X[s, 0]
    elif kind in ("permuted", "negated") and N >= 2:
        X[1] = (1 if kind == "permuted" else -1) * X[0][rng.permutation(n) if not causal else np.arange(n)]
    elif kind in ("odd", "odd-zero"):
        X[s, 1] = -X[s, 0]
        if kind == "odd-zero" and n == 3:
            X[s, 2] = 0.0
    elif kind in ("prefix", "negated-prefix") and N >= 2:
        k = draw(st.integers(1, n - 1))
        X[1, :k] = (1 if kind == "prefix" else -1) * X[0, :k]
    if near:
        X[s, -1] += 1e-12 * (1 + np.abs(X[s, -1]))
    return gaussian_blocks(draw(st.integers(0, 10**6)), d, causal=causal), X, kind
