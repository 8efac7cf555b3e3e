"""Seeded instances for the theorem checks: admissible collections and the ways data can fail.

Every instance is a pure function of (seed, shape, kind): ``numpy.random.default_rng`` with a
key that names what is drawn, so two runs give the same data and one check's draws never shift
another's.

* :func:`collection` -- tokens i.i.d. N(0, 1), redrawn until every two tokens of a sequence are
  at least ``margin`` apart (well inside the admissible set) and no two sequences are token
  permutations of each other.
* :func:`hidden_control_targets` -- the image of X under a random control of the given depth
  (alternating blocks, durations uniform in [-scale, scale]) that is *not* passed to the
  solver: targets that are admissible by construction.
* :func:`causal_targets` -- first tokens G x_1 for a random G with det G > 0 (or < 0 when asked
  for an incompatible instance), later tokens i.i.d. N(0, 1).

>>> X = collection(0, (2, 3, 2), "demo")
>>> X.shape, bool(min_separation(X) >= 0.3)
((2, 3, 2), True)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from verify.model.blocks import Block
from verify.model.dynamics import dynamics


def _codes(key: Sequence[object]) -> list[int]:
    """Each part of a key as the sum of its characters' codes (the keys every draw so far used)."""
    return [sum(map(ord, str(k))) for k in key]


def rng(seed: int, *key: object) -> np.random.Generator:
    """A generator keyed by the seed and a label, so that draws for different purposes differ.
    Each part enters as the sum of its characters' codes, so parts that are anagrams or whole
    numbers of two or more digits with equal digit sums share a key: number draws with
    :func:`indexed_rng`."""
    return np.random.default_rng([seed, *_codes(key)])


def indexed_rng(seed: int, index: int, *key: object) -> np.random.Generator:
    """Draw ``index`` (a whole number >= 0) of the kind ``key``: ``rng(seed, *key, index)`` for
    indices 0-9, whose codes (48-57) are distinct, and from 10 on a part 10**6 + index, which
    the character sums of the labels used here (a few thousand at most) do not reach.  With
    :func:`rng` alone draws 13, 22, 31 and 40 would be one draw (their digits' codes all sum to
    100), as would 11 and 20.

    >>> [float(indexed_rng(0, i, "demo").normal()) == float(rng(0, "demo", i).normal()) for i in (3, 13)]
    [True, False]
    >>> len({float(indexed_rng(0, i, "demo").normal()) for i in (13, 22, 31, 40)})
    4
    """
    if index < 0:
        raise ValueError(f"draw index {index} is negative; number draws 0, 1, 2, ...")
    return rng(seed, *key, index) if index < 10 else np.random.default_rng([seed, *_codes(key), 10**6 + index])


def min_separation(X: np.ndarray) -> float:
    """Smallest distance between two tokens of one sequence (inf for n = 1)."""
    n = X.shape[1]
    if n < 2:
        return float("inf")
    D = np.linalg.norm(X[:, :, None, :] - X[:, None, :, :], axis=-1)
    return float(D[:, ~np.eye(n, dtype=bool)].min())


def collection(seed: int, shape: Sequence[int], label: str, margin: float = 0.3) -> np.ndarray:
    """An admissible (N, n, d) collection with tokens at least ``margin`` apart in each sequence."""
    g = rng(seed, "collection", label, *shape)
    while True:
        X = g.normal(size=tuple(shape))
        if min_separation(X) >= margin:
            return X


def hidden_control(seed: int, depth: str, steps: int, scale: float = 0.5) -> list[tuple[int, float]]:
    """A random alternating control (continuous) or network (finite): blocks 0, 1, 0, ...,
    durations or steps uniform in [-scale, scale]."""
    h = rng(seed, "hidden control", depth).uniform(-scale, scale, size=steps)
    return [(j % 2, float(t)) for j, t in enumerate(h)]


def hidden_control_targets(blocks: Sequence[Block], X: np.ndarray, seed: int, depth: str,
                           steps: int, scale: float = 0.5) -> np.ndarray:
    """Image of X under :func:`hidden_control` (at 30 digits, rounded to float64)."""
    return dynamics(depth).exact_image(blocks, hidden_control(seed, depth, steps, scale), X, 30).astype(float)


def random_G(seed: int, d: int, sign: int = 1) -> np.ndarray:
    """A random d x d matrix with sign(det G) = sign (first row negated when needed)."""
    G = rng(seed, "G", d, sign).normal(size=(d, d))
    if np.sign(np.linalg.det(G)) != sign:
        G[[0]] *= -1
    return G


def causal_targets(seed: int, X: np.ndarray, sign: int = 1) -> np.ndarray:
    """Targets with first tokens G x_1 (det G of the given sign) and fresh later tokens."""
    Y = collection(seed, X.shape, "causal targets")
    Y[:, 0, :] = X[:, 0, :] @ random_G(seed, X.shape[2], sign).T
    return Y
