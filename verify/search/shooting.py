"""Multiple shooting: the interpolation problem split into segments with free intermediate states.

One *member* holds S segments of Ls steps each (the alternating pattern 0, 1, 0, ... of step
sizes or durations ``h_s``) and the S - 1 intermediate collections W_1, ..., W_{S-1}.  With
W_0 = X, W_S = Y and Phi_s the end-point map of segment s (a network, the RK4 surrogate of a
control's flow, or the exact flow), the residual and its exact Jacobian are

    r = (Phi_1(W_0) - W_1, ..., Phi_S(W_{S-1}) - W_S)                  in R^(S m),
    dr_s / dh_s = dPhi_s / dh_s,   dr_s / dW_(s-1) = dPhi_s / dX_0,   dr_s / dW_s = -I.

A zero residual chains the segments into one control from X to Y.  Each segment composes 1/S
of the maps a single control would, so the fit is far less nonlinear: on Gaussian instances
with m = 8 (finite depth, 80 layers) single Levenberg-Marquardt starts succeeded 2 times in
20, two-segment starts 8 times in 12 (issue 4 notes).  S = 1 is plain single shooting.

:func:`shooting_solver` solves the damped normal equations of many members at once, block by
block; :mod:`verify.search.population` runs them in lock step.

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> blocks = gaussian_blocks(0, 2)
>>> X, Y = np.random.default_rng(1).normal(size=(2, 1, 2, 2))
>>> shoot = Shooting(blocks, X, Y, segments=2, steps=4)
>>> x = shoot.fresh(np.random.default_rng(0), 0.5)
>>> r, J = shoot.system(x[None], sensitivities=True)
>>> r.shape, J.shape, shoot.unknowns
((1, 8), (1, 8, 12), 12)
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from verify.model.blocks import Block
from verify.model.flow_batch import flow_batch
from verify.model.network import apply_batch, curvature_batch
from verify.model.rk4 import curvature_batch as rk4_curvature_batch
from verify.model.rk4 import integrate_batch
from verify.search.newton import solve_or_nan

START_STATES = ("path", "images")  # how :meth:`Shooting.fresh` places the intermediate states
# Shooting.pseudo_inverse assembles J up to this many entries (32 MB; the solver's default layout
# up to m = 32), where lstsq takes at most a few seconds, and eliminates by blocks beyond.
DENSE_LIMIT = 4_000_000
REFINEMENTS = 2  # sweeps of iterative refinement after the block elimination


@dataclass(frozen=True)
class Shooting:
    """S segments of ``steps`` alternating steps from X to Y, each a network of residual layers
    (``scheme="euler"``) or the RK4 surrogate of a control's flow with ``substeps`` RK4 steps
    per control step (``scheme="rk4"``).  A member is a vector: the S * steps step sizes or
    durations, then W_1, ..., W_{S-1}."""

    blocks: Sequence[Block]
    X: np.ndarray
    Y: np.ndarray
    segments: int
    steps: int
    substeps: int = 1
    scheme: str = "euler"  # or "rk4": the segments are RK4 surrogates of flows (verify.model.rk4)

    @property
    def m(self) -> int:
        return self.X.size

    @property
    def unknowns(self) -> int:
        return self.segments * self.steps + (self.segments - 1) * self.m

    def pattern(self) -> list[int]:
        return [j % 2 for j in range(self.steps)]

    def split(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Step sizes (P, S, steps) and segment starts (P, S, N, n, d) of members x (P, unknowns)."""
        P, S, h = x.shape[0], self.segments, self.segments * self.steps
        W = x[:, h:].reshape((P, S - 1) + self.X.shape)
        starts = np.concatenate([np.broadcast_to(self.X, (P, 1) + self.X.shape), W], axis=1)
        return x[:, :h].reshape(P, S, self.steps), starts

    def controls(self, x: np.ndarray) -> list[list[tuple[int, float]]]:
        """The S segment controls of one member (1-D x)."""
        H, _ = self.split(x[None])
        return [[(b, float(t)) for b, t in zip(self.pattern(), hs, strict=True)] for hs in H[0]]

    def fresh(self, rng: np.random.Generator, scale: float, states: str = "path") -> np.ndarray:
        """A start: step sizes uniform in [-scale, scale] and intermediate states either on the
        straight path, W_s = X + (s / S)(Y - X) (``states="path"``: every segment misses by a
        1/S share of the distance), or the images of W_(s-1) under segment s
        (``states="images"``: only the last segment misses, by the whole distance to Y)."""
        if states not in START_STATES:
            raise ValueError(f"states must be 'path' or 'images', not {states!r}")
        H = rng.uniform(-scale, scale, size=(self.segments, self.steps))
        Ws, Z = [], self.X[None]
        for s in range(1, self.segments):
            if states == "path":
                Z = self.X + (s / self.segments) * (self.Y - self.X)
            else:
                Z = self._network(H[s - 1][None], Z, False)[0]
            Ws.append(Z.ravel())
        return np.concatenate([H.ravel()] + Ws)

    def _network(self, H: np.ndarray, Z: np.ndarray, sensitivities: bool):
        with np.errstate(all="ignore"):  # overflow shows as a non-finite residual, which LM rejects
            if self.scheme == "rk4":
                res = integrate_batch(self.blocks, self.pattern(), H, Z, substeps=self.substeps, sensitivities=sensitivities)
            else:
                res = apply_batch(self.blocks, self.pattern(), H, Z, sensitivities=sensitivities)
        return res.end, res.d_steps, res.d_initial

    def system(self, x: np.ndarray, sensitivities: bool = False, exact_flow: bool = False):
        """Residuals (P, S m) of members x (P, unknowns) and, when asked, Jacobians
        (P, S m, unknowns).  ``exact_flow`` uses the Taylor flow of each segment's control
        instead of the scheme (all segments in lock step, :func:`verify.model.flow_batch.flow_batch`; for polishing)."""
        r, parts = self.parts(x, sensitivities, exact_flow)
        return r, (None if parts is None else self.dense(parts))

    def parts(self, x: np.ndarray, sensitivities: bool = False, exact_flow: bool = False):
        """Residuals (P, S m) and, when asked, the Jacobian's nonzero blocks ``(H, D)``:
        H (P, S, m, steps) = dPhi_s / dh_s, and D (P, S, N, n d, n d) = dPhi_s / dW_s per
        sequence (D[:, 0] is unused: W_0 = X is fixed).  :meth:`dense` assembles J from them and
        :func:`shooting_step` takes the damped step without assembling it."""
        P, S, m = x.shape[0], self.segments, self.m
        H, starts = self.split(x)
        if exact_flow:
            end, dH, dW = self._flows(H, starts, sensitivities)
        else:
            end, dH, dW = self._network(H.reshape(P * S, self.steps), starts.reshape((P * S,) + self.X.shape), sensitivities)
        targets = np.concatenate([starts[:, 1:], np.broadcast_to(self.Y, (P, 1) + self.X.shape)], axis=1)
        r = (end.reshape(targets.shape) - targets).reshape(P, S * m)
        if not sensitivities:
            return r, None
        N, nd = self.X.shape[0], self.X.shape[1] * self.X.shape[2]
        return r, (dH.reshape(P, S, m, self.steps), dW.reshape(P, S, N, nd, nd))

    def curvature(self, x: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Second directional derivatives (P, S m) of the residuals of members x along v (both
        (P, unknowns)): d^2/de^2 Phi_s(W_(s-1) + e dW_(s-1); h_s + e dh_s), exact for the scheme
        (the residual is linear in W_s, so nothing else is curved)."""
        P = x.shape[0]
        H, starts = self.split(x)
        dH, _ = self.split(v)
        d_starts = np.concatenate([np.zeros((P, 1) + self.X.shape), v[:, self.segments * self.steps:].reshape(
            (P, self.segments - 1) + self.X.shape)], axis=1)
        args = (self.blocks, self.pattern(), H.reshape(P * self.segments, self.steps), starts.reshape((-1,) + self.X.shape),
                dH.reshape(P * self.segments, self.steps), d_starts.reshape((-1,) + self.X.shape))
        with np.errstate(all="ignore"):
            if self.scheme == "rk4":
                _, second = rk4_curvature_batch(*args, substeps=self.substeps)
            else:
                _, second = curvature_batch(*args)
        return second.reshape(P, self.segments * self.m)

    def dense(self, parts) -> np.ndarray:
        """The Jacobian (P, S m, unknowns) from :meth:`parts`:

            dr_s / dh_s = H_s,   dr_s / dW_s = D_s (s >= 1),   dr_s / dW_(s+1) = -I (s <= S - 2)."""
        dH, dW = parts
        P, S, m, L = dH.shape
        N, nd = dW.shape[2], dW.shape[3]
        J = np.zeros((P, S * m, self.unknowns))
        h = S * L
        for s in range(S):
            rows = slice(s * m, (s + 1) * m)
            J[:, rows, s * L:(s + 1) * L] = dH[:, s]
            if s > 0:  # d r_s / d W_s: the segment's own initial-state Jacobian, block diagonal
                c = h + (s - 1) * m
                for q in range(N):
                    J[:, s * m + q * nd:s * m + (q + 1) * nd, c + q * nd:c + (q + 1) * nd] = dW[:, s, q]
            if s < S - 1:
                J[:, rows, h + s * m:h + (s + 1) * m] -= np.eye(m)
        return J

    def pseudo_inverse(self, x: np.ndarray, exact_flow: bool = False) -> Callable[[np.ndarray], np.ndarray]:
        """b -> J^+ b for the Jacobian J of member x (1-D): the minimum-norm solution of J dx = b.
        Up to DENSE_LIMIT entries of J, ``lstsq`` on the assembled J (an SVD: exact to
        cond(J) units); beyond, whose lstsq grows like (S m)^3 (at m = 64, J of 4096 x 4416, it
        took 53 s), the undamped block elimination of :func:`shooting_solver` (it works on J J^T,
        so it is exact only to cond(J)^2 units) and two sweeps of iterative refinement with the
        structured product J dx (:func:`jacobian_times`).  A singular J J^T gives a non-finite
        step, which :func:`verify.search.newton.chord` refuses."""
        _, parts = self.parts(np.asarray(x, dtype=float)[None], True, exact_flow)
        if self.segments * self.m * self.unknowns <= DENSE_LIMIT:
            J = self.dense(parts)[0]
            return lambda b: np.linalg.lstsq(J, b, rcond=1e-13)[0]
        solver = shooting_solver(parts, np.zeros(1))

        def solve(b):
            b = np.asarray(b, dtype=float)
            dx = solver(-b[None])[0]
            for _ in range(REFINEMENTS):
                dx = dx + solver(-(b - jacobian_times(parts, dx))[None])[0]
            return dx

        return solve

    def _flows(self, H, starts, sensitivities):
        """The exact flows of the segments' controls, in lock step (:func:`verify.model.flow_batch.flow_batch`)."""
        res = flow_batch(self.blocks, self.pattern(), H.reshape(-1, self.steps), starts.reshape((-1,) + self.X.shape),
                         sensitivities=sensitivities)
        return res.end, res.d_durations, res.d_initial


def shooting_step(parts, r: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """The Levenberg-Marquardt step of :func:`verify.search.newton.damped_step` for a shooting system,
    from the blocks of :meth:`Shooting.parts` without the dense Jacobian: dx = J^T y with

        (J J^T + mu I) y = -r,   mu = lam * (mean squared column norm of J),

    where J J^T is block tridiagonal in the segments (blocks m x m):

        A_ss = H_s H_s^T + D_s D_s^T [s >= 1] + I [s <= S - 2] + mu I,   A_(s+1,s) = -D_(s+1),

    solved by block elimination (S inverses of size m instead of one solve of size S m), and
    dh_s = H_s^T y_s, dW_s = -y_(s-1) + D_s^T y_s.  Batched over members (P, ...); a member
    whose system fails gets a NaN step.  :func:`shooting_solver` keeps the elimination for
    further right-hand sides.

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> from verify.search.newton import damped_step
    >>> X, Y = np.random.default_rng(1).normal(size=(2, 2, 2, 2))
    >>> shoot = Shooting(gaussian_blocks(0, 2), X, Y, segments=3, steps=4)
    >>> x = np.array([shoot.fresh(np.random.default_rng(k), 0.5) for k in range(2)])
    >>> r, parts = shoot.parts(x, sensitivities=True)
    >>> lam = np.array([1e-3, 1.0])
    >>> bool(np.allclose(shooting_step(parts, r, lam), damped_step(shoot.dense(parts), r, lam)))
    True
    """
    return shooting_solver(parts, lam)(r)


def shooting_solver(parts, lam: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    """The map r -> step of :func:`shooting_step` for fixed blocks and damping: the elimination
    (the inverses of the pivot blocks C_s) is done once, so each right-hand side costs only
    matrix-vector products (geodesic acceleration solves the same system twice)."""
    H, D = parts
    P, S, m, L = H.shape
    N, nd = D.shape[2], D.shape[3]
    with np.errstate(all="ignore"):
        D = D.copy()
        D[:, 0] = 0.0  # W_0 = X is no unknown
        unknowns = S * L + (S - 1) * m
        scale = (np.sum(H * H, axis=(1, 2, 3)) + np.sum(D * D, axis=(1, 2, 3, 4)) + (S - 1) * m) / unknowns
        mu = np.asarray(lam * np.where(scale > 0, scale, 1.0))[:, None]
        eye = np.eye(m)
        A = H @ np.swapaxes(H, -1, -2)
        DDt = D @ np.swapaxes(D, -1, -2)  # D_s D_s^T, one n d block per sequence
        for q in range(N):
            A[:, :, q * nd:(q + 1) * nd, q * nd:(q + 1) * nd] += DDt[:, :, q]
        A[:, : S - 1] += eye
        A[..., np.arange(m), np.arange(m)] += mu[:, None, :]
        inv, Z = [None] * S, [None] * S  # Z_s = C_(s-1)^-1 D_s^T, A_(s-1,s) = -D_s^T
        C = A[:, 0]
        for s in range(1, S):  # eliminate block s - 1: A_(s,s-1) = -D_s
            inv[s - 1] = solve_or_nan(C, np.broadcast_to(eye, C.shape))
            Z[s] = _times_block_transpose(inv[s - 1], D[:, s])
            C = A[:, s] - _block_times(D[:, s], Z[s])
        inv[S - 1] = solve_or_nan(C, np.broadcast_to(eye, C.shape))

    def step(r: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            b = -r.reshape(P, S, m, 1)
            z, rhs = [None] * S, b[:, 0]
            for s in range(1, S):
                z[s] = inv[s - 1] @ rhs
                rhs = b[:, s] + _block_times(D[:, s], z[s])
            y = np.empty((P, S, m, 1))
            y[:, S - 1] = inv[S - 1] @ rhs
            for s in range(S - 2, -1, -1):
                y[:, s] = z[s + 1] + Z[s + 1] @ y[:, s + 1]
            dh = np.swapaxes(H, -1, -2) @ y
            dW = -y[:, :-1] + _block_transpose_times(D[:, 1:], y[:, 1:])
        return np.concatenate([dh.reshape(P, S * L), dW.reshape(P, (S - 1) * m)], axis=1)

    return step


def jacobian_times(parts, dx: np.ndarray) -> np.ndarray:
    """J dx (S m,) for one member's blocks ``parts`` (:meth:`Shooting.parts`, a batch of one)
    and dx (unknowns,), without assembling J: r_s picks up H_s dh_s, D_s dW_s (s >= 1) and
    -dW_(s+1) (s <= S - 2)."""
    H, D = parts[0][0], parts[1][0]
    S, m, L = H.shape
    dh, dW = dx[: S * L].reshape(S, L, 1), dx[S * L:].reshape(S - 1, m, 1)
    out = (H @ dh)[..., 0]
    out[1:] += _block_times(D[1:], dW)[..., 0]
    out[:-1] -= dW[..., 0]
    return out.ravel()


# D_s is block diagonal (one n d x n d block per sequence): products with it cost m^2 n d, not m^3.
def _block_times(D: np.ndarray, B: np.ndarray) -> np.ndarray:
    """blockdiag(D) @ B for D (..., N, nd, nd) and B (..., N nd, k)."""
    N, nd = D.shape[-3], D.shape[-1]
    return (D @ B.reshape(B.shape[:-2] + (N, nd, B.shape[-1]))).reshape(B.shape)


def _block_transpose_times(D: np.ndarray, B: np.ndarray) -> np.ndarray:
    """blockdiag(D)^T @ B for D (..., N, nd, nd) and B (..., N nd, k)."""
    return _block_times(np.swapaxes(D, -1, -2), B)


def _times_block_transpose(B: np.ndarray, D: np.ndarray) -> np.ndarray:
    """B @ blockdiag(D)^T for B (..., k, N nd) and D (..., N, nd, nd)."""
    return np.swapaxes(_block_times(D, np.swapaxes(B, -1, -2)), -1, -2)
