"""Adversarial draws of controls and networks, to test error estimates as claims.

A draw is a random problem on which an integrator is easily fooled: Gaussian blocks, a
collection with N n d <= 12 scaled to |x| up to ~1e3 (saturated attention), 2 to 12 steps
with durations (or layer steps) up to |tau| = 8, full or causal attention, continuous or
finite depth.  :func:`measure` replays it with ``verify`` in float64 and returns the true error
of the float64 image against the estimate ``verify check`` reports for it.  The truth is a
30-digit replay: by the independent implementation (:mod:`property_tests.independent`:
Gragg-Bulirsch-Stoer extrapolation in mpmath for flows, explicit loops for networks) with
``independent_flow=True``, otherwise by ``verify``'s own 30-digit Taylor flow, whose agreement with
the independent one the sweep checks on every tenth draw (the extrapolation takes a minute
where the Taylor flow takes a second).

Used by the property test in ``test_estimates.py`` (a few draws) and by the sweep
``make estimates`` (``python -m property_tests.estimates COUNT``, >= 1000 draws).
"""

from __future__ import annotations

import dataclasses
import json
import math
import sys
import time
from dataclasses import asdict, dataclass

import mpmath
import numpy as np

from property_tests import independent
from verify.io import witness
from verify.io.errors import IntegrationError
from verify.model.blocks import gaussian_blocks
from verify.model.flow import flow
from verify.verdicts import replay

TRUTH_DIGITS = 30
TRUTH_SECONDS = 60.0  # a truth that takes longer is given up (counted as "no truth")
TOLERANCE = 1e-10  # relative to max(1, max |target|): the witness each draw is checked as


@dataclass(frozen=True)
class Draw:
    seed: int
    depth: str
    causal: bool
    shape: tuple[int, int, int]
    scale: float
    steps: tuple[tuple[int, float], ...]


@dataclass(frozen=True)
class Outcome:
    """``true_error``: max |float64 image - high-precision image|; ``estimate``: what the float64
    replay claims; ``verdict``: that of ``verify check`` on the witness whose targets are the
    float64 image and whose tolerance is TOLERANCE max(1, |Y|); ``refuted``: the truth misses
    that tolerance.  ``ratio`` = true_error / estimate (0 when both vanish)."""

    seed: int
    depth: str
    causal: bool
    shape: tuple[int, int, int]
    scale: float
    n_steps: int
    true_error: float
    estimate: float
    ratio: float
    verdict: str
    refuted: bool
    seconds: float


def draw(seed: int) -> Draw:
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 4))
    n = int(rng.integers(1, 1 + min(4, 12 // d)))
    N = int(rng.integers(1, 1 + 12 // (n * d)))
    K = int(rng.integers(2, 13))
    steps = tuple((int(k % 2 if rng.random() < 0.7 else rng.integers(2)), float(rng.uniform(-8, 8))) for k in range(K))
    return Draw(seed=seed, depth="continuous" if rng.random() < 0.6 else "finite", causal=bool(rng.random() < 0.4),
                shape=(N, n, d), scale=float(10 ** rng.uniform(-1, 3)), steps=steps)


def problem(dr: Draw):
    """The draw's blocks (Gaussian, with its causal mask) and inputs."""
    blocks = tuple(dataclasses.replace(b, causal=dr.causal) for b in gaussian_blocks(dr.seed, dr.shape[2]))
    X = np.random.default_rng(dr.seed + 1).normal(size=dr.shape) * dr.scale
    return blocks, X


def _witness_doc(dr: Draw, blocks, X, Y) -> dict:
    tol = TOLERANCE * max(1.0, float(np.max(np.abs(Y))))
    return witness.make(blocks, X, Y, dr.depth, list(dr.steps), tol)


def truth(dr: Draw, blocks, X, independent_flow: bool = True) -> np.ndarray:
    """The image at TRUTH_DIGITS digits (an object array of mpmath numbers)."""
    mats = [(b.Q, b.K, b.V) for b in blocks]
    if dr.depth == "continuous" and not independent_flow:
        for digits in (TRUTH_DIGITS, 2 * TRUTH_DIGITS):  # a chaotic flow needs more: its own estimate says so
            res = flow(blocks, list(dr.steps), X, dps=digits, propagate=True, deadline=time.perf_counter() + TRUTH_SECONDS)
            if res.error_estimate <= 1e-20 * max(1.0, float(np.max(np.abs(np.asarray(res.end, dtype=float))))):
                return np.vectorize(lambda v: mpmath.mpf(str(v)), otypes=[object])(res.end)
        raise ArithmeticError(f"the flow is too sensitive for a truth at {2 * TRUTH_DIGITS} digits "
                              f"(estimate {res.error_estimate:.1e})")
    if dr.depth == "continuous":
        return independent.flow(mats, dr.steps, X, causal=dr.causal, dps=TRUTH_DIGITS,
                                deadline=time.perf_counter() + 5 * TRUTH_SECONDS)
    return independent.network(mats, dr.steps, X, causal=dr.causal, dps=TRUTH_DIGITS)


def measure(dr: Draw, independent_flow: bool = True) -> Outcome | None:
    """The outcome of one draw, or None when the float64 replay refuses it (overflow, step cap:
    nothing is claimed, so nothing can be false)."""
    t0 = time.perf_counter()
    blocks, X = problem(dr)
    try:
        w = witness.from_dict(_witness_doc(dr, blocks, X, X))  # targets replaced below
        image = replay.image(w)  # float64 replay: the image and its estimate
    except IntegrationError:
        return None
    Y = np.asarray(image.end, dtype=float)
    w = witness.from_dict(_witness_doc(dr, blocks, X, Y))
    verdict = replay.replay(w)
    with mpmath.workdps(TRUTH_DIGITS):
        exact = truth(dr, blocks, X, independent_flow)
        err = float(max(abs(a - mpmath.mpf(float(b))) for a, b in zip(exact.ravel(), Y.ravel(), strict=True)))
    est = float(image.estimate)
    return Outcome(seed=dr.seed, depth=dr.depth, causal=dr.causal, shape=dr.shape, scale=dr.scale,
                   n_steps=len(dr.steps), true_error=err, estimate=est,
                   ratio=err / est if est > 0 else (0.0 if err == 0 else math.inf),
                   verdict=verdict["verdict"], refuted=err > w.tolerance, seconds=time.perf_counter() - t0)


def main(argv: list[str]) -> int:
    count = int(argv[0]) if argv else 1000
    first = int(argv[1]) if len(argv) > 1 else 0
    out = argv[2] if len(argv) > 2 else None
    rows, refused, agree = [], 0, []
    for seed in range(first, first + count):
        try:
            o = measure(draw(seed), independent_flow=False)
        except ArithmeticError as exc:  # a 30- or 60-digit replay gave up: no truth
            print(f"seed {seed}: no truth ({exc})", file=sys.stderr)
            continue
        if o is not None and seed % 10 == 0 and o.depth == "continuous":  # the two 30-digit truths agree?
            try:
                agree.append(abs(measure(draw(seed)).true_error - o.true_error))
            except ArithmeticError as exc:
                print(f"seed {seed}: no independent truth ({exc})", file=sys.stderr)
        if o is None:
            refused += 1
            continue
        rows.append(asdict(o))
        flag = " FALSE PASS" if o.verdict == "WITHIN" and o.refuted else (" RATIO > 1" if o.ratio > 1 else "")
        print(f"seed {seed}: {o.depth} {o.shape} scale {o.scale:.3g} ratio {o.ratio:.2e} "
              f"({o.true_error:.2e} / {o.estimate:.2e}) {o.verdict}{flag} {o.seconds:.1f}s", flush=True)
    ratios = [r["ratio"] for r in rows]
    summary = {"draws": count, "measured": len(rows), "refused_by_float64": refused,
               "max_ratio": max(ratios, default=0.0), "over_1": sum(r > 1 for r in ratios),
               "false_pass": sum(r["verdict"] == "WITHIN" and r["refuted"] for r in rows),
               "truths_compared": len(agree), "worst_truth_disagreement": max(agree, default=0.0),
               "verdicts": {v: sum(r["verdict"] == v for r in rows) for v in ("WITHIN", "OUTSIDE", "UNDECIDED")}}
    print(json.dumps(summary))
    if out:
        with open(out, "x", encoding="utf-8") as f:
            json.dump({"summary": summary, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
