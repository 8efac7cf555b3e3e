"""Invariant structure of a collection, and the bracket rank it predicts (DESIGN §2, §3).

No control can break these invariants, so the iterated brackets cannot span more than they
allow.  Everything here is decided exactly (float equality of tokens, rational rank), never
by a tolerance.

Full attention:
* tokens that coincide inside a sequence stay coincident: each sequence contributes d times
  its number of *distinct* tokens;
* sequences that are token permutations of each other stay so: only one per class counts;
* a sequence whose tokens all coincide moves linearly, x -> G x, with the same G for every
  such sequence, so together they contribute d * rank[x^1 ... x^k] (this covers n = 1).
Causal masking (tokens inside each sequence pairwise distinct):
  d * rank[x_1^1 ... x_1^N] + d * sum_{i=2..n} #distinct prefixes (x_1, ..., x_i).

>>> import numpy as np
>>> X = np.random.default_rng(0).normal(size=(3, 2, 2))
>>> predicted_rank(X)
12
>>> X[1] = X[0, ::-1]          # sequence 1 is a permutation of sequence 0
>>> predicted_rank(X)
8
"""

from __future__ import annotations

from fractions import Fraction

import numpy as np


def _key(token: np.ndarray) -> tuple:
    return tuple(float(v) for v in token)


def distinct_tokens(seq: np.ndarray) -> list[tuple]:
    """Distinct tokens of one sequence (n, d), in order of first appearance."""
    return list(dict.fromkeys(_key(t) for t in seq))


def coincident_pairs(X: np.ndarray) -> list[tuple[int, int, int]]:
    """(sequence, i, j), i < j, for every pair of exactly equal tokens inside a sequence."""
    out = []
    for s, seq in enumerate(X):
        for i in range(len(seq)):
            for j in range(i + 1, len(seq)):
                if np.array_equal(seq[i], seq[j]):
                    out.append((s, i, j))
    return out


def permutation_classes(X: np.ndarray) -> list[list[int]]:
    """Groups of sequences that are token permutations of each other (multisets equal)."""
    classes: dict[tuple, list[int]] = {}
    for s, seq in enumerate(X):
        classes.setdefault(tuple(sorted(_key(t) for t in seq)), []).append(s)
    return list(classes.values())


def exact_rank(vectors: list[tuple] | np.ndarray) -> int:
    """Rank over the rationals of binary64 vectors (exact: python-flint fmpq_mat)."""
    import flint

    rows = [list(v) for v in vectors]
    if not rows or not rows[0]:
        return 0
    return flint.fmpq_mat([[flint.fmpq(*Fraction(float(x)).as_integer_ratio()) for x in r] for r in rows]).rank()


def predicted_rank(X: np.ndarray, causal: bool = False) -> int | None:
    """The bracket rank the invariants allow on generic blocks, or None where this module has
    no sharp prediction (coincident tokens under causal masking)."""
    N, n, d = X.shape
    if causal:
        if coincident_pairs(X):
            return None
        prefixes = sum(len({tuple(map(_key, X[s, :i])) for s in range(N)}) for i in range(2, n + 1))
        return d * exact_rank([_key(X[s, 0]) for s in range(N)]) + d * prefixes
    total, linear = 0, []
    for cls in permutation_classes(X):
        tokens = distinct_tokens(X[cls[0]])
        if len(tokens) == 1:
            linear.append(tokens[0])
        else:
            total += d * len(tokens)
    return total + (d * exact_rank(linear) if linear else 0)


def describe(X: np.ndarray, causal: bool = False) -> list[str]:
    """Human-readable list of the invariant structures present in X."""
    notes = []
    for s, i, j in coincident_pairs(X):
        notes.append(f"sequence {s}: tokens {i} and {j} coincide")
    for cls in permutation_classes(X):
        if len(cls) > 1:
            notes.append(f"sequences {', '.join(map(str, cls))} are token permutations of each other")
    if causal:
        N, n, _ = X.shape
        for i in range(1, n + 1):
            groups: dict[tuple, list[int]] = {}
            for s in range(N):
                groups.setdefault(tuple(map(_key, X[s, :i])), []).append(s)
            for g in groups.values():
                if len(g) > 1 and i > 1:
                    notes.append(f"sequences {', '.join(map(str, g))} share the prefix of length {i}")
    return notes
