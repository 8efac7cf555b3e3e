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
addition be proved in ball arithmetic (:mod:`verify.lie.certify`).

**Saturated attention.**  The noise model holds only where the arithmetic holds the attention
weights: what a weight far below the unit roundoff u carries cannot show in any column.  With
P_min the smallest weight of either block (j <= i under a causal mask; :func:`weight_digits`
gives w = -log10 P_min from the logits), a decision is accepted only when

    P_min > u   (a full rank: every weight registers against 1),
    P_min^2 > 10 eta   (a deficit: room for the products of weights in the brackets),

and otherwise the next level is tried; where 60 digits do not resolve the weights, one more
level at the digits that do (:func:`resolving_digits`), at most ``MAX_DIGITS``.  Beyond, the
result is undecided (``decisive`` false, the reason in ``undecided``); where not even a full
rank can be decided (P_min <= u, ``saturated``) a higher degree cannot help, and the degree
stops growing.  Measured on 165 scaled Gaussian collections (five shapes with m = 6 or 8,
three seeds each, scales 1 to 1e5; the rank at float64, 30, 60, 150 and 300 digits): without
the rule the levels contradicted each other on 77 of them, from w = 22 on (there 30 digits
found a deficit that 60 did not; from w = 349 float64 read full rank into rounding noise);
with it, 65 were decided at float64, 30, 60 or 150 digits, each as the 300-digit rank, and the
other 100 (all with w >= 154) undecided.

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> X = np.random.default_rng(1).normal(size=(2, 2, 2))
>>> r = analyse(gaussian_blocks(0, 2), X)
>>> r.rank, r.expected_rank, r.min_degree, r.counting_degree
(8, 8, 4, 4)
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

import mpmath
import numpy as np
from scipy.special import logsumexp

from verify.io.errors import InputError
from verify.lie.brackets import bracket_matrix
from verify.lie.hall import basis, counting_degree, degree
from verify.lie.invariants import predicted_rank
from verify.model.attention import causal_mask, field, jacobian, logits
from verify.model.backend import UNIT, namespace, precision
from verify.model.blocks import Block

NOISE_FACTOR = 1e6  # measured scaled-column error <= 1.8e5 u (module docstring), margin 5
GAP_FACTOR = 10.0  # a kept singular value must exceed the noise level by this factor
ESCALATION = (30, 60)  # digits tried when float64 does not decide
FLOAT64_DIGITS = 52 * math.log10(2)  # -log10 of float64's unit roundoff
MAX_DIGITS = 150  # the most digits tried for weights that 60 do not resolve (module docstring)
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
    with precision(max(dps, 20)):  # mpmath's SVD does not converge at a few digits; guard digits add no noise
        A = mpmath.matrix([[_mpf(x) / mpmath.mpf(float(c)) for x, c in zip(row, scales, strict=True)] for row in M])
        s = mpmath.svd_r(A if A.rows >= A.cols else A.T, compute_uv=False)
        return np.array(sorted((float(x) for x in s), reverse=True))


def _mpf(x: Any) -> Any:
    return mpmath.mpf(x) if isinstance(x, (float, int, mpmath.mpf)) else mpmath.mpf(str(x))


def weight_digits(blocks: Sequence[Block], X: np.ndarray) -> float:
    """w = -log10 of the smallest attention weight of either block on X (N, n, d): the digits an
    arithmetic needs to hold every weight.  From the logits in float64, log P_ij = l_ij -
    logsumexp_r l_ir (j, r <= i under a causal mask), so it is finite wherever the logits are
    (inf where they overflow).

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> X = np.random.default_rng(1).normal(size=(2, 2, 2))
    >>> [round(weight_digits(gaussian_blocks(0, 2), s * X)) for s in (1, 10, 1e5)]
    [1, 35, 3526413964]
    """
    X = np.asarray(X, dtype=float)
    admissible = causal_mask(np, X.shape[1]) if blocks[0].causal else True
    w = 0.0
    for b in blocks:
        with np.errstate(all="ignore"):
            L = np.where(admissible, logits(b, X), -np.inf)
            log_p = np.where(admissible, L - logsumexp(L, axis=-1, keepdims=True), 0.0)
        smallest = float(log_p.min())
        w = max(w, -smallest / math.log(10) if math.isfinite(smallest) else math.inf)
    return w


def logit_digits(blocks: Sequence[Block], X: np.ndarray) -> float:
    """v = -log10 of lambda = max_b |beta_b| ||Q_b^T K_b||_2 max |x|^2 (0 when lambda >= 1 or
    lambda = 0): how far below 1 the logits are.  On small data attention is nearly uniform and
    the singular values that only its structure supplies shrink like lambda (measured on a
    Gaussian (1, 2, 2) collection scaled by s = 1 ... 1e-100: the two smallest fell as
    3.4e-2 s^2 and 3.4e-3 s^2), so 30 digits read a deficit into data scaled by 1e-20 that 60
    digits resolve.  lambda = 0 is exact: uniform attention, which the prediction covers
    (:func:`verify.lie.invariants.uniform_attention`), or X = 0.

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> X = np.random.default_rng(1).normal(size=(2, 2, 2))
    >>> [round(logit_digits(gaussian_blocks(0, 2), s * X)) for s in (1, 1e-5, 1e-20)]
    [0, 10, 40]
    """
    big = float(np.max(np.abs(np.asarray(X, dtype=float))))
    a = max(abs(b.beta) * float(np.linalg.norm(b.Q.T @ b.K, 2)) for b in blocks)
    if big == 0 or a == 0:
        return 0.0
    return max(0.0, -(math.log10(a) + 2 * math.log10(big)))  # in logarithms: lambda underflows at |x| ~ 1e-160


def resolved(w: float, digits: float, columns: int, deficit: bool) -> bool:
    """Whether weights down to 10^-w are held by an arithmetic of unit roundoff 10^-digits:
    P_min > u for a full rank, P_min^2 > 10 eta for a deficit (module docstring)."""
    return 2 * w < digits - _margin(columns) if deficit else w < digits


def resolving_digits(w: float, columns: int) -> int:
    """The fewest digits, a multiple of 10, at which a deficit is resolved for weights down to 10^-w."""
    return 10 * (math.floor((2 * w + _margin(columns)) / 10) + 1)


def _margin(columns: int) -> float:
    """log10(10 eta / u): the digits that the noise level and its gap factor take from a deficit's precision."""
    return math.log10(GAP_FACTOR * NOISE_FACTOR * math.sqrt(max(columns, 1)))


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


@dataclass(frozen=True, kw_only=True)
class Decision:
    """The rank decision on the bracket matrix of one degree.

    ``rank`` r = #{sigma > noise_level}; ``sigma`` the singular values of the scaled columns,
    ``sigma_min`` sigma_r (0 when r = 0), ``first_dropped`` sigma_(r+1) and ``gap`` their ratio
    (None when nothing was dropped); ``weight_digits`` w = -log10 of the smallest attention
    weight or logit resolution; ``decided_by`` the arithmetic ("float64" or "D digits"),
    ``digits`` D (None for float64); ``decisive`` whether the decision rule accepted it, else
    ``undecided`` says why and what would decide it; ``saturated``: no rank is decidable at
    these digits; ``matrix`` (m, W) and ``scales`` (W,) the bracket columns and their scales."""

    rank: int
    sigma: list[float]
    sigma_min: float
    first_dropped: float | None
    gap: float | None
    noise_level: float
    weight_digits: float
    decided_by: str
    digits: int | None
    decisive: bool
    undecided: str | None
    saturated: bool
    matrix: Any
    scales: Any


@dataclass(frozen=True, kw_only=True)
class RankAnalysis(Decision):
    """:func:`analyse`'s answer: the decision at the final degree ``max_degree`` (with ``words``
    Hall words), against ``expected_rank`` (None: no sharp prediction) in ``dimension`` m =
    N n d; ``counting_degree`` the least degree with enough words, ``min_degree`` the least
    whose columns already reach the rank (None below the target), ``matches_prediction``."""

    dimension: int
    expected_rank: int | None
    counting_degree: int
    max_degree: int
    words: int
    matches_prediction: bool
    min_degree: int | None


def analyse(
    blocks: Sequence[Block],
    X: np.ndarray,
    *,
    expected: int | None = None,
    max_degree: int = DEFAULT_MAX_DEGREE,
    dps: int | None = None,
) -> RankAnalysis:
    """Bracket rank of X against the prediction, growing the degree until it is reached.

    Starts at the counting bound and adds a degree until the rank reaches ``expected``
    (default: :func:`verify.lie.invariants.predicted_rank`; full dimension if there is none) and
    there are at least as many words as dimensions (so that a deficit is a measured one), or
    until ``max_degree`` is hit.  ``dps`` forces the given precision for the decision.
    """
    N, n, d = X.shape
    m = N * n * d
    causal = bool(blocks[0].causal)
    prediction = predicted_rank(X, causal, blocks) if expected is None else expected
    target = m if prediction is None else prediction
    start = min(max(counting_degree(target), 1), max_degree)
    # a deficit is only measured once there are enough words to span the whole space
    enough = min(counting_degree(m), max_degree)
    # the digits the arithmetic must hold: the smallest weight (saturation) or the logits (near-uniform)
    w = max(weight_digits(blocks, X), logit_digits(blocks, X))
    for K in range(start, max_degree + 1):
        decision = _analyse_at(blocks, X, K, dps, w)
        if decision.rank >= target and K >= enough or decision.saturated:
            break
    words = list(basis(K))
    result = RankAnalysis(
        **vars(decision),
        dimension=m,
        expected_rank=prediction,
        counting_degree=counting_degree(target),
        max_degree=K,
        words=len(words),
        matches_prediction=prediction is not None and decision.rank == prediction,
        # smallest degree whose columns already reach the final rank (prefixes of the same matrix)
        min_degree=_min_degree(decision, words, target) if decision.rank >= target else None,
    )
    if result.rank < target and len(words) < target and result.decisive:  # a cap, not a measured deficit
        result = replace(result, decisive=False, undecided=(
            f"the {len(words)} brackets up to degree {K} cannot span the {target} dimensions predicted; give a "
            f"max degree of at least {result.counting_degree} (max_degree), the counting bound"))
    return result


def _analyse_at(blocks, X, K, dps, w: float) -> Decision:
    m = int(np.prod(X.shape))
    degrees = np.array([degree(w) for w in basis(K)])
    levels = [dps] if dps is not None else [None, *ESCALATION]
    resolving = resolving_digits(w, len(degrees))
    if dps is None and ESCALATION[-1] < resolving and w < MAX_DIGITS:
        levels.append(min(resolving, MAX_DIGITS))
    for level in levels:
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
            M = _matrix(blocks, X, K, level)
            scales = degree_scales(blocks, X, M, degrees)
        W = M.shape[1]
        if not (np.all(np.isfinite(np.asarray(M, dtype=float))) and np.all(np.isfinite(scales))):
            raise InputError(f"the brackets of degree <= {K} overflow float64 on this collection (max |x| = "
                             f"{float(np.abs(np.asarray(X, dtype=float)).max()):.3g}); rescale the data towards |x| ~ 1")
        sigma = singular_values(M, scales, level)
        unit = UNIT if level is None else 10.0**-level
        r, decisive = decide(sigma, unit, W, min(m, W))
        digits = FLOAT64_DIGITS if level is None else level
        weights_seen = resolved(w, digits, W, r < min(m, W))
        if (decisive and weights_seen) or level == levels[-1]:
            break
    name = "float64" if level is None else f"{level} digits"
    undecided = None
    if not resolved(0.0, digits, W, deficit=True):  # even weights of 1 would not do
        undecided = (f"at {name} the noise level {noise_level(unit, W):.1g} leaves no room to decide a rank; "
                     f"give dps {max(resolving_digits(w, W), ESCALATION[0])} or more")
    elif not weights_seen:
        undecided = (f"the attention weights or logits reach down to 10^-{w:.3g}, too small for {name} to decide "
                     f"{'a deficit' if r < min(m, W) else 'the rank'}"
                     f"{f' (up to {MAX_DIGITS} digits are tried)' if dps is None else ''}; "
                     "rescale the data towards |x| ~ 1")
    elif not decisive:
        undecided = (f"a singular value is within {GAP_FACTOR:g}x of the noise level at {name}, or a deficit "
                     "was measured below 20 digits; try more digits (dps)")
    gap = float(sigma[r - 1] / sigma[r]) if 0 < r < len(sigma) and sigma[r] > 0 else None
    return Decision(
        rank=r,
        sigma=[float(s) for s in sigma],
        sigma_min=float(sigma[r - 1]) if r else 0.0,
        first_dropped=float(sigma[r]) if r < len(sigma) else None,
        gap=gap,
        noise_level=noise_level(unit, W),
        weight_digits=w,
        decided_by=name,
        digits=level,
        decisive=undecided is None,
        undecided=undecided,
        saturated=not resolved(w, digits, W, deficit=False),  # no rank decidable at these digits
        matrix=M,
        scales=scales,
    )


def _min_degree(decision: Decision, words: list, target: int) -> int:
    """Smallest degree whose columns (a prefix of the matrix) already have rank ``target``."""
    degs = np.array([degree(w) for w in words])
    level = decision.digits
    unit = UNIT if level is None else 10.0**-level
    M, scales = decision.matrix, decision.scales
    for k in range(1, int(degs.max()) + 1):
        cols = degs <= k
        if cols.sum() < target:
            continue
        sig = singular_values(M[:, cols], scales[cols], level)
        if decide(sig, unit, int(cols.sum()), target)[0] >= target:
            return k
    return int(degs.max())
