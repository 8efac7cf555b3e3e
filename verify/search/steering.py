"""Steering by Lie brackets: products of flows that move a collection along bracket directions.

For a Hall word w of degree k and a coefficient c, :func:`realize` builds a list of steps
(block, duration) whose flow is exp(c B_w + O(|c|^((k+1)/k))), as in motion planning for
driftless systems (Lafferriere and Sussmann): a letter b is the single step (b, c); a bracket
[u, v] is the group commutator

    P_u(a) P_v(b) P_u(a)^(-1) P_v(b)^(-1)     (listed in the order applied),

with a = sign(c) |c|^(deg u / k), b = |c|^(deg v / k), so that a b = c; with the convention
[f, g] = Dg f - Df g this realises +c [B_u, B_v] at leading order (checked in the tests).

One steering move (:func:`steer`) aims at a displacement Delta from the state Z: a set S of
Hall words whose bracket columns at Z span the accessible directions is chosen (by the
caller), the coefficients start at c = B_S^+ Delta, and Newton's method on c, with the exact
derivative of c -> Phi_{P(c)}(Z) (P(c) the product of realize(w, c_w), w in S), corrects what
the leading-order model misses.  (A chord iteration with B_S in place of the exact derivative
was tried first: it converged only for moves of a few per cent of a unit displacement at
m = 4, and then linearly.)

The ``steer`` method of the solver (:func:`steer_solve`) repeats such moves along the path to
the targets, each aiming a fraction of the way: the fraction grows after a success and halves
after a failure (:func:`select_words` picks the Hall words).

>>> steps = realize((0, 1), 0.04)      # [0,1] with coefficient 0.04: a 4-step commutator
>>> [(b, round(t, 3)) for b, t in steps]
[(0, 0.2), (1, 0.2), (0, -0.2), (1, -0.2)]
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np
import scipy.linalg

from verify.io.errors import IntegrationError
from verify.lie.brackets import bracket_matrix
from verify.lie.hall import Word, basis, counting_degree, degree
from verify.lie.invariants import predicted_rank
from verify.lie.rank import degree_scales
from verify.model.blocks import Block
from verify.model.dynamics import CONTINUOUS
from verify.model.flow import flow
from verify.search.newton import levenberg_marquardt
from verify.search.settings import Settings
from verify.search.solution import Solution
from verify.search.steps import Steps, inverse, merge


def realize(word: Word, c: float) -> Steps:
    """Steps whose flow is exp(c B_word) to leading order (see module docstring)."""
    return [(b, t) for b, t, _ in realize_with_derivative(word, c)]


def realize_with_derivative(word: Word, c: float) -> list[tuple[int, float, float]]:
    """:func:`realize` with d duration / d c for every step (|c| floored at 1e-300 in the
    derivative, which is singular at c = 0)."""
    if isinstance(word, int):
        return [(word, float(c), 1.0)]
    u, v = word
    k, ku, kv = degree(word), degree(u), degree(v)
    mag, floor = abs(c), max(abs(c), 1e-300)
    sgn = 1.0 if c >= 0 else -1.0
    a, da = sgn * mag ** (ku / k), (ku / k) * floor ** (ku / k - 1)
    b, db = mag ** (kv / k), sgn * (kv / k) * floor ** (kv / k - 1)
    pu = [(s, t, dt * da) for s, t, dt in realize_with_derivative(u, a)]
    pv = [(s, t, dt * db) for s, t, dt in realize_with_derivative(v, b)]
    return pu + pv + inverse(pu) + inverse(pv)


def product(words: Sequence[Word], coeffs: np.ndarray) -> Steps:
    """The merged product of realize(w, c_w), in the order given (lowest degree first)."""
    steps: Steps = []
    for w, c in zip(words, coeffs, strict=True):
        if c:
            steps += realize(w, float(c))
    return merge(steps)


def steer(
    blocks: Sequence[Any],
    Z: np.ndarray,
    delta: np.ndarray,
    words: Sequence[Word],
    B: np.ndarray,
    *,
    tol: float,
    max_iter: int = 30,
    deadline: float = math.inf,
) -> tuple[Steps, np.ndarray, dict[str, Any]]:
    """One steering move from Z by ``delta`` with the bracket columns B (m x |words|).

    Newton (Levenberg-Marquardt) on the coefficients c of the product P(c), started at
    c = B^+ delta, with the exact Jacobian  d Phi / d c = (d Phi / d durations)(d durations / d c)
    from the flow's sensitivities; at c = 0 it equals B to leading order, so the fit is as well
    conditioned as the bracket columns themselves.  Returns the merged steps, the image of Z and
    the fit's record.
    """
    target = (Z + delta).ravel()

    def unrolled(c):
        rows = []
        for j, (w, cw) in enumerate(zip(words, c, strict=True)):
            rows += [(b, t, dt, j) for b, t, dt in realize_with_derivative(w, float(cw))]
        return rows

    def fun(c):
        rows = unrolled(c)
        res = flow(blocks, [(b, t) for b, t, _, _ in rows], Z, sensitivities=True)
        T = np.zeros((len(rows), len(c)))
        for i, (_, _, dt, j) in enumerate(rows):
            T[i, j] = dt
        return res.end.ravel() - target, res.d_durations @ T

    def residual(c):
        try:
            return flow(blocks, [(b, t) for b, t, _, _ in unrolled(c)], Z).end.ravel() - target
        except IntegrationError:
            return np.full(target.shape, np.inf)

    c0 = np.linalg.lstsq(B, delta.ravel(), rcond=None)[0]
    c, info = levenberg_marquardt(fun, c0, tol=tol, max_iter=max_iter, residual_only=residual, deadline=deadline)
    steps = product(words, c)
    image = target.reshape(Z.shape) + residual(c).reshape(Z.shape)
    return steps, image, info


def select_words(blocks: Sequence[Block], Z: np.ndarray, rank: int, max_degree: int) -> tuple[list, np.ndarray]:
    """r Hall words chosen degree by degree, and their (unscaled) bracket columns at Z."""
    K = min(max(counting_degree(rank), 1), max_degree)
    while True:
        M, _ = bracket_matrix(blocks, Z, K)
        words = list(basis(K))
        degs = np.array([degree(w) for w in words])
        S = M / degree_scales(blocks, Z, M, degs)
        chosen: list[int] = []
        Q = np.zeros((M.shape[0], 0))
        for k in range(1, K + 1):
            idx = np.flatnonzero(degs == k)
            R = S[:, idx] - Q @ (Q.T @ S[:, idx])
            if R.size == 0:
                continue
            _, r_diag, piv = scipy.linalg.qr(R, mode="economic", pivoting=True)
            diag = np.abs(np.diag(r_diag)) if r_diag.ndim == 2 else np.abs(r_diag)
            for j, p in enumerate(piv[: len(diag)]):
                if len(chosen) == rank or diag[j] <= 1e-8:
                    break
                chosen.append(int(idx[p]))
            if chosen:
                Q, _ = np.linalg.qr(S[:, chosen])
            if len(chosen) == rank:
                return [words[i] for i in chosen], M[:, chosen]
        if K >= max_degree:
            return [words[i] for i in chosen], M[:, chosen]
        K += 1


def steer_solve(blocks, X, Y, settings: Settings, progress) -> Solution:
    causal = bool(blocks[0].causal)
    t0 = time.perf_counter()
    rank = predicted_rank(X, causal)
    rank = X.size if rank is None else rank
    Z, control = np.array(X, dtype=float), []
    moves, jacobians = 0, 0
    last_report = t0

    def finish(success: bool, msg: str) -> Solution:
        steps = merge(control, 1e-15)
        err = CONTINUOUS.error(blocks, steps, X, Y)
        ok = success and err <= settings.tolerance
        return Solution.of(steps, success=ok,
                           message=msg if ok or not success else f"final replay error {err:.2e} above tolerance",
                           error=err, moves=moves, jacobians=jacobians, wall_time=time.perf_counter() - t0,
                           settings=asdict(settings))

    fraction = settings.first_fraction
    while True:
        gap = float(np.abs(Y - Z).max())
        if gap <= settings.tolerance:
            return finish(True, f"reached the targets in {moves} moves")
        now = time.perf_counter()
        if now - t0 > settings.time_budget:
            return finish(False, f"not found within {settings.time_budget:.3g} s: max |image - target| = {gap:.2e}")
        if moves >= settings.max_moves or len(control) > settings.max_depth:
            return finish(False, f"not found within the depth/move budget: max |image - target| = {gap:.2e}")
        if progress and now - last_report > 2.0:
            progress(f"move {moves}: max |image - target| = {gap:.2e}, depth {len(control)}, step fraction {fraction:.3g}")
            last_report = now
        words, B = select_words(blocks, Z, rank, settings.max_degree)
        final = fraction >= 1.0
        delta = (Y - Z) * min(fraction, 1.0)
        aim = settings.tolerance if final else 0.1 * float(np.abs(delta).max())
        deadline = t0 + settings.time_budget
        try:
            steps, reached, record = steer(blocks, Z, delta, words, B, tol=aim, max_iter=20, deadline=deadline)
        except IntegrationError:
            steps, reached, record = [], Z, {"jacobians": 0, "residual": math.inf}
        jacobians += record["jacobians"]
        moves += 1
        if steps and record["residual"] <= aim:
            control += steps
            Z = reached
            fraction = min(1.0, fraction * 1.5)
        else:
            fraction *= 0.5
            if fraction < settings.min_fraction:
                return finish(False, f"steering stalled at max |image - target| = {gap:.2e}")
