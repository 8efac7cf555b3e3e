"""Pruning a control or network: fewer steps, the same end point.

The solver's controls have about 10 m steps (networks 6 m layers) for the m equations
Phi(X) = Y, so near a solution the solutions form a manifold of dimension L - m, and on it
there are points where a chosen step's duration (or step size) is 0.  :func:`shrink` walks
there by continuation: it scales that duration by 1 - theta, theta rising from 0 to 1 in
adaptive stages, and after each stage lets ``correct`` (the solver's Newton-type steps on the
exact Jacobian, with that duration held) move the others back onto the targets.  At theta = 1 the
step is the identity and is dropped; in continuous depth the two steps around it, now of the
same block, merge into one exactly, exp(a F) exp(b F) = exp((a + b) F)
(:func:`verify.search.steps.merge`).  Removing a step at once and correcting from there fails on
long networks: on a 48-layer network at m = 8 (Jacobian singular values up to 7e3), dropping
a layer of step 0.04 moved the end 1.5 away, and Newton steps from there did not lower the
residual.

:func:`prune` is the greedy loop: the steps in order of increasing |duration|, each either
removed (``drop`` returns the shorter control, which the caller has checked) or kept; it
stops after ``patience`` failures in a row (the shortest steps are tried first and are the
likeliest to go), when every step has been tried, or at the deadline.  Only the choice of
steps is heuristic: a kept control is whatever ``drop`` accepted, so the caller's test (a
replay within tolerance) is what makes it a witness.

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> from verify.model.flow import flow
>>> blocks = gaussian_blocks(seed=0, d=2)
>>> X = np.random.default_rng(1).normal(size=(1, 2, 2))
>>> control = [(k % 2, t) for k, t in enumerate(np.random.default_rng(2).uniform(-0.5, 0.5, 9))]
>>> Y = flow(blocks, control, X).end
>>> pattern = [b for b, _ in control]
>>> def correct(h, k, tol):  # Newton on the durations other than h[k]
...     free = np.arange(len(h)) != k
...     for _ in range(8):
...         res = flow(blocks, list(zip(pattern, h)), X, sensitivities=True)
...         r = (res.end - Y).ravel()
...         if np.abs(r).max() <= tol:
...             break
...         h = h.copy()
...         h[free] -= np.linalg.lstsq(res.d_durations[:, free], r, rcond=None)[0]
...     return h, float(np.abs(flow(blocks, list(zip(pattern, h)), X).end - Y).max())
>>> h = shrink(correct, np.array([t for _, t in control]), 4, 1e-12)
>>> float(h[4]), bool(np.abs(flow(blocks, remove(list(zip(pattern, h)), 4, True), X).end - Y).max() <= 1e-12)
(0.0, True)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from verify.io.errors import IntegrationError
from verify.model.backend import UNIT
from verify.model.dynamics import CONTINUOUS, FINITE, Dynamics, dynamics
from verify.model.network import propagated_rounding
from verify.search.finish import float_replay_check
from verify.search.newton import chord_in_precision, levenberg_marquardt
from verify.search.settings import Settings
from verify.search.solution import Solution
from verify.search.steps import merge

Steps = list[tuple[int, Any]]
PATIENCE = 3  # failed removals in a row before pruning stops (chosen, not tuned)
STAGE_TOL = 1e-6  # max |residual| each intermediate stage of shrink is corrected to (chosen, not tuned)
MIN_STAGE = 1 / 64  # shrink gives up when a stage shorter than this fails


def remove(steps: Steps, k: int, merge_blocks: bool) -> Steps:
    """``steps`` without step k; with ``merge_blocks`` (flows) the steps of one block that the
    removal brings together are merged (their durations added).

    >>> remove([(0, 1.0), (1, 0.1), (0, 2.0), (1, 3.0)], 1, True)
    [(0, 3.0), (1, 3.0)]
    >>> remove([(0, 1.0), (1, 0.1), (0, 2.0), (1, 3.0)], 1, False)
    [(0, 1.0), (0, 2.0), (1, 3.0)]
    """
    rest = steps[:k] + steps[k + 1:]
    return merge(rest) if merge_blocks else rest


def shrink(correct: Callable[[np.ndarray, int, float], tuple[np.ndarray, float]], h: np.ndarray, k: int, tol: float, *,
           stage_tol: float = STAGE_TOL, min_stage: float = MIN_STAGE, deadline: float = math.inf) -> np.ndarray | None:
    """Durations (or step sizes) near h with h[k] = 0 and the image on the targets, by
    continuation (module docstring): stage theta sets h[k] = (1 - theta) h_k and calls
    ``correct(trial, k, aim)``, which returns the trial with its other entries corrected and the
    max |residual| reached; a stage is kept when that is within ``stage_tol`` (``tol`` at the
    last stage, theta = 1).  The stage length doubles after a kept stage and halves after a
    failed one; None when it falls below ``min_stage`` or the deadline passes."""
    hk, theta, stage = h[k], 0.0, 1.0
    while theta < 1.0:
        if time.perf_counter() > deadline:
            return None
        t = min(1.0, theta + stage)
        trial = h.copy()
        trial[k] = hk * (1 - t) if t < 1.0 else 0 * hk
        aim = tol if t == 1.0 else stage_tol
        fixed, err = correct(trial, k, aim)
        if err <= aim:
            h, theta, stage = fixed, t, 2 * stage
            continue
        stage = (t - theta) / 2  # the stage that failed, halved
        if stage < min_stage:
            return None
    return h


def prune(steps: Steps, drop: Callable[[Steps, int], Steps | None], *, patience: int = PATIENCE,
          deadline: float = math.inf, progress: Callable[[str], None] | None = None) -> tuple[Steps, int]:
    """Greedy pruning (module docstring): returns the shortest control or network that
    ``drop`` accepted (``steps`` itself if none) and the number of removals tried.
    ``drop(steps, k)`` returns the steps without step k (corrected and checked), or None."""
    attempts, failures = 0, 0
    tried: set[int] = set()  # indices tried (and failed) since the last kept removal
    while failures < patience and time.perf_counter() < deadline:
        order = [k for k in sorted(range(len(steps)), key=lambda k: abs(float(steps[k][1]))) if k not in tried]
        if not order or len(steps) <= 1:
            break
        k = order[0]
        attempts += 1
        fixed = drop(steps, k)
        if fixed is None:
            tried.add(k)
            failures += 1
            continue
        if progress:
            progress(f"pruned step {k} (block {steps[k][0]}, {float(steps[k][1]):.2g}): {len(steps)} -> {len(fixed)} steps")
        steps, tried, failures = fixed, set(), 0
    return steps, attempts


def prune_found(blocks, X, Y, sol: Solution, settings: Settings, progress=None) -> Solution:
    """``sol`` with its control or network pruned for ``settings.prune`` seconds
    (:mod:`verify.search.pruning`: greedy, each step driven to zero by continuation).  Each stage's
    correction, towards tolerance / 10 at the last stage, is Levenberg-Marquardt on the exact
    Jacobian (Gauss-Newton steps first; the columns left can be nearly dependent) or, for a
    solution at high precision, chord steps on its residuals at its own digits
    (:func:`chord_in_precision`, with the float64 Jacobian; a network's computed at those
    digits, as the float64 one of so unstable a network is not even a chord's).  A shorter
    control or network is kept only if it passes the test the
    solver applied to ``sol``: finite depth, its error plus twice its propagated rounding
    within tolerance; continuous depth in float64, its ``verify.search.finish.FLOW_DPS``-digit
    residual plus twice its float64 drift (:func:`verify.search.finish.float_replay_check`); at high
    precision, its error there.  Returns ``sol`` with what was removed, or with a message that
    nothing could be.

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> from verify.model.dynamics import FINITE
    >>> from verify.search.solver import solve
    >>> X, Y = np.random.default_rng(0).normal(size=(2, 1, 2, 2))
    >>> blocks = gaussian_blocks(1, 2)
    >>> sol = solve(blocks, X, Y, Settings(depth="finite", prune=5.0))
    >>> sol.success, sol.depth < sol.pruned_from, FINITE.error(blocks, sol.steps, X, Y) <= 1e-10
    (True, True, True)
    """
    t0 = time.perf_counter()
    pruner = _Pruner(blocks=blocks, X=X, Y=Y, tol=settings.tolerance, dps=sol.dps, dyn=dynamics(settings.depth),
                     deadline=t0 + settings.prune, error=sol.error)
    steps, attempts = prune(sol.steps, pruner.drop, deadline=pruner.deadline, progress=progress)
    seconds = time.perf_counter() - t0
    if len(steps) == sol.depth:
        return replace(sol, message=f"{sol.message}; no step could be pruned ({attempts} tried, {seconds:.1f} s)",
                       wall_time=sol.wall_time + seconds)
    total = float(sum(abs(float(t)) for _, t in steps))
    return replace(sol, steps=steps, error=pruner.error, depth=len(steps), total_duration=total,
                   message=f"{sol.message}; pruned from {sol.depth} to {len(steps)} steps ({attempts} removals tried, "
                           f"{seconds:.1f} s)", wall_time=sol.wall_time + seconds, pruned_from=sol.depth)


@dataclass
class _Pruner:
    """The removals of :func:`prune_found`: the data, its dynamics (``dyn``), the tolerance and
    the digits of the control being pruned (``dps``, None for float64), its ``pattern`` while a
    removal is corrected, and the error of the last control kept (``error``)."""

    blocks: Any
    X: np.ndarray
    Y: np.ndarray
    tol: float
    dps: int | None
    dyn: Dynamics
    deadline: float
    error: float
    pattern: list[int] = field(default_factory=list)

    def residual(self, h):
        return self.dyn.residual(self.blocks, self.pattern, h, self.X, self.Y, self.dps, self.deadline)

    def correct(self, h, k, aim):
        """h with its entries other than k moved towards max |r| <= aim, and the max |r| reached."""
        free = np.arange(len(h)) != k

        def full(z):
            out = h.copy()
            out[free] = z
            return out

        def jacobian(z):
            return self.dyn.jacobian(self.blocks, self.pattern, full(z), self.X, self.deadline, self.dps)[:, free]

        if self.dps is None:
            z, info = levenberg_marquardt(lambda z: (self.residual(full(z)), jacobian(z)), h[free], tol=aim, max_iter=12,
                                          deadline=self.deadline, gauss_newton_first=True,
                                          residual_only=lambda z: self.residual(full(z)))
            err = info["residual"]
        else:
            z, err, _ = chord_in_precision(lambda z: self.residual(full(z)), jacobian, h[free], aim, self.dps,
                                           self.deadline, 8)
        return full(z), err

    def passes(self, steps) -> bool:
        """The solver's test (:func:`prune_found`); records the error of a control that passes."""
        if self.dps is None and self.dyn is CONTINUOUS:
            exact, drift, err = float_replay_check(self.blocks, steps, self.X, self.Y, self.deadline)
            bound = float(np.abs(exact).max()) + 2 * drift
        else:
            err = bound = float(np.abs(self.residual([t for _, t in steps])).max())
            if self.dyn is FINITE:
                unit = 10.0**-self.dps if self.dps else UNIT
                bound += 2 * propagated_rounding(self.blocks, [(b, float(t)) for b, t in steps], self.X, unit)
        if bound <= self.tol:
            self.error = err
        return bound <= self.tol

    def drop(self, steps, k):
        """``steps`` without step k, shrunk to it (:func:`shrink`) and tested, or None."""
        dps = self.dps
        self.pattern[:] = [b for b, _ in steps]
        h = np.array([t for _, t in steps], dtype=object if dps else float)
        try:
            h = shrink(self.correct, h, k, 0.1 * self.tol, deadline=self.deadline)
            if h is None:
                return None
            out = remove([(b, t if dps else float(t)) for b, t in zip(self.pattern, h, strict=True)], k,
                         self.dyn is CONTINUOUS)
            self.pattern[:] = [b for b, _ in out]
            return out if self.passes(out) else None
        except IntegrationError:  # an overflowing correction, or the deadline
            return None
