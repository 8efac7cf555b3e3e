"""A population of Levenberg-Marquardt fits of a shooting system, stepped in lock step.

:func:`population_lm` runs many members of a :class:`verify.search.shooting.Shooting` at once
(one batched evaluation serves all of them), hands a member that reaches the tolerance to a
finish, and replaces one that stalls by a fresh start, drawn by its start index, so a run with
a work budget is deterministic.  Several shootings (the solver's second one in continuous
depth is the inverse problem) are stepped in turn, one iteration each.

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> from verify.model.network import apply
>>> from verify.search.shooting import Shooting
>>> blocks = gaussian_blocks(0, 2)
>>> X = np.random.default_rng(1).normal(size=(1, 2, 2))
>>> Y = apply(blocks, [(k % 2, 0.2) for k in range(8)], X).end
>>> shoot = Shooting(blocks, X, Y, segments=2, steps=4)
>>> rec = population_lm([shoot], size=4, start=lambda _k, i: shoot.fresh(np.random.default_rng(i), 0.3),
...                     tol=1e-10, max_iter=50, max_starts=8)
>>> bool(np.abs(shoot.system(rec.found[None])[0]).max() <= 1e-10)
True
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

from verify.search.newton import DAMPING_CEILING, DAMPING_START, damping_down, damping_up
from verify.search.shooting import Shooting, shooting_solver


@dataclass
class PopulationRecord:
    """What :func:`population_lm` did: starts drawn, Jacobians computed (member-evaluations),
    the best max |r| seen, the member it returned (None when none converged), and whether it
    stopped at its deadline (rather than for want of starts)."""

    starts: int = 0
    jacobians: int = 0
    best: float = math.inf
    found: Any = None
    timed_out: bool = False


def population_lm(
    shootings: Sequence[Shooting],
    *,
    size: int,
    start: Callable[[int, int], np.ndarray],
    tol: float,
    max_iter: int,
    max_starts: int,
    deadline: float = math.inf,
    finish: Callable[[int, np.ndarray], Any] | None = None,
    patience: int = 0,
    acceleration: float = 0.0,
    report: Callable[[PopulationRecord], None] | None = None,
) -> PopulationRecord:
    """Levenberg-Marquardt (minimum-norm steps, :func:`verify.search.shooting.shooting_step`:
    the step of :func:`verify.search.newton.damped_step` without assembling the Jacobian) on
    ``size`` members in lock step, one such population for each shooting k (``start(k, index)``
    draws a member, ``finish(k, x)`` polishes one), the populations stepped in turn, one
    iteration each.  A member whose max |r| reaches ``tol`` is handed to ``finish`` (None
    means it failed) and the first that finishes is returned; a member that has used
    ``max_iter`` Jacobians, whose damping passes 1e12 or that finished without success is
    replaced by a fresh start while fewer than ``max_starts`` starts of its shooting were
    drawn.  With ``patience`` p > 0, a member whose max |r| has not halved over its last p
    Jacobians is replaced too.  The record counts the starts and Jacobians of all
    populations; ``found`` is what ``finish`` returned.

    With ``acceleration`` alpha > 0 each step v is corrected by geodesic acceleration
    (Transtrum and Sethna, arXiv:1201.5885): a = the same damped solve applied to the residuals'
    second directional derivative along v (:meth:`Shooting.curvature`, exact), the trial is
    x + v + a / 2, and a trial with 2 |a| > alpha |v| is rejected like one that does not lower
    the cost.  The correction follows the curved valleys that long networks make, where plain
    steps shrink to the straight chord; alpha = 0 is plain Levenberg-Marquardt."""
    records = [PopulationRecord() for _ in shootings]
    runs = [_population(sh, records[k], size, lambda i, k=k: start(k, i), tol, max_iter, max_starts, deadline,
                        None if finish is None else lambda x, k=k: finish(k, x), patience, acceleration)
            for k, sh in enumerate(shootings)]
    total = PopulationRecord()
    while runs:
        for run in list(runs):
            if next(run, None) is None:
                runs.remove(run)
            total = PopulationRecord(sum(r.starts for r in records), sum(r.jacobians for r in records),
                                     min(r.best for r in records), next((r.found for r in records if r.found is not None), None),
                                     any(r.timed_out for r in records))
            if total.found is not None:
                return total
            if report:
                report(total)
    return total


@dataclass
class _Members:
    """The live members of a population: ``x`` (P, unknowns), residuals ``r``, the Jacobian's
    blocks ``H``, ``D`` (:meth:`Shooting.parts`), damping ``lam``, Jacobians used ``iters``, and
    for ``patience`` the max |r| at the last check ``mark`` and the next check ``due_at``."""

    x: np.ndarray
    r: np.ndarray
    H: np.ndarray
    D: np.ndarray
    lam: np.ndarray
    iters: np.ndarray
    mark: np.ndarray
    due_at: np.ndarray

    @classmethod
    def of(cls, fresh: tuple, patience: int) -> _Members:
        x, r, H, D = fresh
        return cls(x, r, H, D, np.full(len(x), DAMPING_START), np.ones(len(x), dtype=int), np.abs(r).max(axis=1),
                   np.full(len(x), 1 + patience))

    def renew(self, idx: np.ndarray, fresh: tuple, patience: int) -> None:
        """Members ``idx`` replaced by fresh ones."""
        self.x[idx], self.r[idx], self.H[idx], self.D[idx] = fresh
        self.lam[idx], self.iters[idx] = DAMPING_START, 1
        self.mark[idx], self.due_at[idx] = np.abs(self.r[idx]).max(axis=1), 1 + patience

    def keep(self, idx: np.ndarray) -> None:
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name)[idx])

    def stalled(self, rmax: np.ndarray, max_iter: int, patience: int) -> np.ndarray:
        """Which members to replace: out of Jacobians or damping, overflowing, or (``patience``)
        not halving max |r| between checks."""
        finite_jacobian = np.isfinite(self.H).all(axis=(1, 2, 3)) & np.isfinite(self.D).all(axis=(1, 2, 3, 4))
        stalled = (self.iters >= max_iter) | (self.lam > DAMPING_CEILING) | ~np.isfinite(rmax) | ~finite_jacobian
        if patience:
            due = self.iters >= self.due_at
            stalled |= due & (rmax > 0.5 * self.mark)
            self.mark, self.due_at = np.where(due, rmax, self.mark), np.where(due, self.iters + patience, self.due_at)
        return stalled

    def step(self, shooting: Shooting, acceleration: float) -> int:
        """One damped step of every member (accepted where it lowers the cost); returns the
        Jacobians computed."""
        cost = np.einsum("pi,pi->p", self.r, self.r)
        solver = shooting_solver((self.H, self.D), self.lam)
        step = solver(self.r)
        bounded = np.ones(len(self.x), dtype=bool)
        if acceleration:
            accel = solver(shooting.curvature(self.x, step))
            with np.errstate(over="ignore", invalid="ignore"):  # an overflowing correction is rejected below
                bounded = 2 * np.linalg.norm(accel, axis=1) <= acceleration * np.linalg.norm(step, axis=1)
            step = step + 0.5 * accel
        trial = self.x + step
        r_trial, _ = shooting.parts(trial)
        cost_trial = np.einsum("pi,pi->p", r_trial, r_trial)
        better = np.isfinite(cost_trial) & (cost_trial < cost) & bounded
        self.lam[~better] = damping_up(self.lam[~better])
        acc = np.flatnonzero(better)
        if acc.size:
            self.x[acc] = trial[acc]
            self.r[acc], (self.H[acc], self.D[acc]) = shooting.parts(self.x[acc], sensitivities=True)
            self.lam[acc] = damping_down(self.lam[acc])
            self.iters[acc] += 1
        return int(acc.size)


class _Draw:
    """Fresh members of one population, drawn and evaluated in chunks of 1, 2, 4, ... while
    the next chunk, at the most seconds a member has taken (``per``), ends by the deadline."""

    def __init__(self, shooting: Shooting, rec: PopulationRecord, start: Callable[[int], np.ndarray], deadline: float):
        self.shooting, self.rec, self.start, self.deadline, self.per = shooting, rec, start, deadline, 0.0

    def __call__(self, count: int) -> tuple | None:
        """Up to ``count`` fresh members, their residuals and their Jacobians' blocks; None if
        not even the first could begin."""
        parts, got, rec = [], 0, self.rec
        while got < count:
            k, now = min(2 ** len(parts), count - got), time.perf_counter()
            if now + self.per * k >= self.deadline:
                rec.timed_out = True
                break
            xk = np.array([self.start(rec.starts + i) for i in range(k)])
            rec.starts += k
            rec.jacobians += k
            rk, (Hk, Dk) = self.shooting.parts(xk, sensitivities=True)
            self.per = max(self.per, (time.perf_counter() - now) / k)
            parts.append((xk, rk, Hk, Dk))
            got += k
        return tuple(np.concatenate(a) for a in zip(*parts, strict=True)) if parts else None


def _population(shooting, rec, size, start, tol, max_iter, max_starts, deadline, finish, patience, acceleration):
    """One population of :func:`population_lm`, recorded in ``rec``: a generator that yields
    True after each iteration and ends when a member finished (``rec.found``), when no member
    is left or at the deadline.  Neither an iteration nor a chunk of fresh members is begun
    that would end past the deadline at the cost of the last one (the first iteration's is
    taken to be a Jacobian per member, which can fall short): at m = 128 a step of 16 members
    takes about 10 s, so an unguarded step overran the budget by half (docs/solver-reach.md)."""
    draw = _Draw(shooting, rec, start, deadline)
    first = draw(min(size, max_starts))
    if first is None:
        return
    pop = _Members.of(first, patience)
    spent = draw.per * len(pop.x)  # seconds the last iteration's step took (at first: a Jacobian per member)
    while len(pop.x):
        if time.perf_counter() + spent >= deadline:
            rec.timed_out = True
            return
        rmax = np.abs(pop.r).max(axis=1)
        rmax[~np.isfinite(rmax)] = math.inf
        rec.best = min(rec.best, float(rmax.min()))
        failed = []
        for j in np.flatnonzero(rmax <= tol):
            out = finish(pop.x[j]) if finish else pop.x[j]
            if out is not None:
                rec.found = out
                return
            failed.append(j)
        dead = np.union1d(np.flatnonzero(pop.stalled(rmax, max_iter, patience)), failed).astype(int)
        if dead.size:
            fresh = draw(min(dead.size, max_starts - rec.starts))
            new = 0 if fresh is None else len(fresh[0])
            if new:
                pop.renew(dead[:new], fresh, patience)
            pop.keep(np.setdiff1d(np.arange(len(pop.x)), dead[new:]))
            if not len(pop.x):
                break
        began = time.perf_counter()
        rec.jacobians += pop.step(shooting, acceleration)
        spent = time.perf_counter() - began
        yield True
