"""Exact step sizes of a network: all layers but m = N n d free ones fixed, the free steps
refined by Newton's method at high precision and the Krawczyk-type test
(:mod:`verify.verdicts.krawczyk`) applied to the network's first-order Taylor model in the free
steps, carried layer by layer in a Lohner set
(:func:`verify.verdicts.enclosure.enclose_network_set`).

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> from verify.model.network import apply
>>> blocks = gaussian_blocks(seed=2, d=1)
>>> X = np.array([[[-1.0], [0.5]]])
>>> layers = [(0, 0.4), (1, -0.3), (0, 0.2), (1, 0.5)]
>>> Y = apply(blocks, layers, X, dps=40).end.astype(float)      # a target in binary64
>>> cert = certify_network(blocks, layers, X, Y)
>>> cert["certified"], cert["free_layers"]
(True, [0, 3])
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import mpmath
import numpy as np

from verify.io.errors import IntegrationError
from verify.model.backend import namespace, precision, round_up
from verify.model.blocks import Block
from verify.model.network import apply, apply_in_namespace
from verify.verdicts import enclosure
from verify.verdicts.krawczyk import RADIUS_FACTOR, best_columns, bounds, farthest

DIGITS = (30, 60, 120, 200)  # tried in turn: see certify_network
METHOD_NETWORK = ("Krawczyk-type test on the steps: first-order Taylor model of the network in a Lohner set, Arb balls, "
                  "existence by Brouwer's fixed-point theorem")
SINGULAR = "the Jacobian of the free steps is singular in float64; choose other free layers or a deeper network"


def free_layers(blocks: Sequence[Block], layers: Sequence[tuple[int, float]], X: np.ndarray) -> list[int]:
    """m = N n d layer indices whose step columns are the best conditioned (:func:`best_columns`)."""
    return best_columns(apply(blocks, layers, X, sensitivities=True).d_steps, X.size)


def _refine(blocks, layers, X, Y, free, R, digits) -> list[Any]:
    """Simplified Newton on the free steps at ``digits`` digits (the working precision):
    h_S <- h_S - R G(h), G the network's end point at those digits (a forward pass, no
    derivatives) minus Y, R an inverse of the free steps' derivative (float64, or an Arb matrix
    at the working precision), until |R G| is below 10^(5 - digits) or stops falling.  Returns
    the steps (mpmath numbers; those written as decimals taken as written).  (Newton's method with the derivative
    recomputed at these digits took 87 of 90 s at m = 64, 384 layers; the simplified one
    converges at the rate |I - R G'|, far below 1 where R is of any use.)  Nothing here needs to
    be rigorous: it only places the box, whose test decides."""
    xp = namespace("mpmath")
    if not isinstance(R, np.ndarray):  # an Arb matrix: its exact midpoints at the working precision
        R = xp.asarray(np.array([[R[i, j].mid().str(digits + 5, radius=False) for j in range(R.ncols())]
                                 for i in range(R.nrows())], dtype=object))
    written = [b.in_precision("mpmath") for b in blocks]  # the problem as written, not its binary64 rounding
    steps = list(xp.asarray(np.array([h for _, h in layers], dtype=object)))
    target = xp.asarray(np.asarray(Y, dtype=object)).ravel()
    start = xp.asarray(np.asarray(X, dtype=object))
    best, kept = math.inf, list(steps)
    for _ in range(digits // 4 + 5):
        end = apply_in_namespace(written, [(b, t) for (b, _), t in zip(layers, steps, strict=True)], start, False).end
        G = end.ravel() - target
        step = [sum(R[i, j] * G[j] for j in range(len(G))) for i in range(len(free))]
        size = float(max(abs(v) for v in step))
        if not size < best:  # it stopped falling: keep the best point
            break
        best, kept = size, list(steps)
        if size < 10.0 ** (5 - digits):
            break
        for k, i in enumerate(free):
            steps[i] = steps[i] - step[k]
    return kept


def certify_network(
    blocks: Sequence[Block],
    layers: Sequence[tuple[int, Any]],
    X: np.ndarray,
    Y: np.ndarray,
    *,
    free: Sequence[int] | None = None,
    digits: int | None = None,
    radius: float | None = None,
    centre_shift: float = 0.0,
    deadline: float = math.inf,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Try to prove that exact step sizes near the free ones map X exactly onto Y.

    The network's image is carried layer by layer in a Lohner set with the free steps as
    parameters (:func:`verify.verdicts.enclosure.enclose_network_set`), which gives the
    first-order Taylor model G(sigma) in c - Y + A sigma + E over the box of free steps
    c + [-r, r]^m, as for controls
    (:func:`verify.verdicts.exact_durations.certify_control`): K inside the box proves that at
    least one exact zero lies in it (Brouwer).  Plain balls wrapped through hundreds of layers
    (a contraction bound of 30 at m = 32, 7.6e44 at m = 64: issue 66).  The free steps are
    refined by Newton's method at high precision first; the digits go up through DIGITS (from
    ``digits`` when given) while the test fails and the deadline allows.  ``radius``: the box's
    (default: RADIUS_FACTOR times the Newton step the enclosure leaves, after a first guess).
    ``centre_shift`` moves the centre of the box by that multiple of the radius along the first
    free step (the tests show that a wrong box is refused).  X and Y may be object arrays of
    floats and decimal strings (exact in the enclosures); steps likewise.
    """
    float_layers = [(int(b), float(h)) for b, h in layers]
    base: dict[str, Any] = {"certified": False, "method": METHOD_NETWORK}
    try:
        dG = apply(blocks, float_layers, np.asarray(X, dtype=float), sensitivities=True).d_steps
    except IntegrationError as exc:
        return base | {"reason": f"no float64 derivative of the steps: {exc}"}
    free = sorted(best_columns(dG, np.size(X)) if free is None else (int(i) for i in free))
    base |= {"free_layers": free, "fixed_layers": len(layers) - len(free)}
    if len(free) != np.size(X):
        return base | {"reason": f"{len(free)} free layers for {np.size(X)} equations; the Krawczyk test needs a square "
                       "system"}
    try:
        R = np.linalg.inv(dG[:, free])
    except np.linalg.LinAlgError:
        return base | {"reason": SINGULAR}
    if not np.all(np.isfinite(R)):
        return base | {"reason": SINGULAR}
    for dps in [D for D in DIGITS if digits is None or D >= digits] or [digits]:
        cert, R = _certify(blocks, list(layers), X, Y, free, dps, radius, centre_shift, deadline, progress, R, base)
        if cert["certified"] or time.perf_counter() > deadline or cert["reason"] == SINGULAR:
            break
    return cert


def _certify(blocks, layers, X, Y, free, digits, radius, centre_shift, deadline, progress, R, base) -> tuple[dict, Any]:
    """One level of digits of :func:`certify_network`: refine, enclose, test, at most three
    times; R, the inverse to refine with, comes from the level before (float64 at first), and
    the level's own (at its digits) goes to the next."""
    base = base | {"digits": digits}
    steps = [h for _, h in layers]
    r, newton, reach, contraction = (float(radius) if radius is not None else 0.0), math.nan, math.inf, math.inf
    for attempt in range(1 if radius is not None else 3):
        with precision(digits):
            if attempt and not RADIUS_FACTOR * newton > r:  # the box was large enough: more of this cannot help
                break
            if attempt == 0 or newton > 10.0 ** (-digits / 2):  # (again, with R at the working precision)
                if progress:
                    progress(f"certify: existence, refining the free steps at {digits} digits")
                steps = _refine(blocks, [(b, h) for (b, _), h in zip(layers, steps, strict=True)], X, Y, free, R, digits)
                steps = [mpmath.nstr(h, digits + 5, strip_zeros=False) if k in free else layers[k][1]
                         for k, h in enumerate(steps)]  # the box's centre: decimals, which the enclosures take as written
                r = 10.0 ** (-digits / 2) if radius is None else r
            else:  # the centre is good; the box was too small for the enclosure's own width
                r = RADIUS_FACTOR * newton
            c = [steps[i] for i in free]
            if centre_shift:
                c[0] = mpmath.nstr(mpmath.mpf(c[0]) + centre_shift * r, digits + 5, strip_zeros=False)
            written = list(layers)
            for k, i in enumerate(free):
                written[i] = (layers[i][0], c[k])
        if progress:
            progress(f"certify: existence, the network over steps within {r:.2g} of refined ones, {digits} digits")
        try:
            enc = enclosure.enclose_network(blocks, written, X, digits, free=free, radius=r, deadline=deadline,
                                            progress=progress)
        except IntegrationError as exc:
            return base | {"radius": r, "reason": str(exc)}, R
        with precision(digits):
            tested = bounds(enc, Y, r)
        if tested is None:
            return base | {"reason": SINGULAR}, R
        R, newton, reach, contraction = tested.inverse, tested.newton, tested.reach, tested.contraction
        if tested.proves(r):
            break
    ok = reach < r and contraction < 1
    with precision(digits):
        far = round_up(farthest(c, [layers[i][1] for i in free]) + r)
    return base | {
        "certified": bool(ok),
        "radius": r,
        "centre": c,
        "distance": far,
        "K_reach_over_radius": reach / r,
        "contraction_upper": contraction,
        "newton_step_upper": newton,
        "reason": "" if ok else "K(B) is not inside the box: the box is wrong or too wide for the enclosures",
    }, R
