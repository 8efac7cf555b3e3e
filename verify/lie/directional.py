"""Hall brackets by nested directional derivatives, at a cost polynomial in n d.

A bracket needs only directional derivatives of its parents along their own values,

    [u, v](x) = Dv(x) u(x) - Du(x) v(x),    Dv(x) u(x) = the e-coefficient of v(x + e u(x)),

with e a nilpotent variable (e^2 = 0).  At a point that already carries variables a new one
is appended, so a Hall word of degree k is evaluated with k - 1 nested variables, through the
fields F_0, F_1 only.  Every (word, point) pair is computed once and shared by all the words
that need it; a point is named by the words of its steps (x, then x + e_1 u(x), ...).

Consecutive steps along one word u are symmetric in their variables: k of them from p_0 give
(1 + e_1 L_u) ... (1 + e_k L_u) id (p_0), L_u the derivative along u, a polynomial in
t = e_1 + ... + e_k, the Taylor polynomial of degree k in t of the flow of u from p_0.  So a
run of k steps is one variable of order k (:mod:`verify.lie.truncated`): a new step along the
same word appends the coefficient (u(p))_k / (k + 1) of t^(k+1) (the flow's recurrence), and
the coefficient of the new variable in f(t + e) is f'(t).  A field evaluation then costs
prod over runs (k + 1)(k + 2) / 2 times a plain one, O(N n^2 d), instead of 3^(number of steps);
nothing grows like the C(n d + K, K) monomials of the dense jets (:mod:`verify.lie.brackets`),
and the two agree to rounding (``property_tests/test_brackets.py``).

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

from verify.lie import truncated
from verify.lie.hall import Word
from verify.model.attention import shifted_exp
from verify.model.backend import like, namespace_of
from verify.model.blocks import Block

Point = tuple  # the runs of steps: ((w_1, k_1), ...), k_b steps along the word w_b; () is x


def field(block: Block, Y: Any, orders: truncated.Orders, xp: Any) -> Any:
    """F_theta at a collection Y (size(orders), N, n, d) of truncated polynomials: the softmax
    attention of :func:`verify.model.attention.field` in that arithmetic."""
    Q, K, V = (like(Y, m) for m in (block.Q, block.K, block.V))
    QX, KX, VX = Y @ Q.T, Y @ K.T, Y @ V.T
    L = block.beta * truncated.matmul(QX, np.swapaxes(KX, -1, -2), orders)  # (size, N, n, n)
    P = truncated.softmax(L, shifted_exp(xp, L[0], block.causal), orders)
    return truncated.matmul(P, VX, orders)


def hall_values(blocks: Sequence[Block], X: Any, words: Sequence[Word], runs: bool = True) -> Any:
    """Values of the Hall words at every sequence of X (N, n, d): shape (N, n d, W).
    ``runs=False`` gives every step its own nilpotent variable (3^j per product at j steps),
    the reference the tests hold the runs against."""
    xp = namespace_of(X)
    memo: dict[tuple[Word, Point], Any] = {}
    points: dict[Point, Any] = {(): X[None]}

    def orders(p: Point) -> truncated.Orders:
        return tuple(k for _, k in p)

    def step(p: Point, w: Word) -> tuple[Point, bool]:
        """The point p + e w(p), and whether it continues p's last run."""
        if runs and p and p[-1][0] == w:
            return p[:-1] + ((w, p[-1][1] + 1),), True
        return p + ((w, 1),), False

    def point(p: Point) -> Any:
        if p not in points:
            w, k = p[-1]
            base = p[:-1] + (((w, k - 1),) if k > 1 else ())
            if k == 1:
                new = value(w, base)
            else:  # the flow's next Taylor coefficient: (w(base))_(k-1) / k
                stride = truncated.size(orders(base)) // k
                new = value(w, base)[(k - 1) * stride:] / k
            points[p] = np.concatenate([point(base), new], axis=0)
        return points[p]

    def tangent(h: Word, p: Point, w: Word) -> Any:
        """Dh(p) w(p): the coefficient of the new variable in h(p + e w(p))."""
        q, continued = step(p, w)
        f = value(h, q)
        size = truncated.size(orders(p))
        if not continued:
            return f[size:]
        k = p[-1][1]  # f(t + e) = f(t) + e f'(t), t of order k
        stride = size // (k + 1)
        f = f.reshape((k + 2, stride) + f.shape[1:])[1:]
        factors = like(f, np.arange(1, k + 2, dtype=float)).reshape((k + 1,) + (1,) * (f.ndim - 1))
        return (factors * f).reshape((size,) + f.shape[2:])

    def value(h: Word, p: Point) -> Any:
        if (h, p) not in memo:
            if isinstance(h, int):
                memo[(h, p)] = field(blocks[h], point(p), orders(p), xp)
            else:
                u, v = h
                memo[(h, p)] = tangent(v, p, u) - tangent(u, p, v)
        return memo[(h, p)]

    N, n, d = X.shape
    return np.stack([value(h, ())[0].reshape(N, n * d) for h in words], axis=-1)
