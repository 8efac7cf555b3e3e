"""Finite-to-flow homotopy survival (issue 54, item 5): does a network that interpolates turn
into a control that interpolates?

A network of layers (b_l, h_l), X -> X + h_l F_{b_l}(X), is the explicit Euler step of the
flow exp(h_l F_{b_l}).  Stage M replaces each layer by M Euler substeps of h_l / M (the same L
unknowns h_l); M = 1, 2, 4, ..., 64, then the exact flow with durations h_l.  At each stage a
Levenberg-Marquardt (Gauss-Newton) correction of the h_l, from the previous stage's, drives
max |image - Y| below the tolerance; a path *survives* when every stage converges.  Derivatives
are exact: the network's step sensitivities (summed over a layer's substeps, each weighted 1/M)
and the flow's duration sensitivities.

    PYTHONPATH=. python -m property_tests.homotopy SEED COUNT SIZES...   # e.g. 5402 10 8 18

prints one JSON line per instance (the stage where the path broke, or None) and a summary.
Networks that replay within 1e-10 only at 30 digits or more are left out (the stages run in
float64); ``HOMOTOPY_TOLERANCE=1e-6`` follows them too, each stage to that looser tolerance.

>>> X, Y, blocks = instance(8, 0, 5)
>>> net = [(0, 0.1), (1, -0.2), (0, 0.15)]
>>> end = apply(blocks, net, X).end
>>> stage_end(blocks, net, X, 1)[0].shape == end.shape and bool(np.allclose(stage_end(blocks, net, X, 1)[0], end))
True
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Sequence

import numpy as np

from theorems.reach import instance
from verify.io.errors import IntegrationError
from verify.model.flow import flow
from verify.model.network import apply
from verify.search.newton import levenberg_marquardt
from verify.search.settings import Settings
from verify.search.solver import solve

STAGES = (1, 2, 4, 8, 16, 32, 64, "flow")
TOLERANCE = 1e-10
CORRECTION_JACOBIANS = 200  # per stage; a converging Gauss-Newton path needs a handful


def stage_end(blocks, net: Sequence[tuple[int, float]], X: np.ndarray, M) -> tuple[np.ndarray, np.ndarray]:
    """The image of X and its derivative in the L layer steps h_l (N n d, L) at stage M: M Euler
    substeps of h_l / M per layer, or ``"flow"``: the exact flows of durations h_l."""
    if M == "flow":  # a minute at most: a network's huge expansion steps (up to 4e8) are no flow's durations
        res = flow(blocks, list(net), X, sensitivities=True, deadline=time.perf_counter() + 60)
        return res.end, res.d_durations
    fine = [(b, h / M) for b, h in net for _ in range(M)]
    res = apply(blocks, fine, X, sensitivities=True)
    J = res.d_steps.reshape(res.d_steps.shape[0], len(net), M).sum(axis=2) / M  # d/dh_l of its M substeps
    return res.end, J


def follow(blocks, net: Sequence[tuple[int, float]], X: np.ndarray, Y: np.ndarray, tolerance: float = TOLERANCE) -> dict:
    """Correct the layer steps stage by stage; where the path broke (None: it survived)."""
    pattern = [b for b, _ in net]
    h = np.array([t for _, t in net], dtype=float)
    reached = []
    for M in STAGES:
        def fit(x, M=M):
            try:
                end, J = stage_end(blocks, list(zip(pattern, x, strict=True)), X, M)
            except IntegrationError:
                return np.full(Y.size, np.inf), np.zeros((Y.size, len(x)))
            return (np.asarray(end, dtype=float) - Y).ravel(), np.asarray(J, dtype=float)

        start_residual = float(np.abs(fit(h)[0]).max())
        h_new, info = levenberg_marquardt(fit, h, tol=tolerance, max_iter=CORRECTION_JACOBIANS)
        residual = float(np.abs(fit(h_new)[0]).max())
        reached.append({"stage": M, "start_residual": start_residual, "residual": residual,
                        "moved": float(np.abs(h_new - h).max()), "jacobians": info["jacobians"]})
        if not residual <= tolerance:
            return {"broke_at": M, "stages": reached}
        h = h_new
    return {"broke_at": None, "stages": reached}


def main(seed: int, count: int, sizes: Sequence[int], tolerance: float = TOLERANCE) -> None:
    summary = {}
    for m in sizes:
        outcomes = []
        for i in range(count):
            X, Y, blocks = instance(m, i, seed)
            t0 = time.perf_counter()
            sol = solve(blocks, X, Y, Settings(depth="finite", seed=i, time_budget=120))
            if not sol.success or (sol.dps is not None and tolerance <= TOLERANCE):  # the stages are float64
                print(json.dumps({"m": m, "index": i, "network": sol.message if not sol.success else f"{sol.dps} digits"}))
                continue
            net = [(b, float(t)) for b, t in sol.steps]  # a high-precision network's steps, rounded
            path = follow(blocks, net, X, Y, tolerance)
            path |= {"m": m, "index": i, "layers": len(net), "max_step": max(abs(t) for _, t in net),
                     "total_step": sum(abs(t) for _, t in net), "digits": sol.dps,
                     "seconds": round(time.perf_counter() - t0, 1)}
            print(json.dumps(path), flush=True)
            outcomes.append(path)
        broke = [o["broke_at"] for o in outcomes]
        summary[m] = {"networks": len(outcomes), "survived": broke.count(None),
                      "broke_at": {str(s): broke.count(s) for s in STAGES if broke.count(s)},
                      "median_layers": statistics.median(o["layers"] for o in outcomes) if outcomes else None,
                      "median_max_step": statistics.median(o["max_step"] for o in outcomes) if outcomes else None}
    print(json.dumps({"seed": seed, "tolerance": tolerance, "summary": summary}))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]), [int(s) for s in sys.argv[3:]],
         float(os.environ.get("HOMOTOPY_TOLERANCE", TOLERANCE)))
