"""Command-line interface: ``python -m verify`` or the ``verify`` console script.

Exit status: 0 when everything asked for holds, 1 when a check fails (for example a witness
that does not replay within its tolerance), 2 for bad input (one line on stderr naming the
problem, never a traceback).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Sequence
from typing import Any

from . import report, selfcheck, witness
from .errors import VerifyError

EXIT_OK, EXIT_FAIL, EXIT_INPUT = 0, 1, 2


def _positive_int(text: str) -> int:
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}") from None
    if v < 1:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {v}")
    return v


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="verify",
        description="Verification suite for universal interpolation by two frozen attention blocks.",
    )
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True)

    c = sub.add_parser("check", help="replay a witness file and compare with its claimed tolerance",
                       description="Replay WITNESS.json (schema attention-interpolation-witness/1); "
                                   "exit 0 only when max |image - target| + integration error estimate <= tolerance.")
    c.add_argument("witness", metavar="WITNESS.json")
    c.add_argument("--dps", type=_positive_int, default=None, help="replay in arbitrary precision with this many digits")
    c.add_argument("--json", action="store_true", help="print the verdict as JSON")

    s = sub.add_parser("selfcheck", help="run the engine's self-checks and write reports/verification.json",
                       description="Conventions and invariants of the engine measured on seeded instances.")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--quick", action="store_true", help="one small shape instead of four")
    s.add_argument("--out", default="reports", help="directory for verification.json (default: reports)")
    s.add_argument("--json", action="store_true", help="print the report as JSON")
    s.add_argument("--quiet", action="store_true", help="print nothing but errors")
    return p


def _check(args: argparse.Namespace) -> int:
    w = witness.load(args.witness)
    verdict = witness.replay(w, args.dps)
    if args.json:
        print(json.dumps(verdict, indent=1))
    else:
        word = "PASS" if verdict["passed"] else "FAIL"
        print(
            f"{word}: {verdict['depth']} depth, {verdict['length']} {'steps' if w.depth == 'continuous' else 'layers'}, "
            f"{verdict['precision']}: max |image - target| = {verdict['error']:.3e}, "
            f"integration error estimate = {verdict['integration_error_estimate']:.1e}, "
            f"tolerance = {verdict['tolerance']:.3e}"
        )
    return EXIT_OK if verdict["passed"] else EXIT_FAIL


def _selfcheck(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    checks = selfcheck.run(args.seed, selfcheck.QUICK_SHAPES if args.quick else selfcheck.STANDARD_SHAPES)
    doc = report.document("engine-selfcheck", args.seed, checks, {"total_s": round(time.perf_counter() - t0, 3)})
    path = report.write(doc, args.out)
    if args.json:
        print(json.dumps(doc, indent=1))
    elif not args.quiet:
        for c in checks:
            print(f"{'PASS' if c.passed else 'FAIL'}  {c.value:9.2e} <= {c.bound:9.2e}  {c.name}")
        print(f"{sum(c.passed for c in checks)} of {len(checks)} checks passed; wrote {path}")
    return EXIT_OK if doc["passed"] else EXIT_FAIL


COMMANDS = {"check": _check, "selfcheck": _selfcheck}


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except VerifyError as exc:
        print(f"verify {args.command}: error: {exc}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print(f"verify {args.command}: interrupted", file=sys.stderr)
        return 130


def run_console() -> Any:
    sys.exit(main())
