"""Command-line interface: ``python -m verify`` or the ``verify`` console script.

Exit status: 0 when everything asked for holds, 1 when a check fails (for example a witness
that does not replay within its tolerance), 2 for bad input (one line on stderr naming the
problem, never a traceback).
"""

from __future__ import annotations

import argparse
import dataclasses
import io
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from theorems import reach, registry
from verify.io import datafiles, validate, witness
from verify.io.errors import InputError, VerifyError
from verify.io.files import Limits, check_creatable, create_exclusive, load_json, replace_file
from verify.lie import certify, invariants, rank
from verify.lie.hall import basis, str_word
from verify.model.blocks import gaussian_blocks
from verify.reporting import appendix, report, selfcheck, summary
from verify.search import solver
from verify.search.settings import Settings
from verify.verdicts import replay

EXIT_OK, EXIT_FAIL, EXIT_INPUT = 0, 1, 2
CERTIFY_SECONDS = 600.0  # check --certify gives up (UNDECIDED) after ten minutes
THEOREM_NAMES = ["two_block", "finite_depth", "causal"]  # the registry's names (theorems.registry.THEOREMS)


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {v}")
    return v


def _seed(text: str) -> int:
    try:
        return validate.seed(int(text))
    except (ValueError, InputError):
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}") from None


def _digits(text: str) -> int:
    try:
        return validate.digits(int(text))
    except (ValueError, InputError):
        raise argparse.ArgumentTypeError(f"expected a whole number of digits from 1 to {validate.MAX_DIGITS}, "
                                         f"got {text!r}") from None


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line with a hint (exit 2), not the usage block."""

    def error(self, message: str) -> Any:
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def _limit(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive whole number, got {text!r}") from None
    if not 1 <= v <= 10**9:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 10^9, got {v}")
    return v


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="verify",
        description="Verification suite for universal interpolation by two frozen attention blocks.",
    )
    p.add_argument("--max-file-mb", type=_limit, default=Limits().max_bytes // 2**20, metavar="MB",
                   help="largest input file read, in MiB (default %(default)s)")
    p.add_argument("--max-steps", type=_limit, default=Limits().max_steps, metavar="K",
                   help="most steps or layers in a witness (default %(default)s)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)

    c = sub.add_parser("check", help="replay a witness file and compare with its claimed tolerance",
                       description="Replay WITNESS.json (schema attention-interpolation-witness/1); "
                                   "exit 0 only when max |image - target| + integration error estimate <= tolerance.")
    c.add_argument("witness", metavar="WITNESS.json")
    c.add_argument("--dps", type=_digits, default=None,
                   help="replay in arbitrary precision with this many digits "
                        "(default: the witness's recorded precision, float64 if it records none)")
    c.add_argument("--certify", action="store_true",
                   help="enclose the image in Arb ball arithmetic: CERTIFIED, FAIL or UNDECIDED with the enclosure width")
    c.add_argument("--json", action="store_true", help="print the verdict as JSON")

    r = sub.add_parser("rank", help="rank of the Lie-bracket matrix on a collection, against the invariants' prediction",
                       description="Iterated Lie brackets (Hall basis) of the two attention fields evaluated on every "
                                   "sequence; exit 0 when the rank equals the prediction (and, with --certify, a full "
                                   "rank is proved in ball arithmetic).")
    r.add_argument("--inputs", required=True, metavar="X", help="collection (N, n, d) as .npy, .npz or .json")
    src = r.add_mutually_exclusive_group(required=True)
    src.add_argument("--blocks", metavar="B.json", help="JSON with a 'blocks' field (a witness file works)")
    src.add_argument("--seed", type=_seed, help="Gaussian blocks from this seed")
    r.add_argument("--dim", type=_positive_int, help="token dimension d for --seed (default: the data's)")
    r.add_argument("--causal", action="store_true", help="causal masking (overrides the blocks file)")
    r.add_argument("--beta", type=float, default=None, help="inverse temperature (default 1, or the blocks file's)")
    r.add_argument("--max-degree", type=_positive_int, default=rank.DEFAULT_MAX_DEGREE)
    r.add_argument("--certify", action="store_true", help="prove full rank in Arb ball arithmetic (and gl(d) when causal)")
    r.add_argument("--dps", type=_digits, default=None, help="decide the rank at this many digits")
    r.add_argument("--dump", metavar="M.npz", help="write the bracket matrix and its words (refuses to overwrite)")
    r.add_argument("--json", action="store_true", help="print the result as JSON")

    i = sub.add_parser("interpolate", help="construct a control (or network) mapping inputs onto targets; write a witness",
                       description="Refuses inadmissible data with the obstruction; otherwise searches a control "
                                   "(continuous depth) or residual network (finite depth), replays it, and writes a "
                                   "witness. Exit 0 only when the witness replays within its tolerance.")
    i.add_argument("--inputs", required=True, metavar="X")
    i.add_argument("--targets", required=True, metavar="Y")
    src = i.add_mutually_exclusive_group(required=True)
    src.add_argument("--blocks", metavar="B.json", help="JSON with a 'blocks' field (a witness file works)")
    src.add_argument("--seed", type=_seed, help="Gaussian blocks from this seed")
    i.add_argument("--dim", type=_positive_int, help="token dimension d for --seed (default: the data's)")
    i.add_argument("--causal", action="store_true")
    i.add_argument("--beta", type=float, default=None)
    i.add_argument("--depth", choices=["continuous", "finite"], default="continuous")
    i.add_argument("--method", choices=["lm", "steer"], default="lm", help="lm (default) or bracket steering (continuous)")
    i.add_argument("--tolerance", type=float, default=1e-10, help="claimed max |image - target| (default 1e-10)")
    i.add_argument("--dps", type=_digits, default=None, help="also replay the witness at this many digits")
    i.add_argument("--max-depth", type=_positive_int, default=None, help="largest number of steps/layers")
    i.add_argument("--time-budget", type=float, default=60.0, help="seconds of search (default 60)")
    i.add_argument("--search-seed", type=_seed, default=0, help="seed of the random starts (recorded in the witness)")
    i.add_argument("--prune", type=float, default=0.0, metavar="SECONDS",
                   help="then spend up to this long removing steps from the control or network found, each removal "
                        "corrected and replayed within the tolerance (default 0: no pruning)")
    i.add_argument("--out", metavar="W.json", help="witness file to write (refuses to overwrite)")
    i.add_argument("--json", action="store_true")
    i.add_argument("--quiet", action="store_true", help="no progress on stderr")

    t = sub.add_parser("run", help="run the theorem checks (T1 two_block, T2 finite_depth, T3 causal); write reports/",
                       description="Run the theorem checks on the profile's seeded instances, print a summary table and "
                                   "write verification.json; exit 0 only when every check passes.")
    t.add_argument("--theorem", action="append", choices=THEOREM_NAMES, metavar="NAME",
                   help=f"one of {', '.join(THEOREM_NAMES)} (repeatable; default: all)")
    t.add_argument("--profile", choices=["quick", "standard", "paper"], default="quick",
                   help="instance sizes and solver budgets (default quick: a few minutes on 2 cores)")
    t.add_argument("--seed", type=_seed, default=0, help="seed of the blocks and of every instance (default 0)")
    t.add_argument("--out", default="reports",
                   help="directory for verification.json, summary.md and appendix/ (default: reports)")
    t.add_argument("--no-reach", action="store_true",
                   help="skip the solver-reach measurement on Gaussian targets (skipped anyway with --theorem)")
    t.add_argument("--json", action="store_true", help="print the report as JSON")
    t.add_argument("--quiet", action="store_true", help="no progress on stderr")

    a = sub.add_parser("appendix", help="regenerate the LaTeX appendix from an existing verification.json",
                       description="Render appendix.tex (booktabs tables of every check; \\input it into a paper) and "
                                   "standalone.tex (compiles on its own with pdflatex) from a report written by "
                                   "`verify run`, without recomputing anything.")
    a.add_argument("--report", default="reports/verification.json", help="default: reports/verification.json")
    a.add_argument("--out", default=None, help="directory to write into (default: appendix/ next to the report)")

    s = sub.add_parser("selfcheck", help="run the engine's self-checks and write reports/verification.json",
                       description="Conventions and invariants of the engine measured on seeded instances.")
    s.add_argument("--seed", type=_seed, default=0)
    s.add_argument("--quick", action="store_true", help="one small shape instead of four")
    s.add_argument("--out", default="reports", help="directory for verification.json (default: reports)")
    s.add_argument("--json", action="store_true", help="print the report as JSON")
    s.add_argument("--quiet", action="store_true", help="print nothing but errors")
    return p


def _check(args: argparse.Namespace) -> int:
    w = witness.load(args.witness, _limits(args))
    if args.certify:
        return _certify(w, args)
    digits = args.dps or w.digits
    verdict = replay.replay(w, digits)
    if verdict["verdict"] == "UNDECIDED" and math.isfinite(verdict["error"]):  # straddles: more digits decide
        more = min(validate.MAX_DIGITS, max(30, 2 * (digits or 15)))
        verdict["next"] = (f"replay with --dps {more}, or --certify" if (digits or 0) < validate.MAX_DIGITS
                           else "no replay within the digit limit decides it; try --certify")
    if args.json:
        print(report.dumps(verdict), end="")
    else:
        head = _head(verdict)
        if "reason" in verdict:
            print(f"{head}: {verdict['reason']}" + (f"; {verdict['next']}" if "next" in verdict else ""))
        else:
            print(f"{head}: max |image - target| = {verdict['error']:.3e}, "
                  f"integration error estimate = {verdict['integration_error_estimate']:.1e}, "
                  f"tolerance = {verdict['tolerance']:.3e}")
    return EXIT_OK if verdict["passed"] else EXIT_FAIL


def _head(verdict: dict[str, Any]) -> str:
    """'VERDICT: continuous depth, 6 steps, float64', the first words of check's line."""
    unit = "steps" if verdict["depth"] == "continuous" else "layers"
    return f"{verdict['verdict']}: {verdict['depth']} depth, {verdict['length']} {unit}, {verdict['precision']}"


def _certify(w: witness.Witness, args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    verdict = replay.certify(w, args.dps, deadline=t0 + CERTIFY_SECONDS, existence=True)
    if args.json:
        print(report.dumps(verdict), end="")
    else:
        head = _head(verdict)
        if "reason" in verdict:
            print(f"{head}: {verdict['reason']}")
        else:
            print(f"{head}: max |image - target| <= {verdict['error_upper']:.3e} (enclosure width "
                  f"{verdict['width']:.1e}, {verdict['validated_steps']} validated Taylor steps), tolerance = "
                  f"{verdict['tolerance']:.3e} ({time.perf_counter() - t0:.1f} s)")
        if "existence" in verdict:
            e = verdict["existence"]
            print(f"  exact solution: durations within {e['radius']:.1e} of steps {e['free_steps']} (the rest as "
                  "written) map the inputs exactly onto the targets (Krawczyk, proved in Arb)" if e["certified"]
                  else f"  exact solution: not proved ({e['reason']})")
    return EXIT_OK if verdict["certified"] else EXIT_FAIL


def _limits(args: argparse.Namespace) -> Limits:
    return Limits(max_bytes=args.max_file_mb * 2**20, max_steps=args.max_steps)


def _selfcheck(args: argparse.Namespace) -> int:
    datafiles.output_directory(args.out, "--out")
    t0 = time.perf_counter()
    checks = selfcheck.run(args.seed, selfcheck.QUICK_SHAPES if args.quick else selfcheck.STANDARD_SHAPES)
    doc = report.document("engine-selfcheck", args.seed, checks, {"total_s": round(time.perf_counter() - t0, 3)})
    path = report.write(doc, args.out)
    if args.json:
        print(report.dumps(doc), end="")
    elif not args.quiet:
        for c in checks:
            print(f"{'PASS' if c.passed else 'FAIL'}  {c.value:9.2e} <= {c.bound:9.2e}  {c.name}")
        print(f"{sum(c.passed for c in checks)} of {len(checks)} checks passed; wrote {path}")
    return EXIT_OK if doc["passed"] else EXIT_FAIL


def _run(args: argparse.Namespace) -> int:
    quiet = args.quiet or args.json or not sys.stderr.isatty()

    def progress(msg: str) -> None:
        if not quiet:
            print(f"  {msg}", file=sys.stderr, flush=True)

    datafiles.output_directory(args.out, "--out")
    benchmarks = _benchmark_rows(Path(args.out))  # read now: a damaged file is refused before the work
    t0 = time.perf_counter()
    theorems, seconds = registry.run(args.theorem, args.profile, args.seed, progress)
    timings: dict = {"theorems": seconds}
    reach_rows = None
    if not (args.theorem or args.no_reach):

        reach_rows, timings["reach"] = reach.measure(args.profile, args.seed, progress)
    precision = {"working": "float64", "replay_digits": 40, "rank_escalation_digits": list(rank.ESCALATION),
                 "certificates": f"Arb ball arithmetic (python-flint): bracket rank at {certify.DEFAULT_DIGITS} "
                                 "digits, Krawczyk at 50 to 400 digits (escalating); gl(d) exactly over Q"}
    doc = report.theorem_document(args.profile, args.seed, theorems,
                                  timings | {"total_s": round(time.perf_counter() - t0, 3)}, precision, reach_rows)
    path = report.write(doc, args.out)
    rendered = report.plain(doc)
    replace_file(Path(args.out) / "summary.md", summary.render(rendered, *benchmarks))
    appendix.write(rendered, Path(args.out) / "appendix", registry.statements())
    if args.json:
        print(report.dumps(doc), end="")
    else:
        for t in theorems:
            print(f"{'PASS' if t['passed'] else 'FAIL'}  {t['name']}: {t['title']}")
            for c in t["checks"]:
                cert = " [certified]" if c["certified"] else ""
                print(f"  {'PASS' if c['passed'] else 'FAIL'}  {c['value']:9.2e} <= {c['bound']:9.2e}  {c['name']}{cert}")
        n_checks = sum(len(t["checks"]) for t in theorems)
        n_pass = sum(c["passed"] for t in theorems for c in t["checks"])
        print(f"{n_pass} of {n_checks} checks passed ({args.profile} profile, seed {args.seed}); wrote {path}")
    return EXIT_OK if doc["passed"] else EXIT_FAIL


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
    out = datafiles.output_directory(args.out if args.out else path.parent / "appendix", "--out")
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
    beta = blocks[0].beta if args.beta is None else args.beta
    if not np.isfinite(beta):
        raise InputError(f"--beta must be a finite number, got {beta}")
    return tuple(dataclasses.replace(b, causal=causal, beta=beta) for b in blocks)


def _rank(args: argparse.Namespace) -> int:
    X = datafiles.load_collection(args.inputs, limits=_limits(args))
    blocks = _blocks_from(args, X.shape[2])
    if args.dump:
        check_creatable(args.dump, "--dump", ".npz")  # np.savez would add the suffix and miss the check
    res = rank.analyse(blocks, X, max_degree=args.max_degree, dps=args.dps)
    M = res.pop("matrix")
    out = {k: res[k] for k in ("dimension", "rank", "expected_rank", "min_degree", "counting_degree", "max_degree",
                               "words", "sigma_min", "first_dropped", "gap", "noise_level", "decided_by", "decisive",
                               "undecided", "weight_digits", "sigma")}
    out["invariants"] = invariants.describe(X, blocks[0].causal)
    out["certified"] = False
    if args.certify:
        if res["rank"] == res["dimension"]:
            cert = certify.full_rank(blocks, X, max_degree=res["max_degree"], matrix=np.asarray(M, dtype=float))
            out["certificate"] = cert
            out["certified"] = cert["certified"]
        else:
            out["certificate"] = {"certified": False, "reason": "the rank is not full; a deficit cannot be proved by balls"}
        if blocks[0].causal:
            out["gl_d"] = certify.generates_gl(blocks[0].V, blocks[1].V)
            out["certified"] = out["certified"] and out["gl_d"]["certified"]
    if args.dump:
        buf = io.BytesIO()
        np.savez(buf, matrix=np.asarray(M, dtype=float), words=np.array([str_word(w) for w in basis(res["max_degree"])]))
        create_exclusive(args.dump, buf.getvalue())
    decided = res["decisive"] or out["certified"]  # a full rank proved in Arb needs no float decision
    ok = decided and res["matches_prediction"] and (not args.certify or out["certified"] or res["rank"] < res["dimension"])
    out["undecided"] = flags(out["undecided"]) if out["undecided"] else out["undecided"]
    if args.json:
        print(report.dumps(out), end="")
    else:
        exp = "none (no sharp prediction for these data)" if out["expected_rank"] is None else out["expected_rank"]
        gap = f"gap {out['gap']:.1e}" if out["gap"] else "nothing dropped"
        if not decided:
            print(f"UNDECIDED: bracket rank {out['rank']} of {out['dimension']} at {out['decided_by']} is not a "
                  f"decision: {out['undecided']}")
        else:
            print(f"{'PASS' if ok else 'FAIL'}: bracket rank {out['rank']} of {out['dimension']}, prediction {exp}; "
                  f"degree {out['min_degree']} (counting bound {out['counting_degree']}), sigma_min "
                  f"{out['sigma_min']:.2e}, {gap}, decided in {out['decided_by']}")
        for note in out["invariants"]:
            print(f"  invariant: {note}")
        if "certificate" in out:
            c = out["certificate"]
            verdict = f"sigma_min >= {c['sigma_min_lower']:.3e} (Arb)" if c["certified"] else f"not certified: {c['reason']}"
            print(f"  certificate: {verdict}")
        if "gl_d" in out:
            g = out["gl_d"]
            print(f"  gl(d): rank {g['rank']} of {g['dimension']} ({'exact' if g['certified'] else 'not generated'})")
    return EXIT_OK if ok else EXIT_FAIL


def _interpolate(args: argparse.Namespace) -> int:
    X = datafiles.load_collection(args.inputs, "inputs", _limits(args))
    Y = datafiles.load_collection(args.targets, "targets", _limits(args))
    validate.matching(X, Y)
    blocks = _blocks_from(args, X.shape[2])
    if not (np.isfinite(args.tolerance) and args.tolerance > 0):
        raise InputError(f"--tolerance must be a positive number, got {args.tolerance}")
    witness.vacuous(args.tolerance, Y, "--tolerance")
    if not (np.isfinite(args.prune) and args.prune >= 0):
        raise InputError(f"--prune must be a number of seconds >= 0 (0: no pruning), got {args.prune}")
    if args.out:
        check_creatable(args.out, "--out")  # before the search, not after it
    settings = Settings(
        tolerance=args.tolerance, depth=args.depth, method=args.method, seed=args.search_seed,
        time_budget=args.time_budget, prune=args.prune, **({"max_depth": args.max_depth} if args.max_depth else {}),
    )
    quiet = args.quiet or args.json

    def progress(msg: str) -> None:
        if not quiet:
            print(f"  {msg}", file=sys.stderr, flush=True)

    sol = solver.solve(blocks, X, Y, settings, progress)
    out: dict[str, Any] = {
        "success": sol.success, "message": sol.message, "error": sol.error, "depth_kind": args.depth,
        "depth": sol.depth, "total_duration": sol.total_duration, "wall_time_s": round(sol.wall_time, 3),
        "lost_in_finish": sol.lost, "depth_before_pruning": sol.pruned_from,
    }
    if sol.success:
        doc = witness.make(
            blocks, X, Y, args.depth, sol.steps, args.tolerance,
            precision=witness.precision_label(sol.dps),
            provenance={"tool": "verify interpolate", "method": args.method, "settings": sol.settings,
                        "seeds": sol.seeds, "starts_or_moves": sol.moves, "jacobians": sol.jacobians,
                        "depth_before_pruning": sol.pruned_from, "wall_time_s": round(sol.wall_time, 3)},
        )
        checked = replay.replay(witness.from_dict(doc), sol.dps)
        out["replay"] = checked
        if args.dps:
            out["replay_high_precision"] = replay.replay(witness.from_dict(doc), args.dps)
        ok = checked["passed"] and out.get("replay_high_precision", {"passed": True})["passed"]
        if ok and args.out:
            witness.save(doc, args.out)
            out["witness"] = args.out
    else:
        ok = False
    if args.json:
        print(report.dumps(out), end="")
    else:
        word = "PASS" if ok else "FAIL"
        wrote = f"; wrote {args.out}" if ok and args.out else ""
        missed = [r for r in (out.get("replay"), out.get("replay_high_precision")) if r and not r["passed"]]
        why = "".join(f"; but its replay in {r['precision']} misses the tolerance {r['tolerance']:.1e}: error "
                      f"{r['error']:.2e} + estimate {r['integration_error_estimate']:.2e}" for r in missed)
        if not sol.success:  # the message says what was reached; there is no control to describe
            print(f"FAIL: {sol.message} ({sol.wall_time:.1f} s)")
        else:
            print(f"{word}: {sol.message}; max |image - target| = {sol.error:.2e}, {args.depth} depth {sol.depth}, "
                  f"total |duration| {sol.total_duration:.3g}, {sol.wall_time:.1f} s{why}{wrote}")
    return EXIT_OK if ok else EXIT_FAIL


# The engine names its parameters; the command line says which flag sets each.
FLAGS = {"raise the limit max_bytes": "raise it with --max-file-mb", "raise the limit max_steps": "raise it with --max-steps",
         "(max_degree)": "(--max-degree)",
         "give dps ": "give --dps ", "(dps)": "(--dps)"}


def flags(text: str) -> str:
    """An engine message with its parameter names replaced by the flags that set them."""
    for name, flag in FLAGS.items():
        text = text.replace(name, flag)
    return text


COMMANDS = {"appendix": _appendix, "check": _check, "interpolate": _interpolate, "rank": _rank, "run": _run,
            "selfcheck": _selfcheck}


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except VerifyError as exc:
        print(f"verify {args.command}: error: {flags(str(exc))}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print(f"verify {args.command}: interrupted", file=sys.stderr)
        return 130


def run_console() -> Any:
    sys.exit(main())
