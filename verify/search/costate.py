"""Costate (Pontryagin) shooting: controls of least energy for a fixed block pattern.

For the alternating pattern b_1, ..., b_K (0, 1, 0, ...) the control of least energy
1/2 sum tau_k^2 that takes X to Y satisfies, by Pontryagin's principle (Lagrange multiplier
p_K of the end condition, transported backwards), a *forward* recursion in the costate p:

    tau_k = <p_(k-1), F_(b_k)(x_(k-1))>,
    (x_k, p_k) = the cotangent flow of F_(b_k) for time tau_k:  x' = F(x),  p' = -DF(x)^T p,

the Hamiltonian flow of H_b(x, p) = <p, F_b(x)>, which conserves H_b, so tau_k is the same at
either end of its block.  So the end point x_K is a function of p_0 alone, and
x_K(p_0) = Y is a square system in R^m whatever K is; every solution is an exact (block,
duration) control, of locally least energy among the controls of this pattern, with the
identity tau = (d x_K / d tau)^T p_K (``property_tests/test_costate.py`` checks it).

The flows are those of the solver's RK4 surrogate (:mod:`verify.model.rk4`: ``substeps``
equal steps per block; the x-part of the scheme is the same), and the derivatives of the
embedded system below are exact for the scheme: tangents of (x, p) pushed through the stages
with the Hamiltonian's Jacobian [[J, 0], [-M, -J^T]] (J = DF, M = sum_i p_i D^2 F_i from exact
second-order Taylor jets, :func:`verify.lie.brackets.field_jet`), plus each duration's own
column and the defects' gradient (J^T p, F) at the block's start.

:func:`continuation` reaches that system by pseudo-arclength from random durations, with the
durations free: unknowns (tau, p_0, s), equations

    x_K(tau, p_0) = Y_0 + s (Y - Y_0),    g(tau, p_0) = (1 - s) g_0,
    g_k = tau_k - <p_(k-1), F_(b_k)(x_(k-1))>  (the recursion's defects),

from (tau_start, 0, 0), where Y_0 and g_0 = tau_start are their values, to s = 1, where g = 0 is
the recursion and x_K = Y.  Starting from a small p_0 instead (durations tied to p_0 from the
start, targets the image of a small p_0) was measured first: there d x_K / d p_0 has rank about
2 (every tau_k is about <p_0, F_(b_k)(X)>), condition numbers 1e7 to 1e16, and s did not pass
0.002 in 60 s on four m = 8 instances (docs/solver-reach.md, 2026-12-03).  Tangent = the null
vector of the Jacobian by QR, oriented along the previous one; Newton corrector on the bordered
system; the arclength step grows after easy corrections and halves after a failed one; a fold
shows as a sign change of the tangent's s-component.  What happened along the path (s reached,
conditioning, energy, token separation and norms) is in the returned :class:`Path`.
:func:`search` runs continuations from random starts and hands the first that reaches s = 1 to
the solver's finish (finer RK4 steps, then the exact flows).

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> blocks = gaussian_blocks(0, 2)
>>> X = np.random.default_rng(1).normal(size=(1, 2, 2))
>>> shot = Costate(blocks, X, steps=8, substeps=2)
>>> end = shot.endpoint(np.full(4, 0.1))
>>> x, g, J = shot.embedded(end.taus, np.full(4, 0.1))   # the recursion leaves no defect
>>> end.x.shape, J.shape, bool(np.abs(g).max() < 1e-14)
((1, 2, 2), (12, 12), True)
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from verify.lie.brackets import field_jet
from verify.model.attention import field_and_jacobian, field_numpy
from verify.model.blocks import Block
from verify.model.rk4 import integrate_batch
from verify.search.finish import Finished, finish_control
from verify.search.shooting import Shooting


@dataclass(frozen=True)
class Endpoint:
    """The end of the recursion from p_0: states x (N, n, d), durations taus (K,) and costate p
    (N, n, d); non-finite entries where the flow overflowed."""

    x: np.ndarray
    taus: np.ndarray
    p: np.ndarray


def _derivatives(block: Block, x: np.ndarray, shape: tuple) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """F (N, D), J (N, D, D) and the Hessians (N, D, D, D) of the field at x (N, D)."""
    N, n, d = shape
    D = n * d
    c0, c1, c2 = field_jet(block, x.reshape(shape), 2)
    H = np.zeros((N, D, D, D))
    a, b = np.triu_indices(D)  # degree-2 monomials delta_a delta_b, a <= b, in the jets' order
    H[:, :, a, b] = c2
    H[:, :, b, a] = c2
    H[:, :, np.arange(D), np.arange(D)] *= 2
    return c0[..., 0], c1, H


@dataclass(frozen=True)
class Costate:
    """The recursion for ``blocks`` from X over ``steps`` alternating blocks (0, 1, 0, ...),
    each flowed by ``substeps`` RK4 steps (see the module docstring)."""

    blocks: Sequence[Block]
    X: np.ndarray
    steps: int
    substeps: int = 2

    @property
    def m(self) -> int:
        return self.X.size

    def pattern(self) -> list[int]:
        return [k % 2 for k in range(self.steps)]

    def endpoint(self, p0: np.ndarray) -> Endpoint:
        """x_K, the durations and p_K from p_0 (m,): the recursion itself."""
        N, n, d = self.X.shape
        D = n * d
        x, p = self.X.reshape(N, D).astype(float), np.asarray(p0, dtype=float).reshape(N, D)
        taus = np.full(self.steps, np.nan)
        with np.errstate(all="ignore"):  # overflow shows as non-finite states
            for k, b in enumerate(self.pattern()):
                F = field_numpy(self.blocks[b], x.reshape(self.X.shape)[None])[0].reshape(N, D)
                taus[k] = float(np.sum(p * F))
                x, p, _ = self._flow(self.blocks[b], x, p, taus[k], None)
                if not (np.isfinite(x).all() and np.isfinite(p).all()):
                    break
        return Endpoint(x=x.reshape(self.X.shape), taus=taus, p=p.reshape(self.X.shape))

    def embedded(self, tau: np.ndarray, p0: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """With the durations free: x_K (m,) under the Hamiltonian flows for ``tau`` from
        (X, p_0), the recursion's defects g_k = tau_k - <p_(k-1), F_(b_k)(x_(k-1))> (K,), and
        the Jacobian of (x_K, g) with respect to (tau, p_0), (m + K, K + m)."""
        N, n, d = self.X.shape
        D, m, K = n * d, self.m, self.steps
        x, p = self.X.reshape(N, D).astype(float), np.asarray(p0, dtype=float).reshape(N, D)
        T = np.zeros((N, 2 * D, K + m))  # d(x, p) / d(tau, p_0) per sequence
        T[:, D:, K:] = np.eye(m).reshape(N, D, m)
        g, dg = np.empty(K), np.zeros((K, K + m))
        with np.errstate(all="ignore"):
            for k, b in enumerate(self.pattern()):
                F, J, _ = _derivatives(self.blocks[b], x, self.X.shape)
                g[k] = tau[k] - float(np.sum(p * F))
                dg[k] = -(np.einsum("Na,Nac->c", np.einsum("Nia,Ni->Na", J, p), T[:, :D])
                          + np.einsum("Na,Nac->c", F, T[:, D:]))
                dg[k, k] += 1.0
                x, p, W = self._flow(self.blocks[b], x, p, float(tau[k]), T)
                T = W[..., :-1]
                T[..., k] += W[..., -1]
        return x.ravel(), g, np.concatenate([T[:, :D].reshape(m, K + m), dg], axis=0)

    def _flow(self, block: Block, x: np.ndarray, p: np.ndarray, tau: float, T: np.ndarray | None):
        """RK4 of the Hamiltonian flow for time tau; with tangents T (N, 2D, c), returns the
        tangents of the end with one more column, d(x, p) / d tau."""
        N, D = x.shape
        h = tau / self.substeps
        z = np.concatenate([x, p], axis=1)
        W = dh = None
        if T is not None:  # one more tangent column, d / d tau: the step h = tau / substeps moves with it
            W = np.concatenate([T, np.zeros((N, 2 * D, 1))], axis=2)
            dh = np.zeros(W.shape[2])
            dh[-1] = 1.0 / self.substeps
        for _ in range(self.substeps):
            ks, dks = [], []
            zi, dzi = z, W
            for c in (0.5, 0.5, 1.0, None):
                f, A = self._field(block, zi, W is not None)
                ks.append(f)
                if W is not None:
                    dks.append(np.einsum("Nab,Nbc->Nac", A, dzi))
                if c is None:
                    break
                zi = z + c * h * f
                if W is not None:
                    dzi = W + c * h * dks[-1] + c * f[:, :, None] * dh
            incr = ks[0] + 2 * ks[1] + 2 * ks[2] + ks[3]
            z = z + h / 6 * incr
            if W is not None:
                W = W + h / 6 * (dks[0] + 2 * dks[1] + 2 * dks[2] + dks[3]) + incr[:, :, None] * dh / 6
        return z[:, :D], z[:, D:], W

    def _field(self, block: Block, z: np.ndarray, with_jacobian: bool):
        """The Hamiltonian field (F(x), -J^T p) at z = (x, p) (N, 2D) and its Jacobian (N, 2D, 2D)."""
        N, D2 = z.shape
        D = D2 // 2
        x, p = z[:, :D], z[:, D:]
        if not with_jacobian:
            F, J = field_and_jacobian(block, x.reshape(self.X.shape))
            return np.concatenate([F.reshape(N, D), -np.einsum("Nia,Ni->Na", J, p)], axis=1), None
        F, J, H = _derivatives(block, x, self.X.shape)
        f = np.concatenate([F, -np.einsum("Nia,Ni->Na", J, p)], axis=1)
        A = np.zeros((N, D2, D2))
        A[:, :D, :D] = J
        A[:, D:, :D] = -np.einsum("Ni,Niab->Nab", p, H)
        A[:, D:, D:] = -np.swapaxes(J, 1, 2)
        return f, A


@dataclass
class Path:
    """What a continuation did: ``s`` reached (1.0: the targets), the durations and p_0 there
    (None if it did not get there), corrector steps, folds passed, why it stopped, and per
    accepted point: s, the condition number of the Jacobian of the embedded system, the energy
    1/2 |tau|^2, the smallest token separation within a sequence and the smallest and largest
    token norms at the blocks' ends."""

    s: float = 0.0
    taus: np.ndarray | None = None
    p0: np.ndarray | None = None
    newton_steps: int = 0
    folds: int = 0
    stop: str = ""
    points: list[dict[str, float]] = field(default_factory=list)


def continuation(shot: Costate, Y: np.ndarray, tau_start: np.ndarray, *, tol: float = 1e-9, step: float = 0.1,
                 min_step: float = 1e-6, deadline: float = math.inf) -> Path:
    """Track (x_K, g)(tau, p_0) = (Y_0 + s (Y - Y_0), (1 - s) tau_start) from (tau_start, 0, 0)
    to s = 1, where g = 0 is the costate recursion (module docstring); ``tol`` on the residual
    relative to |Y - Y_0| + |tau_start|."""
    path = Path()
    K, m = shot.steps, shot.m
    u = np.concatenate([np.asarray(tau_start, dtype=float), np.zeros(m), [0.0]])
    x0, g0, _ = shot.embedded(u[:K], u[K:-1])
    if not np.isfinite(x0).all():
        path.stop = "the start overflowed"
        return path
    base = np.concatenate([x0, g0])
    direction = np.concatenate([Y.ravel() - x0, -g0])  # the targets' move per unit s

    def system(v: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        x, g, J = shot.embedded(v[:K], v[K:-1])
        r = np.concatenate([x, g]) - base - v[-1] * direction
        return r, np.concatenate([J, -direction[:, None]], axis=1)

    scale = float(np.linalg.norm(direction))
    r, A = system(u)
    t = _tangent(A, None)
    if t is None:
        path.stop = "singular at the start"
        return path
    while time.perf_counter() < deadline and u[-1] < 1.0:
        if step < min_step:
            path.stop = f"step below {min_step:g}"
            break
        v, A_v, ok, iters = _correct(system, u + step * t, t, tol * scale, deadline)
        path.newton_steps += iters
        t_new = _tangent(A_v, t) if ok else None
        if t_new is None:
            step /= 2
            continue
        path.folds += int(np.sign(t_new[-1]) != np.sign(t[-1]))
        u, t = v, t_new
        path.s = float(u[-1])
        path.points.append(_diagnostics(shot, u[:K], A_v[:, :-1], path.s))
        if iters <= 2:
            step *= 1.5
    else:
        path.stop = "deadline" if u[-1] < 1.0 else ""
    if u[-1] >= 1.0:  # land on s = 1: Newton with s fixed
        v, ok, iters = _land(system, u, tol * scale, deadline)
        path.newton_steps += iters
        path.stop = "reached the targets" if ok else "Newton at s = 1 did not converge"
        if ok:
            path.s, path.taus, path.p0 = 1.0, v[:K], v[K:-1]
    return path


def furthest(paths: Sequence[Path]) -> str:
    """The path that got furthest in s, as a clause: s, and along it the largest condition
    number, the largest energy, the smallest token separation and the token norms' range."""
    best = max((p for p in paths if p.points), key=lambda p: p.s, default=None)
    if best is None:
        return ""
    pts = best.points
    return (f"; furthest s = {best.s:.3g}: condition number up to {max(q['cond'] for q in pts):.2g}, energy up to "
            f"{max(q['energy'] for q in pts):.3g}, token separation down to {min(q['min_separation'] for q in pts):.2g}, "
            f"token norms {min(q['min_norm'] for q in pts):.2g} to {max(q['max_norm'] for q in pts):.2g}")


def _tangent(A: np.ndarray, previous: np.ndarray | None) -> np.ndarray | None:
    """Unit null vector of A (k x (k + 1)), oriented along ``previous`` (or s increasing)."""
    if not np.isfinite(A).all():
        return None
    Q, _ = np.linalg.qr(A.T, mode="complete")
    t = Q[:, -1]
    ref = previous if previous is not None else np.eye(len(t))[-1]
    return -t if t @ ref < 0 else t


def _correct(system, guess: np.ndarray, t: np.ndarray, tol: float, deadline: float, max_iter: int = 6):
    """Newton on system(u) = 0, t . (u - guess) = 0 from u = guess: (u, Jacobian, converged, steps)."""
    u = guess.copy()
    for it in range(max_iter + 1):
        r, A = system(u)
        if not (np.isfinite(r).all() and np.isfinite(A).all()) or time.perf_counter() > deadline:
            return u, A, False, it
        if np.linalg.norm(r) <= tol:
            return u, A, True, it
        if it == max_iter:
            break
        try:
            u = u + np.linalg.solve(np.concatenate([A, t[None]]), -np.concatenate([r, [t @ (u - guess)]]))
        except np.linalg.LinAlgError:
            break
    return u, A, False, max_iter


def _land(system, u: np.ndarray, tol: float, deadline: float, max_iter: int = 12):
    """Newton (least-squares steps) on system(u) = 0 with s = u[-1] set to 1."""
    u = u.copy()
    u[-1] = 1.0
    for it in range(max_iter + 1):
        r, A = system(u)
        if not np.isfinite(r).all() or time.perf_counter() > deadline:
            return u, False, it
        if np.linalg.norm(r) <= tol:
            return u, True, it
        u[:-1] -= np.linalg.lstsq(A[:, :-1], r, rcond=None)[0]
    return u, False, max_iter


def _diagnostics(shot: Costate, taus: np.ndarray, J: np.ndarray, s: float) -> dict[str, float]:
    """Conditioning, energy and the states' spread at an accepted point (re-flows the states)."""
    sv = np.linalg.svd(J, compute_uv=False)
    seps, norms = [], []
    Z = shot.X
    for b, tau in zip(shot.pattern(), taus, strict=True):
        Z = integrate_batch(shot.blocks, [b], np.array([[tau]]), Z[None], substeps=shot.substeps).end[0]
        dist = np.linalg.norm(Z[:, :, None, :] - Z[:, None, :, :], axis=-1) + np.diag(np.full(Z.shape[1], np.inf))
        seps.append(float(dist.min()))
        norms.append(np.linalg.norm(Z, axis=-1).ravel())
    norms = np.concatenate(norms)
    return {"s": float(s), "cond": float(sv[0] / sv[-1]) if sv[-1] > 0 else math.inf,
            "energy": float(0.5 * taus @ taus), "min_separation": min(seps),
            "min_norm": float(norms.min()), "max_norm": float(norms.max())}


# Design constants (issue 42, docs/solver-reach.md): blocks per unknown, RK4 steps per block,
# the range of the starts' durations, and the share of the time budget one start may take.
STEPS_PER_DIM = 2
SUBSTEPS = 4
START_SCALE = 0.5
START_SHARE = 1 / 3


@dataclass
class Search:
    """What :func:`search` did: the finish of the first path that reached the targets (or
    None), the starts, their paths, and the fits lost in the finish by stage."""

    found: Finished | None = None
    starts: int = 0
    keys: list[list[int]] = field(default_factory=list)
    paths: list[Path] = field(default_factory=list)
    lost: dict[str, int] = field(default_factory=dict)
    jacobians: int = 0


def search(blocks: Sequence[Block], X: np.ndarray, Y: np.ndarray, tol: float, seed: int, deadline: float,
           acceleration: float = 0.75) -> Search:
    """Continuations from random durations (uniform in [-START_SCALE, START_SCALE], from
    ``default_rng([seed, start, 42])``) until one reaches the targets and the finish
    (:func:`verify.search.finish.finish_control`: finer RK4 steps, exact flows) turns its control
    into one within ``tol``, or the deadline."""
    K = max(2, round(STEPS_PER_DIM * X.size))
    shot = Costate(blocks, X, K, SUBSTEPS)
    shoot = Shooting(blocks, X, Y, 1, K, SUBSTEPS, "rk4")
    out = Search()
    t0 = time.perf_counter()
    while time.perf_counter() < deadline:
        key = [seed, out.starts, 42]
        out.keys.append(key)
        out.starts += 1
        tau0 = np.random.default_rng(key).uniform(-START_SCALE, START_SCALE, K)
        budget = START_SHARE * (deadline - t0)
        path = continuation(shot, Y, tau0, deadline=min(deadline, time.perf_counter() + budget))
        out.paths.append(path)
        out.jacobians += path.newton_steps
        if path.taus is None:
            continue
        fin = finish_control(shoot, path.taus, tol, acceleration=acceleration, deadline=deadline)
        out.jacobians += fin.jacobians
        if fin.lost:
            out.lost[fin.lost] = out.lost.get(fin.lost, 0) + 1
            continue
        out.found = fin
        break
    return out
