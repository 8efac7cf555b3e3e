"""Rank of the bracket matrix: what the arithmetic sees, and what is proved.

A rank **deficit is never decided numerically**: the bracket rank is proved equal to the exact
upper bound of the invariants (:func:`verify.lie.invariants.rank_bound`) when an r x r minor is
proved nonsingular in Arb ball arithmetic (:func:`verify.lie.certify.rank_at_least`) for r =
that bound (CERTIFIED), and otherwise it is UNDECIDED, with the singular values each
arithmetic saw.  (A proof of rank above the bound would refute the invariants: FAIL.)  The
floating-point analysis below only chooses the degree, the precision and the minor to try.

The bracket matrix (rows: sequence, token, coordinate of one sequence per orbit of the
symmetry group, :func:`verify.lie.symmetry.orbits`, since the others' rows are images of
those; columns: Hall words of degree <= K) is scaled column by column before its singular
values sigma_1 >= sigma_2 >= ... are taken: each column of degree k is divided by the size a
degree-k bracket has before cancellation (:func:`verify.lie.scales.degree_scales`).

**What the arithmetic sees.**  With u the unit roundoff of the arithmetic used (2^-52 in
float64, 10^-dps in high precision) and W the number of columns, the error of a scaled column,
measured against 25- and 30-digit recomputations, was at most 132 u on Gaussian data up to
m = 64 and degree 8, and at most 1.8e5 u over 40 random small collections (entries in
[-2, 2], beta up to 2, including brackets that vanish identically).  So the noise level is
eta = 1e6 u sqrt(W) and the numerical rank is #{sigma > eta}; it is taken as a candidate only
with a gap (the r-th singular value above 10 eta).  The degree grows from the counting bound
while the float64 rank grows towards the bound (it stops after STALL degrees without a rise);
then, while the numerical rank is below the bound (or within the gap factor of the noise), the
minor float64's pivoting picks is tried in Arb once (a proof from any minor is a proof; it
costs the Arb brackets, about 40 s at m = 128, where 30-digit brackets and their SVD took
674 s), and then the matrix is recomputed at the digits of
ESCALATION (and at the digits the smallest attention weight or the smallest logits need,
:func:`weight_digits`, :func:`logit_digits`, per sequence, up to MAX_DIGITS), and at the first
level whose numerical rank reaches the bound the minor it picks is certified at those digits
(at least 30).  Near-coincident tokens, tiny or near-symmetric sequences make sigma_min small
but nonzero: more digits find it, and the certificate then proves it.

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> X = np.random.default_rng(1).normal(size=(2, 2, 2))
>>> r = analyse(gaussian_blocks(0, 2), X)
>>> r.verdict, r.rank, r.bound, r.min_degree, r.counting_degree
('CERTIFIED', 8, 8, 4, 4)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import mpmath
import numpy as np
from scipy.special import logsumexp

from verify.io.errors import InputError
from verify.lie import certify as certificates
from verify.lie.brackets import bracket_matrix
from verify.lie.hall import basis, counting_degree, degree
from verify.lie.invariants import RankBound, rank_bound
from verify.lie.scales import degree_scales
from verify.lie.symmetry import exact_array, orbit_count_at_least, orbits
from verify.model.attention import causal_mask, logits
from verify.model.backend import UNIT, namespace, precision
from verify.model.blocks import Block

NOISE_FACTOR = 1e6  # measured scaled-column error <= 1.8e5 u (module docstring), margin 5
GAP_FACTOR = 10.0  # a kept singular value must exceed the noise level by this factor
ESCALATION = (30, 60, 120)  # digits tried while the numerical rank is below the bound
FLOAT64_DIGITS = 52 * math.log10(2)  # -log10 of float64's unit roundoff
MAX_DIGITS = 150  # the most digits tried for weights that 60 do not resolve (module docstring)
DEFAULT_MAX_DEGREE = 12
MAX_DEGREE = 14  # 2538 Hall words; degree 16 has 8800, whose brackets take hours at m of a few dozen
MAX_DIMENSION = 512  # numbers in the sequences that move independently: n d = 256 took 38 s, 512 the most allowed
PROGRESS_SECONDS = 10.0  # between progress lines of a long high-precision matrix
STALL = 2  # degrees without a rise of the float64 rank after which the degree stops growing
CERTIFY_DIGITS = 30  # the fewest digits of a certificate


def noise_level(unit: float, columns: int) -> float:
    return NOISE_FACTOR * unit * math.sqrt(max(columns, 1))


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
    """v = -log10 of the smallest lambda_s = max_b |beta_b| ||Q_b^T K_b||_2 max_(x in s) |x|^2 over the
    sequences s whose lambda_s is below 1 and above 0 (0 when there is none): how far below 1
    the logits of the smallest sequence are.  On small data attention is nearly uniform and
    the singular values that only its structure supplies shrink like lambda (measured on a
    Gaussian (1, 2, 2) collection scaled by s = 1 ... 1e-100: the two smallest fell as
    3.4e-2 s^2 and 3.4e-3 s^2), so 30 digits saw a deficit in data scaled by 1e-20 that 60
    digits resolve; per sequence, because one sequence at scale 1e-20 beside one at scale 1
    is as small.  lambda_s = 0 is exact: a sequence at 0, or uniform attention.

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> X = np.random.default_rng(1).normal(size=(2, 2, 2))
    >>> [round(logit_digits(gaussian_blocks(0, 2), s * X)) for s in (1, 1e-5, 1e-20)]
    [0, 10, 40]
    >>> X[1] *= 1e-20                  # one small sequence beside one of order one
    >>> round(logit_digits(gaussian_blocks(0, 2), X))
    40
    """
    a = max(abs(float(b.beta)) * float(np.linalg.norm(np.asarray(b.Q, dtype=float).T @ np.asarray(b.K, dtype=float), 2))
            for b in blocks)
    big = np.max(np.abs(np.asarray(X, dtype=float)), axis=(1, 2))
    big = big[big > 0]
    if a == 0 or big.size == 0:
        return 0.0
    return max(0.0, -(math.log10(a) + 2 * math.log10(float(big.min()))))  # in logarithms: lambda underflows at |x| ~ 1e-160


def resolving_digits(w: float, columns: int) -> int:
    """The fewest digits, a multiple of 10, at which a deficit is resolved for weights down to 10^-w."""
    return 10 * (math.floor((2 * w + _margin(columns)) / 10) + 1)


def _margin(columns: int) -> float:
    """log10(10 eta / u): the digits that the noise level and its gap factor take from a deficit's precision."""
    return math.log10(GAP_FACTOR * NOISE_FACTOR * math.sqrt(max(columns, 1)))


@dataclass(frozen=True, kw_only=True)
class Level:
    """What one arithmetic saw at the final degree: the numerical ``rank`` #{sigma > noise},
    ``sigma_r`` (the r-th singular value, 0 when r = 0) and ``next`` (the (r+1)-th, None when
    none was dropped), in ``arithmetic`` ("float64" or "D digits")."""

    arithmetic: str
    digits: int | None
    rank: int
    sigma_r: float
    next: float | None
    noise_level: float


@dataclass(frozen=True, kw_only=True)
class RankAnalysis:
    """:func:`analyse`'s answer.

    ``verdict``: CERTIFIED (the rank is proved to be ``bound``: at least that by the Arb
    certificate, at most by the invariants), FAIL (a rank above the bound proved: the
    invariants are wrong), UNDECIDED (``undecided`` says why) or ESTIMATE (asked not to
    certify; ``rank`` is then a floating-point estimate).  ``bound``, ``sharp``, ``reasons``:
    the invariants' exact bound (:class:`verify.lie.invariants.RankBound`); ``dimension`` m =
    N n d.  The floating point: ``rank`` the numerical rank at the last arithmetic tried
    (``decided_by``), its singular values ``sigma`` of the degree-scaled columns (``scales``) of
    ``matrix`` (rows of the ``sequences`` that move independently), ``sigma_min`` sigma_r,
    ``first_dropped``, ``gap`` their ratio, ``levels`` every arithmetic tried.  Degrees:
    ``counting_degree`` the least with enough words for the bound, ``max_degree`` the final one
    (``words`` Hall words), ``min_degree`` the least whose columns reach the bound (None below
    it).  ``certificate``: :func:`verify.lie.certify.rank_at_least`'s answer (None: not tried);
    ``weight_digits``: the digits the attention weights and logits need."""

    verdict: str
    dimension: int
    bound: int
    sharp: bool
    reasons: list[str]
    rank: int
    sigma: list[float] = field(repr=False)  # the repr shows the verdict and its numbers, not the arrays behind them
    sigma_min: float
    first_dropped: float | None
    gap: float | None
    noise_level: float
    decided_by: str
    levels: list[Level] = field(repr=False)
    counting_degree: int
    max_degree: int
    words: int
    min_degree: int | None
    certificate: dict[str, Any] | None = field(repr=False)
    undecided: str | None
    weight_digits: float
    sequences: list[int] = field(repr=False)
    matrix: Any = field(repr=False)
    scales: Any = field(repr=False)

    @property
    def certified(self) -> bool:
        return self.verdict == "CERTIFIED"

    @property
    def expected_rank(self) -> int | None:
        """The bound where it is sharp (the rank generic blocks give), else None."""
        return self.bound if self.sharp else None

    @property
    def matches_prediction(self) -> bool:
        return self.certified


def check_size(bound: RankBound, rows: int, max_degree: int) -> None:
    """Refuse, before any work, a rank the brackets cannot reach within the limits."""
    if isinstance(max_degree, bool) or not isinstance(max_degree, (int, np.integer)) or not 1 <= max_degree <= MAX_DEGREE:
        raise InputError(f"a max degree of {max_degree!r}: give one from 1 to {MAX_DEGREE} ({len(basis(MAX_DEGREE))} "
                         f"Hall words; degree {MAX_DEGREE + 2} has {len(basis(MAX_DEGREE + 2))}) (max_degree)")
    if rows > MAX_DIMENSION:
        raise InputError(f"the sequences that move independently hold {rows} numbers, over the limit of "
                         f"{MAX_DIMENSION} for the bracket matrix (its rows); split the collection")


def check_rows(X: Any, causal: bool) -> None:
    """Refuse, before any exact work, a collection whose sequences that move independently hold
    more than MAX_DIMENSION numbers, counted from a lower bound of its orbits in float64
    (:func:`verify.lie.symmetry.orbit_count_at_least`: a fraction of a second at 200 000 sequences)."""
    A = np.asarray(X).astype(float)
    width = max(int(np.prod(A.shape[1:])), 1)
    rows = orbit_count_at_least(A, causal, enough=MAX_DIMENSION // width) * width
    if rows > MAX_DIMENSION:
        raise InputError(f"the sequences that move independently hold at least {rows} numbers, over the limit of "
                         f"{MAX_DIMENSION} for the bracket matrix (its rows); split the collection")


def analyse(
    blocks: Sequence[Block],
    X: Any,
    *,
    max_degree: int = DEFAULT_MAX_DEGREE,
    dps: int | None = None,
    certify: bool = True,
    deadline: float = math.inf,
    progress: Callable[[str], None] | None = None,
) -> RankAnalysis:
    """The bracket rank of X (N, n, d: floats, or decimal strings exactly as written) against
    the invariants' exact bound, proved where it can be (module docstring).  ``dps`` fixes the
    arithmetic of the floating-point analysis (and of the certificate, at least 30 digits);
    ``certify=False`` stops at the floating-point estimate.  Past ``deadline`` (a
    ``time.perf_counter()`` value) no further arithmetic is tried.  ``progress`` hears of each
    degree and arithmetic."""
    say = progress or (lambda _: None)
    check_rows(X, bool(blocks[0].causal))
    Xe = exact_array(X)
    N, n, d = Xe.shape
    causal = bool(blocks[0].causal)
    bound = rank_bound(Xe, causal, blocks)
    sequences = [g[0] for g in orbits(Xe, causal)]
    Xe = Xe[sequences]
    Xf = Xe.astype(float)
    check_size(bound, Xe.size, max_degree)
    target = bound.value
    counting = counting_degree(max(target, 1))
    w = max(weight_digits(blocks, Xf), logit_digits(blocks, Xf))
    first = [dps] if dps is not None else [None]
    K, rank_at, K0 = min(max(counting, 1), max_degree), {}, None
    while True:  # the degree, in the first arithmetic
        say(f"rank: degree {K} ({len(basis(K))} words) in {_name(first[0])}")
        level, M, scales = _level(blocks, Xe, K, first[0])
        rank_at[K] = level.rank
        K0 = K0 or K
        stalled = K - K0 >= STALL and rank_at[K] <= rank_at[K - STALL]
        if level.rank >= target or K >= max_degree or stalled or time.perf_counter() > deadline:
            break
        K += 1
    levels, why = [level], None
    later = [] if dps is not None else sorted({*ESCALATION, max(ESCALATION[0], min(resolving_digits(w, len(basis(K))),
                                                                              MAX_DIGITS))})
    cert, verdict, early = None, "ESTIMATE", certify and dps is None and target > 0
    while True:
        if early and level.digits is None and not (level.rank >= target and _gap_ok(level)) and M.shape[1] >= target:
            # float64 shows no clear rank `target`, yet its pivoted minor is worth one Arb try before slower
            # arithmetic: a proof from any minor is a proof (m = 128: about 40 s against 674 s at 30 digits)
            early = False
            say(f"rank: trying the float64 minor of rank {target} in Arb at {CERTIFY_DIGITS} digits")
            tried = certificates.rank_at_least(blocks, Xe, target, max_degree=K, digits=CERTIFY_DIGITS, matrix=M,
                                               deadline=deadline, progress=say)
            if tried["certified"]:
                cert, verdict = tried, "CERTIFIED"
                break
        if level.rank >= target and _gap_ok(level) and certify:
            digits = max(CERTIFY_DIGITS, level.digits or 0)
            say(f"rank: certifying rank >= {target} in Arb at {digits} digits")
            cert = certificates.rank_at_least(blocks, Xe, target, max_degree=K, digits=digits, matrix=M,
                                              deadline=deadline, progress=say)
            if cert["certified"]:
                verdict = "CERTIFIED"
                if level.rank > target and _gap_ok(level, target + 1):  # more than the bound: prove it, or say nothing
                    over = certificates.rank_at_least(blocks, Xe, target + 1, max_degree=K, digits=digits, matrix=M)
                    if over["certified"]:
                        verdict, cert = "FAIL", over
                break
        if not certify and level.rank >= target:
            break
        if not later or time.perf_counter() > deadline:
            break
        D = later.pop(0)
        say(f"rank: degree {K} at {D} digits")
        try:
            level, M, scales = _level(blocks, Xe, K, D, deadline, say)
        except Late:
            break
        levels.append(level)
    if verdict == "ESTIMATE" and certify:
        verdict = "UNDECIDED"
        why = _why(bound, levels, cert, K, max_degree, stalled, target, time.perf_counter() > deadline)
    sigma = singular_values(M, scales, level.digits)
    words = list(basis(K))
    return RankAnalysis(
        verdict=verdict, dimension=N * n * d, bound=target, sharp=bound.sharp, reasons=bound.reasons,
        rank=level.rank, sigma=[float(x) for x in sigma], sigma_min=level.sigma_r, first_dropped=level.next,
        gap=(level.sigma_r / level.next) if level.next else None, noise_level=level.noise_level,
        decided_by=level.arithmetic, levels=levels, counting_degree=counting, max_degree=K, words=len(words),
        min_degree=_min_degree(M, scales, level.digits, words, target) if level.rank >= target else None,
        certificate=cert, undecided=why, weight_digits=w, sequences=sequences, matrix=M, scales=scales)


def _name(digits: int | None) -> str:
    return "float64" if digits is None else f"{digits} digits"


def _gap_ok(level: Level, r: int | None = None) -> bool:
    """The numerical rank (or r) is clear of the noise: its singular value above GAP_FACTOR eta."""
    return level.rank >= (r or level.rank) and (level.rank == 0 or level.sigma_r > GAP_FACTOR * level.noise_level)


def _why(bound, levels, cert, K, max_degree, stalled, target, late) -> str:
    """What an UNDECIDED rank saw, in one line: the singular values at each arithmetic."""
    seen = "; ".join(f"{lv.arithmetic}: rank {lv.rank}" + (f", sigma_{lv.rank + 1} = {lv.next:.1e}" if lv.next is not None
                                                            else "") + f" (noise {lv.noise_level:.0e})" for lv in levels)
    if cert is not None and not cert["certified"]:
        head = f"the minor of rank {target} was not certified ({cert['reason']})"
    elif levels[-1].rank >= target:
        head = f"rank {levels[-1].rank} is within {GAP_FACTOR:g}x of the noise"
    else:
        head = (f"the brackets show rank below the bound {target} in every arithmetic tried; only an exact argument "
                "decides a deficit")
        if not bound.sharp:
            head += " (the bound is not known to be sharp for these data or blocks)"
    if all(lv.noise_level >= 1 for lv in levels):  # scaled singular values are at most ~1: nothing can show
        head = (f"{levels[-1].arithmetic} leave no room to decide a rank (noise {levels[-1].noise_level:.0e} above "
                "every scaled singular value); give dps 30 or more")
    more = ("; stopped at the deadline" if late else f"; the degree reached the cap {max_degree} (max_degree)"
            if K >= max_degree and not stalled and levels[-1].rank < target else "")
    return f"{head}: {seen}{more}"


def _level(blocks, X, K: int, digits: int | None, deadline: float = math.inf,
           say: Callable[[str], None] = lambda _: None) -> tuple[Level, Any, np.ndarray]:
    """The bracket matrix of degree <= K at ``digits`` (None: float64), its scales and what its
    singular values say."""
    degrees = np.array([degree(w) for w in basis(K)])
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is refused just below
        M = _matrix(blocks, X, K, digits, deadline, say)
        scales = degree_scales(blocks, np.asarray(X, dtype=float), M, degrees)
    W = M.shape[1]
    if not (np.all(np.isfinite(np.asarray(M, dtype=float))) and np.all(np.isfinite(scales))):
        raise InputError(f"the brackets of degree <= {K} overflow float64 on this collection (max |x| = "
                         f"{float(np.abs(np.asarray(X, dtype=float)).max()):.3g}, beta = {float(blocks[0].beta):.3g}); "
                         "rescale the data towards |x| ~ 1, or beta, so that the logits beta <Q x, K x> stay moderate")
    sigma = singular_values(M, scales, digits)
    unit = UNIT if digits is None else 10.0**-digits
    eta = noise_level(unit, W)
    r = int(np.sum(sigma > eta))
    return Level(arithmetic=_name(digits), digits=digits, rank=r, sigma_r=float(sigma[r - 1]) if r else 0.0,
                 next=float(sigma[r]) if r < len(sigma) else None, noise_level=eta), M, scales


class Late(Exception):
    """A high-precision bracket matrix that ran past its deadline."""


def _matrix(blocks: Sequence[Block], X: np.ndarray, K: int, dps: int | None, deadline: float = math.inf,
            say: Callable[[str], None] = lambda _: None) -> Any:
    """The bracket matrix; at ``dps`` digits sequence by sequence (the brackets are block
    diagonal over sequences), so that a long one reports progress and stops at ``deadline``."""
    if dps is None:
        return bracket_matrix(blocks, np.asarray(X, dtype=float), K)[0]
    rows, told = [], time.perf_counter()
    with precision(dps):
        written = [b.in_precision("mpmath") for b in blocks]  # the entries as written, not their binary64 roundings
        for s in range(X.shape[0]):
            rows.append(bracket_matrix(written, namespace("mpmath").asarray(X[s:s + 1]), K)[0])
            if time.perf_counter() > deadline:
                raise Late(f"the {dps}-digit brackets stopped at the deadline after {s + 1} of {X.shape[0]} sequences")
            if time.perf_counter() - told > PROGRESS_SECONDS:
                told = time.perf_counter()
                say(f"rank: {dps}-digit brackets of {s + 1} of {X.shape[0]} sequences")
    return np.concatenate(rows, axis=0)


def _min_degree(M: Any, scales: np.ndarray, digits: int | None, words: list, target: int) -> int:
    """Smallest degree whose columns (a prefix of the matrix) already have numerical rank ``target``."""
    degs = np.array([degree(w) for w in words])
    unit = UNIT if digits is None else 10.0**-digits
    for k in range(1, int(degs.max()) + 1):
        cols = degs <= k
        if cols.sum() < target:
            continue
        sig = singular_values(M[:, cols], scales[cols], digits)
        if int(np.sum(sig > noise_level(unit, int(cols.sum())))) >= target:
            return k
    return int(degs.max())
