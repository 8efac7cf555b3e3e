"""Invariant structure of a collection, and the bracket rank it predicts (docs/conventions.md §3).

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

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from verify.io.errors import InputError


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
    exact = [[x if isinstance(x, Fraction) else Fraction(float(x)) for x in r] for r in rows]
    return flint.fmpq_mat([[flint.fmpq(x.numerator, x.denominator) for x in r] for r in exact]).rank()


def uniform_attention(blocks: Sequence[Any]) -> bool:
    """Whether beta Q^T K = 0 for both blocks, decided exactly (the float entries as rationals):
    then every attention weight is uniform and the fields are linear in the sequence's mean."""
    def zero(b: Any) -> bool:
        if b.beta == 0:
            return True
        Q = [[Fraction(float(v)) for v in row] for row in np.asarray(b.Q)]
        K = [[Fraction(float(v)) for v in row] for row in np.asarray(b.K)]
        d = len(Q)
        return all(sum(Q[k][i] * K[k][j] for k in range(d)) == 0 for i in range(d) for j in range(d))
    return all(zero(b) for b in blocks)


def predicted_rank(X: np.ndarray, causal: bool = False, blocks: Sequence[Any] | None = None) -> int | None:
    """The bracket rank the invariants allow on generic blocks, or None where this module has
    no sharp prediction (coincident tokens under causal masking).

    With ``blocks`` whose attention is uniform (:func:`uniform_attention`), full attention moves
    every token of a sequence by V times the sequence's mean, so only the means move, by one
    linear map: d * rank[mean^1 ... mean^N] (decided exactly); under a causal mask the prefix
    means couple the tokens and there is no sharp prediction (None)."""
    N, n, d = X.shape
    if blocks is not None and uniform_attention(blocks):
        if causal:
            return None
        return d * exact_rank([[sum(Fraction(float(v)) for v in X[s, :, c]) for c in range(d)] for s in range(N)])
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


# ------------------------------------------------------------------ admissibility


NETWORKS_CAN = "a network can: finite depth"  # the refusals of flows' invariants say where the data are reachable


def _pairs_multiset(X: np.ndarray, Y: np.ndarray, s: int) -> list[tuple]:
    return sorted(_key(x) + _key(y) for x, y in zip(X[s], Y[s], strict=True))


def check_admissible(X: np.ndarray, Y: np.ndarray, causal: bool = False, depth: str = "continuous") -> None:
    """Refuse targets that no control can reach from the inputs, naming the obstruction.

    Full attention: the coincidence pattern of every sequence, the permutation relations
    between sequences (with the same permutation for inputs and targets) and, for d = 1, the
    order of the tokens of every sequence must agree; the sequences made of one repeated token
    (every sequence when n = 1) move linearly, x -> G x with one G for all of them, so their
    tokens must be related by one G with det G > 0.  Causal masking: the first tokens must be
    related by one G with det G > 0, shared prefixes must agree and, for d = 1, the first two
    tokens keep their order.  "Related by one G" is decided by least squares with relative
    residual <= 1e-12 and an exact rank comparison.  Raises :class:`~verify.io.errors.InputError`.

    The orientation (det G > 0) and the d = 1 orders are invariants of flows, not of networks
    (``depth="finite"``): a layer x -> (I + h V) x with h beyond -1/lambda, lambda a real
    eigenvalue of V, reverses an orientation, and in d = 1 the difference of two tokens
    (the first two, under causal masking) is multiplied by 1 + h c for some c of the layer, so
    it changes sign when h passes -1/c.  In finite depth neither is refused; the solver's networks
    reach such targets (``test_networks_reach_what_flows_cannot``).

    >>> import numpy as np
    >>> X = np.random.default_rng(0).normal(size=(3, 1, 2))        # n = 1: attention is linear
    >>> check_admissible(X, X @ np.array([[2.0, 1.0], [0.0, 1.0]]).T)  # Y = G X, det G = 2
    >>> check_admissible(X, np.random.default_rng(1).normal(size=(3, 1, 2)))  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    verify.io.errors.InputError: the targets' tokens of sequences 0, 1, 2 (one repeated token each) are not one linear ...
    """
    flows = depth != "finite"  # the invariants of flows only: orientation, and orders in d = 1
    (_check_causal if causal else _check_full)(X, Y, flows)


def _check_causal(X: np.ndarray, Y: np.ndarray, flows: bool) -> None:
    """:func:`check_admissible` under causal masking."""
    N, n, d = X.shape
    _check_linear_tokens(X[:, 0, :], Y[:, 0, :], "first tokens",
                         "under causal masking x_1 -> G x_1 with the same G for every sequence", flows)
    for i in range(1, n + 1):
        for s in range(N):
            for t in range(s + 1, N):
                same_x = np.array_equal(X[s, :i], X[t, :i])
                same_y = np.array_equal(Y[s, :i], Y[t, :i])
                if same_x != same_y:
                    which = "inputs" if same_x else "targets"
                    raise InputError(
                        f"sequences {s} and {t} share their first {i} tokens in the {which} only; under causal "
                        "masking shared prefixes stay shared and distinct ones stay distinct"
                    )
    if d == 1 and n >= 2 and flows:
        # (x_2 - x_1)' = P_22 V (x_2 - x_1): the first two tokens never cross (later ones can)
        for s in range(N):
            if np.sign(X[s, 1, 0] - X[s, 0, 0]) != np.sign(Y[s, 1, 0] - Y[s, 0, 0]):
                raise InputError(
                    f"sequence {s}: tokens 0 and 1 change order (d = 1, causal); under causal masking "
                    "(x_2 - x_1)' = P_22 V (x_2 - x_1), so under a flow the first two tokens never cross "
                    f"({NETWORKS_CAN})"
                )


def _check_full(X: np.ndarray, Y: np.ndarray, flows: bool) -> None:
    """:func:`check_admissible` under full attention."""
    N, n, d = X.shape
    for s in range(N):
        for i in range(n):
            for j in range(i + 1, n):
                cx, cy = np.array_equal(X[s, i], X[s, j]), np.array_equal(Y[s, i], Y[s, j])
                if cx != cy:
                    which = "inputs" if cx else "targets"
                    raise InputError(
                        f"sequence {s}: tokens {i} and {j} coincide in the {which} only; coincident tokens stay "
                        "coincident and distinct ones stay distinct under full attention"
                    )
    for s in range(N):
        for t in range(s + 1, N):
            px = sorted(map(_key, X[s])) == sorted(map(_key, X[t]))
            py = sorted(map(_key, Y[s])) == sorted(map(_key, Y[t]))
            if px != py or (px and _pairs_multiset(X, Y, s) != _pairs_multiset(X, Y, t)):
                raise InputError(
                    f"sequences {s} and {t} are token permutations of each other in the "
                    f"{'inputs' if px else 'targets'} but not by the same permutation in the "
                    f"{'targets' if px else 'inputs'}; full attention keeps permuted sequences permuted"
                )
    linear = [s for s in range(N) if len(distinct_tokens(X[s])) == 1]
    if linear:
        _check_linear_tokens(X[linear, 0, :], Y[linear, 0, :],
                             f"tokens of sequences {', '.join(map(str, linear))} (one repeated token each)",
                             "a sequence of one repeated token moves linearly, x -> G x, with the same G for every "
                             "such sequence", flows)
    if d == 1 and flows:
        for s in range(N):
            for i in range(n):
                for j in range(n):
                    if X[s, i, 0] < X[s, j, 0] and not Y[s, i, 0] < Y[s, j, 0]:
                        raise InputError(
                            f"sequence {s}: tokens {i} and {j} change order (d = 1); in one dimension the tokens of "
                            f"a sequence never cross under a flow ({NETWORKS_CAN})"
                        )


def check_blocks_move(blocks: Sequence[Any], X: np.ndarray, Y: np.ndarray) -> None:
    """Refuse targets that these particular blocks cannot reach because both are degenerate (the
    theorem's blocks are generic; these are degenerate cases of ``theorems/necessity``), decided
    exactly on the blocks:

    * V_0 = V_1 = 0: the fields vanish and nothing moves, so Y must equal X;
    * full attention with beta Q^T K = 0 for both blocks: attention is uniform, every token of a
      sequence moves by V times the sequence's mean, so the differences of the tokens inside each
      sequence never change (held to a relative 1e-12).  (The means then move by one linear map;
      that is not checked here, since in finite depth it need not have det > 0.)

    Raises :class:`~verify.io.errors.InputError`.

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> from dataclasses import replace
    >>> uniform = [replace(b, beta=0.0) for b in gaussian_blocks(0, 2)]
    >>> X = np.random.default_rng(0).normal(size=(3, 2, 2))
    >>> check_blocks_move(uniform, X, X @ np.array([[1.0, 0.5], [0.0, 2.0]]).T)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    verify.io.errors.InputError: both blocks have beta Q^T K = 0: attention is uniform, so ...
    """
    if all(not np.any(b.V) for b in blocks):
        if not np.array_equal(X, Y):
            raise InputError("both blocks have V = 0: their fields vanish and nothing moves, so the targets must "
                             "equal the inputs")
        return
    if blocks[0].causal or any(np.any(b.beta * b.Q.T @ b.K) for b in blocks):
        return
    dX, dY = X - X[:, :1], Y - Y[:, :1]
    if np.abs(dY - dX).max() > 1e-12 * max(np.abs(dX).max(), np.abs(dY).max(), 1e-300):
        raise InputError("both blocks have beta Q^T K = 0: attention is uniform, so every token of a sequence moves "
                         "with the same velocity and the differences of its tokens never change; the targets change "
                         "them")


def _check_linear_tokens(A: np.ndarray, B: np.ndarray, what: str, why: str, orientation: bool = True) -> None:
    """B^T = G A^T for one G, with det G > 0 if ``orientation`` (rows of A, B: the tokens that
    move linearly, named ``what``; ``why`` says why they do)."""
    N, d = A.shape
    G, *_ = np.linalg.lstsq(A, B, rcond=None)  # A G^T ~ B
    G = G.T
    resid = np.abs(A @ G.T - B).max()
    scale = max(np.abs(B).max(), np.abs(A).max(), 1e-300)
    if resid > 1e-12 * scale * max(1.0, np.abs(G).max()):
        raise InputError(f"the targets' {what} are not one linear map G of the inputs' (residual {resid:.2e}); {why}")
    rank_a, rank_b = exact_rank(A), exact_rank(B)
    if rank_a != rank_b:
        raise InputError(
            f"the {what} span dimension {rank_a} in the inputs but {rank_b} in the targets; G must be invertible ({why})"
        )
    det = np.linalg.det(G) if orientation and rank_a == d else 1.0
    if det <= 0:
        raise InputError(f"the {what} determine G with det G = {det:.3g} <= 0; the flows reach only "
                         f"GL+(d) ({why}; {NETWORKS_CAN})")
