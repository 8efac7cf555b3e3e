"""Hall brackets by nested directional derivatives, at a cost polynomial in n d.

A bracket needs only directional derivatives of its parents along their own values,

    [u, v](x) = Dv(x) u(x) - Du(x) v(x),    Dv(x) u(x) = the e-coefficient of v(x + e u(x)),

with e a nilpotent variable (e^2 = 0).  At a point that already carries variables
e_1..e_j (a hyper-dual collection, :mod:`verify.lie.hyperdual`) a new variable e_(j+1) is
appended, so a Hall word of degree k is evaluated with k - 1 nested variables, through the
fields F_0, F_1 only: a field evaluation at level j costs about 3^j times a plain one, which is
O(N n^2 d).  Every (word, point) pair is computed once and shared by all the words that
need it; a point is named by how it was built (x, then x + e_1 u(x), ...).  Nothing grows like
the C(n d + K, K) monomials of the dense jets (:mod:`verify.lie.brackets`), so this path
serves large n d; the two agree to rounding (``property_tests/test_brackets.py``).

Works in float64 and on object arrays (MPFR, mpmath or Arb balls) alike.

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> from verify.lie.brackets import bracket_values
>>> from verify.lie.hall import basis
>>> blocks = gaussian_blocks(0, 2)
>>> X = np.random.default_rng(1).normal(size=(2, 3, 2))
>>> dense, _ = bracket_values(blocks, X, 4, method="dense")
>>> bool(np.allclose(hall_values(blocks, X, basis(4)), dense, rtol=1e-12, atol=0))
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from verify.lie import hyperdual
from verify.lie.hall import Word
from verify.model.attention import shifted_exp
from verify.model.backend import like, namespace_of
from verify.model.blocks import Block

Point = tuple  # () is x; (p, w) is point p plus a new variable times the value of w at p


def field(block: Block, Y: Any, xp: Any) -> Any:
    """F_theta at a hyper-dual collection Y (2^j, N, n, d): the softmax attention of
    :func:`verify.model.attention.field` in hyper-dual arithmetic."""
    Q, K, V = (like(Y, m) for m in (block.Q, block.K, block.V))
    QX, KX, VX = Y @ Q.T, Y @ K.T, Y @ V.T
    L = block.beta * hyperdual.mul(QX[:, :, :, None, :], KX[:, :, None, :, :]).sum(axis=-1)  # (2^j, N, n, n)
    P = hyperdual.softmax(L, shifted_exp(xp, L[0], block.causal))
    return hyperdual.mul(P[..., None], VX[:, :, None, :, :]).sum(axis=-2)


def hall_values(blocks: Sequence[Block], X: Any, words: Sequence[Word]) -> Any:
    """Values of the Hall words at every sequence of X (N, n, d): shape (N, n d, W)."""
    xp = namespace_of(X)
    memo: dict[tuple[Word, Point], Any] = {}
    points: dict[Point, Any] = {(): X[None]}

    def point(p: Point) -> Any:
        if p not in points:
            base, w = p
            points[p] = np.concatenate([point(base), value(w, base)], axis=0)
        return points[p]

    def value(h: Word, p: Point) -> Any:
        if (h, p) not in memo:
            Y = point(p)
            if isinstance(h, int):
                memo[(h, p)] = field(blocks[h], Y, xp)
            else:  # the coefficients holding the new variable: Dv u - Du v at the level of p
                u, v = h
                half = Y.shape[0]
                memo[(h, p)] = value(v, (p, u))[half:] - value(u, (p, v))[half:]
        return memo[(h, p)]

    N, n, d = X.shape
    return np.stack([value(h, ())[0].reshape(N, n * d) for h in words], axis=-1)
