"""Shape speed: how fast attention can change the shape of a sequence.

Under either block every token moves by V times an average of its sequence's tokens,
F(X)_i = V avg_i with avg_i = sum_j P_ij x_j, so the token differences, the *shape* of a sequence,
move only as far as the averages differ: d(x_i - x_k)/dt = V (avg_i - avg_k).  With M = beta Q^T K
(logits l_ij = x_i^T M x_j):

* two tokens (n = 2), exactly: with delta = x_1 - x_2 and sigma the logistic function,

      d delta / dt = g V delta,   g = sigma(x_1^T M delta) - sigma(x_2^T M delta),

  and |g| <= |delta^T M delta| / 4 (sigma' <= 1/4), |g| < 1: the difference follows the linear
  flow of V, time-changed by a factor that is at most ||M|| |delta|^2 / 4;
* any n, to first order in the logits: avg_i = mean + C M^T x_i with C the sequence's
  covariance (1/n) sum_j (x_j - mean)(x_j - mean)^T, so the differences move by the linear map
  V C M^T, at a relative rate of at most ||V|| ||M|| ||C|| (spectral norms).

The shape speed of a sequence under a block is that rate, ||V|| ||M|| ||C|| (for n = 2,
||C|| = |delta|^2 / 4, and the rate bounds the exact one of the first bullet); of a sequence, the
larger over the two blocks.  A sequence of speed s needs controls of duration about 1 / s to
change its shape by a factor of order e (a slow sequence is expanded before it can be reshaped,
and its speed grows with the square of its spread).  It is a diagnostic for the solver's reach
(the README's "Solver reach"), not part of any verdict, and it assumes full attention.

>>> import numpy as np
>>> from verify.blocks import gaussian_blocks
>>> blocks = gaussian_blocks(0, 2)
>>> X = np.array([[[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [0.1, 0.0]]])
>>> s = shape_speeds(blocks, X)
>>> s.shape, bool(np.isclose(s[1], 0.01 * s[0]))   # ten times closer tokens: a hundred times slower
((2,), True)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from .blocks import Block


def shape_speeds(blocks: Sequence[Block], Z: np.ndarray) -> np.ndarray:
    """The shape speed (N,) of each sequence of the collection Z (N, n, d): the largest over
    ``blocks`` of ||V|| ||beta Q^T K|| ||C|| (module docstring)."""
    Z = np.asarray(Z, dtype=float)
    centred = Z - Z.mean(axis=1, keepdims=True)
    C = np.einsum("sji,sjk->sik", centred, centred) / Z.shape[1]
    spread = np.linalg.norm(C, ord=2, axis=(1, 2))
    rates = [np.linalg.norm(np.asarray(b.V, dtype=float), 2) * np.linalg.norm(
        b.beta * np.asarray(b.Q, dtype=float).T @ np.asarray(b.K, dtype=float), 2) for b in blocks]
    return max(rates) * spread


def slowest(blocks: Sequence[Block], X: np.ndarray, Y: np.ndarray) -> tuple[float, str, int]:
    """The smallest shape speed over the sequences of the inputs X and the targets Y, and where
    it is: ``(speed, "inputs" or "targets", sequence index)``.

    >>> import numpy as np
    >>> from verify.blocks import gaussian_blocks
    >>> X = np.array([[[0.0, 0.0], [1.0, 0.0]]]); Y = np.array([[[0.0, 0.0], [0.0, 0.1]]])
    >>> slowest(gaussian_blocks(0, 2), X, Y)[1:]
    ('targets', 0)
    """
    sx, sy = shape_speeds(blocks, X), shape_speeds(blocks, Y)
    if sx.min() <= sy.min():
        return float(sx.min()), "inputs", int(sx.argmin())
    return float(sy.min()), "targets", int(sy.argmin())
