"""Why networks are easier to fit than flows: the same fit on four end-point models.

One Levenberg-Marquardt fit (:func:`verify.search.newton.levenberg_marquardt`, one start, no
population) of the multiple-shooting system (:mod:`verify.search.shooting`: ``MODELS_STEPS_PER_DIM`` * m
steps of the alternating pattern in segments of 12, straight-path states) on each model, from
the same starts (``default_rng([instance, start])``, parameters uniform in [-0.5, 0.5]):

* ``network``: residual layers X + h F_b(X), the step sizes h free;
* ``network |h|<=1`` and ``network |h|<=0.3``: the same layers with h = a tanh(u), u fitted, so
  no step exceeds a;
* ``flow``: the RK4 surrogate of the flows (two RK4 steps per control step), durations free.

Each fit stops at max |r| <= 1e-3 (the continuous search tolerance of :mod:`verify.search.solver`) or
after ``MODELS_JACOBIANS`` Jacobians.  ``extra_info`` holds, per fit, whether it reached 1e-3,
the Jacobians used, the last max |r|, the largest |step| and the residual of the same member
read as a control of flows (step sizes as durations, RK4 with ``AS_FLOW_SUBSTEPS`` = 16 steps
per control step): for a network, how far it is from a flow; for the flow model, how far its
two-step surrogate is from the flow.  Instances:
:func:`theorems.reach.instance` (m = ``MODELS_M``, seed ``MODELS_SEED``, indices
``MODELS_INSTANCES``), ``MODELS_STARTS`` starts each.  The round is timed, but the point is the
Jacobian counts; run it as ``make models``.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace

import numpy as np
import pytest

from theorems.reach import instance
from verify.search.newton import levenberg_marquardt
from verify.search.shooting import Shooting

M = int(os.environ.get("MODELS_M", "18"))
SEED = int(os.environ.get("MODELS_SEED", "21"))
INSTANCES = [int(i) for i in os.environ.get("MODELS_INSTANCES", "0,1,2").split(",")]
STARTS = int(os.environ.get("MODELS_STARTS", "2"))
JACOBIANS = int(os.environ.get("MODELS_JACOBIANS", "1000"))
STEPS_PER_DIM = int(os.environ.get("MODELS_STEPS_PER_DIM", "20"))
SEARCH_TOL = 1e-3
AS_FLOW_SUBSTEPS = 16
MODELS = {"network": None, "network |h|<=1": 1.0, "network |h|<=0.3": 0.3, "flow": None}


@dataclass(frozen=True)
class BoundedSteps(Shooting):
    """Residual layers whose step sizes are bound * tanh(u), the u being the unknowns (residuals
    and Jacobians only: :meth:`Shooting.curvature` is not adapted, and the fits here take plain
    Levenberg-Marquardt steps)."""

    bound: float = 1.0

    def step_sizes(self, U: np.ndarray) -> np.ndarray:
        """The layers' step sizes bound * tanh(u) of the unknowns u."""
        return self.bound * np.tanh(U)

    def _network(self, H, Z, sensitivities):
        end, dH, dW = super()._network(self.step_sizes(H), Z, sensitivities)
        if sensitivities:
            dH = dH * (self.bound / np.cosh(H) ** 2)[:, None, :]
        return end, dH, dW


def shooting(model: str, blocks, X, Y) -> Shooting:
    total = STEPS_PER_DIM * X.size
    S = math.ceil(total / 12)
    euler = Shooting(blocks, X, Y, S, total // S)
    if model == "flow":
        return replace(euler, scheme="rk4", substeps=2)
    if MODELS[model] is None:
        return euler
    return BoundedSteps(blocks, X, Y, S, total // S, bound=MODELS[model])


def fit(model: str, inst: int, start: int) -> dict:
    X, Y, blocks = instance(M, inst, SEED)
    sh = shooting(model, blocks, X, Y)
    x0 = sh.fresh(np.random.default_rng([inst, start]), 0.5, "path")

    def system(z):
        r, J = sh.system(z[None], True)
        return r[0], J[0]

    with np.errstate(all="ignore"):  # overflowing trial steps are rejected
        x, info = levenberg_marquardt(system, x0, tol=SEARCH_TOL, max_iter=JACOBIANS,
                                      residual_only=lambda z: sh.system(z[None])[0][0])
    h = x[: sh.segments * sh.steps]
    h = sh.step_sizes(h) if isinstance(sh, BoundedSteps) else h
    row = {"instance": inst, "start": start, "reached": bool(info["residual"] <= SEARCH_TOL),
           "jacobians": info["jacobians"], "max_residual": float(f"{info['residual']:.2e}"),
           "max_step": round(float(np.abs(h).max()), 2)}
    # the fitted member read as a control of flows, RK4 with AS_FLOW_SUBSTEPS steps per control step
    as_flow = Shooting(blocks, X, Y, sh.segments, sh.steps, AS_FLOW_SUBSTEPS, "rk4")
    with np.errstate(all="ignore"):
        r = as_flow.system(np.concatenate([h, x[len(h):]])[None])[0][0]
    row["as_flow_max_residual"] = float(f"{np.abs(r).max():.2e}")
    return row


def fit_all(model: str) -> list[dict]:
    return [fit(model, i, j) for i in INSTANCES for j in range(STARTS)]


@pytest.mark.parametrize("model", list(MODELS))
def test_models(benchmark, model):
    benchmark.group = f"models m={M} seed={SEED}"
    rows = benchmark.pedantic(fit_all, (model,), rounds=1, iterations=1)
    benchmark.extra_info.update({"model": model, "m": M, "seed": SEED, "steps_per_dim": STEPS_PER_DIM,
                                 "reached": sum(r["reached"] for r in rows), "fits": len(rows), "rows": rows})
    print(model, rows)
