"""Levenberg-Marquardt with minimum-norm steps, for square, over- and under-determined fits.

Minimises |r(x)|^2 / 2 with the exact Jacobian J(x) supplied by the caller.  A step solves

    (J J^T + lam I) y = -r,  dx = J^T y        (fewer residuals than unknowns: min-norm step)
    (J^T J + lam I) dx = -J^T r                 (otherwise),

scaled by the damping lam, which shrinks (x 1/3) after a step that lowers |r| and grows (x 4)
after one that does not (the step is then rejected).  Stops when max |r| <= tol, after
``max_iter`` Jacobians, when ``deadline`` (a ``time.perf_counter`` value) passes, or when lam
exceeds 1e12 (no descent left).  With ``gauss_newton_first`` every iteration first tries the
undamped minimum-norm Gauss-Newton step J^+ r (``lstsq``, rcond 1e-13) and keeps it when it
lowers |r|: near a solution this converges quadratically where the damping would crawl along
weak directions (used to polish a nearby solution, not from random starts, where it measured no
better).

:func:`chord` is Newton's method with a Jacobian that may be approximate (x - J(x)^+ r(x),
a step that does not lower max |r| tried once more at half its length), and
:func:`chord_in_precision` the same with x held at a given number of digits.

>>> import numpy as np
>>> f = lambda x: (np.array([x[0] ** 2 + x[1] - 3.0]), np.array([[2 * x[0], 1.0]]))
>>> x, info = levenberg_marquardt(f, np.array([1.0, 1.0]), tol=1e-12)
>>> info["converged"], bool(abs(x[0] ** 2 + x[1] - 3.0) < 1e-12)
(True, True)
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from verify.model.backend import precision

Fit = Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]


# The damping policy of every Levenberg-Marquardt loop here and in verify.search.shooting: start at
# DAMPING_START, x4 after a rejected step, /3 (not below DAMPING_FLOOR) after an accepted one; a fit
# whose damping reaches DAMPING_CEILING has stalled.
DAMPING_START, DAMPING_FLOOR, DAMPING_CEILING = 1e-3, 1e-12, 1e12


def damping_up(lam: Any) -> Any:
    """The damping after a rejected step (scalars or arrays)."""
    return lam * 4


def damping_down(lam: Any) -> Any:
    """The damping after an accepted step (scalars or arrays)."""
    return np.maximum(lam / 3, DAMPING_FLOOR)


def levenberg_marquardt(
    fun: Fit,
    x0: np.ndarray,
    *,
    tol: float,
    max_iter: int = 300,
    lam: float = DAMPING_START,
    deadline: float = math.inf,
    residual_only: Callable[[np.ndarray], np.ndarray] | None = None,
    report: Callable[[float, int], None] | None = None,
    gauss_newton_first: bool = False,
) -> tuple[np.ndarray, dict[str, Any]]:
    """Fit x so that max |r(x)| <= tol; returns x and a record of the run.

    ``report(max |r|, jacobians)`` is called after every accepted step (for progress output).
    """
    x = np.array(x0, dtype=float)
    r, J = fun(x)
    cost = float(r @ r)
    jacobians, rejected = 1, 0

    def cost_at(trial: np.ndarray) -> float:
        r_new = residual_only(trial) if residual_only else fun(trial)[0]
        return float(r_new @ r_new) if np.all(np.isfinite(r_new)) else math.inf

    def candidates(J: np.ndarray, r: np.ndarray, lam: float):
        if gauss_newton_first:
            yield np.linalg.lstsq(J, -r, rcond=1e-13)[0]
        yield damped_step(J, r, lam)

    while float(np.abs(r).max()) > tol and jacobians < max_iter and time.perf_counter() < deadline and lam < DAMPING_CEILING:
        for dx in candidates(J, r, lam):
            trial = x + dx
            new_cost = cost_at(trial)
            if new_cost < cost:
                break
        else:
            rejected += 1
            lam = damping_up(lam)
            continue
        x, cost = trial, new_cost
        r, J = fun(x)
        jacobians += 1
        lam = float(damping_down(lam))
        if report:
            report(float(np.abs(r).max()), jacobians)
    return x, {
        "converged": bool(np.abs(r).max() <= tol),
        "residual": float(np.abs(r).max()),
        "jacobians": jacobians,
        "rejected": rejected,
        "lambda": lam,
    }


def damped_step(J: np.ndarray, r: np.ndarray, lam: float | np.ndarray) -> np.ndarray:
    """The Levenberg-Marquardt step, minimum-norm when there are fewer residuals than unknowns.

    Batched: J (..., rows, unknowns), r (..., rows) and lam (scalar or one per leading index);
    the damping is lam times the mean squared column norm of J.  A system that cannot be solved
    (its matrix overflowed or is singular in floating point) gives a NaN step, which the caller
    rejects like any step that does not lower the residual."""
    with np.errstate(all="ignore"):
        scale = np.mean(np.sum(J * J, axis=-2), axis=-1)
        mu = np.asarray(lam * np.where(scale > 0, scale, 1.0))[..., None]
        Jt = np.swapaxes(J, -1, -2)
        if J.shape[-2] <= J.shape[-1]:
            A = J @ Jt
            A[..., np.arange(A.shape[-1]), np.arange(A.shape[-1])] += mu
            return (Jt @ solve_or_nan(A, -r[..., None]))[..., 0]
        A = Jt @ J
        A[..., np.arange(A.shape[-1]), np.arange(A.shape[-1])] += mu
        return solve_or_nan(A, -(Jt @ r[..., None]))[..., 0]


def solve_or_nan(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """np.linalg.solve over a batch, with NaN for the members whose system fails."""
    try:
        return np.linalg.solve(A, b)
    except np.linalg.LinAlgError:
        flat_A, flat_b = A.reshape((-1,) + A.shape[-2:]), b.reshape((-1,) + b.shape[-2:])
        out = np.full(flat_b.shape, np.nan)
        for i, (a, v) in enumerate(zip(flat_A, flat_b, strict=True)):
            if np.all(np.isfinite(a)):
                try:
                    out[i] = np.linalg.solve(a, v)
                except np.linalg.LinAlgError:
                    pass
        return out.reshape(b.shape)


def chord_in_precision(residual, jacobian, x, tol, dps, deadline, max_iter, r=None, scaled: bool = False):
    """:func:`chord` with x kept as mpmath numbers at ``dps`` digits (floats converted exactly,
    mpmath numbers kept as they are)."""
    import mpmath

    with precision(dps):
        return chord(residual, jacobian, np.array([mpmath.mpf(v) for v in x], dtype=object), tol, deadline, max_iter, r,
                      scaled)


def chord(residual, jacobian, x, tol, deadline: float = math.inf, max_iter: int = 8, r=None, scaled: bool = False):
    """x - J(x)^+ r(x) repeated while max |r| falls, with an approximate Jacobian J (a chord
    method: each step gains about as many digits as J agrees with the exact derivative).
    A step that does not lower max |r| is tried once more at half its length (a full step
    that overshoots can still point the right way: docs/solver-reach.md).
    Stops at max |r| <= tol, when neither lowers the residual or a residual, Jacobian or step
    is not finite (an overflow), or at the deadline; returns the last x, its max |r| and the
    number of Jacobians evaluated.  ``r`` is the residual at x when the caller has it already.
    ``jacobian(x)`` returns J, or a callable b -> J^+ b that solves without forming J (the
    block elimination of a shooting system: :meth:`verify.search.shooting.Shooting.pseudo_inverse`).
    With ``scaled`` the least-squares step is taken on J with unit columns (D^-1 (J D^-1)^+ r,
    D the column norms), so that the cut-off of small singular values (1e-13 of the largest)
    is relative to a balanced matrix: a network whose first layers move its end 1e19 times as
    far as its last (seen after a large expansion layer) otherwise
    loses the directions of the last layers, and Newton stalls (there at 1.5e-8, from 900).
    From far off the plain minimum-norm step does better (it moves the sensitive layers least)."""
    r = residual(x) if r is None else r
    err, jacobians = float(np.abs(r).max()), 0
    while err > tol and jacobians < max_iter and time.perf_counter() < deadline:
        J = jacobian(x)
        jacobians += 1
        if not math.isfinite(err):  # an integration overflowed: no step to take
            break
        with np.errstate(all="ignore"):
            if callable(J):  # a structured solver b -> J^+ b
                step = J(-np.asarray(r, dtype=float))
            elif not np.all(np.isfinite(J)):
                break
            elif scaled:
                norms = np.linalg.norm(J, axis=0)
                norms[norms == 0] = 1.0
                step = np.linalg.lstsq(J / norms, -r, rcond=1e-13)[0] / norms
            else:
                step = np.linalg.lstsq(J, -r, rcond=1e-13)[0]
        if not np.all(np.isfinite(step)):
            break
        accepted = None
        for fraction in (1.0, 0.5):  # a Newton step that converges need not lower max |r| at once
            trial = x + fraction * step
            if not np.all(np.isfinite(trial.astype(float))):
                break
            r_trial = residual(trial)
            if float(np.abs(r_trial).max()) < err:
                accepted = trial, r_trial, float(np.abs(r_trial).max())
                break
        if accepted is None:
            break
        x, r, err = accepted
    return x, err, jacobians
