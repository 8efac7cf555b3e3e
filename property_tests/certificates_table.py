"""The certificates' reach table of issue 51 (docs/verdicts.md, 2026-12-06), re-runnable.

``python -m property_tests.certificates_table DIR [NAME ...] [--scheduler S] [--workers N]
[--resume]`` writes the witnesses to DIR (never over an existing file) and prints one JSON row
per witness, in the order named: the float64 flow's Taylor steps, the certified replay
(verdict, seconds, validated steps, width) and the existence proof (seconds, radius, distance
from the written durations or steps, K reach / r, contraction).  Each row is a unit of a sweep
(:mod:`verify.sweep`: a local Dask cluster of one process per core by default), journalled
to DIR/journal.jsonl as it ends; ``--resume`` takes the rows finished with the same code from
there (issue 66: the table runs in parallel and survives an interruption).  The
seeds were stated before the runs: 5101-5104 continuous m = 18, 5111-5113 continuous m = 32, 5121-5124 finite, and the standard T1
witness (seed 0); 5114-5116 continuous m = 32, the fresh witnesses of issue 66's fourth session.
Targets are independent draws; where ``verify interpolate`` finds no
control for them, the image under a hidden random control (:func:`theorems.instances.hidden_control_targets`);
where it finds none for those either, the hidden control itself is the witness (``verify
interpolate`` with one BLAS thread, as the README asks: run it with OPENBLAS_NUM_THREADS=1).  Certificates
get CERTIFY_SECONDS and existence proofs EXISTENCE_SECONDS each.  ``make certificates`` runs it
(about two hours on one core, existence proofs getting 600 s each); the "before" column of the table is the same script run in a
checkout of the commit before issue 51 (7b3249c).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from theorems.instances import collection, hidden_control_targets, rng
from theorems.two_block import PROFILES
from theorems.witnesses import solver_settings
from verify.io import witness
from verify.io.witness import parse
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


def make(name: str, out: Path) -> str:
    """Write the witness ``name`` to ``out`` and say where its targets came from."""
    if name == "t1":  # the standard profile's T1 witness, as theorems/two_block.py builds it
        p = PROFILES["standard"]
        blocks, X = gaussian_blocks(0, 2), collection(0, p["shape"], "inputs")
        Y = hidden_control_targets(blocks, X, 0, "continuous", steps=2 * X.size)
        sol = solve(blocks, X, Y, solver_settings("continuous", 0, p))
        out.open("x").write(witness.dumps(witness.make(blocks, X, Y, "continuous", sol.steps, TOLERANCE,
                                                       precision=witness.precision_label(sol.dps))))
        return "standard T1, seed 0"
    seed, shape, depth = CASES[name]
    blocks, X = gaussian_blocks(seed, shape[2]), collection(seed, shape, "issue51 inputs")
    for kind, Y in (("independent", collection(seed, shape, "issue51 targets")),
                    ("hidden-control targets", hidden_control_targets(blocks, X, seed, depth, steps=2 * X.size))):
        np.save(out.with_suffix(".X.npy"), X)
        np.save(out.with_suffix(".Y.npy"), Y)
        found = subprocess.run([sys.executable, "-m", "verify", "interpolate", "--inputs", str(out.with_suffix(".X.npy")),
                                "--targets", str(out.with_suffix(".Y.npy")), "--seed", str(seed), "--depth", depth,
                                "--time-budget", str(SEARCH_SECONDS[X.size]), "--out", str(out), "--quiet"],
                               capture_output=True, text=True)
        if found.returncode == 0:
            return kind
    h = rng(seed, "hidden control", depth).uniform(-0.5, 0.5, size=2 * X.size)
    out.open("x").write(witness.dumps(witness.make(blocks, X, Y, depth, [(j % 2, float(t)) for j, t in enumerate(h)],
                                                   TOLERANCE)))
    return "the hidden control itself"


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


def unit(name: str, directory: str) -> dict:
    """One row as a unit of the sweep: the witness ``name`` made in ``directory`` unless there,
    then its row."""
    path = Path(directory) / f"{name}.json"
    kind = make(name, path) if not path.exists() else "as found in DIR"
    return row(path) | {"targets": kind}


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
    args = p.parse_args(argv)
    out = Path(args.directory)
    out.mkdir(parents=True, exist_ok=True)
    units = [Unit(task=f"{__name__}:unit", params={"name": n, "directory": str(out.resolve())},
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
