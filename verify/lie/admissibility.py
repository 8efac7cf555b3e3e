"""Admissible data: refuse targets that no control can reach from the inputs, naming the obstruction.

A flow (or a residual network) commutes with the symmetry group of the fields
(:mod:`verify.lie.symmetry`: signed token permutations under full attention, the sign under a
causal mask) and is a bijection, so it keeps every relation X_a = g X_b between sequences
(a = b included: the stabiliser of each sequence) and creates none; the inputs and the targets
must have the same relations, by the same g.  With the other invariants of docs/conventions.md
§3 this gives the checks below; every comparison of tokens is exact (floats as they are,
decimal strings as the rationals they write) and hashed, so a collection of 10^4 sequences is
checked in about a second.

Full attention: the coincidence pattern of every sequence; whether it is odd (its tokens equal
their negatives as a multiset), and then by the same signed permutation in the targets; which
sequences are signed permutations of each other, by the same signed permutation in inputs and
targets; for d = 1 the order of the tokens (flows only); the sequences of one repeated token
(n = 1 included) move linearly, x -> G x with one G for all of them (det G > 0 for flows).
Causal masking: the first tokens are related by one G (det G > 0 for flows); prefixes equal or
opposite stay so, by the same sign, and a prefix of zeros stays 0; for d = 1 the first two
tokens keep their order (flows only).  "Related by one G" is decided by least squares with
relative residual <= 1e-12 (targets are matched within a tolerance, so they need not be an
exact image) and an exact rank comparison.

The orientation (det G > 0) and the d = 1 orders are invariants of flows, not of networks
(``depth="finite"``): a layer x -> (I + h V) x with h beyond -1/lambda, lambda a real
eigenvalue of V, reverses an orientation, and in d = 1 the difference of two tokens (the first
two, under causal masking) is multiplied by 1 + h c for some c of the layer, so it changes sign
when h passes -1/c.  In finite depth neither is refused; the solver's networks reach such
targets (``test_networks_reach_what_flows_cannot``).

>>> import numpy as np
>>> X = np.random.default_rng(0).normal(size=(3, 1, 2))        # n = 1: attention is linear
>>> check_admissible(X, X @ np.array([[2.0, 1.0], [0.0, 1.0]]).T)  # Y = G X, det G = 2
>>> a = np.array([1.0, 2.0])
>>> check_admissible(np.array([[a, -a]]), np.array([[a, 0 * a]]))  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
verify.io.errors.InputError: sequence 0 is minus a permutation of itself in the inputs only; ...
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from verify.io.errors import InputError
from verify.lie.invariants import exact_rank, listed, uniform_attention, zero_value
from verify.lie.symmetry import Key, exact_array, multiset, negated, prefix_key, sequence_type, token_keys

NETWORKS_CAN = "a network can: finite depth"  # the refusals of flows' invariants say where the data are reachable
ODD = "the fields are odd, F(-X) = -F(X)"


def check_admissible(X: Any, Y: Any, causal: bool = False, depth: str = "continuous") -> None:
    """Raise :class:`~verify.io.errors.InputError` naming the obstruction when no control (or,
    ``depth="finite"``, no network) can map X onto Y (module docstring)."""
    X, Y = exact_array(X), exact_array(Y)
    flows = depth != "finite"  # the invariants of flows only: orientation, and orders in d = 1
    (_check_causal if causal else _check_full)(X, Y, flows)


def _labels(keys: Sequence[Any]) -> list[int]:
    """Each item's first index among the equal items (equal labels: equal items)."""
    first: dict[Any, int] = {}
    return [first.setdefault(k, i) for i, k in enumerate(keys)]


def _pair_keys(X: np.ndarray, Y: np.ndarray, s: int) -> tuple[tuple, tuple]:
    """The token pairs (x_i, y_i) of sequence s as a multiset, and that of their negatives."""
    pairs = [x + y for x, y in zip(token_keys(X[s]), token_keys(Y[s]), strict=True)]
    return multiset(pairs), multiset(negated(p) for p in pairs)


def _mismatch(lx: list[int], ly: list[int], lp: list[int]) -> tuple[int, int, bool, bool]:
    """Two items s < t related differently by the partitions of the inputs, the targets and the
    pairs (given by labels), with whether the inputs and whether the targets relate them."""
    s = next(s for s in range(len(lx)) if not lx[s] == ly[s] == lp[s])
    t = next(t for t in [u for u in (lx[s], ly[s], lp[s]) if u != s] or range(len(lx))
             if not (lx[t] == lx[s]) == (ly[t] == ly[s]) == (lp[t] == lp[s]))
    s, t = min(s, t), max(s, t)
    return s, t, lx[s] == lx[t], ly[s] == ly[t]


def _check_full(X: np.ndarray, Y: np.ndarray, flows: bool) -> None:
    N, n, d = X.shape
    types_x = [sequence_type(X[s]) for s in range(N)]
    types_y = [sequence_type(Y[s]) for s in range(N)]
    for s in range(N):
        if _labels(token_keys(X[s])) != _labels(token_keys(Y[s])):
            i, j, which = _coincidence(X[s], Y[s])
            raise InputError(f"sequence {s}: tokens {i} and {j} coincide in the {which} only; coincident tokens stay "
                             "coincident and distinct ones stay distinct under full attention")
        if types_x[s].odd != types_y[s].odd:
            which = "inputs" if types_x[s].odd else "targets"
            raise InputError(f"sequence {s} is minus a permutation of itself in the {which} only; {ODD} and "
                             "permutation equivariant, so such a sequence ({a, -a}, {a, -a, 0}, ...) stays so and no "
                             "other becomes one")
        if types_x[s].odd:
            plus, minus = _pair_keys(X, Y, s)
            if plus != minus:
                raise InputError(f"sequence {s} is minus a permutation of itself in the inputs and the targets, but "
                                 f"not by the same permutation; {ODD}, so the permutation is kept")
    lx, ly = _labels([t.orbit_key for t in types_x]), _labels([t.orbit_key for t in types_y])
    lp = _labels([min(_pair_keys(X, Y, s)) for s in range(N)])
    if not lx == ly == lp:
        s, t, rx, ry = _mismatch(lx, ly, lp)
        where = ("in the inputs only" if rx and not ry else "in the targets only" if ry and not rx
                 else "in the inputs and the targets, but not by the same signed permutation")
        raise InputError(f"sequences {s} and {t} are token permutations of each other, or of each other's negative, "
                         f"{where}; full attention is permutation equivariant and {ODD[4:]}, so such relations are "
                         "kept, by the same signed permutation, and none is created")
    lone = [s for s in range(N) if types_x[s].lone]
    if lone:
        _check_linear_tokens(X[lone, 0, :], Y[lone, 0, :],
                             f"tokens of sequences {listed(lone)} (one repeated token each)",
                             "a sequence of one repeated token moves linearly, x -> G x, with the same G for every "
                             "such sequence", flows)
    if d == 1 and flows:
        for s in range(N):
            order = sorted(range(n), key=X[s, :, 0].__getitem__)
            for i, j in zip(order, order[1:], strict=False):  # neighbours in the inputs' order
                if X[s, i, 0] < X[s, j, 0] and not Y[s, i, 0] < Y[s, j, 0]:
                    raise InputError(f"sequence {s}: tokens {i} and {j} change order (d = 1); in one dimension the "
                                     f"tokens of a sequence never cross under a flow ({NETWORKS_CAN})")


def _coincidence(A: np.ndarray, B: np.ndarray) -> tuple[int, int, str]:
    """A pair of tokens that coincide in one sequence A or B but not in the other."""
    ka, kb = token_keys(A), token_keys(B)
    for i in range(len(ka)):
        for j in range(i + 1, len(ka)):
            if (ka[i] == ka[j]) != (kb[i] == kb[j]):
                return i, j, "inputs" if ka[i] == ka[j] else "targets"
    raise AssertionError("the coincidence patterns agree")


def _check_causal(X: np.ndarray, Y: np.ndarray, flows: bool) -> None:
    N, n, d = X.shape
    _check_linear_tokens(X[:, 0, :], Y[:, 0, :], "first tokens",
                         "under causal masking x_1 -> G x_1 with the same G for every sequence", flows)
    for i in range(2, n + 1):
        px = [prefix_key(X, s, i) for s in range(N)]
        py = [prefix_key(Y, s, i) for s in range(N)]
        for s in range(N):
            zx, zy = _zero(px[s]), _zero(py[s])
            if zx != zy:
                raise InputError(f"sequence {s}: its first {i} tokens are 0 in the {'inputs' if zx else 'targets'} only; "
                                 f"{ODD}, so under causal masking a prefix of zeros stays 0 and no other becomes 0")
        signed = [lambda p: p, lambda p: tuple(negated(k) for k in p)]
        for sign, flip in enumerate(signed):
            lx = _labels([min(p, flip(p)) if sign else p for p in px])
            ly = _labels([min(p, flip(p)) if sign else p for p in py])
            lp = _labels([min(a + b, flip(a + b)) if sign else a + b for a, b in zip(px, py, strict=True)])
            if lx == ly == lp:
                continue
            s, t, rx, ry = _mismatch(lx, ly, lp)
            what = "share their first" if not sign else "have equal or opposite first"
            where = ("in the inputs only" if rx and not ry else "in the targets only" if ry and not rx
                     else "in the inputs and the targets, but with opposite signs")
            raise InputError(f"sequences {s} and {t} {what} {i} tokens {where}; under causal masking shared prefixes "
                             f"stay shared and distinct ones stay distinct, and {ODD[4:]}, so opposite prefixes stay "
                             "opposite")
    if d == 1 and n >= 2 and flows:
        # (x_2 - x_1)' = P_22 V (x_2 - x_1): the first two tokens never cross (later ones can)
        for s in range(N):
            if np.sign(float(X[s, 1, 0] - X[s, 0, 0])) != np.sign(float(Y[s, 1, 0] - Y[s, 0, 0])):
                raise InputError(
                    f"sequence {s}: tokens 0 and 1 change order (d = 1, causal); under causal masking "
                    "(x_2 - x_1)' = P_22 V (x_2 - x_1), so under a flow the first two tokens never cross "
                    f"({NETWORKS_CAN})"
                )


def _zero(prefix: tuple[Key, ...]) -> bool:
    return all(v == 0 for k in prefix for v in k)


def check_blocks_move(blocks: Sequence[Any], X: np.ndarray, Y: np.ndarray) -> None:
    """Refuse targets that these particular blocks cannot reach because both are degenerate (the
    theorem's blocks are generic; these are degenerate cases of ``theorems/necessity``), decided
    exactly on the blocks:

    * V_0 = V_1 = 0 (as written: :func:`verify.lie.invariants.zero_value`): the fields vanish
      and nothing moves, so Y must equal X;
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
    if all(zero_value(b) for b in blocks):
        if not np.array_equal(exact_array(X), exact_array(Y)):
            raise InputError("both blocks have V = 0: their fields vanish and nothing moves, so the targets must "
                             "equal the inputs")
        return
    if blocks[0].causal or not uniform_attention(blocks):
        return
    X, Y = np.asarray(X, dtype=float), np.asarray(Y, dtype=float)
    dX, dY = X - X[:, :1], Y - Y[:, :1]
    if np.abs(dY - dX).max() > 1e-12 * max(np.abs(dX).max(), np.abs(dY).max(), 1e-300):
        raise InputError("both blocks have beta Q^T K = 0: attention is uniform, so every token of a sequence moves "
                         "with the same velocity and the differences of its tokens never change; the targets change "
                         "them")


def _check_linear_tokens(A: np.ndarray, B: np.ndarray, what: str, why: str, orientation: bool = True) -> None:
    """B^T = G A^T for one G, with det G > 0 if ``orientation`` (rows of A, B: the tokens that
    move linearly, named ``what``; ``why`` says why they do)."""
    N, d = A.shape
    rank_a, rank_b = exact_rank(A), exact_rank(B)
    Af, Bf = A.astype(float), B.astype(float)
    G, *_ = np.linalg.lstsq(Af, Bf, rcond=None)  # A G^T ~ B
    G = G.T
    resid = np.abs(Af @ G.T - Bf).max()
    scale = max(np.abs(Bf).max(), np.abs(Af).max(), 1e-300)
    if resid > 1e-12 * scale * max(1.0, np.abs(G).max()):
        raise InputError(f"the targets' {what} are not one linear map G of the inputs' (residual {resid:.2e}); {why}")
    if rank_a != rank_b:
        raise InputError(
            f"the {what} span dimension {rank_a} in the inputs but {rank_b} in the targets; G must be invertible ({why})"
        )
    det = np.linalg.det(G) if orientation and rank_a == d else 1.0
    if det <= 0:
        raise InputError(f"the {what} determine G with det G = {det:.3g} <= 0; the flows reach only "
                         f"GL+(d) ({why}; {NETWORKS_CAN})")
