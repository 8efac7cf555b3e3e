"""Exact durations of a control: all durations but m = N n d free ones fixed, the free ones
refined by Newton's method with a point flow at high precision, and the Krawczyk-type test
(:mod:`verify.verdicts.krawczyk`) applied to the validated flow's first-order Taylor model in
the free durations (:func:`verify.verdicts.enclosure.enclose_flow`), over a box whose size is
read from the enclosure's own first- and second-order parts (:func:`certify_control`).

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> from verify.model.flow import flow
>>> blocks = gaussian_blocks(seed=3, d=1)
>>> X = np.array([[[-1.0], [0.5]]])
>>> steps = [(0, 0.4), (1, -0.3), (0, 0.2), (1, 0.5)]
>>> Y = flow(blocks, steps, X, dps=40).end.astype(float)      # a target in binary64
>>> cert = certify_control(blocks, steps, X, Y)
>>> cert["certified"], len(cert["free_steps"])
(True, 2)
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import mpmath
import numpy as np

from verify.io.errors import IntegrationError
from verify.model.backend import precision, round_up, to_mpmath
from verify.model.blocks import Block
from verify.model.flow import flow
from verify.verdicts import enclosure
from verify.verdicts.krawczyk import RADIUS_FACTOR, best_columns, bounds, farthest

CENTRE_SHARE = 1e-8  # of the tolerance, for the remainders of the existence proof's enclosure (verify.verdicts.enclosure.SHARE)
ATTEMPTS = 3  # boxes tried for a control: the guess, then the one its Newton step asks for, then a first-order fix
FIRST_ORDER_SLACK = 10  # a failed box's Newton step beyond this times the expected one is second order (c18c: 500)
SECOND_ORDER = 5e-7  # with C = |R| amplification^2, the box's second-order part is taken as C r^2 / SECOND_ORDER (below)
REFINE_ITERATIONS = 8  # simplified Newton converges linearly, at the rate |I - R G'| (1e-6 to 1e-9 per pass on c18a, c18c)
REFINE_DIGITS = 5  # the refining point flow's digits beyond those its residual must resolve


@dataclass(frozen=True)
class _Box:
    """The next box of the control's test: its ``radius``, the enclosure's second-order
    coefficient ``bent`` (b, b r^2 in R's units; None while unmeasured), and where the
    first-order parts must come down, ``goal`` for the remainders' |R E| and ``target`` for the
    refined residual (None: as they are)."""

    radius: float
    bent: float | None = None
    goal: float | None = None
    target: float | None = None


def _next_box(r: float, newton: float, refined: float, expected: float, bent: float | None) -> _Box | None:
    """The box for another try of the control's test after a box of radius r gave the Newton
    step ``newton`` (an upper bound of |R (c - Y + E)|), with the refined residual ``refined``
    and the expected |R E| ``expected``, or None where no box would do better:

    - b unmeasured (``bent`` None) and the step within FIRST_ORDER_SLACK of ``refined`` +
      ``expected``: first order, the box grows to RADIUS_FACTOR times the step;
    - b unmeasured and the step beyond: the excess is the enclosure's second-order part b r^2,
      and the box shrinks to b r^2 = r / 8, the first-order parts brought below r / 8 too;
    - b measured (that box failed): the first-order part, the step less b r^2 and the
      residual, exceeded its estimate, and the remainders' goal shrinks by the factor missed.

    >>> _next_box(4e-8, 5e-8, 0.0, 1e-8, None)  # first order: 4 times the step
    _Box(radius=2e-07, bent=None, goal=None, target=None)
    >>> box = _next_box(1e-6, 1e-3, 0.0, 1e-8, None)  # second order: b ~ 1e9, r = 1 / (8 b)
    >>> round(box.radius * 1e9 * 8, 3), round(box.bent * 1e-9, 3), round(box.target / box.radius * 8, 6)
    (1.0, 1.0, 1.0)
    >>> _next_box(box.radius, 30 * box.target + box.radius / 8, 0.0, box.target, box.bent).goal / box.target  # c32a
    0.03333333333333333
    """
    if bent is None and newton <= FIRST_ORDER_SLACK * (refined + expected):
        return _Box(radius=RADIUS_FACTOR * newton) if RADIUS_FACTOR * newton > r else None
    if bent is None:
        bent = (newton - refined - expected) / r ** 2  # c18c: 4.6e13, docs/verdicts.md
        r = 1 / (2 * RADIUS_FACTOR * bent)
        return _Box(radius=r, bent=bent, goal=r / (2 * RADIUS_FACTOR), target=r / (2 * RADIUS_FACTOR))
    first, target = newton - refined - bent * r ** 2, r / (2 * RADIUS_FACTOR)
    return _Box(radius=r, bent=bent, goal=expected * target / first, target=target) if first > target else None


def _refined(blocks: Sequence[Block], steps: Sequence[tuple[int, Any]], X: Any, Y: Any, free: Sequence[int],
             R: np.ndarray, goal: float, dps: int, deadline: float,
             progress: Callable[[str], None] | None = None) -> tuple[list[tuple[int, Any]], float]:
    """Simplified Newton on the free durations, tau_S <- tau_S - R G(tau), G the point flow's end
    (:func:`verify.model.flow.flow` at ``dps`` digits) minus Y and R the float64 inverse of the
    derivative, until |R G| is below goal / 100 or stops falling, or an iterate leaves the
    range the point flow can follow (the best point so far stands: c32f's refinement reached
    |R G| = 1.4e-25 in two steps and then failed the proof so, docs/verdicts.md).  Returns the durations (the
    free ones as decimal strings of ``dps`` digits) and the last |R G|.  Nothing here needs
    to be rigorous: it only places the box, whose test decides."""
    with mpmath.workdps(dps):
        # floats exactly (their repr is 1e-17 off, which R amplified to 2e-14 on c18a), decimals as written
        tau = list(to_mpmath(np.array([t for _, t in steps], dtype=object)))
        target = list(to_mpmath(np.asarray(Y, dtype=object)).ravel())
        best, kept = math.inf, list(tau)
        for it in range(REFINE_ITERATIONS):
            if progress:
                progress(f"certify: existence, refining the durations at {dps} digits (Newton step {it + 1}, "
                         f"last |R G| {best:.1e})")
            try:
                end = flow(blocks, [(b, t) for (b, _), t in zip(steps, tau, strict=True)], X, dps=dps, deadline=deadline,
                           progress=progress).end
            except IntegrationError:
                if not it:  # the durations as given: nothing to fall back on
                    raise
                break  # an iterate left the point flow's range: the best point so far stands
            G = [e - y for e, y in zip(end.ravel(), target, strict=True)]
            step = [mpmath.fsum(mpmath.mpf(float(R[i, j])) * G[j] for j in range(len(G))) for i in range(len(free))]
            size = float(max(abs(v) for v in step))
            if not size < best:  # it stopped falling: keep the best point
                break
            best, kept = size, list(tau)
            if size < goal / 100:
                break
            for i, k in enumerate(free):
                tau[k] -= step[i]
        return [(b, mpmath.nstr(t, dps) if k in free else w) for k, ((b, w), t) in enumerate(zip(steps, kept, strict=True))], best


def certify_control(
    blocks: Sequence[Block],
    steps: Sequence[tuple[int, Any]],
    X: np.ndarray,
    Y: np.ndarray,
    *,
    tolerance: float | None = None,
    radius: float | None = None,
    digits: int = enclosure.DIGITS,
    deadline: float = math.inf,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Try to prove that exact durations near the control's map X exactly onto Y.

    The continuous analogue of :func:`verify.verdicts.exact_steps.certify_network`, with a first-order Taylor model instead
    of an enclosure of the derivative: all durations but m = N n d free ones
    (:func:`best_columns` of the float64 derivative with respect to the durations) stay as
    written, G(sigma) = flow(X; free durations + sigma, fixed durations) - Y, and the validated
    flow (:func:`verify.verdicts.enclosure.enclose_flow`, remainders taking CENTRE_SHARE of the
    tolerance) with every free duration ranging over [-r, r] encloses

        G(sigma)  in  c - Y + A sigma + E        for every sigma in B = [-r, r]^m,

    A exact (the flow's derivative in the free durations, carried step by step at the working
    precision), c exact and E balls (the remainders, the rounding and every effect of second
    order in r).  With R an approximate inverse of A at the working precision, if
    K = -R (c - Y + E) + (I - R A) B lies in the interior of B, then sigma -> sigma - R G(sigma)
    maps B into itself, so it has a fixed point (Brouwer), and since |I - R A| < 1 (row sums) R
    is invertible: G(sigma) = 0 there. At least one exact
    solution lies in B (uniqueness is not claimed: that would need the derivative over B).

    The box is centred on *refined* free durations (:func:`_refined`: simplified Newton with a
    point flow at high precision), not on the written ones: a control that amplifies errors a
    millionfold meets its targets only to the tolerance, so the exact durations may lie
    R (c - Y) away, and the Taylor model's second-order part over a box that wide swamps the
    test.  The result states ``centre`` (the refined free durations, decimal strings) and
    ``distance``, how far the box reaches from the written durations.
    The size the test needs: with E of order |R| (remainders amplified) and the second-order
    part b r^2 in R's units, K(B) fits B when 4 b |R E| < 1, so the remainders get the shares
    that make |R E| about SECOND_ORDER / (4 |R| amplification^2) (at most CENTRE_SHARE): each
    control step's share over the amplification the float64 guide measured from that step on, as
    replay's shares are (one share over the largest amplification made every step as careful as
    the most amplified one), and the digits that keep the per-step floor of the enclosure below
    it (``digits`` or more). With the enclosure's errors carried as generators
    (:mod:`verify.verdicts.lohner`), its b was 3.3e3 (c18c), at most 2.1e3 (c32c) and 1.8e5
    (c32a) times |R| amplification^2 (docs/verdicts.md), so SECOND_ORDER = 5e-7 keeps b r below
    0.1 on all three (2e-8 when Lohner's box held the errors, whose b was 2.4e5 to 4.9e6 times
    that). The radius r is RADIUS_FACTOR times the refined Newton step plus that size
    (``radius`` when given). Where the test fails, the box is tried again (:func:`_next_box`):
    where the enclosure's own Newton step |R (c - Y + E)| (``newton_step_upper``) is within
    FIRST_ORDER_SLACK of the refined residual plus the expected |R E|, with RADIUS_FACTOR times
    that step; beyond, its excess is the second-order part b r^2 the enclosure found, whatever
    the estimate was, and the box shrinks to b r^2 = r / 8, the remainders' share (and digits)
    and the refinement brought below r / 8 as well. Where that box fails too, its first-order
    part (the Newton step less b r^2 and the refined residual) exceeded the expected one, and a
    third try scales the share by the factor it missed. The enclosure's second-order part is
    still far above the flow's own: on c18c, 1.7e11 r^2 in R's units (4.6e13 in Lohner's box)
    where the true curvature of the flow's end point is about 1e5 r^2 (each step's remainder
    bounds its second-order part, |d^2 F| over the set's box times its width squared, by a ball
    in every direction, docs/verdicts.md). X and Y may be object arrays of floats and decimal
    strings (exact in the enclosures).
    """
    m = X.size
    base = {"certified": False, "method": "Krawczyk-type test on the durations: first-order Taylor model of the "
            "validated flow in Arb balls, existence by Brouwer's fixed-point theorem",
            "digits": digits, "steps": len(steps)}
    if len(steps) < m:
        return base | {"reason": f"{len(steps)} durations for {m} equations; the Krawczyk test needs at least m"}
    try:
        guide = flow(blocks, [(b, float(t)) for b, t in steps], np.asarray(X, dtype=float), sensitivities=True,
                     propagate=True)
        free = best_columns(guide.d_durations, m)
        R64 = np.linalg.inv(guide.d_durations[:, free])
    except (IntegrationError, np.linalg.LinAlgError) as exc:
        return base | {"reason": f"no float64 Jacobian of the durations to invert: {exc}"}
    size = float(np.max(np.sum(np.abs(R64), axis=1)))  # |R|, rows
    tolerance = tolerance or 1e-10
    # the enclosure's per-step floor, 10^(REMAINDER_DIGITS - digits) max(1, |x|), amplified, must stay below the goal
    spread = size * guide.amplification * max(1.0, float(np.max(np.abs(guide.end))))  # |R| times an error at the end
    floor = spread * 4 * guide.taylor_steps  # about 4 validated steps per float64 step

    # how much each control step's remainders can grow by the end (the guide's profile, as replay's shares use)
    profile = np.maximum(np.asarray(guide.amplifications or [guide.amplification] * len(steps), dtype=float), 1.0)

    def budget(goal: float) -> tuple[np.ndarray, int, float]:
        """The shares per control step, the digits and the expected |R E| that leave |R E| at
        about ``goal``: each step's remainders amplified by its own profile, or the per-step
        floor where it is larger."""
        share = np.minimum(CENTRE_SHARE, goal / (size * profile * tolerance))
        places = max(digits, 10 * math.ceil((enclosure.REMAINDER_DIGITS + math.log10(floor / goal)) / 10))
        return share, places, max(size * tolerance * float(np.max(share * profile)),
                                  floor * 10.0 ** (enclosure.REMAINDER_DIGITS - places))

    share, digits, expected = budget(SECOND_ORDER / (4 * size * guide.amplification ** 2))  # the |R E| the test can afford
    written = steps

    def refine(steps: Sequence[tuple[int, Any]], goal: float) -> tuple[list[tuple[int, Any]], float]:
        return _refined(blocks, steps, X, Y, free, R64, goal,
                        max(enclosure.DIGITS, REFINE_DIGITS + math.ceil(math.log10(spread / goal))), deadline, progress)

    try:
        steps, refined = refine(steps, expected)
    except IntegrationError:  # its message would quote the iterate's durations as if they were the witness's
        return base | {"free_steps": free, "reason": "Newton's refinement of the free durations diverged (an iterate "
                       "left the range the point flow can follow): no exact durations were found near those written"}
    validated, newton, r = 0, math.nan, float(radius if radius is not None else RADIUS_FACTOR * (refined + expected))
    box = _Box(radius=r)
    try:
        for attempt in range(1 if radius is not None else ATTEMPTS):
            if attempt:  # the guess was too small for the Newton step found, too large for its curvature, or too coarse
                box = _next_box(r, newton, refined, expected, box.bent)
                if box is None:
                    break
                r = box.radius
                if box.goal is not None and expected > box.goal:
                    share, digits, expected = budget(box.goal)
                if box.target is not None and refined > box.target:
                    steps, refined = refine(steps, box.target)
            with precision(digits):
                distance = farthest([steps[k][1] for k in free], [written[k][1] for k in free])
                if progress:
                    progress(f"certify: existence, the Taylor model over durations within {r:.2g} of refined ones "
                             f"({distance:.2g} from those written)")
                enc = enclosure.enclose_flow(blocks, steps, X, digits, tolerance=tolerance, deadline=deadline,
                                             share=share, free=free, radius=r, progress=progress)
                validated += enc.steps
                tested = bounds(enc, Y, r)
            if tested is None:
                raise np.linalg.LinAlgError("the derivative in the free durations is singular at these digits")
            newton, reach, contraction = tested.newton, tested.reach, tested.contraction
            if tested.proves(r):
                break
    except (IntegrationError, np.linalg.LinAlgError) as exc:
        return base | {"digits": digits, "free_steps": free, "reason": str(exc), "validated_steps": validated}
    base |= {"digits": digits}
    ok = reach < r and contraction < 1
    return base | {
        "certified": bool(ok),
        "free_steps": free,
        "centre": [steps[k][1] for k in free],
        "radius": r,
        "distance": round_up(distance + r),
        "K_reach_over_radius": reach / r,
        "contraction_upper": contraction,
        "newton_step_upper": newton,
        "validated_steps": validated,
        "reason": "" if ok else "K(B) is not inside the box: the enclosures are too wide for this radius",
    }
