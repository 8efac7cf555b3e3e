"""The solver's reach on independent Gaussian targets: a measurement, not a theorem check.

The theorem says every admissible target collection is reachable; whether :func:`verify.search.solver.solve`
*finds* the control for targets that no control produced is what this measures (issue 4).
Instance i of size m = N n d: inputs and targets i.i.d. N(0, 1) of shape ``SHAPES[m]`` and the
blocks ``gaussian_blocks(seed_i, d)``, all drawn from keys of (seed, m, i).  The budget is counted
in work, not seconds (``starts`` random starts of at most the depth's ``max_iter`` Jacobians each, no
time limit), so the rows are the same on every machine and belong in the deterministic part of a
report; the seconds go to its timings.  ``make reach`` measures the issue's wall-clock table
(60 s per instance, sizes up to 128) with the same instances.  Each instance is one unit of a
sweep (:func:`units`, :mod:`verify.sweep`), so the rows can be computed on a Dask cluster and
come out the same as in-process.

>>> X, Y, blocks = instance(4, 0, seed=0)
>>> X.shape, Y.shape, blocks[0].d
((1, 2, 2), (1, 2, 2), 2)
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np

from verify.io.errors import InputError
from verify.model.blocks import Block, gaussian_blocks
from verify.search.settings import Settings, resolve
from verify.search.solver import solve
from verify.sweep import runner
from verify.sweep.runner import SweepOptions
from verify.sweep.unit import Unit

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


def unit(m: int, depth: str, index: int, seed: int, starts: int) -> dict[str, Any]:
    """One instance solved within the work budget (a sweep unit: a pure function of its
    arguments): success, depth, Jacobians spent, replay error and the digits of the witness
    (None: float64)."""
    X, Y, blocks = instance(m, index, seed)
    settings = resolve(Settings(depth=depth, seed=index, time_budget=math.inf, max_starts=starts))
    sol = solve(blocks, X, Y, settings)
    # sol.error is the replay of the returned steps, and success is that error within tolerance
    return {"success": sol.success, "depth": sol.depth, "jacobians": sol.jacobians, "error": sol.error, "dps": sol.dps}


def checked_unit(result: Any, where: str = "the journal") -> dict[str, Any]:
    """A reach instance's result read back from a journal, its fields and types checked (one line,
    :class:`InputError`), and ``success`` held to the replay error it reports (within the
    solver's tolerance, finite)."""
    kinds = {"success": bool, "depth": int, "jacobians": int, "error": (int, float), "dps": (int, type(None))}
    if not isinstance(result, dict) or set(result) != set(kinds):
        raise InputError(f"{where}: a reach record must hold exactly {', '.join(kinds)}; run without --resume")
    for k, kind in kinds.items():
        if not isinstance(result[k], kind) or (kind is not bool and isinstance(result[k], bool)):
            raise InputError(f"{where}: a reach record's {k!r} has the wrong type; run without --resume")
    ok = result["success"] and math.isfinite(result["error"]) and result["error"] <= Settings().tolerance
    return result | {"success": bool(ok)}


def units(profile: str | dict[str, Any], seed: int) -> list[Unit]:
    """The profile's instances as sweep units, row by row ((size, depth) in the order of :func:`rows`;
    a profile dict may name its ``depths``, both by default)."""
    p = _profile(profile)
    return [Unit(task=f"{__name__}:unit", params={"m": m, "depth": depth, "index": i, "seed": seed, "starts": p["starts"]},
                 weight=UNIT_SECONDS[depth] * m / 8)
            for m in p["sizes"] for depth in p.get("depths", DEPTHS) for i in range(p["instances"])]


# Seconds per instance at m = 8, for the time-left estimate only: standard profile, seed 0, 2026-12-06
# (continuous 11-15 s at m = 4 and 8, finite 0.1 s); proportional to m beyond is a guess.
UNIT_SECONDS = {"continuous": 12.0, "finite": 0.2}


def rows(profile: str | dict[str, Any], results: list[dict[str, Any] | None]) -> list[dict[str, Any]]:
    """One row per (size, depth) from the units' results (None: a unit that failed, counted as
    not solved and listed in ``failed_units``): instances solved within the work budget and,
    for the solved ones, the median Jacobians spent, median depth and worst replay error (at
    the witness's precision), and how many of them replay within tolerance only in high
    precision."""
    p = _profile(profile)
    out, k = [], p["instances"]
    for r, (m, depth) in enumerate((m, depth) for m in p["sizes"] for depth in p.get("depths", DEPTHS)):
        row = results[r * k:(r + 1) * k]
        wins = [x for x in row if x is not None and x["success"]]
        max_iter = resolve(Settings(depth=depth)).max_iter
        out.append({
            "m": m, "shape": list(SHAPES[m]), "depth": depth, "method": "lm", "instances": k,
            "budget": f"{p['starts']} starts x {max_iter} Jacobians",
            "success_rate": len(wins) / k,
            "median_jacobians_solved": statistics.median(x["jacobians"] for x in wins) if wins else None,
            "median_depth": statistics.median(x["depth"] for x in wins) if wins else None,
            "worst_replay_error": max(x["error"] for x in wins) if wins else None,
            "high_precision_witnesses": sum(x["dps"] is not None for x in wins),
            "failed_units": [i for i, x in enumerate(row) if x is None],
        })
    return out


def measure(profile: str | dict[str, Any] = "quick", seed: int = 0, progress: Callable[[str], None] | None = None,
            options: SweepOptions | None = None) -> tuple[list[dict[str, Any]], list[float]]:
    """The rows of :func:`rows` for the profile (a name of PROFILES or such a dict), computed as
    a sweep (in-process unless ``options`` say otherwise), and the seconds of work in each row."""
    sweep = runner.run(units(profile, seed), options or SweepOptions(scheduler="none"), progress)
    return rows(profile, sweep.results()), row_seconds(profile, [r.seconds for r in sweep.records])


def row_seconds(profile: str | dict[str, Any], seconds: list[float]) -> list[float]:
    """The seconds of the units of each row (``seconds`` per unit, in the order of :func:`units`)."""
    k = _profile(profile)["instances"]
    return [round(sum(seconds[j:j + k]), 3) for j in range(0, len(seconds), k)]


def _profile(profile: str | dict[str, Any]) -> dict[str, Any]:
    return PROFILES[profile] if isinstance(profile, str) else profile
