"""Through a hub: X -> H and Y -> H solved apart and composed, X -> H -> Y (issue 42, design C).

Flows invert exactly (a control reversed, durations negated), so a control c_X taking X to a
collection H and a control c_Y taking Y to H give c_X followed by c_Y inverted from X to Y.
The hub is where the states are kept well conditioned: local fits fail where tokens collapse
towards each other or the origin (attention turns uniform and the Jacobian loses rank) or are
blown up (docs/solver-reach.md), so H is the midpoint (X + Y) / 2 spread out, sequence by
sequence, until every pair of tokens is at least SEPARATION rho apart and every token norm lies
in [NORM_RANGE[0] rho, NORM_RANGE[1] rho], rho the root-mean-square token norm of X and Y
(:func:`hub`): each leg then runs from the data to a configuration no worse conditioned than
the data, and the two legs are searched by the default method (:mod:`verify.search.solver`,
``lm``), each with half the time budget and a hundredth of the tolerance.  The composed control
is replayed on the exact flows; it is returned as found only within the tolerance.  Causal
blocks keep the default method: their admissibility ties prefixes and orders that a hub would
have to respect.

>>> import numpy as np
>>> X, Y = np.random.default_rng(1).normal(size=(2, 2, 3, 2))
>>> H = hub(X, Y)
>>> bool(np.linalg.norm(H[:, :, None] - H[:, None, :], axis=-1)[:, [0, 0, 1], [1, 2, 2]].min() >= 0.5 * rms(X, Y) - 1e-12)
True
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, replace

import numpy as np

from verify.io.errors import InputError, IntegrationError
from verify.lie.admissibility import check_admissible
from verify.model.blocks import Block
from verify.model.dynamics import CONTINUOUS
from verify.search.settings import Settings
from verify.search.solution import Solution
from verify.search.steps import inverse, merge

SEPARATION = 0.5  # least token distance in the hub, in units of rho
NORM_RANGE = (0.5, 2.0)  # token norms in the hub, in units of rho
SPREAD_ITERATIONS = 200
LEG_TOLERANCE = 1e-2  # each leg's tolerance, as a share of the whole's


def rms(X: np.ndarray, Y: np.ndarray) -> float:
    """The root-mean-square token norm of X and Y together."""
    return float(np.sqrt(np.mean(np.concatenate([np.sum(X**2, axis=-1).ravel(), np.sum(Y**2, axis=-1).ravel()]))))


def hub(X: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """(X + Y) / 2 moved, sequence by sequence, by projected steps on the pairs closer than
    SEPARATION rho and the tokens outside NORM_RANGE rho, until none is (deterministic)."""
    rho = rms(X, Y)
    H = (X + Y) / 2
    lo, hi, sep = NORM_RANGE[0] * rho, NORM_RANGE[1] * rho, SEPARATION * rho
    n = H.shape[1]
    off = ~np.eye(n, dtype=bool)
    for _ in range(SPREAD_ITERATIONS):
        diff = H[:, :, None, :] - H[:, None, :, :]
        dist = np.linalg.norm(diff, axis=-1)
        close = off & (dist < sep)
        norms = np.linalg.norm(H, axis=-1, keepdims=True)
        if not close.any() and norms.min() >= lo and norms.max() <= hi:
            break
        # each close pair is pushed apart along its difference (a fixed direction where tokens coincide)
        unit = np.where(dist[..., None] > 0, diff / np.maximum(dist, 1e-300)[..., None], np.eye(H.shape[2])[0])
        H = H + 0.5 * np.sum(np.where(close[..., None], (sep - dist)[..., None] * unit, 0.0), axis=2) / n
        norms = np.linalg.norm(H, axis=-1, keepdims=True)
        target = np.clip(norms, lo, hi)
        H = np.where(norms > 0, H * target / np.maximum(norms, 1e-300), np.full_like(H, lo / math.sqrt(H.shape[2])))
    return H


def hub_solve(blocks: Sequence[Block], X: np.ndarray, Y: np.ndarray, settings: Settings,
              solve: Callable[..., Solution]) -> Solution:
    """X -> H and Y -> H by ``solve`` (the default method), composed (module docstring)."""
    if blocks[0].causal:
        return solve(blocks, X, Y, replace(settings, method="lm"))
    t0 = time.perf_counter()
    H = hub(X, Y)
    try:
        check_admissible(X, H, bool(blocks[0].causal), "continuous")
        check_admissible(Y, H, bool(blocks[0].causal), "continuous")
    except InputError as exc:
        return _failed(settings, t0, f"no admissible hub ({exc})", 0, 0)
    leg = replace(settings, method="lm", tolerance=LEG_TOLERANCE * settings.tolerance, prune=0.0)
    first = solve(blocks, X, H, replace(leg, time_budget=settings.time_budget / 2))
    if not first.success:
        return _failed(settings, t0, f"the leg X -> hub: {first.message}", first.moves, first.jacobians)
    left = settings.time_budget - (time.perf_counter() - t0)
    if not left > 0:  # a finish may overrun its leg's share
        return _failed(settings, t0, "no time left for the leg Y -> hub", first.moves, first.jacobians)
    second = solve(blocks, Y, H, replace(leg, time_budget=left))
    moves, jacobians = first.moves + second.moves, first.jacobians + second.jacobians
    if not second.success:
        return _failed(settings, t0, f"the leg Y -> hub: {second.message}", moves, jacobians)
    steps = merge(list(first.steps) + inverse(list(second.steps)))
    dps = max(first.dps or 0, second.dps or 0) or None
    try:
        error = (float(np.abs((CONTINUOUS.exact_image(blocks, steps, X, dps) - Y).astype(float)).max()) if dps
                 else CONTINUOUS.error(blocks, steps, X, Y))
    except IntegrationError:  # the composed control's flow overflowed at those digits
        error = math.inf
    ok = error <= settings.tolerance
    msg = ("reached the targets through a hub" if ok else
           f"not found: the legs met the hub, but their composition misses the targets by {error:.2e}")
    return Solution.of(steps if ok else [], success=ok, message=msg, error=error, moves=moves, jacobians=jacobians,
                       wall_time=time.perf_counter() - t0, settings=asdict(settings), seeds=first.seeds + second.seeds,
                       dps=dps if ok else None)


def _failed(settings: Settings, t0: float, why: str, moves: int, jacobians: int) -> Solution:
    return Solution.of([], success=False, message=f"not found through a hub: {why}", error=math.inf, moves=moves,
                       jacobians=jacobians, wall_time=time.perf_counter() - t0, settings=asdict(settings))
