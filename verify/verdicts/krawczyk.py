"""The Krawczyk-type test that exact step sizes (networks,
:func:`verify.verdicts.exact_steps.certify_network`) or durations (controls,
:func:`verify.verdicts.exact_durations.certify_control`) that map the inputs exactly onto the
targets exist in an explicit box.

Fix all layers (or steps) but a set S of m = N n d "free" ones (chosen by pivoted QR on the
derivative of the end point with respect to them, :func:`best_columns`, so that the square
derivative is as well conditioned as the network or control allows), and let

    G(h_S) = network(X; h_S, fixed steps) - Y        (R^m -> R^m),

or the flow's end point likewise.  The enclosure carries, step by step, a first-order Taylor
model of the end point in the free parameters over the whole box B = c + [-r, r]^m:
G(c + s) in G(c) + A s + E for every s, with A exact (the derivative at the centre, at the
working precision) and E balls and generators (a zonotope) that hold the rounding, the
remainders and everything of second order in r (:func:`verify.verdicts.enclosure.enclose_flow`,
:func:`verify.verdicts.enclosure.enclose_network_set`: Lohner sets, which follow the map
instead of wrapping).  With R a floating-point inverse of A, if

    K = -R (G(c) + E) + (I - R A) [-r, r]^m

lies in the interior of [-r, r]^m, then s -> s - R G(c + s) maps the box into itself, so it
has a fixed point (Brouwer), and since |I - R A| < 1 (row sums) R is invertible: G = 0 there.
At least one exact solution lies in B; uniqueness is not claimed (it would need the derivative
over B).  Otherwise nothing is claimed.  The box is centred on free steps or durations
refined by Newton's method at high precision, so that it can be as small as the enclosure's
own width allows (``distance`` says how far it reaches from those written).

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> from verify.model.network import apply
>>> blocks, X = gaussian_blocks(seed=5, d=1), np.array([[[0.7], [-0.2]]])
>>> steps = [(1, 0.3), (0, -0.25), (1, 0.2), (0, 0.35)]
>>> Y = apply(blocks, steps, X, dps=40).end.astype(float)       # a target in binary64
>>> box = enclosure.enclose_network(blocks, steps, X, 30, free=[1, 2], radius=1e-10)
>>> bounds(box, Y, 1e-10).proves(1e-10)                         # an exact zero in the box
True
>>> away = [(1, 0.3), (0, -0.25 + 1e-6), (1, 0.2), (0, 0.35)]   # the box moved by 1e-6
>>> bounds(enclosure.enclose_network(blocks, away, X, 30, free=[1, 2], radius=1e-10), Y, 1e-10).proves(1e-10)
False
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from verify.lie.pivoting import select_columns
from verify.model import float_balls as fball
from verify.model.backend import namespace, round_up, to_arb
from verify.verdicts import enclosure
from verify.verdicts.lohner import row_sums

RADIUS_FACTOR = 4  # a control's box: 4 |R G(c)|, so K(B) fits when I - R G'(B) contracts by 3/4; G' widens with r


def best_columns(D: np.ndarray, m: int) -> list[int]:
    """The m columns of D (derivatives of the end point with respect to steps or durations)
    that are the best conditioned: pivoted QR on the columns scaled to unit norm, the same on
    every machine (:func:`verify.lie.pivoting.select_columns`)."""
    return select_columns(D / np.maximum(np.linalg.norm(D, axis=0), 1e-300), m)


def _approximate_inverse(A: Any) -> Any:
    """An approximate inverse of the midpoints of the Arb matrix A at the working precision (as
    an Arb matrix of exact numbers), or None where they are singular there.  A float64 inverse
    is useless beyond a condition number of 1e16, which networks of hundreds of layers reach;
    the test then needs no more than that R be approximate."""
    import flint

    m = A.nrows()
    try:
        R = A.mid().solve(flint.arb_mat(m, m, [int(i == j) for i in range(m) for j in range(m)]), algorithm="approx")
    except ZeroDivisionError:
        return None
    return R if all(R[i, j].is_finite() for i in range(m) for j in range(m)) else None


@dataclass(frozen=True)
class Bounds:
    """What the test found over the box c + [-r, r]^m: ``inverse`` R (an Arb matrix of exact
    numbers, an approximate inverse of the slope), upper bounds of the Newton step
    |R (G(c) + E)| (``newton``), of sup |K(B) - c| (``reach``) and of the row sums of
    |I - R A| (``contraction``); :meth:`proves` says whether K(B) lies inside the box."""

    inverse: Any
    newton: float
    reach: float
    contraction: float

    def proves(self, r: float) -> bool:
        """K(B) inside B = c + [-r, r]^m, so an exact zero lies in B (module docstring)."""
        return self.reach < r and self.contraction < 1


def bounds(enc: enclosure.Enclosure, Y: Any, r: float) -> Bounds | None:
    """The Krawczyk-type test of the Taylor model ``centre`` + ``slope`` sigma + ``rest`` +
    ``generators`` epsilon of an enclosure against the targets Y over sigma in [-r, r]^m, at the
    working precision (module docstring), or None where the slope is singular there."""
    import flint

    A = flint.arb_mat(enc.slope.tolist())
    R = _approximate_inverse(A)
    if R is None:
        return None
    G = (enc.centre + enc.rest).ravel() - namespace("arb").asarray(Y).ravel()
    spread = _spread(R, enc.generators)
    RG = R * flint.arb_mat([[g] for g in G]) + flint.arb_mat([[flint.arb(0, v)] for v in spread])
    newton = max(round_up(abs(RG[i, 0]).upper()) for i in range(RG.nrows()))
    reach, contraction = _krawczyk(R, RG, A, r)
    return Bounds(inverse=R, newton=newton, reach=reach, contraction=contraction)


def _spread(R: Any, G: np.ndarray) -> np.ndarray:
    """Upper bounds of sum_j |(R G)_ij| (R an Arb matrix m x m, G the enclosure's generators
    (N, nd, g), sequence s's rows in columns s nd .. (s + 1) nd of R), in float balls: how far
    R G epsilon reaches for epsilon in [-1, 1]^(N, g), transported by R as a zonotope instead
    of as the box of G's hull."""
    m = R.nrows()
    N, nd, _ = G.shape
    Rb = fball.from_arb(np.array([[R[i, j] for j in range(m)] for i in range(m)], dtype=object))
    with np.errstate(all="ignore"):  # an overflow gives a bound that is not finite, which stands for none
        moved = [fball.matmul(Rb[:, s * nd:(s + 1) * nd], fball.Balls(G[s])) for s in range(N)]
        return row_sums(np.concatenate([np.abs(v.m) + v.r for v in moved], axis=-1))  # one sum, rounded up once


def farthest(centre: Sequence[Any], written: Sequence[Any]) -> float:
    """A float at or above max_k |centre_k - written_k| (floats or decimal strings, exact in
    Arb at the working precision): the largest by upper ends, as Python's max over balls that
    overlap keeps the first and may understate it."""
    return round_up(max((abs(to_arb(a) - to_arb(b))).upper() for a, b in zip(centre, written, strict=True)))


def _krawczyk(R: Any, RG: Any, J: Any, r: float) -> tuple[float, float]:
    """Upper bounds of sup |K(B) - c| = |-R G(c) + (I - R J(B)) [-r, r]^m| (the largest
    component) and of the row sums of |I - R J(B)|, from Arb matrices R, R G(c) (m x 1) and
    J(B); K(B) lies inside B when the first is below r.  Both are rounded up to floats (float()
    of an Arb endpoint rounds to nearest, which may fall below it and pass the test by half a
    unit in the last place)."""
    import flint

    m = J.nrows()
    E = flint.arb_mat(m, m, [int(i == j) for i in range(m) for j in range(m)]) - R * J
    unit = flint.arb(0, r)
    reach = max(round_up(abs(-RG[i, 0] + sum((E[i, j] * unit for j in range(m)), flint.arb(0))).upper()) for i in range(m))
    contraction = max(round_up(sum((abs(E[i, j]) for j in range(m)), flint.arb(0)).upper()) for i in range(m))
    return reach, contraction
