"""The bracket rank the invariants allow: an exact upper bound, and when it is the rank.

Every invariant of docs/conventions.md §3 confines the tangent vectors that brackets can
produce, whatever the blocks; this module counts the directions left (:func:`rank_bound`).
Everything is decided exactly (:mod:`verify.lie.symmetry`: tokens as exact numbers; ranks over
the rationals), never by a tolerance.

Full attention, per orbit of sequences under signed permutations (one representative each):

* a sequence with k distinct tokens contributes d k; an *odd* one (its tokens equal their
  negatives as a multiset) d times its pairs {c, -c}, c != 0;
* the sequences of one repeated token (n = 1 included) move linearly, x -> G x with one G for
  all of them: together d * rank[x^1 ... x^L].

Causal masking: d * rank[x_1^1 ... x_1^N] + d * sum_{i=2..n} #(prefixes (x_1, ..., x_i) up to sign).

Blocks detected as degenerate lower the bound further: V = 0 in both (0), V = 0 in one or both
blocks equal (one field: 1), beta Q^T K = 0 in both (uniform attention: d * rank of the
sequences' means), and beta Q^T K = 0 in one block with n = 2 (the difference of the two
tokens then moves only along exp(t V) of the other block: 1 + d per sequence, 1 for an odd
one).  Each of these is decided on the blocks' entries *as written*
(:meth:`verify.model.blocks.Block.exact_entries`: decimal strings as the rationals they write,
not the binary64 numbers they round to) in exact rational arithmetic, Q^T K formed exactly:
V written "1e-400" is not 0, blocks that differ in their 25th digit are not equal, and
Q^T K of entries 1e-163 does not underflow.  (Deciding them in binary64 gave CERTIFIED ranks
below the true ones, issue 65.)

The bound is **sharp** where it is the rank for generic blocks and data (measured:
docs/conventions.md §3); where it is not known to be (coincident tokens under a causal mask,
other degenerate blocks) it is still an upper bound.

>>> import numpy as np
>>> X = np.random.default_rng(0).normal(size=(3, 2, 2))
>>> rank_bound(X).value
12
>>> X[1] = -X[0, ::-1]          # sequence 1 is minus a permutation of sequence 0
>>> rank_bound(X).value
8
>>> X[2] = [[1.0, 2.0], [-1.0, -2.0]]   # an odd sequence {a, -a}
>>> rank_bound(X).value
6
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from verify.lie.symmetry import exact, fixed_tokens, orbits, prefix_orbits, rational, sequence_type


@dataclass(frozen=True, kw_only=True)
class RankBound:
    """``value``: the exact upper bound of the bracket rank; ``sharp``: it is the rank for
    generic blocks and data (otherwise only a bound); ``reasons``: the invariants that lower it
    below N n d, in words."""

    value: int
    sharp: bool
    reasons: list[str] = field(default_factory=list)


def exact_rank(vectors: Any) -> int:
    """Rank over the rationals of vectors of exact numbers (python-flint fmpq_mat)."""
    import flint

    rows = [[exact(x) for x in v] for v in vectors]
    if not rows or not rows[0]:
        return 0
    return flint.fmpq_mat([[flint.fmpq(*Fraction(x).as_integer_ratio()) for x in r] for r in rows]).rank()


def written(b: Any, name: str) -> Any:
    """A block's ``name`` (Q, K, V as a python-flint fmpq_mat, or beta as a Fraction) exactly as
    written (:meth:`verify.model.blocks.Block.exact_entries`; a block without them, its numbers)."""
    import flint

    entries = b.exact_entries(name) if hasattr(b, "exact_entries") else getattr(b, name)
    if name == "beta":
        return rational(entries)
    return flint.fmpq_mat([[flint.fmpq(*rational(v).as_integer_ratio()) for v in row] for row in np.asarray(entries)])


def zero_value(b: Any) -> bool:
    """Whether V = 0, decided exactly on the entries as written: the block's field vanishes."""
    V = written(b, "V")
    return all(V[i, j] == 0 for i in range(V.nrows()) for j in range(V.ncols()))


def uniform_block(b: Any) -> bool:
    """Whether beta Q^T K = 0, decided exactly on the entries as written (Q^T K formed in exact
    rationals): every attention weight of the block is uniform."""
    if written(b, "beta") == 0:
        return True
    M = written(b, "Q").transpose() * written(b, "K")
    return all(M[i, j] == 0 for i in range(M.nrows()) for j in range(M.ncols()))


def uniform_attention(blocks: Sequence[Any]) -> bool:
    """Whether both blocks have uniform attention (:func:`uniform_block`)."""
    return all(uniform_block(b) for b in blocks)


def _same_blocks(blocks: Sequence[Any]) -> bool:
    """Whether the two blocks are equal, entry by entry as written (exact rationals)."""
    b0, b1 = blocks
    return all(written(b0, m) == written(b1, m) for m in ("beta", "Q", "K", "V"))


def _full(X: np.ndarray, uniform_one: bool = False) -> RankBound:
    N, n, d = X.shape
    total, lone, reasons = 0, [], []
    for group in orbits(X):
        seq = X[group[0]]
        t = sequence_type(seq)
        if len(group) > 1:
            reasons.append(f"sequences {listed(group)} are signed token permutations of each other")
        if t.lone:
            lone.append(t.distinct[0])
            continue
        if t.odd:
            reasons.append(f"sequence {group[0]} is minus a permutation of itself")
        if any(len(c) > 1 for c in t.classes):
            reasons.append(f"sequence {group[0]} has coincident tokens")
        total += (1 + (0 if t.odd else d)) if uniform_one and n == 2 else d * fixed_tokens(seq)
    if lone:
        total += d * exact_rank(lone)
        if len(lone) > 1 or n > 1:
            reasons.append("the sequences of one repeated token move linearly, x -> G x, with one G")
    return RankBound(value=total, sharp=True, reasons=reasons)


def _causal(X: np.ndarray) -> RankBound:
    N, n, d = X.shape
    total = d * exact_rank([X[s, 0] for s in range(N)])
    reasons = ["the first tokens move linearly, x_1 -> G x_1, with one G"] if N > 1 or d > 1 else []
    for i in range(2, n + 1):
        groups = prefix_orbits(X, i)
        total += d * len(groups)
        reasons += [f"sequences {listed(g)} share their first {i} tokens up to sign" for g in groups if len(g) > 1]
    coincident = n > 1 and any(len(sequence_type(X[s]).distinct) < n for s in range(N))
    if coincident:
        reasons.append("coincident tokens under a causal mask (the bound is not known to be sharp there)")
    return RankBound(value=total, sharp=not coincident, reasons=reasons)


def rank_bound(X: Any, causal: bool = False, blocks: Sequence[Any] | None = None) -> RankBound:
    """The exact upper bound of the bracket rank on X (N, n, d) that the invariants and, when
    given, degenerate ``blocks`` allow (module docstring)."""
    X = np.asarray(X)
    N, n, d = X.shape
    generic = _causal(X) if causal else _full(X)
    if blocks is None:
        return generic
    vanishing = [b for b, blk in enumerate(blocks) if zero_value(blk)]
    if len(vanishing) == 2:
        return RankBound(value=0, sharp=True, reasons=["both blocks have V = 0: nothing moves"])
    if vanishing or _same_blocks(blocks):
        why = f"block {vanishing[0]} has V = 0" if vanishing else "the two blocks are equal"
        return RankBound(value=min(1, generic.value), sharp=True,
                         reasons=[f"{why}: one field is left, and its brackets with itself vanish"])
    uniform = [b for b, blk in enumerate(blocks) if uniform_block(blk)]
    if len(uniform) == 2 and not causal:
        means = [[sum((rational(v) for v in X[s, :, c]), Fraction(0)) for c in range(d)] for s in range(N)]
        return RankBound(value=d * exact_rank(means), sharp=True, reasons=[
            "both blocks have beta Q^T K = 0: attention is uniform, only the means move, by one linear map"])
    if uniform and not causal and n == 2:
        bound = _full(X, uniform_one=True)
        return RankBound(value=bound.value, sharp=True, reasons=bound.reasons + [
            f"block {uniform[0]} has beta Q^T K = 0 and n = 2: x_1 - x_2 moves only along exp(t V) of the other block"])
    if uniform:
        return RankBound(value=generic.value, sharp=False, reasons=generic.reasons + [
            f"block(s) {listed(uniform)} have beta Q^T K = 0; the bound is not known to be sharp for them"])
    return generic


def predicted_rank(X: Any, causal: bool = False, blocks: Sequence[Any] | None = None) -> int | None:
    """The rank the invariants predict where their bound is sharp (:func:`rank_bound`), else None.

    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(3, 2, 2))
    >>> X[1] = X[0, ::-1]          # sequence 1 is a permutation of sequence 0
    >>> predicted_rank(X)
    8
    """
    b = rank_bound(X, causal, blocks)
    return b.value if b.sharp else None


def describe(X: Any, causal: bool = False, blocks: Sequence[Any] | None = None) -> list[str]:
    """The invariant structures present in X that lower the bound, in words."""
    return list(dict.fromkeys(rank_bound(X, causal, blocks).reasons))


def listed(indices: Sequence[int]) -> str:
    """Indices for a message: the first six, and how many more."""
    return ", ".join(map(str, indices[:6])) + (f" (and {len(indices) - 6} more)" if len(indices) > 6 else "")
