"""The Krawczyk existence proof for continuous controls (verify.verdicts.exact_durations.certify_control),
held against an independent solution: Newton's method on the free durations at 50 digits."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest

from verify.model.blocks import gaussian_blocks
from verify.model.flow import flow
from verify.verdicts.exact_durations import certify_control

STEPS = [(0, 0.5), (1, -0.3), (0, 0.4), (1, 0.6), (0, -0.2), (1, 0.35)]


def _problem(seed: int, causal: bool = False):
    blocks = gaussian_blocks(seed, 2, causal=causal)
    X = np.random.default_rng(seed).normal(size=(1, 2, 2))
    Y = flow(blocks, STEPS, X, dps=40).end.astype(float)  # the image, rounded: G(c) ~ 1e-16
    return blocks, X, Y


def _newton(blocks, X, Y, free, digits=50):
    """The exact free durations by Newton's method at ``digits`` digits (float64 solves, mp residuals)."""
    steps = [(b, repr(t)) for b, t in STEPS]  # decimal strings: exact at any precision
    for _ in range(6):
        res = flow(blocks, steps, X, dps=digits, sensitivities=True)
        G = (res.end - Y).ravel()
        delta = np.linalg.solve(res.d_durations[:, free].astype(float), G.astype(float))
        with mpmath.workdps(digits + 10):
            for k, i in enumerate(free):
                steps[i] = (steps[i][0], mpmath.nstr(mpmath.mpf(steps[i][1]) - float(delta[k]), digits + 5))
    residual = float(max(abs(g) for g in (flow(blocks, steps, X, dps=digits).end - Y).ravel()))
    return steps, residual


@pytest.mark.parametrize("seed,causal", [(0, False), (1, True)])
def test_the_exact_durations_lie_in_the_certified_box(seed, causal):
    blocks, X, Y = _problem(seed, causal)
    cert = certify_control(blocks, STEPS, X, Y, tolerance=1e-10)
    assert cert["certified"], cert["reason"]
    exact, residual = _newton(blocks, X, Y, cert["free_steps"])
    assert residual < 1e-35
    # within the radius of the refined centre, and so within the distance of the written durations
    with mpmath.workdps(60):
        pairs = zip(cert["free_steps"], cert["centre"], strict=True)
        offsets = [abs(mpmath.mpf(exact[i][1]) - mpmath.mpf(str(c))) for i, c in pairs]
        assert max(offsets) <= cert["radius"]
        written = [abs(mpmath.mpf(exact[i][1]) - mpmath.mpf(STEPS[i][1])) for i in cert["free_steps"]]
        assert max(written) <= cert["distance"]
        # the refined centre meets the float targets taken exactly: read through their repr, it missed them by 1e-17
        centre = list(STEPS)
        for i, c in zip(cert["free_steps"], cert["centre"], strict=True):
            centre[i] = (centre[i][0], c)
        end = flow(blocks, centre, X, dps=60).end.ravel()
        miss = max(abs(e - mpmath.mpf(float(y))) for e, y in zip(end, Y.ravel(), strict=True))
        assert miss < cert["radius"] / 1e4  # the refinement stops at a hundredth of what the remainders leave
    assert cert["contraction_upper"] < 1


def test_a_box_smaller_than_the_newton_step_is_refused():
    blocks, X, Y = _problem(0)
    Y = Y + 1e-9  # the exact durations move by about |R| 1e-9
    cert = certify_control(blocks, STEPS, X, Y, tolerance=1e-8)
    assert cert["certified"]
    small = certify_control(blocks, STEPS, X, Y, tolerance=1e-8, radius=cert["newton_step_upper"] / 10)
    assert not small["certified"] and "not inside" in small["reason"]


def test_too_few_durations_are_refused():
    blocks, X, Y = _problem(0)
    cert = certify_control(blocks, STEPS[:3], X, Y)
    assert not cert["certified"] and "at least m" in cert["reason"]


def test_targets_that_break_an_invariant_get_the_invariant_as_the_reason():
    """An odd sequence {a, -a} stays odd; targets 2e-7 from odd meet a tolerance of 1e-6, so the
    witness is CERTIFIED, but no exact durations exist.  The existence line names the invariant
    (it quoted a diverging Newton iterate, "block 0, duration -8.2e+10", as a duration of the
    witness, with advice to shorten the durations)."""
    from verify.io import witness
    from verify.verdicts import replay

    blocks = gaussian_blocks(0, 2)
    a = np.array([0.7, -0.4])
    X = np.array([[a, -a]])
    steps = [(0, 0.4), (1, -0.3), (0, 0.5), (1, 0.35), (0, -0.2)]
    Y = flow(blocks, steps, X, dps=40).end.astype(float)
    Y[0, 1, 0] += 2e-7
    v = replay.certify(witness.from_dict(witness.make(blocks, X, Y, "continuous", steps, 1e-6)), existence=True)
    assert v["verdict"] == "CERTIFIED" and not v["existence"]["certified"]
    import re

    reason = v["existence"]["reason"]
    assert "minus a permutation of itself" in reason and not re.search(r"duration -?[0-9]", reason), reason
