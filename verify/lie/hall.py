"""The Hall basis of the free Lie algebra on the two letters 0 and 1.

Elements are generated degree by degree in a total order (first by degree, then in order of
generation).  A bracket [u, v] of basis elements is a basis element when u < v and, if v is
itself a bracket [x, y], x <= u (Hall's condition).  Letters: ``0`` < ``1``.  The number of
elements of degree k is Witt's formula  (1/k) sum_{e | k} mu(e) 2^(k/e).

Words print in nested bracket notation: ``0``, ``1``, ``[0,1]``, ``[0,[0,1]]``,
``[1,[0,1]]``, ...  A word is a tree: an int (a letter) or a pair (left, right) of words.

>>> [str_word(w) for w in basis(3)]
['0', '1', '[0,1]', '[0,[0,1]]', '[1,[0,1]]']
>>> [witt(k) for k in range(1, 11)]
[2, 1, 2, 3, 6, 9, 18, 30, 56, 99]
>>> len(basis(8)), len(basis(10))
(71, 226)
"""

from __future__ import annotations

from functools import cache

Word = int | tuple["Word", "Word"]


def degree(w: Word) -> int:
    return 1 if isinstance(w, int) else degree(w[0]) + degree(w[1])


def str_word(w: Word) -> str:
    return str(w) if isinstance(w, int) else f"[{str_word(w[0])},{str_word(w[1])}]"


def parse_word(text: str) -> Word:
    """Inverse of :func:`str_word`."""
    s = text.replace(" ", "")

    def read(i: int) -> tuple[Word, int]:
        if s[i] in "01":
            return int(s[i]), i + 1
        if s[i] != "[":
            raise ValueError(f"bad bracket word {text!r}")
        left, i = read(i + 1)
        if s[i] != ",":
            raise ValueError(f"bad bracket word {text!r}")
        right, i = read(i + 1)
        if s[i] != "]":
            raise ValueError(f"bad bracket word {text!r}")
        return (left, right), i + 1

    try:
        w, end = read(0)
    except IndexError:
        end = -1
    if end != len(s):
        raise ValueError(f"bad bracket word {text!r}")
    return w


def _mobius(n: int) -> int:
    result, p = 1, 2
    while p * p <= n:
        if n % p == 0:
            n //= p
            if n % p == 0:
                return 0
            result = -result
        p += 1
    return -result if n > 1 else result


def witt(k: int, letters: int = 2) -> int:
    """Dimension of the degree-k part of the free Lie algebra on ``letters`` generators."""
    return sum(_mobius(e) * letters ** (k // e) for e in range(1, k + 1) if k % e == 0) // k


def counting_degree(rank: int) -> int:
    """Smallest K whose cumulative Witt count sum_{k<=K} witt(k) reaches ``rank``."""
    K, total = 0, 0
    while total < rank:
        K += 1
        total += witt(K)
    return K


@cache
def basis(max_degree: int) -> tuple[Word, ...]:
    """Hall basis elements of degree <= max_degree, ordered by degree then generation."""
    elems: list[Word] = [0, 1] if max_degree >= 1 else []
    position = {0: 0, 1: 1}
    by_degree: dict[int, list[Word]] = {1: [0, 1]}
    for k in range(2, max_degree + 1):
        new: list[Word] = []
        for j in range(1, k):
            for u in by_degree[j]:
                for v in by_degree[k - j]:
                    if position[u] >= position[v]:
                        continue
                    if not isinstance(v, int) and position[v[0]] > position[u]:
                        continue
                    new.append((u, v))
        for w in new:
            position[w] = len(elems)
            elems.append(w)
        by_degree[k] = new
    return tuple(elems)
