"""Rank of the bracket matrix: singular values, the rank decision, the minimal degree.

The bracket matrix (rows: sequence, token, coordinate; columns: Hall words of degree <= K) is
scaled column by column before its singular values sigma_1 >= sigma_2 >= ... are taken (rank is
invariant under nonzero column scaling).  Each column of degree k is divided by

    s_k = max(largest column norm of degree k, |F| L^(k-1)),

|F| the largest field entry and L the largest spectral norm of a per-sequence Jacobian of
either block: the size a degree-k bracket has before cancellation.  Scaling each column by
its own norm instead would blow a bracket that vanishes identically (and is computed as
rounding noise) up to a unit column, and fake a rank.

**Decision rule.**  With u the unit roundoff of the arithmetic used (2^-52 in float64,
10^-dps in high precision) and W the number of columns, the error of a scaled column,
measured against 25- and 30-digit recomputations, was at most 132 u on Gaussian data up to
m = 64 and degree 8, and at most 1.8e5 u over 40 random small collections (entries in
[-2, 2], beta up to 2, including brackets that vanish identically).  So the noise level is
eta = 1e6 u sqrt(W) (a margin of 5 over the worst case, and sqrt(W) for the spectral norm of
the error), and the rank is #{sigma > eta}.  A float64 decision is accepted only when it is
*full* (no singular value dropped) and the smallest one exceeds 10 eta; otherwise the matrix is
recomputed at 30, then 60 digits, where a dropped singular value must fall below eta(dps) --
i.e. shrink with the precision, as an exact zero does -- and a kept one exceed 10 eta(dps).  What
decided is reported (``decided_by``), with the gap sigma_r / sigma_{r+1}.  Full rank can in
addition be proved in ball arithmetic (:mod:`verify.certify`).

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

from .attention import field, jacobian
from .backend import namespace, precision
from .blocks import Block
from .brackets import bracket_matrix
from .errors import InputError
from .hall import basis, counting_degree, degree
from .invariants import predicted_rank

NOISE_FACTOR = 1e6  # measured scaled-column error <= 1.8e5 u (module docstring), margin 5
GAP_FACTOR = 10.0  # a kept singular value must exceed the noise level by this factor
ESCALATION = (30, 60)  # digits tried when float64 does not decide
DEFAULT_MAX_DEGREE = 12


def noise_level(unit: float, columns: int) -> float:
    return NOISE_FACTOR * unit * math.sqrt(max(columns, 1))


def degree_scales(blocks: Sequence[Block], X: np.ndarray, M: Any, degrees: np.ndarray) -> np.ndarray:
    """The column scale s_k of each column (see the module docstring)."""
    F = max(float(np.abs(field(b, X)).max()) for b in blocks)
    L = max(float(np.linalg.norm(jacobian(b, X), 2, axis=(1, 2)).max()) for b in blocks)
    norms = np.linalg.norm(np.asarray(M, dtype=float), axis=0)
    out = np.empty(len(degrees))
    for k in np.unique(degrees):
        sel = degrees == k
        out[sel] = max(norms[sel].max(), F * L ** (k - 1))
    return np.where(out > 0, out, 1.0)


def singular_values(M: Any, scales: np.ndarray, dps: int | None = None) -> np.ndarray:
    """Singular values of M with column j divided by scales[j] (float64, or mpmath at ``dps``)."""
    if M.shape[1] == 0:
        return np.zeros(0)
    if dps is None:
        return np.linalg.svd(np.asarray(M, dtype=float) / scales, compute_uv=False)
    with precision(dps):
        A = mpmath.matrix([[_mpf(x) / mpmath.mpf(float(c)) for x, c in zip(row, scales, strict=True)] for row in M])
        s = mpmath.svd_r(A if A.rows >= A.cols else A.T, compute_uv=False)
        return np.array(sorted((float(x) for x in s), reverse=True))


def _mpf(x: Any) -> Any:
    return mpmath.mpf(x) if isinstance(x, (float, int, mpmath.mpf)) else mpmath.mpf(str(x))


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
    degrees = np.array([degree(w) for w in basis(K)])
    for level in levels:
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
            M = _matrix(blocks, X, K, level)
            scales = degree_scales(blocks, X, M, degrees)
        W = M.shape[1]
        if not (np.all(np.isfinite(np.asarray(M, dtype=float))) and np.all(np.isfinite(scales))):
            raise InputError(f"the brackets of degree <= {K} overflow float64 on this collection (max |x| = "
                             f"{float(np.abs(np.asarray(X, dtype=float)).max()):.3g}); rescale the data towards |x| ~ 1")
        sigma = singular_values(M, scales, level)
        unit = 2.0**-52 if level is None else 10.0**-level
        r, decisive = decide(sigma, unit, W, min(m, W))
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
        "digits": level,
        "decisive": bool(decisive),
        "matrix": M,
        "scales": scales,
    }


def _min_degree(result: dict[str, Any], words: list, target: int) -> int:
    """Smallest degree whose columns (a prefix of the matrix) already have rank ``target``."""
    degs = np.array([degree(w) for w in words])
    level = result["digits"]
    unit = 2.0**-52 if level is None else 10.0**-level
    M, scales = result["matrix"], result["scales"]
    for k in range(1, int(degs.max()) + 1):
        cols = degs <= k
        if cols.sum() < target:
            continue
        sig = singular_values(M[:, cols], scales[cols], level)
        if decide(sig, unit, int(cols.sum()), target)[0] >= target:
            return k
    return int(degs.max())
