"""Lohner's representation of a set of states, which follows the flow instead of wrapping,
with an exact affine part in free parameters.

A set of collections X (shape (N, n, d), flattened to (N, n d)) is held sequence by sequence as

    x_s  in  c_s + A_s sigma + G_s epsilon_s + B_s r_s,     s = 1..N,   sigma in [-rho, rho]^m,
                                                             epsilon_s in [-1, 1]^g,

with c_s exact points of R^(n d) (Arb midpoints at the working precision), A_s an exact
n d x m matrix at the working precision (the *slope*: how the states move with m parameters
sigma shared by all sequences, such as free durations or free steps), G_s an n d x g float64
matrix (the *generators*: a zonotope that holds the errors each step made, each moved by the
maps since), B_s an exact invertible float64 n d x n d matrix and r_s Arb balls.  For every
sigma in the cube there are epsilon_s and r_s in theirs (the set is a superset of the states,
not a parametrisation of them: only A sigma is exact in sigma).

The image of the set under a map whose mean-value form over the set is y in z + J (x - c)
(z: balls enclosing the map at c plus its remainder; J: balls enclosing the map's Jacobian over
the set) is again such a set (Lohner 1987; the C^0 Lohner algorithm of CAPD, with the
parameters kept apart as in a first-order Taylor model, and the errors as in a zonotope):

    A'  = mid (J A),                                   the slope, exact at the working precision,
    G'  = fl(mid J G),                                 the generators moved, in float64 balls,
    z'' = z + (J A - A') [-rho, rho]^m + (J G - G') [-1, 1]^g     what the roundings and J's width leave,
    c'  = mid z'' (Arb's),     M = J B,
    r'  = (B'^(-1) M) r,       and diag |z'' - c'| appended to G' as n d new generators,

with B'^(-1) enclosed by Arb.  Every step encloses: x - c = A sigma + G epsilon + B r, so
J (x - c) lies in A' sigma + G' epsilon + (the balls z'' - z) + M r, and M r = B' (B'^(-1) M) r.
While r is exactly 0 (inputs that are floats: every error is a generator), B r = 0 whatever B,
and the basis is kept as it is (choosing it, with two enclosed inverses, was most of a
step's image at N n d = 32).
A box (evaluating J (x - c) on the box of x) multiplies the widths by |J| each step, and over
many steps by the product of the |J|s rather than by |product J| (the wrapping effect, a factor
3e3 to 5e3 measured on 57-step controls where the flow's Jacobian stays below 2).  The basis
B' is, for each sequence, the narrower of two (:meth:`LohnerSet.image`): the Q of the QR
factorisation of mid M with its columns in decreasing order of |mid M_j| max rad r_j (Lohner's
choice, which keeps B' orthogonal but still wraps the triangular factor: 3e3 times the true
width after 600 steps of an N n d = 18 control, docs/verdicts.md), and mid M itself (the
parallelepiped, which follows the flow exactly while its condition stays moderate).  Each
step's own errors went into r too, until issue 66 measured what that cost: on c18c's
existence box (r = 1.4e-9) the Newton step |R (G(c) + E)| was 9.1e-5 so, against 2.2e-7 with
every step's errors moved as generators, which no basis wraps (the sum over the steps of
|R P_k| e_k, P_k the maps since step k, gave 2.6e-7).  Beyond GENERATORS per sequence, the
smallest half merge into n d generators along their own singular vectors (:func:`_merged`),
which keep following the flow: 3.4e-7 with 1024 kept, 1.7e-5 with 256 (the merges compound),
and 8.4e-5 when 512 kept put the rest into r.  The slope's rounding adds only |rad (J A)| rho per
step: second order in the set's width and rho.  (A slope kept in float64 added 1e-16 |J A| rho
per step instead, first order in rho: through the 384 layers of an m = 64 network whose |R|
times its amplification is about 1e12 that alone put K(B) at 5000 radii, at any digits.)  The
generators' own float64 rounding is relative to the errors they hold, not to the states.

>>> import flint, numpy as np
>>> rot = np.array([[0.8, -0.6], [0.6, 0.8]])
>>> s = LohnerSet.around(np.array([[flint.arb(1, 1e-10), flint.arb(0, 1e-10)]], dtype=object))  # (N, n d) = (1, 2)
>>> J = np.array([[[flint.arb(v) for v in row] for row in rot]], dtype=object)
>>> for _ in range(100):  # a rotation: a box would grow by 1.4 per step, 4e14 in all
...     s = s.image(np.matmul(J, s.centre[..., None])[..., 0], J)
>>> bool(s.width() < 1e-9)
True
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from verify.model.backend import midpoints as mid  # floats, rounded to nearest: not enclosures
from verify.model.backend import round_up
from verify.model.float_balls import ETA, Balls, U, from_arb, matmul, up


def exact(a: np.ndarray) -> np.ndarray:
    """Floats as exact balls."""
    import flint

    return np.vectorize(flint.arb, otypes=[object])(a)


def midpoints(a: np.ndarray) -> np.ndarray:
    """The balls' midpoints as exact balls, at the working precision (not rounded to float64:
    a centre rounded to float64 would add 1e-16 of the state to the set's width every step)."""
    import flint

    return np.vectorize(lambda z: flint.arb(z.mid()), otypes=[object])(a)


def _inverse(Q: np.ndarray) -> np.ndarray:
    """An enclosure of Q^(-1) for a float matrix Q (Arb's rigorous solve)."""
    import flint

    inv = flint.arb_mat(Q.tolist()).inv()
    return np.array([[inv[i, j] for j in range(inv.ncols())] for i in range(inv.nrows())], dtype=object)


def _times_cube(A: np.ndarray, rho: float) -> np.ndarray:
    """The balls A [-rho, rho]^m (A: (..., m) balls or floats): rho sum_j |A_j|, exactly enclosed."""
    import flint

    if A.shape[-1] == 0:
        return np.vectorize(lambda _: flint.arb(0), otypes=[object])(np.empty(A.shape[:-1]))
    size = np.vectorize(lambda z: abs(flint.arb(z)), otypes=[object])(A).sum(axis=-1)
    return np.vectorize(lambda z: flint.arb(0, (z * rho).upper()), otypes=[object])(size)


MAX_CONDITION = 100.0  # a parallelepiped basis is tried only this well conditioned: what a step adds grows at most 100x
GENERATORS = 1024  # a sequence's generators beyond this: the smallest half merge into nd (c18c: docs/verdicts.md)


def row_sums(G: np.ndarray) -> np.ndarray:
    """Upper bounds of sum_j |G_j| over the last axis, not finite where G is not: g terms summed,
    g - 1 roundings on a path, and one more allowed for each term's own (a sum |m| + r of
    float balls, as the Krawczyk test's reach is), :func:`verify.model.float_balls.up`."""
    total = up(np.sum(np.abs(G), axis=-1), G.shape[-1])
    return np.where(np.isfinite(total), total, np.inf)


def _as_generators(e: np.ndarray) -> np.ndarray:
    """Balls e (N, nd) around 0 as generators (N, nd, nd): diag(|e|'s upper ends), so that
    e lies in G [-1, 1]^nd."""
    size = np.vectorize(lambda z: round_up(abs(z).upper()) if z.is_finite() else np.inf, otypes=[float])(e)
    return size[..., None] * np.eye(e.shape[-1])


def _balls(radii: np.ndarray) -> np.ndarray:
    """Floats r >= 0 as the Arb balls [-r, r]."""
    import flint

    return np.vectorize(lambda v: flint.arb(0, v), otypes=[object])(radii)


def _merged(G: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A basis Q (floats, nd x nd) and h >= 0 with G [-1, 1]^k inside Q diag(h) [-1, 1]^nd, for
    generators G (nd, k): Q the left singular vectors of G (the identity where LAPACK finds
    none), h >= sum_j |Q^(-1) G_j| with Q^(-1) enclosed (not finite where G is not).  Kept as
    generators, Q diag(h) keeps following the flow; put into Lohner's box, they wrapped again
    (module docstring)."""
    nd = G.shape[0]
    try:
        Q = np.linalg.svd(G, full_matrices=True)[0]
    except np.linalg.LinAlgError:  # G not finite, or LAPACK's iteration did not converge: any basis holds them
        Q = np.eye(nd)
    Q = Q if np.all(np.isfinite(Q)) else np.eye(nd)
    with np.errstate(all="ignore"):  # an overflow gives an h that is not finite, which stands for no bound
        C = matmul(from_arb(_inverse(Q)), Balls(G))
        h = up(np.sum(np.abs(C.m) + C.r, axis=-1), 2 * G.shape[-1] + 2)
    return Q, np.where(np.isfinite(h), h, np.inf)


def _scaled(Q: np.ndarray, h: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The float64 product Q diag(h) and, per row, an upper bound of sum_i |fl(Q_ji h_i) - Q_ji h_i|
    (each product rounds by u of itself and, underflowing, by eta / 2)."""
    with np.errstate(all="ignore"):
        G = Q * h
        return G, up(U * np.sum(np.abs(G), axis=-1), G.shape[-1] + 2) + G.shape[-1] * ETA


@dataclass(frozen=True)
class LohnerSet:
    """``centre`` (N, nd) exact balls c, ``slope`` (N, nd, m) exact balls A, ``radius`` rho,
    ``basis`` (N, nd, nd) floats B, ``coords`` (N, nd) balls r, ``generators`` (N, nd, g)
    floats G (module docstring)."""

    centre: np.ndarray
    slope: np.ndarray
    radius: float
    basis: np.ndarray
    coords: np.ndarray
    generators: np.ndarray

    @classmethod
    def around(cls, X: np.ndarray, parameters: int = 0, radius: float = 0.0) -> LohnerSet:
        """The balls X (N, nd) as a set with B = I, c = mid X, r = X - c, no generators, and
        ``parameters`` free parameters in [-radius, radius] on which it does not depend yet (A = 0)."""
        N, nd = X.shape
        centre = midpoints(X)
        eye = np.broadcast_to(np.eye(nd), (N, nd, nd)).copy()
        return cls(centre=centre, slope=exact(np.zeros((N, nd, parameters))), radius=float(radius), basis=eye,
                   coords=X - centre, generators=np.zeros((N, nd, 0)))

    def rest(self) -> np.ndarray:
        """The balls of B r + G [-1, 1]^g (N, nd): what the set adds to c + A sigma."""
        return self.boxed() + _balls(row_sums(self.generators))

    def boxed(self) -> np.ndarray:
        """The balls of B r (N, nd): the part of the rest held in Lohner's box."""
        return np.matmul(exact(self.basis), self.coords[..., None])[..., 0]

    def box(self) -> np.ndarray:
        """The balls of c + A sigma + B r + G [-1, 1]^g (N, nd): the set's enclosing box."""
        return self.centre + _times_cube(self.slope, self.radius) + self.rest()

    def width(self) -> float:
        """The largest radius of the enclosing box."""
        return max(float(z.rad()) for z in self.box().ravel())

    def r_zero(self) -> bool:
        """Whether r is exactly 0 (inputs that are floats, every error a generator)."""
        return all(v.is_zero() for v in self.coords.ravel())

    def image(self, z: np.ndarray, J: Any) -> LohnerSet:
        """The set {z + J (x - c)}: z (N, nd) balls, J (N, nd, nd) balls (module docstring):
        Arb's, or float balls where they multiply only generators (no slope, r = 0); each
        sequence keeps the narrower of its two candidate bases for r, and what z adds around
        its midpoint becomes nd new generators."""
        if isinstance(J, Balls) and (self.slope.shape[-1] or not self.r_zero()):
            J = J.in_arb()  # sound, but a float J's width is first order in rho on the slope: callers pass Arb's
        slope = self.slope
        if slope.shape[-1]:
            JA = np.matmul(J, slope)
            slope = midpoints(JA)
            z = z + _times_cube(JA - slope, self.radius)
        moved = matmul(J, Balls(self.generators))  # J G in float balls: its rounding and J's width into z
        z = z + _balls(row_sums(moved.r))
        centre = midpoints(z)
        if self.r_zero():  # B r = 0 whatever B
            held = replace(self, centre=centre, slope=slope, generators=moved.m)
            return held.with_generators(_as_generators(z - centre))
        M = np.matmul(J, exact(self.basis))
        A = mid(M)
        radii = np.vectorize(lambda v: float(v.rad()), otypes=[float])(self.coords)
        basis, coords = np.empty_like(A), np.empty_like(self.coords)
        for s in range(A.shape[0]):
            order = np.argsort(-np.linalg.norm(A[s], axis=0) * radii[s], kind="stable")
            best = None
            for B in (np.linalg.qr(A[s][:, order])[0], A[s]):
                if not np.linalg.cond(B) < MAX_CONDITION:
                    continue
                inv = _inverse(B)
                # (B'^(-1) M) first, then times r: the product the other way round would wrap again
                r = np.matmul(np.matmul(inv, M[s]), self.coords[s])
                width = max(float(v.rad()) for v in np.matmul(exact(B), r))
                if best is None or width < best[0]:
                    best = (width, B, r)
            _, basis[s], coords[s] = best
        held = LohnerSet(centre=centre, slope=slope, radius=self.radius, basis=basis, coords=coords,
                         generators=moved.m)
        return held.with_generators(_as_generators(z - centre))

    def with_generators(self, G: np.ndarray) -> LohnerSet:
        """The set with the generators G (N, nd, k) added; beyond GENERATORS per sequence, the
        smallest half (by their largest entry) merge into nd (:func:`_merged`), and the float
        product of that merge's rounding into nd more (diagonal)."""
        G = np.concatenate([self.generators, G[..., np.any(G != 0, axis=(0, 1))]], axis=-1)
        if G.shape[-1] <= GENERATORS:
            return replace(self, generators=G)
        order = np.argsort(-np.max(np.abs(G), axis=1), axis=-1, kind="stable")  # largest first, per sequence
        kept = np.take_along_axis(G, np.sort(order[:, None, : GENERATORS // 2], axis=-1), axis=-1)
        small = np.take_along_axis(G, order[:, None, GENERATORS // 2:], axis=-1)
        merged, left = zip(*(_scaled(*_merged(g)) for g in small), strict=True)
        rounded = np.array(left)[..., None] * np.eye(G.shape[1])  # the product Q diag(h)'s rounding: nd more
        return replace(self, generators=np.concatenate([kept, np.array(merged), rounded], axis=-1))

    def plus(self, z: np.ndarray) -> LohnerSet:
        """The set {x + z}: balls z (N, nd) added, their midpoints to the centre (c' = mid(c + z))
        and the rest as new generators.  Kept in r, a decimal duration's rest moved the centre
        off the trajectory (1.5e-11 after c18a's 180 steps), and the Jacobian over that offset
        widened every later step."""
        moved = self.centre + z
        centre = midpoints(moved)
        return replace(self, centre=centre).with_generators(_as_generators(moved - centre))

    def plus_slope(self, j: int, v: np.ndarray) -> LohnerSet:
        """The set {x + sigma_j v}: balls v (N, nd) added to column j of the slope (its midpoint
        exactly, the rest times [-rho, rho] as generators)."""
        slope = self.slope.copy()
        slope[:, :, j] = midpoints(self.slope[:, :, j] + v)
        left = self.slope[:, :, j] + v - slope[:, :, j]
        return replace(self, slope=slope).plus(_times_cube(left[..., None], self.radius))
