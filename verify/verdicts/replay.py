"""Replaying a witness: its image and a verdict on it.

* :func:`replay`: PASS when max |image - target| + integration error estimate <= tolerance,
  FAIL when max |image - target| - estimate > tolerance, UNDECIDED otherwise (docs/conventions.md
  §5; the estimate is measured against the truth in docs/verdicts.md);
* :func:`certify`: the same question in Arb ball arithmetic (:mod:`verify.verdicts.enclosure`),
  and for a control the Krawczyk proof that exact durations exist
  (:mod:`verify.verdicts.krawczyk`).

>>> import numpy as np
>>> from verify.io.witness import dumps, make, parse
>>> from verify.model.blocks import gaussian_blocks
>>> blocks = gaussian_blocks(0, 2)
>>> X = np.random.default_rng(0).normal(size=(2, 3, 2))
>>> replay(parse(dumps(make(blocks, X, X, "finite", [(0, 0.0)], 1e-12))))["passed"]
True
"""

from __future__ import annotations

import math
from contextlib import nullcontext
from typing import Any

import numpy as np

from verify.io.errors import IntegrationError
from verify.io.witness import Witness, precision_label
from verify.model.backend import precision
from verify.model.dynamics import EstimatedImage, dynamics
from verify.verdicts import enclosure, krawczyk


def image(w: Witness, dps: int | None = None) -> EstimatedImage:
    """The image of the witness's inputs under its control or network, in float64
    (``dps=None``) or at ``dps`` digits, with the estimate of its error
    (:meth:`verify.model.dynamics.Dynamics.estimated_image`).  Raises
    :class:`IntegrationError` where the arithmetic cannot follow it (overflow, more Taylor
    steps than the cap)."""
    # overflows are refused with a reason (flow's own check, the network's), not warned of
    with precision(dps) if dps is not None else nullcontext(), np.errstate(all="ignore"):
        return dynamics(w.depth).estimated_image(w.blocks_at(dps), w.steps_at(dps), w.array_at("inputs", dps), dps)


def _about(w: Witness) -> dict[str, Any]:
    """What every verdict reports of the witness it judges."""
    N, n, d = w.inputs.shape
    return {"tolerance": w.tolerance, "depth": w.depth, "length": len(w.steps), "shape": {"N": N, "n": n, "d": d},
            "causal": w.causal}


def replay(w: Witness, dps: int | None = None) -> dict[str, Any]:
    """Replay a witness in float64 (``dps=None``) or at ``dps`` digits; return the verdict.

    ``error`` is max |image - target|; ``integration_error_estimate`` is the integrator's
    estimate (continuous depth) or, in finite depth, the rounding the layers propagate at this
    precision (:func:`verify.model.network.propagated_rounding`: long networks can amplify it by
    1e20 and more), at least 4 (L + 1) unit roundoff max |x|.

    ``verdict`` is PASS when error + estimate <= tolerance, FAIL when error - estimate >
    tolerance, and UNDECIDED otherwise (the estimate straddles the tolerance) or when the
    arithmetic cannot follow the witness (``reason`` says why); ``passed`` is verdict == PASS.
    More digits (``dps``) or ``verify check --certify`` decide an undecided witness.
    """
    out = _about(w) | {"precision": precision_label(dps)}
    try:
        img = image(w, dps)
    except IntegrationError as exc:
        return {"passed": False, "verdict": "UNDECIDED", "reason": str(exc), "error": math.nan,
                "integration_error_estimate": math.inf} | out
    with precision(dps) if dps is not None else nullcontext():
        error = float(np.max(np.abs(img.end - w.array_at("targets", dps))))
    if math.isinf(img.estimate):
        verdict, reason = "UNDECIDED", ("the flow amplifies the rounding of this arithmetic past what a linearised "
                                        "error estimate can follow (more than half the digits lost)")
    elif error + img.estimate <= w.tolerance:
        verdict, reason = "PASS", None
    elif error - img.estimate > w.tolerance:
        verdict, reason = "FAIL", None
    else:
        verdict, reason = "UNDECIDED", (f"the image is within {error:.2e} of the targets but its error estimate "
                                        f"{img.estimate:.1e} straddles the tolerance {w.tolerance:.2e}")
    return {"passed": verdict == "PASS", "verdict": verdict, "error": error,
            "integration_error_estimate": img.estimate} | ({"reason": reason} if reason else {}) | out | img.work


CERTIFY_DIGITS = (30, 60, 120, 200)  # Arb precisions tried in turn: plain balls widen with the rounding they wrap


def certify(w: Witness, digits: int | None = None, deadline: float = math.inf, existence: bool = False) -> dict[str, Any]:
    """Replay in Arb ball arithmetic (:mod:`verify.verdicts.enclosure`): CERTIFIED when every ball of
    image - target lies within the tolerance, FAIL when one lies wholly outside, UNDECIDED
    otherwise or when no enclosure could be made (``reason``).  The digits escalate through
    CERTIFY_DIGITS (from ``digits`` when given) while the enclosure is undecided and narrowing:
    the balls of a network from exact inputs are wide only by the rounding they wrap, those of
    a flow mostly by its Taylor remainders, whose share of the tolerance (SHARE at the first
    digits) tightens with the digits.

    With ``existence``, a continuous witness that is not refuted also gets ``existence``: the
    Krawczyk test of :func:`verify.verdicts.krawczyk.certify_control` (exact durations near the free
    ones map the inputs exactly onto the targets), within the same deadline."""
    out = _about(w)
    if not all(isinstance(v, float) for m in w.matrices for a in m.values() for v in a.ravel()):
        return out | {"verdict": "UNDECIDED", "certified": False, "precision": "Arb balls",
                      "reason": "block entries given as decimal strings are not enclosed yet; write them as JSON numbers"}
    blocks = w.blocks_at()  # binary64 entries, exactly
    inputs = np.array(w.inputs, dtype=object)  # floats exactly, decimal strings enclosed by Arb
    levels = [D for D in CERTIFY_DIGITS if digits is None or D >= digits] or [digits]
    result, width, enc = None, math.inf, None
    for D in levels:
        try:
            if w.depth == "continuous":
                enc = enclosure.enclose_flow(blocks, list(w.steps), inputs, D, deadline=deadline, tolerance=w.tolerance,
                                             share=enclosure.SHARE ** (D / CERTIFY_DIGITS[0]))
            else:
                enc = enclosure.enclose_network(blocks, list(w.steps), inputs, D)
        except IntegrationError as exc:
            result = out | {"verdict": "UNDECIDED", "certified": False, "precision": f"Arb balls at {D} digits",
                            "reason": str(exc)}
            if "deadline" in str(exc):
                break
            continue
        result = out | {"precision": f"Arb balls at {D} digits"} | enclosure.verdict(enc, w.targets, w.tolerance, D)
        if result["verdict"] != "UNDECIDED" or not enc.width < width / 10:
            break
        width = enc.width
    if existence and w.depth == "continuous" and enc is not None and result["verdict"] != "FAIL":
        result["existence"] = krawczyk.certify_control(blocks, list(w.steps), inputs, w.targets, tolerance=w.tolerance,
                                                       digits=D, deadline=deadline)
    return result
