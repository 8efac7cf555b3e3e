"""Replaying a witness: its image, and a verdict on it.

* :func:`certify` (the verdict of ``verify check``): the question in Arb ball arithmetic
  (:mod:`verify.verdicts.enclosure`), every number taken as the witness writes it (JSON numbers
  as the binary64 they denote, decimal strings as the exact decimals they write): CERTIFIED when
  every ball of image - target lies within the tolerance, FAIL when one lies wholly outside it,
  UNDECIDED otherwise; a control with no step of nonzero duration is compared exactly, in
  rationals.  For a control also the Krawczyk proof that exact durations exist
  (:mod:`verify.verdicts.exact_durations`, :mod:`verify.verdicts.exact_steps`).
* :func:`replay`: an **estimate**, never a proof: WITHIN when max |image - target| +
  integration error estimate <= tolerance, OUTSIDE when max |image - target| - estimate >
  tolerance, UNDECIDED otherwise (docs/conventions.md §5; the estimate is measured against the
  truth in docs/verdicts.md, and is blind to what happens between the points where the
  integrator checks a step).

>>> import numpy as np
>>> from verify.io.witness import dumps, make, parse
>>> from verify.model.blocks import gaussian_blocks
>>> blocks = gaussian_blocks(0, 2)
>>> X = np.random.default_rng(0).normal(size=(2, 3, 2))
>>> w = parse(dumps(make(blocks, X, X, "finite", [(0, 0.0)], 1e-12)))
>>> replay(w)["verdict"], certify(w)["verdict"]
('WITHIN', 'CERTIFIED')
"""

from __future__ import annotations

import math
from collections.abc import Callable
from contextlib import nullcontext
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np

from verify.io.errors import IntegrationError
from verify.io.witness import Witness, precision_label
from verify.lie.symmetry import exact, rational
from verify.model.backend import namespace, precision, round_down, round_up
from verify.model.dynamics import EstimatedImage, dynamics
from verify.verdicts import enclosure, exact_durations, exact_steps


def image(w: Witness, dps: int | None = None, progress: Callable[[str], None] | None = None) -> EstimatedImage:
    """The image of the witness's inputs under its control or network, in float64
    (``dps=None``) or at ``dps`` digits, with the estimate of its error
    (:meth:`verify.model.dynamics.Dynamics.estimated_image`).  Raises
    :class:`IntegrationError` where the arithmetic cannot follow it (overflow, more Taylor
    steps than the cap)."""
    # overflows are refused with a reason (flow's own check, the network's), not warned of
    with precision(dps) if dps is not None else nullcontext(), np.errstate(all="ignore"):
        return dynamics(w.depth).estimated_image(w.blocks_at(dps), w.steps_at(dps), w.array_at("inputs", dps), dps,
                                                 progress)


NUMBERS = "JSON numbers as the binary64 they denote, decimal strings as the exact decimals they write"
ESTIMATE, CERTIFICATE = "estimate", "certificate"  # the two kinds of verdict


def _about(w: Witness) -> dict[str, Any]:
    """What every verdict reports of the witness it judges."""
    N, n, d = w.inputs.shape
    return {"tolerance": w.tolerance, "depth": w.depth, "length": len(w.steps), "shape": {"N": N, "n": n, "d": d},
            "causal": w.causal}


def _fraction(x: Any) -> Fraction:
    """The exact value of a float, an MPFR or an mpmath number."""
    x = x.item() if isinstance(x, np.generic) else x
    if isinstance(x, mpmath.mpf):
        man, exp = x.man_exp
        return Fraction(int(man)) * Fraction(2) ** int(exp)
    return Fraction(*x.as_integer_ratio())


def conversion_error(a: np.ndarray, dps: int | None) -> float:
    """max |written - converted| over the decimal strings of ``a``, rounded up: what reading the
    witness in float64 (``dps=None``) or at ``dps`` digits changes (subnormals and underflow
    included), which an estimate must count (a target 1e-17 off in its 18th digit, or written
    as "1e-330", is not what float64 compares)."""
    strings = [v for v in a.ravel() if isinstance(v, str)]
    if not strings:
        return 0.0
    with precision(dps) if dps is not None else nullcontext():
        converted = [float(v) for v in strings] if dps is None else list(namespace("mpmath").asarray(
            np.array(strings, dtype=object)))
    worst = max(abs(Fraction(v) - _fraction(c)) for v, c in zip(strings, converted, strict=True))
    return round_up(worst) if worst else 0.0


def replay(w: Witness, dps: int | None = None, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Replay a witness in float64 (``dps=None``) or at ``dps`` digits; return the verdict.

    ``error`` is max |image - target|; ``integration_error_estimate`` is the integrator's
    estimate (continuous depth) or, in finite depth, the rounding the layers propagate at this
    precision (:func:`verify.model.network.propagated_rounding`: long networks can amplify it by
    1e20 and more), at least 4 (L + 1) unit roundoff max |x|.

    ``integration_error_estimate`` also counts what reading the witness's decimal strings in this
    arithmetic changes in the inputs and targets (:func:`conversion_error`).

    ``verdict`` is WITHIN when error + estimate <= tolerance, OUTSIDE when error - estimate >
    tolerance, and UNDECIDED otherwise (the estimate straddles the tolerance) or when the
    arithmetic cannot follow the witness (``reason`` says why); ``passed`` is verdict == WITHIN.
    It is an estimate (``kind``), not a proof: :func:`certify` proves.
    """
    out = _about(w) | {"precision": precision_label(dps), "kind": ESTIMATE, "certified": False}
    try:
        img = image(w, dps, progress)
    except IntegrationError as exc:
        return {"passed": False, "verdict": "UNDECIDED", "reason": str(exc), "error": math.nan,
                "integration_error_estimate": math.inf} | out
    with precision(dps) if dps is not None else nullcontext():
        worst = np.max(np.abs(img.end - w.array_at("targets", dps)))
    error = float(worst)  # for the report; the comparison below is exact, not of this rounded float
    estimate = img.estimate + conversion_error(w.inputs, dps) + conversion_error(w.targets, dps)
    if not (math.isfinite(estimate) and math.isfinite(error)):
        verdict, reason = "UNDECIDED", ("the flow amplifies the rounding of this arithmetic past what a linearised "
                                        "error estimate can follow (more than half the digits lost)")
    elif _fraction(worst) + Fraction(estimate) <= rational(w.exact_tolerance):
        verdict, reason = "WITHIN", None
    elif _fraction(worst) - Fraction(estimate) > rational(w.exact_tolerance):
        verdict, reason = "OUTSIDE", None
    else:
        verdict, reason = "UNDECIDED", (f"the image is within {error:.2e} of the targets but its error estimate "
                                        f"{estimate:.1e} straddles the tolerance {w.tolerance:.2e}")
    return {"passed": verdict == "WITHIN", "verdict": verdict, "error": error,
            "integration_error_estimate": estimate} | ({"reason": reason} if reason else {}) | out | img.work


CERTIFY_DIGITS = (30, 60, 120, 200)  # Arb precisions tried in turn for a flow: each tightens the remainders' share
# of the tolerance, for the remainders after the flow has amplified them by the guide's factor per control step: the
# Lohner set grew up to 10 times more than the guide's norms say (c18c, docs/verdicts.md), so a tenth of 0.1
WIDTH_SHARE = 0.01
# a network's plain balls widen with the rounding they wrap, by 10^0.4 to 10^2.6 a layer (measured at m = 64, 128-384
# layers), and each layer costs little even at 800 digits: the digits go further
NETWORK_DIGITS = (30, 60, 120, 200, 400, 800)


def certify(w: Witness, digits: int | None = None, deadline: float = math.inf, existence: bool = False,
            progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """Replay in Arb ball arithmetic (:mod:`verify.verdicts.enclosure`) with every number as the
    witness writes it (:data:`NUMBERS`): CERTIFIED when every ball of image - target lies within
    the tolerance, FAIL when one lies wholly outside, UNDECIDED otherwise or when no enclosure
    could be made before ``deadline`` (``reason``).  The digits escalate through CERTIFY_DIGITS
    (NETWORK_DIGITS for a network; from ``digits`` when given) while the balls of image - target are undecided and narrowing:
    the balls of a network from exact inputs are wide only by the rounding they wrap, those of a
    flow mostly by its Taylor remainders, whose share of the tolerance (SHARE at the first
    digits, tightening with the digits; in each control step at most WIDTH_SHARE over the
    amplification the float64 guide measured from there to the end, so that a flow that
    amplifies its errors a millionfold does not spend a pass that cannot succeed, and spends
    the millionfold care only where it is needed) and decimal targets only by the digits.  A witness whose
    steps all have duration (or step) exactly 0, or none, maps the inputs to themselves: it is
    decided exactly, in rationals.

    With ``existence``, a witness that is not refuted also gets ``existence``: the Krawczyk-type
    test of :func:`verify.verdicts.exact_durations.certify_control` (exact durations near the free ones
    map the inputs exactly onto the targets) or, for a network,
    :func:`verify.verdicts.exact_steps.certify_network` (exact step sizes), within the same deadline;
    not attempted where the targets break an invariant."""
    out = _about(w) | {"kind": CERTIFICATE, "numbers": NUMBERS}
    if all(exact(t) == 0 for _, t in w.steps):
        return out | _identity(w)
    amplification = np.ones(len(w.steps))  # per control step, how much the flow can amplify a remainder made in it
    if w.depth == "continuous":  # the float64 flow guides the validated steps: where it cannot follow, nor can they
        try:
            amplification = np.asarray(image(w, progress=progress).work["amplifications"])
        except IntegrationError as exc:
            return out | {"verdict": "UNDECIDED", "certified": False, "passed": False, "precision": "float64 guide",
                          "reason": f"the float64 flow that guides the validated steps stopped: {exc}"}
    blocks = w.blocks_at()  # float64 for the step rules; each block carries its entries as written
    inputs = np.array(w.inputs, dtype=object)  # floats exactly, decimal strings enclosed by Arb
    ladder = CERTIFY_DIGITS if w.depth == "continuous" else NETWORK_DIGITS
    levels = [D for D in ladder if digits is None or D >= digits] or [digits]
    result, width, enc = None, math.inf, None
    for D in levels:
        if progress:
            progress(f"certify: enclosing the image in Arb balls at {D} digits")
        try:
            if w.depth == "continuous":
                share = np.minimum(enclosure.SHARE ** (D / CERTIFY_DIGITS[0]), WIDTH_SHARE / amplification)
                enc = enclosure.enclose_flow(blocks, list(w.steps), inputs, D, deadline=deadline, tolerance=w.tolerance,
                                             share=share, progress=progress)
            else:
                enc = enclosure.enclose_network(blocks, list(w.steps), inputs, D)
        except IntegrationError as exc:
            result = out | {"verdict": "UNDECIDED", "certified": False, "precision": f"Arb balls at {D} digits",
                            "reason": str(exc)}
            if enclosure.TOO_WIDE not in str(exc):  # more digits narrow the balls, not a deadline, a cap or an overflow
                break
            continue
        result = out | {"precision": f"Arb balls at {D} digits"} | enclosure.verdict(enc, w.targets, w.exact_tolerance, D)
        if result["verdict"] != "UNDECIDED" or not result["gap_width"] < width / 10:
            break
        width = result["gap_width"]
    if existence and enc is not None and result["verdict"] != "FAIL":
        obstruction = _obstruction(w)
        if obstruction:
            result["existence"] = {"certified": False, "method": "not attempted", "reason": obstruction}
        elif w.depth == "continuous":
            if progress:
                progress("certify: the Krawczyk test for exact durations")
            result["existence"] = exact_durations.certify_control(blocks, list(w.steps), inputs, w.targets,
                                                           tolerance=w.tolerance, digits=D, deadline=deadline,
                                                           progress=progress)
        else:
            if progress:
                progress("certify: the Krawczyk test for exact step sizes")
            result["existence"] = exact_steps.certify_network(blocks, list(w.steps), inputs, w.targets, deadline=deadline,
                                                           progress=progress)
    return result | {"passed": result["certified"]}


def _obstruction(w: Witness) -> str | None:
    """Why no control maps the inputs exactly onto the targets, where an invariant says so
    (:func:`verify.lie.admissibility.check_admissible`): a witness may meet its tolerance while
    its targets break an invariant by less, and an existence proof must not be attempted there."""
    from verify.io.errors import InputError
    from verify.lie.admissibility import check_admissible

    try:
        check_admissible(w.inputs, w.targets, w.causal, w.depth)
    except InputError as exc:
        return f"the targets break an invariant of the flows, so no exact durations are sought: {exc}"
    return None


def _identity(w: Witness) -> dict[str, Any]:
    """The verdict on a witness that maps its inputs to themselves, in exact rationals."""
    gap = max(abs(rational(x) - rational(y)) for x, y in zip(w.inputs.ravel(), w.targets.ravel(), strict=True))
    ok = gap <= exact(w.exact_tolerance)
    return {"verdict": "CERTIFIED" if ok else "FAIL", "certified": bool(ok), "passed": bool(ok),
            "precision": "exact rational arithmetic", "error_upper": round_up(gap) if gap else 0.0,
            "error_lower": round_down(gap) if gap else 0.0, "width": 0.0, "gap_width": 0.0, "validated_steps": 0}
