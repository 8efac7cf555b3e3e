"""Rank of the bracket matrix: singular values, the rank decision, the minimal degree.

The bracket matrix (rows: sequence, token, coordinate; columns: Hall words of degree <= K) is
column-normalised (rank is invariant under column scaling; zero columns are dropped) and its
singular values sigma_1 >= sigma_2 >= ... are computed.

**Decision rule.**  With u the unit roundoff of the arithmetic used (2^-52 in float64,
10^-dps in high precision) and W the number of columns, the entry-wise error of a normalised
column was measured at <= 50 u (float64 against 30 digits, degrees <= 7), so the noise level
is eta = 1e3 u sqrt(W) (a 20x margin, and sqrt(W) for the spectral norm of the error).  The
rank is #{sigma > eta}.  A float64 decision is accepted only when it is *full* (no singular
value dropped) and the smallest one exceeds 1e4 eta; otherwise the matrix is recomputed at
30, then 60 digits, where a dropped singular value must fall below eta(dps) -- i.e. shrink with
the precision, as an exact zero does -- and a kept one stay above 1e4 eta(dps).  What decided
is reported (``decided_by``), with the gap sigma_r / sigma_{r+1}.  Full rank can in addition be
proved in ball arithmetic (:mod:`verify.certify`).

>>> import numpy as np
>>> from verify.blocks import gaussian_blocks
>>> X = np.random.default_rng(1).normal(size=(2, 2, 2))
>>> r = analyse(gaussian_blocks(0, 2), X)
>>> r["rank"], r["expected_rank"], r["min_degree"], r["counting_degree"]
(8, 8, 4, 4)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import mpmath
import numpy as np

from .backend import namespace, precision
from .blocks import Block
from .brackets import bracket_matrix
from .hall import basis, counting_degree, degree
from .invariants import predicted_rank

NOISE_FACTOR = 1e3  # measured entry error <= 50 u, times a margin of 20
GAP_FACTOR = 1e4  # a kept singular value must exceed the noise level by this factor
ESCALATION = (30, 60)  # digits tried when float64 does not decide
DEFAULT_MAX_DEGREE = 12


def noise_level(unit: float, columns: int) -> float:
    return NOISE_FACTOR * unit * math.sqrt(max(columns, 1))


def singular_values(M: Any, dps: int | None = None) -> np.ndarray:
    """Singular values of the column-normalised matrix (float64, or mpmath at ``dps``)."""
    if dps is None:
        A = np.asarray(M, dtype=float)
        norms = np.linalg.norm(A, axis=0)
        keep = norms > 0
        if not keep.any():
            return np.zeros(0)
        return np.linalg.svd(A[:, keep] / norms[keep], compute_uv=False)
    with precision(dps):
        A = mpmath.matrix([[mpmath.mpf(str(x)) if not isinstance(x, float) else mpmath.mpf(x) for x in row] for row in M])
        cols = []
        for j in range(A.cols):
            nrm = mpmath.norm(A[:, j])
            if nrm > 0:
                cols.append(A[:, j] / nrm)
        if not cols:
            return np.zeros(0)
        B = mpmath.matrix(A.rows, len(cols))
        for j, c in enumerate(cols):
            B[:, j] = c
        s = mpmath.svd_r(B if B.rows >= B.cols else B.T, compute_uv=False)
        return np.array(sorted((float(x) for x in s), reverse=True))


def decide(sigma: np.ndarray, unit: float, columns: int, full: int) -> tuple[int, bool]:
    """(rank, decisive) for singular values at unit roundoff ``unit``; see module docstring."""
    eta = noise_level(unit, columns)
    r = int(np.sum(sigma > eta))
    kept_ok = r == 0 or sigma[r - 1] > GAP_FACTOR * eta
    return r, bool(kept_ok and (r == full or unit < 1e-20))


def _matrix(blocks: Sequence[Block], X: np.ndarray, K: int, dps: int | None) -> Any:
    if dps is None:
        return bracket_matrix(blocks, X, K)[0]
    with precision(dps):
        return bracket_matrix(blocks, namespace("mpmath").asarray(X), K)[0]


def analyse(
    blocks: Sequence[Block],
    X: np.ndarray,
    *,
    expected: int | None = None,
    max_degree: int = DEFAULT_MAX_DEGREE,
    dps: int | None = None,
) -> dict[str, Any]:
    """Bracket rank of X against the prediction, growing the degree until it is reached.

    Starts at the counting bound and adds a degree until the rank reaches ``expected``
    (default: :func:`verify.invariants.predicted_rank`; full dimension if there is none) and
    there are at least as many words as dimensions (so that a deficit is a measured one), or
    until ``max_degree`` is hit.  ``dps`` forces the given precision for the decision.
    """
    N, n, d = X.shape
    m = N * n * d
    causal = bool(blocks[0].causal)
    prediction = predicted_rank(X, causal) if expected is None else expected
    target = m if prediction is None else prediction
    start = min(max(counting_degree(target), 1), max_degree)
    # a deficit is only measured once there are enough words to span the whole space
    enough = min(counting_degree(m), max_degree)
    for K in range(start, max_degree + 1):
        result = _analyse_at(blocks, X, K, dps)
        if result["rank"] >= target and K >= enough:
            break
    words = list(basis(K))
    # smallest degree whose columns already reach the final rank (prefixes of the same matrix)
    result.update(
        dimension=m,
        expected_rank=prediction,
        counting_degree=counting_degree(target),
        max_degree=K,
        words=len(words),
        matches_prediction=prediction is not None and result["rank"] == prediction,
    )
    result["min_degree"] = _min_degree(result, words, target) if result["rank"] >= target else None
    return result


def _analyse_at(blocks, X, K, dps) -> dict[str, Any]:
    levels = [dps] if dps is not None else [None, *ESCALATION]
    m = int(np.prod(X.shape))
    for level in levels:
        M = _matrix(blocks, X, K, level)
        W = M.shape[1]
        sigma = singular_values(M, level)
        unit = 2.0**-52 if level is None else 10.0**-level
        full = min(m, int(np.sum(np.any(np.asarray(M, dtype=float) != 0, axis=0))))
        r, decisive = decide(sigma, unit, W, full)
        if decisive or level == levels[-1]:
            break
    gap = float(sigma[r - 1] / sigma[r]) if 0 < r < len(sigma) and sigma[r] > 0 else None
    return {
        "rank": r,
        "sigma": [float(s) for s in sigma],
        "sigma_min": float(sigma[r - 1]) if r else 0.0,
        "first_dropped": float(sigma[r]) if r < len(sigma) else None,
        "gap": gap,
        "noise_level": noise_level(unit, W),
        "decided_by": "float64" if level is None else f"{level} digits",
        "decisive": bool(decisive),
        "matrix": M,
    }


def _min_degree(result: dict[str, Any], words: list, target: int) -> int:
    M = np.asarray(result["matrix"], dtype=float)
    degs = np.array([degree(w) for w in words])
    unit = 2.0**-52 if result["decided_by"] == "float64" else 10.0 ** -int(result["decided_by"].split()[0])
    for k in range(1, int(degs.max()) + 1):
        cols = degs <= k
        if cols.sum() < target:
            continue
        if result["decided_by"] == "float64":
            sig = singular_values(M[:, cols])
        else:
            sig = singular_values(result["matrix"][:, cols], int(result["decided_by"].split()[0]))
        if decide(sig, unit, int(cols.sum()), target)[0] >= target:
            return k
    return int(degs.max())
