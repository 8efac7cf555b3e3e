"""The certificates' reach table of issue 51 (docs/verdicts.md, 2026-12-06), re-runnable.

``python -m property_tests.certificates_table DIR [NAME ...] [--scheduler S] [--workers N]
[--resume] [--search]`` certifies the table's witnesses and prints one JSON row per witness, in
the order named: the float64 flow's Taylor steps, the certified replay (verdict, seconds,
validated steps, width) and the existence proof (seconds, radius, distance from the written
durations or steps, K reach / r, contraction).  Each row is a unit of a sweep
(:mod:`verify.sweep`: a local Dask cluster of one process per core by default), journalled
to DIR/journal.jsonl as it ends; ``--resume`` takes the rows finished with the same code from
there (issue 66: the table runs in parallel and survives an interruption).

**The witnesses are files.**  The table's witnesses are kept in
``property_tests/certificate_witnesses/`` and copied to DIR (never over an existing file), so
that every run, on any machine, certifies the same witnesses: made by searches with a time
budget, they depended on the machine's load (issue 66, sixth session: c18c and c32c came out
with 180 and 217 steps instead of 36 and 64).  ``--search`` makes them afresh instead, as
they were made: from seeds stated before the runs, 5101-5104 continuous m = 18, 5111-5113
continuous m = 32, 5121-5124 finite, and the standard T1 witness (seed 0); 5114-5116
continuous m = 32, the fresh witnesses of issue 66's fourth session.  Targets are
independent draws; where ``verify interpolate`` finds no control for them, the image under a
hidden random control (:func:`theorems.instances.hidden_control_targets`); where it finds none
for those either, the hidden control itself is the witness (``verify interpolate`` with one
BLAS thread, as the README asks: run it with OPENBLAS_NUM_THREADS=1).  Each row says which of
these its witness is, read off the witness itself (:func:`targets`).  Certificates get
CERTIFY_SECONDS and existence proofs EXISTENCE_SECONDS each.  ``make certificates`` runs it;
the "before" column of issue 51's table is the same script run in a checkout of the commit
before issue 51 (7b3249c).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from theorems.instances import collection, hidden_control, hidden_control_targets
from theorems.two_block import PROFILES
from theorems.witnesses import solver_settings
from verify.io import witness
from verify.io.witness import Witness, parse
from verify.model.blocks import gaussian_blocks
from verify.search.solver import solve
from verify.verdicts import exact_durations, exact_steps, replay

CASES = {"c18a": (5101, (3, 3, 2), "continuous"), "c18b": (5102, (2, 3, 3), "continuous"),
         "c18c": (5103, (1, 9, 2), "continuous"), "c18d": (5104, (3, 2, 3), "continuous"),
         "c32a": (5111, (4, 4, 2), "continuous"), "c32b": (5112, (2, 4, 4), "continuous"),
         "c32c": (5113, (2, 8, 2), "continuous"), "c32d": (5114, (4, 4, 2), "continuous"),
         "c32e": (5115, (2, 4, 4), "continuous"), "c32f": (5116, (2, 8, 2), "continuous"),
         "f18": (5121, (3, 3, 2), "finite"), "f32": (5122, (4, 4, 2), "finite"),
         "f64a": (5123, (4, 4, 4), "finite"), "f64b": (5124, (8, 4, 2), "finite")}
SEARCH_SECONDS = {18: 150.0, 32: 240.0, 64: 240.0}
CERTIFY_SECONDS, EXISTENCE_SECONDS = 600.0, 600.0
TOLERANCE = 1e-10
WITNESSES = Path(__file__).parent / "certificate_witnesses"  # the table's witness files, one per row


def _origin(name: str) -> tuple[int, tuple[int, int, int], str]:
    """The row's seed, shape (N, n, d) and depth."""
    return (0, PROFILES["standard"]["shape"], "continuous") if name == "t1" else CASES[name]


def targets(name: str, w: Witness) -> str:
    """Where the targets of the row ``name``'s witness ``w`` came from, read off ``w``: the
    independent draw, the hidden control itself, or its image under another control."""
    seed, shape, depth = _origin(name)
    X, Y = np.asarray(w.inputs, dtype=float), np.asarray(w.targets, dtype=float)
    if name != "t1" and np.array_equal(Y, collection(seed, shape, "issue51 targets")):
        return "independent"
    if [(b, float(t)) for b, t in w.steps] == hidden_control(seed, depth, 2 * X.size):
        return "the hidden control itself"
    if np.array_equal(Y, hidden_control_targets(w.blocks_at(), X, seed, depth, steps=2 * X.size)):
        return "hidden-control targets"
    return "targets of unknown origin"


def make(name: str, out: Path) -> None:
    """Write the witness ``name`` to ``out`` by the searches (the module docstring)."""
    if name == "t1":  # the standard profile's T1 witness, as theorems/two_block.py builds it
        p = PROFILES["standard"]
        blocks, X = gaussian_blocks(0, 2), collection(0, p["shape"], "inputs")
        Y = hidden_control_targets(blocks, X, 0, "continuous", steps=2 * X.size)
        sol = solve(blocks, X, Y, solver_settings("continuous", 0, p))
        out.open("x").write(witness.dumps(witness.make(blocks, X, Y, "continuous", sol.steps, TOLERANCE,
                                                       precision=witness.precision_label(sol.dps))))
        return
    seed, shape, depth = CASES[name]
    blocks, X = gaussian_blocks(seed, shape[2]), collection(seed, shape, "issue51 inputs")
    for Y in (collection(seed, shape, "issue51 targets"), hidden_control_targets(blocks, X, seed, depth, steps=2 * X.size)):
        np.save(out.with_suffix(".X.npy"), X)
        np.save(out.with_suffix(".Y.npy"), Y)
        found = subprocess.run([sys.executable, "-m", "verify", "interpolate", "--inputs", str(out.with_suffix(".X.npy")),
                                "--targets", str(out.with_suffix(".Y.npy")), "--seed", str(seed), "--depth", depth,
                                "--time-budget", str(SEARCH_SECONDS[X.size]), "--out", str(out), "--quiet"],
                               capture_output=True, text=True)
        if found.returncode == 0:
            return
    out.open("x").write(witness.dumps(witness.make(blocks, X, Y, depth, hidden_control(seed, depth, 2 * X.size),
                                                   TOLERANCE)))


def row(path: Path) -> dict:
    """The table's row for one witness file."""
    w = parse(path.read_text())
    out = {"name": path.stem, "shape": list(w.inputs.shape), "m": int(w.inputs.size), "steps": len(w.steps)}
    if w.depth == "continuous":
        work = replay.image(w).work
        out |= {"float64_taylor_steps": work["taylor_steps"], "amplification": work["amplification"]}
    t = time.perf_counter()
    r = replay.certify(w, deadline=t + CERTIFY_SECONDS)
    out |= {"verdict": r["verdict"], "certify_s": round(time.perf_counter() - t, 1), "precision": r.get("precision"),
            "validated_steps": r.get("validated_steps"), "width": r.get("gap_width"), "reason": r.get("reason", "")}
    if r["verdict"] != "CERTIFIED":
        return out
    t = time.perf_counter()
    if w.depth == "continuous":
        e = exact_durations.certify_control(w.blocks_at(), list(w.steps), np.array(w.inputs, dtype=object), w.targets,
                                            tolerance=w.tolerance, deadline=t + EXISTENCE_SECONDS)
    else:
        e = exact_steps.certify_network(w.blocks_at(), list(w.steps), np.array(w.inputs, dtype=object), w.targets,
                                        deadline=t + EXISTENCE_SECONDS)
    return out | {"existence": e["certified"], "existence_s": round(time.perf_counter() - t, 1),
                  "radius": e.get("radius"), "distance": e.get("distance"), "K_reach_over_radius": e.get("K_reach_over_radius"),
                  "contraction_upper": e.get("contraction_upper"), "existence_reason": e.get("reason", "")}


def witness_file(name: str, directory: Path, search: bool = False) -> Path:
    """The witness ``name`` in ``directory``: copied there from WITNESSES (or, with ``search``,
    made by the searches) unless a file of that name is there already, which is kept."""
    path = directory / f"{name}.json"
    if not path.exists():
        if search:
            make(name, path)
        else:
            with (WITNESSES / f"{name}.json").open("rb") as src, path.open("xb") as dst:
                shutil.copyfileobj(src, dst)
    return path


def unit(name: str, directory: str, search: bool = False) -> dict:
    """One row as a unit of the sweep: the row of :func:`witness_file`'s witness."""
    path = witness_file(name, Path(directory), search)
    return row(path) | {"targets": targets(name, parse(path.read_text()))}


def main(argv: list[str]) -> None:
    import argparse

    from verify.sweep.runner import SweepOptions, run
    from verify.sweep.unit import Unit

    p = argparse.ArgumentParser(prog="python -m property_tests.certificates_table")
    p.add_argument("directory")
    p.add_argument("names", nargs="*", default=["t1", *CASES])
    p.add_argument("--scheduler", default="local")
    p.add_argument("--workers", type=int, default=None)
    p.add_argument("--resume", action="store_true")
    p.add_argument("--search", action="store_true", help="make the witnesses by the searches, not from the files")
    args = p.parse_args(argv)
    out = Path(args.directory)
    out.mkdir(parents=True, exist_ok=True)
    units = [Unit(task=f"{__name__}:unit", params={"name": n, "directory": str(out.resolve()), "search": args.search},
                  weight=UNIT_WEIGHT.get(n, 1.0)) for n in args.names]
    options = SweepOptions(scheduler=args.scheduler, workers=args.workers, journal=out / "journal.jsonl",
                           resume=args.resume)
    sweep = run(units, options, lambda msg: print(f"  {msg}", file=sys.stderr, flush=True))
    for u, rec in zip(units, sweep.records, strict=True):
        print(json.dumps(rec.result if rec.status == "done" else {"name": u.params["name"], "error": rec.error}),
              flush=True)


# the rows' measured costs relative to one another (docs/verdicts.md, issue 51), for the time-left estimate only
UNIT_WEIGHT = {"t1": 1.0, "c18a": 5.0, "c18b": 5.0, "c18c": 20.0, "c18d": 5.0, "c32a": 40.0, "c32b": 40.0,
               "c32c": 40.0, "c32d": 40.0, "c32e": 40.0, "c32f": 40.0, "f18": 3.0, "f32": 5.0, "f64a": 10.0, "f64b": 10.0}


if __name__ == "__main__":
    main(sys.argv[1:])
