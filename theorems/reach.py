"""The solver's reach on independent Gaussian targets: a measurement, not a theorem check.

The theorem says every admissible target collection is reachable; whether :func:`verify.search.solver.solve`
*finds* the control for targets that no control produced is what this measures (issue 4).
Instance i of size m = N n d: inputs and targets i.i.d. N(0, 1) of shape ``SHAPES[m]`` and the
blocks ``gaussian_blocks(seed_i, d)``, all drawn from keys of (seed, m, i).  The budget is counted
in work, not seconds (``starts`` random starts of at most the depth's ``max_iter`` Jacobians each, no
time limit), so the rows are the same on every machine and belong in the deterministic part of a
report; the seconds go to its timings.  ``make reach`` measures the issue's wall-clock table
(60 s per instance, sizes up to 128) with the same instances.

>>> X, Y, blocks = instance(4, 0, seed=0)
>>> X.shape, Y.shape, blocks[0].d
((1, 2, 2), (1, 2, 2), 2)
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from verify.model.blocks import Block, gaussian_blocks
from verify.search.settings import Settings, resolve
from verify.search.solver import solve

from .instances import indexed_rng

SHAPES = {4: (1, 2, 2), 8: (2, 2, 2), 18: (3, 3, 2), 32: (4, 4, 2), 64: (8, 4, 2), 128: (16, 4, 2)}
PROFILES = {
    "quick": {"sizes": (4,), "instances": 3, "starts": 16},
    "standard": {"sizes": (4, 8), "instances": 5, "starts": 32},
    "paper": {"sizes": (4, 8, 18), "instances": 10, "starts": 64},
}
DEPTHS = ("finite", "continuous")


def instance(m: int, index: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, tuple[Block, Block]]:
    """Inputs X, targets Y (i.i.d. N(0, 1), shape SHAPES[m]) and the blocks of instance ``index``."""
    shape = SHAPES[m]
    g = indexed_rng(seed, index, "reach", m)
    X, Y = g.normal(size=shape), g.normal(size=shape)
    return X, Y, gaussian_blocks(int(g.integers(2**31)), shape[2])


def measure(profile: str | dict[str, Any] = "quick", seed: int = 0, progress: Callable[[str], None] | None = None
            ) -> tuple[list[dict[str, Any]], list[float]]:
    """One row per (size, depth): instances solved within the work budget and, for the solved
    ones, the median Jacobians spent, median depth and worst replay error (at the witness's
    precision), and how many of them replay within tolerance only in high precision; and the
    seconds each row took.  ``profile`` names one of PROFILES or gives such a dict."""
    p = PROFILES[profile] if isinstance(profile, str) else profile
    rows, seconds = [], []
    for m in p["sizes"]:
        for depth in DEPTHS:
            t0, results = time.perf_counter(), []
            for i in range(p["instances"]):
                X, Y, blocks = instance(m, i, seed)
                settings = resolve(Settings(depth=depth, seed=i, time_budget=math.inf, max_starts=p["starts"]))
                sol = solve(blocks, X, Y, settings)
                # sol.error is the replay of the returned steps, and success is that error within tolerance
                results.append((sol.success, sol.depth, sol.jacobians, sol.error, sol.dps))
                if progress:
                    progress(f"reach m={m} {depth} instance {i}: {'solved' if results[-1][0] else 'not solved'}")
            wins = [r for r in results if r[0]]
            rows.append({
                "m": m, "shape": list(SHAPES[m]), "depth": depth, "method": "lm", "instances": len(results),
                "budget": f"{p['starts']} starts x {settings.max_iter} Jacobians",
                "success_rate": len(wins) / len(results),
                "median_jacobians_solved": statistics.median(r[2] for r in wins) if wins else None,
                "median_depth": statistics.median(r[1] for r in wins) if wins else None,
                "worst_replay_error": max(r[3] for r in wins) if wins else None,
                "high_precision_witnesses": sum(r[4] is not None for r in wins),
            })
            seconds.append(round(time.perf_counter() - t0, 3))
    return rows, seconds
