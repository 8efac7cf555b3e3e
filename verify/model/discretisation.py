"""An explicit bound for replacing a continuous control by residual layers (explicit Euler).

Norm: ||X|| = max over sequences and tokens of the Euclidean norm |x_i|.  For a block with
v = ||V||_2 and a = beta ||Q^T K||_2, on the ball ||X|| <= R (causal or not):

* growth:     |F(X)_i| <= v ||X||   (F(X)_i is V applied to a convex combination of tokens), so
              the flow obeys ||X(t)|| <= ||X(0)|| e^(v |t|) and a layer ||X + h F|| <= (1 + v|h|) ||X||;
* Lipschitz:  Lip(R) = v (1 + 4 a R^2), from  F_i - F'_i = sum_j P_ij V (x_j - x'_j)
              + sum_j (P_ij - P'_ij) V x'_j,  ||p(l) - p(l')||_1 <= 2 ||l - l'||_inf  (softmax) and
              |l_ij - l'_ij| <= 2 a R ||X - X'||;
* curvature:  |X''| = |DF(X) F(X)| <= Lip(R) v R =: M2(R).

Splitting a step (b, tau) into layers of step h, with e_k the distance between the exact flow
and the k-th layer's output Z_k, the radius R_k = (||Z_k|| + e_k) e^(v |h|) bounds both
trajectories during the layer, and

    e_(k+1) <= (1 + |h| Lip(R_k)) e_k + h^2 M2(R_k) / 2,      e_0 = 0,

a first-order bound C(h) h with C(h) -> C as h -> 0 (Gronwall: C <= M2 (e^(Lip T) - 1) / (2 Lip)
on the ball of radius ||X_0|| e^(v T), T = sum |tau|).  The recursion is evaluated along the
computed layers in float64: a derived bound, not a ball-arithmetic certificate (the rounding of
the recursion itself is ~1e-16 relative, far below its slack).

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> from verify.model.flow import flow
>>> from verify.model.network import apply, control_to_network
>>> blocks = gaussian_blocks(seed=0, d=2)
>>> X = 0.5 * np.random.default_rng(1).normal(size=(1, 3, 2))
>>> control = [(0, 0.3), (1, -0.2)]
>>> layers = control_to_network(control, 16)
>>> err = np.abs(apply(blocks, layers, X).end - flow(blocks, control, X).end).max()
>>> b = euler_bound(blocks, layers, X)
>>> bool(err <= b), bool(b < 1)
(True, True)
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from verify.model.attention import field
from verify.model.blocks import Block


def constants(block: Block) -> tuple[float, float]:
    """(v, a) = (||V||_2, beta ||Q^T K||_2) of a block."""
    v = float(np.linalg.norm(np.asarray(block.V, dtype=float), 2))
    A = np.asarray(block.Q, dtype=float).T @ np.asarray(block.K, dtype=float)
    return v, abs(float(block.beta)) * float(np.linalg.norm(A, 2))


def norm(X: np.ndarray) -> float:
    """max over sequences and tokens of |x_i| (Euclidean)."""
    return float(np.linalg.norm(X, axis=-1).max())


def euler_bound(blocks: Sequence[Block], layers: Sequence[tuple[int, float]], X: np.ndarray) -> float:
    """Bound on ||network(X) - flow(X)|| (token-wise max norm, hence also on the max entry)
    for layers that split a continuous control (consecutive layers of one step share h)."""
    consts = [constants(b) for b in blocks]
    Z = np.array(X, dtype=float)
    e = 0.0
    for b, h in layers:
        v, a = consts[b]
        R = (norm(Z) + e) * math.exp(v * abs(h))
        lip = v * (1.0 + 4.0 * a * R * R)
        e = (1.0 + abs(h) * lip) * e + 0.5 * h * h * lip * v * R
        Z = Z + h * field(blocks[b], Z)
    return e


def fitted_order(hs: Sequence[float], errors: Sequence[float]) -> float:
    """Least-squares slope of log(error) against log(h)."""
    return float(np.polyfit(np.log(np.asarray(hs)), np.log(np.asarray(errors)), 1)[0])
