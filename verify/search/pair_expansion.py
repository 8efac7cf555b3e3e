"""Tight pairs: the residual layer that pulls two nearly coincident tokens apart at once.

For a sequence of two tokens, with delta = x_1 - x_2, mean xbar and S the symmetric part of
M = beta Q^T K (logits l_ij = x_i^T M x_j, :mod:`verify.search.shape_speed`), one residual layer
X + h F(X) of a block with value matrix V moves the difference by

    delta' = (I + h g V) delta,   g = sigma(x_1^T M delta) - sigma(x_2^T M delta),

and g is of the order of delta^T S delta: a tight pair moves slowly, so that every network
that pulls it apart has total |step| at least :func:`verify.search.shape_speed.minimal_step_total`.
Two exact facts make a network that does so in one layer:

* a *centred* pair (xbar = 0) stays centred under either block, by the odd symmetry
  F(-X) = -F(X) (the tokens -x_1, -x_2 are x_2, x_1), and its difference moves by
  delta' = (I + c V) delta with c = h tanh(delta^T S delta / 4): any c is one step h away;
* a centred pair whose difference lies on an *isotropic line* of S (delta^T S delta = 0;
  it has one where S is indefinite) has F(X) = 0: it is an equilibrium of that block.

So a short network first *parks* the collection (:func:`park`): every tight pair near the
centre, every other sequence near a centred equilibrium of block b; then the one layer of
block b with h = c / tanh(delta^T S delta / 4) (:func:`expansion_step`; |h| from 13 to 4e8 on
the reach instances measured) gives the tight pair the length of its target's difference and
leaves the others nearly in place.  *Near*, not at: the centred collections are invariant
under both blocks, and a network that reaches them exactly can never leave them (finite
networks are not invertible, so they can enter such a set; flows cannot, and this
construction is for finite depth only).  The parking aims at offsets of about ``kappa / |h|``
from the centre and from the isotropic line, so that the large step displaces them by about
``kappa`` times ||V|| (kappa = 0.3, chosen once and not tuned).  Full attention, n = 2.

>>> import numpy as np
>>> from verify.model.attention import field
>>> from verify.model.blocks import gaussian_blocks
>>> blocks = gaussian_blocks(1, 2)
>>> delta = np.array([1e-2, 5e-3])
>>> Z = np.array([[delta / 2, -delta / 2]])             # a centred pair 0.011 long
>>> h = expansion_step(blocks[0], Z, 0, 1.0)
>>> Zh = Z + h * field(blocks[0], Z)
>>> bool(np.isclose(np.linalg.norm(Zh[0, 0] - Zh[0, 1]), 1.0)), bool(np.allclose(Zh[0].mean(axis=0), 0, atol=1e-12))
(True, True)
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence

import numpy as np

from verify.model.blocks import Block
from verify.model.network import apply
from verify.search.newton import levenberg_marquardt

PARK_LAYERS = (6, 12, 24)  # network lengths the parking fit tries in turn
PARK_TOL = 1e-13  # max |residual| of the parking fit
PARK_ATTEMPTS = 200  # parking fits per block at most (so that a search without a deadline ends)


def symmetric_logits(block: Block) -> np.ndarray:
    """S = (M + M^T) / 2 with M = beta Q^T K (d, d): delta^T S delta is the logit gap of a pair."""
    M = block.beta * np.asarray(block.Q, dtype=float).T @ np.asarray(block.K, dtype=float)
    return 0.5 * (M + M.T)


def has_equilibria(block: Block) -> bool:
    """Whether S is indefinite, so that centred pairs on its isotropic lines are equilibria."""
    eig = np.linalg.eigvalsh(symmetric_logits(block))
    return bool(eig[0] < 0 < eig[-1])


def expansion_step(block: Block, Z: np.ndarray, s: int, length: float) -> float:
    """The step h of the layer of ``block`` that takes the difference delta of pair s of Z
    (N, 2, d) to ``length``, if the pair is centred: the root c of smaller |c| of
    |(I + c V) delta| = length, divided by tanh(delta^T S delta / 4).  NaN where no real root
    exists or delta^T S delta = 0."""
    delta = Z[s, 0] - Z[s, 1]
    Vd = np.asarray(block.V, dtype=float) @ delta
    roots = np.roots([Vd @ Vd, 2 * delta @ Vd, delta @ delta - length**2])
    roots = roots[np.isreal(roots)].real
    gap = math.tanh(float(delta @ symmetric_logits(block) @ delta) / 4)
    if not roots.size or gap == 0:
        return math.nan
    return float(min(roots, key=abs) / gap)


def park(blocks: Sequence[Block], X: np.ndarray, b: int, tight: Sequence[int], offset: float,
         rng: np.random.Generator, deadline: float, max_iter: int = 100, attempts: int = PARK_ATTEMPTS
         ) -> list[tuple[int, float]] | None:
    """A network of alternating layers (lengths PARK_LAYERS in turn, steps from
    uniform(-1, 1), Levenberg-Marquardt with exact layer derivatives) whose image has every
    sequence's mean at a random offset of size ``offset`` from 0 and, for the sequences not in
    ``tight``, delta^T S_b delta / |delta|^2 at such an offset from 0 (near the equilibria of
    block b) and, every other attempt, |delta| as in X (a network contracts a pair easily, and a
    parked pair made tight would need expanding in turn: docs/solver-reach.md); None if none of
    ``attempts`` fits reached PARK_TOL by ``deadline``."""
    N, n, d = X.shape
    S = symmetric_logits(blocks[b])
    loose = [s for s in range(N) if s not in tight]
    lengths = [float(np.sum((X[s, 0] - X[s, 1]) ** 2)) for s in loose]
    for attempt in range(attempts):
        if time.perf_counter() >= deadline:
            break
        L, keep = PARK_LAYERS[attempt % len(PARK_LAYERS)], attempt % 2 == 0
        pattern = [j % 2 for j in range(L)]
        means, gaps = offset * rng.normal(size=N * d), offset * rng.normal(size=len(loose))

        def fit(h, pattern=pattern, means=means, gaps=gaps, keep=keep):
            res = apply(blocks, list(zip(pattern, h, strict=True)), X, sensitivities=True)
            Z, J = res.end, res.d_steps.reshape(N, n, d, len(h))
            rows, jac = [Z.mean(axis=1).ravel() - means], [J.mean(axis=1).reshape(N * d, len(h))]
            for k, s in enumerate(loose):
                delta, d_delta = Z[s, 0] - Z[s, 1], J[s, 0] - J[s, 1]
                norm2, q = delta @ delta, delta @ S @ delta
                log_ratio = math.log(norm2 / lengths[k]) if norm2 > 0 else -math.inf  # merged tokens: no fit
                rows.append(np.array([q / norm2 - gaps[k], log_ratio][: 1 + keep]))
                jac.append(np.stack([2 * S @ delta / norm2 - 2 * q * delta / norm2**2, 2 * delta / norm2][: 1 + keep]) @ d_delta)
            return np.concatenate(rows), np.vstack(jac)

        with np.errstate(all="ignore"):  # overflowing trial steps are rejected by the fit
            h, info = levenberg_marquardt(fit, rng.uniform(-1, 1, L), tol=PARK_TOL, max_iter=max_iter, deadline=deadline)
        if info["residual"] <= PARK_TOL:
            return list(zip(pattern, map(float, h), strict=True))
    return None


def expansion(blocks: Sequence[Block], X: np.ndarray, Y: np.ndarray, tight: Sequence[int], rng: np.random.Generator,
              deadline: float, kappa: float = 0.3) -> list[tuple[int, float]] | None:
    """The parking network and the large layer after it (:func:`park`, :func:`expansion_step`),
    for the first block with equilibria whose parking fit succeeds by ``deadline`` (the time
    shared between the blocks tried): the large layer gives the first pair of ``tight`` the
    length max(1, |its target's difference|).  None if no block parks the collection."""
    s = tight[0]
    length = max(1.0, float(np.linalg.norm(Y[s, 0] - Y[s, 1])))
    candidates = [b for b in range(len(blocks)) if has_equilibria(blocks[b])]
    for k, b in enumerate(candidates):
        share = (deadline - time.perf_counter()) / (len(candidates) - k)
        h = abs(expansion_step(blocks[b], X, s, length))  # about the step to come: the parking barely moves delta
        if not math.isfinite(h) or share <= 0:
            continue
        layers = park(blocks, X, b, tight, kappa / max(h, 1.0), rng, time.perf_counter() + share)
        if layers is None:
            continue
        step = expansion_step(blocks[b], apply(blocks, layers, X).end, s, length)
        if math.isfinite(step):
            return layers + [(b, step)]
    return None
