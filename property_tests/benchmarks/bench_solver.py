"""The reach table: the solver on random Gaussian instances, against a plain LM baseline.

Instances: those of :func:`theorems.reach.instance` (inputs and targets i.i.d. N(0, 1), the
blocks drawn with them) for m = N n d in ``REACH_SIZES`` (default 8,18,32,64,128),
``REACH_INSTANCES`` (default 10) per size, ``REACH_BUDGET`` seconds each (default 60), drawn with
``REACH_SEED`` (default 0).  For each (m, depth,
method) one benchmark round runs every instance and stores in ``extra_info``: success rate,
median and longest time, the unsolved instances' indices, the fits each instance lost in the
solver's finish (by stage), the slowest shape speed of each instance
(:func:`verify.search.shape_speed.slowest`), the total duration that any control needs
(:func:`verify.search.shape_speed.minimal_duration`) or the total |step| that any network needs
(:func:`verify.search.shape_speed.minimal_step_total`) beside that of the returned controls or
networks, median depth, worst replay error of the successes, and how many of the returned
witnesses replay within their tolerance under the independent implementation
(``property_tests/independent.py``: explicit loops; networks at the witness's precision, flows
at 30 digits by Gragg-Bulirsch-Stoer extrapolation; its replay time is not part of an
instance's seconds).  ``lm`` (the solver's defaults) restarts until the budget is spent; the
``plain-lm`` baseline is one start of 300 Jacobians.  Costate shooting and the search through a
hub (issue 42) were rows here until issue 54 removed them (docs/solver-reach.md).

Each instance is a unit of a sweep (:mod:`verify.sweep`): ``REACH_SCHEDULER`` ``local`` (default:
a Dask cluster of one single-threaded process per core, ``REACH_WORKERS`` of them when set),
``none`` (in this process) or ``tcp://HOST:PORT`` (a running Dask scheduler); every instance is
journalled to ``REACH_JOURNAL`` (default ``reports/benchmarks/reach-journal.jsonl``) as it ends,
and ``REACH_RESUME=1`` takes those finished with the same code from there.  A round's wall
time is the row's on that cluster; the row's times are the instances' own.  A full table
takes hours: run it as ``make reach`` (or set the variables for a smaller one).
"""

from __future__ import annotations

import math
import os
import statistics
import time

import pytest

from property_tests import independent
from theorems.reach import instance
from verify.model.flow import flow
from verify.search.settings import Settings
from verify.search.shape_speed import minimal_duration, minimal_step_total, slowest
from verify.search.solver import solve
from verify.sweep import runner
from verify.sweep.runner import SweepOptions
from verify.sweep.unit import Unit

SIZES = [int(s) for s in os.environ.get("REACH_SIZES", "8,18,32,64,128").split(",")]
INSTANCES = int(os.environ.get("REACH_INSTANCES", "10"))
SEED = int(os.environ.get("REACH_SEED", "0"))  # the instance generator's seed (the solver was designed on 11 and 12)
BUDGET = float(os.environ.get("REACH_BUDGET", "60"))
# Where the instances run (verify.sweep.runner): a local Dask cluster of one process per core by default
SCHEDULER = os.environ.get("REACH_SCHEDULER", "local")
WORKERS = int(os.environ["REACH_WORKERS"]) if os.environ.get("REACH_WORKERS") else None
JOURNAL = os.environ.get("REACH_JOURNAL", "reports/benchmarks/reach-journal.jsonl")
RESUME = os.environ.get("REACH_RESUME", "") == "1"  # take instances finished with the same code from JOURNAL
METHODS = {
    "lm": {},  # the solver's defaults
    # one start of 300 Jacobians, single shooting of 10 m layers or steps, plain steps, straight-path start, X to Y only
    "plain-lm": dict(steps_per_dim=10, segments=1, max_iter=300, max_starts=1, population=1, acceleration=0.0,
                     states="path", directions=("forward",), phases=({"share": 1.0},)),
}


def solve_unit(m: int, depth: str, method: str, index: int, seed: int, budget: float) -> dict:
    """One instance (a sweep unit): what the solver returned and the seconds it took, the
    instance's shape-speed and length bounds, and, after the clock, the witness's replay under
    the independent implementation (``sol.dps``: None for a float64 witness, else its digits)."""
    X, Y, blocks = instance(m, index, seed)
    settings = Settings(depth=depth, time_budget=budget, seed=index, **METHODS[method])
    t0 = time.perf_counter()
    sol = solve(blocks, X, Y, settings)
    seconds = time.perf_counter() - t0
    bound = minimal_step_total if depth == "finite" else minimal_duration
    # how much the returned control amplifies a perturbation of its durations (after the clock; continuous only)
    gain = flow(blocks, sol.steps, X, propagate=True).amplification if sol.success and depth == "continuous" else None
    return {"success": sol.success, "message": sol.message, "seconds": seconds, "depth": sol.depth, "error": sol.error,
            "dps": sol.dps,
            "lost": sol.lost, "total_duration": sol.total_duration, "slowest": slowest(blocks, X, Y)[0],
            "bound": bound(blocks, X, Y), "amplification": gain,
            "independent_error": _independent_error(blocks, X, Y, sol.steps, sol.dps, depth) if sol.success else None}


# Difficulty: the lower bound on the total |duration| (|step|) any control (network) from X to Y needs
# (verify.search.shape_speed); rows report success per bin, so a reader sees where the solver stops.
DIFFICULTY_BINS = (0.0, 1.0, 2.0, 4.0, 8.0, 16.0, math.inf)


def by_difficulty(results: list[dict | None]) -> list[dict]:
    """Instances and solved instances per bin of the lower bound (a failed unit counts as unsolved, bin unknown)."""
    out = []
    for lo, hi in zip(DIFFICULTY_BINS, DIFFICULTY_BINS[1:], strict=False):
        inside = [r for r in results if r is not None and lo <= r["bound"] < hi]
        if inside:
            out.append({"bound_from": lo, "bound_below": hi if math.isfinite(hi) else None, "instances": len(inside),
                        "solved": sum(r["success"] for r in inside)})
    return out


def solve_all(m: int, depth: str, method: str) -> list[dict | None]:
    """Every instance of the row as a unit of a sweep (SCHEDULER, WORKERS; journalled to JOURNAL,
    resumed when RESUME): each unit's result, None where it failed twice."""
    units = [Unit(task=f"{__name__}:solve_unit", params={"m": m, "depth": depth, "method": method, "index": i,
                                                         "seed": SEED, "budget": BUDGET}) for i in range(INSTANCES)]
    sweep = runner.run(units, SweepOptions(scheduler=SCHEDULER, workers=WORKERS, journal=JOURNAL, resume=RESUME), print)
    print(sweep.summary())
    return sweep.results()


def summary(m: int, depth: str, method: str, results: list[dict | None]) -> dict:
    """The table row from the units' results (a failed unit counts as unsolved and is listed)."""
    tolerance = Settings().tolerance
    wins = [r for r in results if r is not None and r["success"]]
    theirs = [r["independent_error"] for r in wins]
    bound_key, total_key = ("minimal_step_totals", "step_totals") if depth == "finite" else ("minimal_durations",
                                                                                             "total_durations")
    ran = [r for r in results if r is not None]
    return {
        "m": m, "depth": depth, "method": method, "seed": SEED, "instances": INSTANCES, "budget_s": BUDGET,
        "success_rate": len(wins) / INSTANCES,
        "median_time_s": statistics.median(r["seconds"] for r in ran) if ran else None,
        "max_time_s": max((r["seconds"] for r in ran), default=None),  # the budget's overrun, if any
        "unsolved_instances": [i for i, r in enumerate(results) if r is None or not r["success"]],
        "failed_units": [i for i, r in enumerate(results) if r is None],
        # per instance, the fits that reached the search tolerance and were lost in the finish, by stage
        # (verify.search.finish.LOSSES)
        "lost_in_finish": [r["lost"] if r else None for r in results],
        # the smallest shape speed of each instance's input and target sequences (verify.search.shape_speed)
        "slowest_shape_speeds": [round(r["slowest"], 4) if r else None for r in results],
        # a lower bound on the total |step| of any network (finite) or |duration| of any control
        # (continuous) from X to Y, and that of each returned network or control
        bound_key: [round(r["bound"], 2) if r else None for r in results],
        total_key: [round(r["total_duration"], 2) if r and r["success"] else None for r in results],
        "median_depth": statistics.median(r["depth"] for r in wins) if wins else None,
        "worst_replay_error": max(r["error"] for r in wins) if wins else None,
        "independent_within_tolerance": sum(e <= tolerance for e in theirs),
        "worst_independent_replay_error": max(theirs) if theirs else None,
        "high_precision_witnesses": sum(r["dps"] is not None for r in wins),
        "by_difficulty": by_difficulty(results),
        # where the solved ones reach: the longest returned control (network) and, continuous, its largest amplification
        "longest_solved": max((r["total_duration"] for r in wins), default=None),
        "largest_amplification": max((r["amplification"] for r in wins if r.get("amplification")), default=None),
    }


def _independent_error(blocks, X, Y, steps, digits, depth: str) -> float:
    mats = [(b.Q, b.K, b.V) for b in blocks]
    if depth == "finite":  # at the witness's precision: float64, or its digits
        end = independent.network(mats, steps, X, blocks[0].beta, blocks[0].causal, dps=digits)
    else:  # at 30 digits at least, by extrapolation: float64 DOP853, even at rtol 2.3e-14, missed
        # witnesses by 2.7e-10 (m = 8) and 1.1e-9 (m = 18) whose 30-digit replays are within 6e-12
        # and 7.7e-11; 1e-20 per step is ample for a tolerance of 1e-10 and 2-3 times cheaper than 1e-25.
        # A control that needed more than 30 digits amplifies rounding about 10^(digits - 17)-fold:
        # at 1e-20 per step a 33-digit one (seed 21 m = 8 instance 4) missed by 2.1e-5, at 38 digits
        # and 1e-33 (extrapolated_flow's default) by 1.2e-12, as the solver's own replay says
        # A 30-digit witness can amplify as much: seed 36 m = 8 instance 3 (total duration 132; its own
        # replay 2.5e-14 at 30 digits, 1.1e-14 at 40) missed by 4.5e-8 at 1e-20 per step, by 3.5e-13 at
        # 1e-25.  The solver's digits keep gain * 10^-dps <= 1e-7 tolerance (verify.search.finish.high_digits),
        # so 10^(5 - dps) per step (extrapolated_flow's default) leaves at most 1e-2 tolerance; a float64
        # witness passed the solver's drift test (gain below about 2e5), for which 1e-20 is enough.
        if digits is not None and digits > 30:
            end = independent.flow(mats, steps, X, blocks[0].beta, blocks[0].causal, dps=digits + 5)
        else:
            end = independent.flow(mats, steps, X, blocks[0].beta, blocks[0].causal, dps=30,
                                   tol=1e-20 if digits is None else None)
    return float(abs((end - Y).astype(float)).max())


@pytest.mark.parametrize("method", list(METHODS))
@pytest.mark.parametrize("depth", ["finite", "continuous"])
@pytest.mark.parametrize("m", SIZES)
def test_reach(benchmark, m, depth, method):
    benchmark.group = f"reach m={m} {depth}"
    results = benchmark.pedantic(solve_all, (m, depth, method), rounds=1, iterations=1)
    out = summary(m, depth, method, results)
    benchmark.extra_info.update(out)
    print(out)
