"""The commands: one function per subcommand, from parsed flags to printed verdicts and an
exit status (0 when everything asked for holds, 1 when a check fails, 2 for bad input)."""

from __future__ import annotations

import argparse
import dataclasses
import io
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from theorems import registry
from verify import api
from verify.cli.parser import EXIT_FAIL, EXIT_OK, flags
from verify.io import datafiles, validate, witness
from verify.io.errors import InputError
from verify.io.files import Limits, check_creatable, check_outputs, load_json, write_output
from verify.lie import certify
from verify.lie.admissibility import check_admissible
from verify.lie.hall import basis, str_word
from verify.lie.rank import check_rows
from verify.model.blocks import gaussian_blocks
from verify.model.dynamics import dynamics
from verify.reporting import appendix, report, selfcheck, summary, witness_files
from verify.reporting.latex import plain
from verify.reporting.results import kind_of, yes_no
from verify.reporting.rounding import bound, down, up
from verify.search.settings import Settings
from verify.sweep.runner import SweepOptions
from verify.version import describe

LOG_EVERY = 60.0  # seconds between progress lines of `verify run` when stderr is not a terminal
JOURNAL = "journal.jsonl"  # verify run's sweep journal, in its --out directory (resumed with --resume)


def _check(args: argparse.Namespace) -> int:
    w = witness.load(args.witness, _limits(args))
    return _estimate(w, args) if args.estimate else _certify(w, args)


def _estimate(w: witness.Witness, args: argparse.Namespace) -> int:
    digits = args.dps or w.digits
    verdict = api.check(w, estimate=True, dps=digits, progress=_progress(args.json, after=5.0)).record
    if verdict["verdict"] == "UNDECIDED" and math.isfinite(verdict["error"]):  # straddles: more digits decide
        more = min(validate.MAX_DIGITS, max(30, 2 * (digits or 15)))
        verdict["next"] = (f"replay with --dps {more}, or certify (without --estimate)"
                           if (digits or 0) < validate.MAX_DIGITS else "no replay within the digit limit decides it; "
                           "certify it (without --estimate)")
    if args.json:
        print(report.dumps(verdict), end="")
    else:
        word = {"WITHIN": "WITHIN TOLERANCE", "OUTSIDE": "OUTSIDE TOLERANCE"}.get(verdict["verdict"], "UNDECIDED")
        head = f"{word} (estimate, not a proof): {_head(verdict)}"
        if "reason" in verdict:
            print(f"{head}: {verdict['reason']}" + (f"; {verdict['next']}" if "next" in verdict else ""))
        else:  # a network's layers are exact maps: its estimate is of rounding only
            estimate = "integration error estimate" if w.depth == "continuous" else "rounding error estimate"
            print(f"{head}: max |image - target| = {verdict['error']:.3e}, "
                  f"{estimate} = {verdict['integration_error_estimate']:.1e}, tolerance = {verdict['tolerance']:.3e}")
    return EXIT_OK if verdict["passed"] else EXIT_FAIL


def _head(verdict: dict[str, Any]) -> str:
    """'continuous depth, 6 steps, float64', what check's line says of the witness."""
    unit = dynamics(verdict["depth"]).unit
    return f"{verdict['depth']} depth, {verdict['length']} {unit}, {verdict['precision']}"


def _certify(w: witness.Witness, args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    progress = _progress(args.json, after=5.0)
    verdict = api.check(w, dps=args.dps, budget=args.budget, progress=progress).record
    if args.json:
        print(report.dumps(verdict), end="")
    else:
        head = f"{verdict['verdict']}: {_head(verdict)}"
        if "reason" in verdict:
            more = "; raise --budget" if "deadline" in verdict["reason"] else ""
            print(f"{head}: {verdict['reason']}{more}")
        else:
            work = ("no step moves the inputs" if verdict["precision"].startswith("exact") else
                    f"enclosure width {verdict['width']:.1e}" + (f", {verdict['validated_steps']} validated Taylor steps"
                                                                   if w.depth == "continuous" else ", layers in balls"))
            print(f"{head}: max |image - target| <= {up(verdict['error_upper'], 4)} ({work}), tolerance = "
                  f"{verdict['tolerance']:.3e} ({time.perf_counter() - t0:.1f} s)")
        print(f"  numbers: {verdict['numbers']}")
        if "existence" in verdict:
            e = verdict["existence"]
            if not e["certified"]:
                print(f"  exact solution: not proved ({e['reason']})")
            else:
                what, where, model = (("durations", f"steps {e['free_steps']}", "the validated flow's Taylor model")
                                      if w.depth == "continuous" else
                                      ("step sizes", f"layers {e['free_layers']}", "the network's Taylor model in a Lohner set"))
                print(f"  exact solution: {what} within {up(e['distance'], 2)} of {where} (the rest as written) map the "
                      f"inputs exactly onto the targets (Krawczyk-type test on {model}, proved in Arb)")
    return EXIT_OK if verdict["certified"] else EXIT_FAIL


def _limits(args: argparse.Namespace) -> Limits:
    return Limits(max_bytes=args.max_file_mb * 2**20, max_steps=args.max_steps)


def _selfcheck(args: argparse.Namespace) -> int:
    check_outputs(datafiles.output_directory(args.out, "--out"), ("verification.json",), force=args.force)
    t0 = time.perf_counter()
    checks = selfcheck.run(args.seed, selfcheck.QUICK_SHAPES if args.quick else selfcheck.STANDARD_SHAPES)
    doc = report.document("engine-selfcheck", args.seed, checks, {"total_s": round(time.perf_counter() - t0, 3)})
    path = report.write(doc, args.out)
    if args.json:
        print(report.dumps(doc), end="")
    elif not args.quiet:
        for c in checks:
            print(f"{'PASS' if c.passed else 'FAIL'}  {_row(c.as_dict())}  {plain(c.name)}")
        print(f"{sum(c.passed for c in checks)} of {len(checks)} checks passed; wrote {path}")
    return EXIT_OK if doc["passed"] else EXIT_FAIL


def _progress(quiet: bool, after: float = 0.0, every: float = 0.0) -> Callable[[str], None]:
    """Progress lines on stderr, indented; none when ``quiet``, none in the first ``after``
    seconds (a command that answers at once says nothing), at most one per ``every`` seconds."""
    t0, last = time.perf_counter(), [-math.inf]

    def progress(msg: str) -> None:
        now = time.perf_counter()
        if not quiet and now - t0 >= after and now - last[0] >= every:
            last[0] = now
            print(f"  {msg}", file=sys.stderr, flush=True)

    return progress


def _run(args: argparse.Namespace) -> int:
    # plain lines on a terminal and in a log alike; a log gets at most one a minute, so it stays short
    progress = _progress(args.quiet or args.json, every=0.0 if sys.stderr.isatty() else LOG_EVERY)
    out = datafiles.output_directory(args.out, "--out")
    _check_report_paths(out, args.force, args.resume)
    benchmarks = _benchmark_rows(out)  # read now: a damaged file is refused before the work
    self_checked = report.selfcheck_verdict(out / SELFCHECK, SELFCHECK, _limits(args))
    options = SweepOptions(scheduler=args.scheduler, workers=args.workers, journal=out / JOURNAL, resume=args.resume)
    doc = api.run_theorems(args.profile, args.seed, theorems=args.theorem, reach=not args.no_reach, options=options,
                           selfcheck=self_checked, progress=progress)
    theorems = doc["theorems"]
    path = api.write_report(doc, out, force=True, benchmark_reach=benchmarks[0], performance=benchmarks[1])  # checked above
    if args.json:  # what was written: the witnesses as the files that hold them
        print(path.read_text(), end="")
    else:
        for t in theorems:
            told = " (taken from the journal of an earlier run, not recomputed)" if t.get("from_journal") else ""
            print(f"{'PASS' if t['passed'] else 'FAIL'}  {t['name']}: {plain(t['title'])}{told}")
            for c in t["checks"]:  # the terminal shows a name's mathematics as plain text
                print(f"  {'PASS' if c['passed'] else 'FAIL'}  {_row(c)}  {plain(c['name'])} [{kind_of(c)}]")
        n_checks = sum(len(t["checks"]) for t in theorems)
        n_pass = sum(c["passed"] for t in theorems for c in t["checks"])
        print(f"engine self-check: {summary.selfcheck_line(doc)}")
        print(f"{n_pass} of {n_checks} checks passed ({args.profile} profile, seed {args.seed}; code "
              f"{describe(doc['code'])}); wrote {path}")
    return EXIT_OK if doc["passed"] else EXIT_FAIL


def _row(c: dict[str, Any]) -> str:
    """'1.79e-15 <= 1.00e-10' (value rounded up, bound down), '2.22e-27 < 1', or 'yes (need yes)'."""
    if c.get("boolean"):
        return f"{yes_no(c):>9} {'(need yes)':<11}"
    return f"{up(c['value'], 3):>9} {bound(c['bound']):<11}"


SELFCHECK = "selfcheck/verification.json"  # where `make verify` writes the self-check; the run reports its verdict


def _check_report_paths(out: Path, force: bool, resume: bool) -> None:
    """Refuse, before the work, an output directory whose report paths would fail, lead outside
    it, or replace earlier outputs without ``force`` (the journal is an input under ``resume``)."""
    check_outputs(out, api.REPORT_FILES + (() if resume else (JOURNAL,)), ("appendix",), force=force)
    check_outputs(out / "appendix", appendix.OUTPUTS, force=force)
    witness_files.check(None, out, force=force)


def _benchmark_rows(reports: Path) -> tuple[list | None, list | None]:
    """Rows of REPORTS/benchmarks/reach.json (`make reach`) and latest.json (`make bench`), where present."""
    bench = reports / "benchmarks"
    reach, latest = bench / "reach.json", bench / "latest.json"
    try:
        return (summary.reach_rows(reach) if reach.exists() else None,
                summary.performance_rows(latest) if latest.exists() else None)
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise InputError(f"{bench}: a benchmark file is damaged ({type(exc).__name__}: {str(exc)[:80]}); "
                         "remove it or rerun `make reach` / `make bench`") from None


def _appendix(args: argparse.Namespace) -> int:
    path = Path(args.report)
    if not path.exists():
        raise InputError(f"{path}: no such report; run `verify run` (or `make verify`) first")
    doc = report.check_theorem_document(load_json(path, _limits(args)), str(path))
    target = Path(args.out) if args.out else path.parent / "appendix"
    if target.is_symlink():
        raise InputError(f"{target} is a symbolic link; give a real directory (the suite writes only inside it)")
    out = datafiles.output_directory(target, "--out")
    check_outputs(out, appendix.OUTPUTS, force=args.force)
    written = appendix.write(doc, out, registry.statements())
    print(f"wrote {', '.join(str(p) for p in written)}")
    return EXIT_OK


def _blocks_from(args: argparse.Namespace, d: int):
    if args.blocks is not None:
        blocks, att = datafiles.load_blocks(args.blocks, _limits(args))
        if blocks[0].d != d:
            raise InputError(f"{args.blocks}: blocks are {blocks[0].d} x {blocks[0].d} but the tokens have dimension d = {d}")
    else:
        if args.dim is not None and args.dim != d:
            raise InputError(f"--dim {args.dim} does not match the data, whose tokens have dimension d = {d}")
        blocks = gaussian_blocks(args.seed, d)
    causal = args.causal or blocks[0].causal
    if args.beta is None:
        return tuple(dataclasses.replace(b, causal=causal) for b in blocks)
    return tuple(dataclasses.replace(b, causal=causal, beta=float(args.beta),
                                     exact={**{m: b.exact_entries(m) for m in "QKV"}, "beta": args.beta})
                 for b in blocks)


RANK_FIELDS = ("verdict", "dimension", "bound", "sharp", "reasons", "rank", "min_degree", "counting_degree", "max_degree",
               "words", "sigma_min", "first_dropped", "gap", "noise_level", "decided_by", "undecided", "weight_digits",
               "sigma", "sequences", "certificate")


def _rank(args: argparse.Namespace) -> int:
    X = datafiles.load_collection(args.inputs, limits=_limits(args))
    blocks = _blocks_from(args, X.shape[2])
    check_rows(X, bool(blocks[0].causal))  # from the floats, before the exact numbers take memory and time
    X = datafiles.load_collection(args.inputs, limits=_limits(args), exact=True)
    if args.dump:
        check_creatable(args.dump, "--dump", ".npz", force=args.force)  # np.savez would add the suffix and miss the check
    res = api.rank(blocks, X, max_degree=args.max_degree, dps=args.dps, certify=not args.estimate, budget=args.budget,
                   progress=_progress(args.json, after=2.0))
    out: dict[str, Any] = {k: getattr(res, k) for k in RANK_FIELDS}
    out["levels"] = [dataclasses.asdict(lv) for lv in res.levels]
    out["kind"] = "estimate" if args.estimate else "certificate"
    ok = res.certified if not args.estimate else res.rank == res.bound
    if blocks[0].causal and not args.estimate:
        out["gl_d"] = certify.generates_gl(*(b.exact_entries("V") for b in blocks))
        ok = ok and out["gl_d"]["certified"]
    out["passed"] = bool(ok)
    if args.dump:
        buf = io.BytesIO()
        np.savez(buf, matrix=np.asarray(res.matrix, dtype=float), words=np.array([str_word(w) for w in basis(res.max_degree)]),
                 sequences=np.array(res.sequences))
        write_output(args.dump, buf.getvalue(), force=args.force)
    if res.undecided:
        out["undecided"] = flags(res.undecided)
    if args.json:
        print(report.dumps(out), end="")
        return EXIT_OK if ok else EXIT_FAIL
    bound = f"the invariants' bound {res.bound}" + ("" if res.sharp else " (not known to be sharp here)")
    dropped = f"next {res.first_dropped:.1e}" if res.first_dropped is not None else "nothing dropped"
    cert = res.certificate or {}
    if res.verdict == "CERTIFIED":
        print(f"CERTIFIED: bracket rank {res.bound} of {res.dimension} = {bound}; degree {res.min_degree} (counting "
              f"bound {res.counting_degree}), sigma_min >= {down(cert['sigma_min_lower'], 4)} (Arb, {cert['digits']} digits)")
    elif res.verdict == "FAIL":
        print(f"FAIL: the brackets span at least {cert['rank_at_least']} dimensions (Arb), more than {bound}: the "
              "invariants' bound is wrong for these data")
    elif res.verdict == "ESTIMATE":
        print(f"ESTIMATE (not a proof): numerical bracket rank {res.rank} of {res.dimension} in {res.decided_by}, "
              f"{bound}; sigma_min {res.sigma_min:.2e}, {dropped}")
    else:
        print(f"UNDECIDED: bracket rank not proved equal to {bound} of {res.dimension}: {out['undecided']}")
    for note in res.reasons:
        print(f"  invariant: {note}")
    if "gl_d" in out:
        g = out["gl_d"]
        print(f"  gl(d): rank {g['rank']} of {g['dimension']} ({'exact' if g['certified'] else 'not generated'})")
    return EXIT_OK if ok else EXIT_FAIL


def _interpolate(args: argparse.Namespace) -> int:
    Xe = datafiles.load_collection(args.inputs, "inputs", _limits(args), exact=True)
    Ye = datafiles.load_collection(args.targets, "targets", _limits(args), exact=True)
    validate.matching(Xe, Ye)
    X, Y = Xe.astype(float), Ye.astype(float)  # what the solver works with; the witness keeps what was written
    blocks = _blocks_from(args, X.shape[2])
    check_admissible(Xe, Ye, bool(blocks[0].causal), args.depth)  # exactly, before the solver's float64 one
    if not (np.isfinite(args.tolerance) and args.tolerance > 0):
        raise InputError(f"--tolerance must be a positive number, got {args.tolerance}")
    witness.vacuous(args.tolerance, Y, "--tolerance")
    if not (np.isfinite(args.prune) and args.prune >= 0):
        raise InputError(f"--prune must be a number of seconds >= 0 (0: no pruning), got {args.prune}")
    if args.out:
        check_creatable(args.out, "--out", force=args.force)  # before the search, not after it
    settings = Settings(
        tolerance=args.tolerance, depth=args.depth, seed=args.search_seed,
        time_budget=args.time_budget, prune=args.prune, **({"max_depth": args.max_depth} if args.max_depth else {}),
    )
    sol = api.interpolate(blocks, Xe, Ye, settings, _progress(args.quiet or args.json))
    out: dict[str, Any] = {
        "success": sol.success, "message": sol.message, "error": sol.error, "depth_kind": args.depth,
        "depth": sol.depth, "total_duration": sol.total_duration, "wall_time_s": round(sol.wall_time, 3),
        "lost_in_finish": sol.lost, "depth_before_pruning": sol.pruned_from,
    }
    if sol.success:
        doc = api.witness(blocks, Xe, Ye, sol, args.tolerance, tool="verify interpolate", starts_or_moves=sol.moves,
                          jacobians=sol.jacobians, depth_before_pruning=sol.pruned_from, wall_time_s=round(sol.wall_time, 3))
        checked = api.check(doc, estimate=True, dps=sol.dps).record
        out["replay"] = checked
        if args.dps:
            out["replay_high_precision"] = api.check(doc, estimate=True, dps=args.dps).record
        ok = checked["passed"] and out.get("replay_high_precision", {"passed": True})["passed"]
        if ok and args.out:
            api.save_witness(doc, args.out, force=args.force)
            out["witness"] = args.out
    else:
        ok = False
    if args.json:
        print(report.dumps(out), end="")
    else:
        word = "FOUND (its replay is an estimate; `verify check` certifies the witness)" if ok else "FAIL"
        wrote = f"; wrote {args.out}" if ok and args.out else ""
        missed = [r for r in (out.get("replay"), out.get("replay_high_precision")) if r and not r["passed"]]
        why = "".join(f"; but its replay in {r['precision']} misses the tolerance {r['tolerance']:.1e}: error "
                      f"{r['error']:.2e} + error estimate {r['integration_error_estimate']:.2e}" for r in missed)
        if not sol.success:  # the message says what was reached; there is no control to describe
            print(f"FAIL: {sol.message} ({sol.wall_time:.1f} s)")
        else:
            print(f"{word}: {sol.message}; max |image - target| = {sol.error:.2e}, {args.depth} depth {sol.depth}, "
                  f"total |duration| {sol.total_duration:.3g}, {sol.wall_time:.1f} s{why}{wrote}")
    return EXIT_OK if ok else EXIT_FAIL


COMMANDS = {"appendix": _appendix, "check": _check, "interpolate": _interpolate, "rank": _rank, "run": _run,
            "selfcheck": _selfcheck}
