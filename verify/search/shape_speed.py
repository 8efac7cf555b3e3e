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
(docs/solver-reach.md), not part of any verdict, and it assumes full attention.

The same estimate, made without linearising, bounds the *diameter* D = max_(i,k) |x_i - x_k| of a
sequence along any flow and so the total duration of any control (:func:`minimal_duration`):
with P_i the attention row of token i, avg_i - avg_k = sum_j (P_ij - P_kj) x_j is half of
|P_i - P_k|_1 times a difference of two convex combinations of tokens, so at most
|P_i - P_k|_1 D / 2; and |P_i - P_k|_1 <= osc_j((x_i - x_k)^T M x_j) / 2 <= ||M|| |x_i - x_k| D / 2
(the softmax's derivative diag(p) - p p^T maps u to a vector of 1-norm sum_j p_j |u_j - p.u|, a
mean absolute deviation, at most half the range of u).  Hence, with c = ||V|| ||M||,

    |d(x_i - x_k)/dt| <= c D^2 |x_i - x_k| / 4,   |dD/dt| <= c D^3 / 4,   |d(D^-2)/dt| <= c / 2,

and a control of total duration T = sum |t_l| changes D^-2 by at most T max(c_0, c_1) / 2.
A residual network obeys the same bound where it expands a sequence, with its total step
size sum |h_l| in place of T (:func:`minimal_step_total`), but not where it contracts one: a
single layer with a large step can bring the tokens of a sequence together at once.

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> blocks = gaussian_blocks(0, 2)
>>> X = np.array([[[0.0, 0.0], [1.0, 0.0]], [[0.0, 0.0], [0.1, 0.0]]])
>>> s = shape_speeds(blocks, X)
>>> s.shape, bool(np.isclose(s[1], 0.01 * s[0]))   # ten times closer tokens: a hundred times slower
((2,), True)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from verify.model.blocks import Block


def shape_speeds(blocks: Sequence[Block], Z: np.ndarray) -> np.ndarray:
    """The shape speed (N,) of each sequence of the collection Z (N, n, d): the largest over
    ``blocks`` of ||V|| ||beta Q^T K|| ||C|| (module docstring)."""
    Z = np.asarray(Z, dtype=float)
    centred = Z - Z.mean(axis=1, keepdims=True)
    C = np.einsum("sji,sjk->sik", centred, centred) / Z.shape[1]
    return max(_rate(b) for b in blocks) * np.linalg.norm(C, ord=2, axis=(1, 2))


def _rate(block: Block) -> float:
    """c = ||V|| ||beta Q^T K|| (spectral norms) of one block."""
    return float(np.linalg.norm(np.asarray(block.V, dtype=float), 2) * np.linalg.norm(
        block.beta * np.asarray(block.Q, dtype=float).T @ np.asarray(block.K, dtype=float), 2))


def diameters(Z: np.ndarray) -> np.ndarray:
    """The diameter max_(i,k) |z_i - z_k| (N,) of each sequence of Z (N, n, d)."""
    Z = np.asarray(Z, dtype=float)
    return np.linalg.norm(Z[:, :, None, :] - Z[:, None, :, :], axis=-1).max(axis=(1, 2))


def minimal_duration(blocks: Sequence[Block], X: np.ndarray, Y: np.ndarray) -> float:
    """A lower bound on the total duration sum |t_l| of every control whose flow maps X onto Y:

        max over sequences s of  2 |D(Y_s)^-2 - D(X_s)^-2| / max(c_0, c_1),

    D the diameter and c = ||V|| ||beta Q^T K|| of each block (module docstring; full attention
    only, and it bounds flows, not residual networks).  It is proved for the exact flow, and
    computed in float64, so it is an estimate of that bound up to a few roundings, enough for
    a diagnostic; it decides no verdict.  Targets whose tokens nearly coincide, or inputs whose
    do, need long controls however the blocks are used.  Tokens that coincide stay coincident
    along every flow, so a sequence whose diameter is 0 at one end only gives ``inf``.

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> X = np.array([[[0.0, 0.0], [1.0, 0.0]]]); Y = np.array([[[0.0, 0.0], [0.1, 0.0]]])
    >>> blocks = gaussian_blocks(0, 2)
    >>> T = minimal_duration(blocks, X, Y)
    >>> bool(np.isclose(T, 2 * (100 - 1) / max(_rate(b) for b in blocks)))
    True
    """
    return _diameter_bound(blocks, X, Y, "minimal_duration", expansion_only=False)


def minimal_step_total(blocks: Sequence[Block], X: np.ndarray, Y: np.ndarray) -> float:
    """A lower bound on the total step size sum |h_l| of every residual network
    X + h_l F_(b_l)(X), l = 1..L, that maps X onto Y:

        max over sequences s of  2 max(D(X_s)^-2 - D(Y_s)^-2, 0) / max(c_0, c_1),

    the bound of :func:`minimal_duration` for the sequences the network must expand, and none
    for those it contracts.  One layer changes x_i - x_k by h V (avg_i - avg_k), at most
    |h| c D^3 / 4 with D the diameter at the layer's input (the module docstring's estimate,
    which needs no flow), so D' <= D (1 + x) with x = |h| c D^2 / 4, and since
    (1 + x)^-2 >= 1 - 2x for x >= 0,

        D'^-2 >= D^-2 - |h| c / 2:

    a network lowers D^-2 by at most c / 2 per unit of |h|, as a flow does per unit of time.  A
    slow input sequence therefore needs long networks as much as long controls.
    The other direction has no bound: D' >= D (1 - x) reaches 0 in one layer with x = 1, so a
    single large step can contract a sequence at once (docs/solver-reach.md measures
    what this asymmetry does to the solver).
    Computed in float64, an estimate of the bound for diagnostics, like :func:`minimal_duration`.

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> near, far = np.array([[[0.0, 0.0], [0.1, 0.0]]]), np.array([[[0.0, 0.0], [1.0, 0.0]]])
    >>> blocks = gaussian_blocks(0, 2)
    >>> bool(np.isclose(minimal_step_total(blocks, near, far), minimal_duration(blocks, near, far)))
    True
    >>> minimal_step_total(blocks, far, near)     # contracting: one large step may do it
    0.0
    """
    return _diameter_bound(blocks, X, Y, "minimal_step_total", expansion_only=True)


def _diameter_bound(blocks: Sequence[Block], X: np.ndarray, Y: np.ndarray, name: str, expansion_only: bool) -> float:
    """2 max_s |D(X_s)^-2 - D(Y_s)^-2| / max(c_0, c_1), or with ``expansion_only`` the positive
    parts only.  D = 0 counts as D^-2 = inf: coincident tokens stay coincident along every flow
    and network, so separating them gives inf, and merging them inf for flows (which are
    invertible) and nothing for networks; a single token, or coincident ones at both ends, 0."""
    if any(b.causal for b in blocks):
        raise ValueError(f"{name} assumes full attention; the blocks are causal")
    with np.errstate(divide="ignore", invalid="ignore"):
        inv_x, inv_y = diameters(X) ** -2.0, diameters(Y) ** -2.0
        change = np.where(np.isinf(inv_x) & np.isinf(inv_y), 0.0, inv_x - inv_y)  # not inf - inf
    change = np.maximum(change, 0.0) if expansion_only else np.abs(change)
    return float(2 * change.max() / max(_rate(b) for b in blocks))


def slowest(blocks: Sequence[Block], X: np.ndarray, Y: np.ndarray) -> tuple[float, str, int]:
    """The smallest shape speed over the sequences of the inputs X and the targets Y, and where
    it is: ``(speed, "inputs" or "targets", sequence index)``.

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> X = np.array([[[0.0, 0.0], [1.0, 0.0]]]); Y = np.array([[[0.0, 0.0], [0.0, 0.1]]])
    >>> slowest(gaussian_blocks(0, 2), X, Y)[1:]
    ('targets', 0)
    """
    sx, sy = shape_speeds(blocks, X), shape_speeds(blocks, Y)
    if sx.min() <= sy.min():
        return float(sx.min()), "inputs", int(sx.argmin())
    return float(sy.min()), "targets", int(sy.argmin())
