"""The command line's flags: the argument parser, its argument types and limits.

>>> parser().parse_args(["check", "w.json", "--dps", "30"]).dps
30
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from verify.io import validate
from verify.io.errors import InputError
from verify.io.files import Limits, decimal
from verify.lie import rank
from verify.sweep import runner
from verify.version import NAME, describe, provenance

EXIT_OK, EXIT_FAIL, EXIT_INPUT = 0, 1, 2
THEOREM_NAMES = ["two_block", "finite_depth", "causal"]  # the registry's names (theorems.registry.THEOREMS)


def _count(text: str) -> int:
    """A count given on the command line (a dimension, a degree, a limit): a whole number from
    1 to 10^9, beyond which no run of this suite could finish."""
    try:
        v = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 10^9, got {text!r}") from None
    if not 1 <= v <= 10**9:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 10^9, got {v}")
    return v


def _seed(text: str) -> int:
    try:
        return validate.seed(int(text))
    except (ValueError, InputError):
        raise argparse.ArgumentTypeError(f"expected a whole number >= 0, got {text!r}") from None


def _scheduler(text: str) -> str:
    try:
        return runner.check_scheduler(text)
    except InputError:
        raise argparse.ArgumentTypeError(f"expected none, local or tcp://HOST:PORT, got {text[:80]!r}") from None


def _seconds(text: str) -> float:
    """A time budget: a number of seconds, more than 0 and at most a day."""
    try:
        v = float(text)
    except ValueError:
        v = math.nan
    if not 0 < v <= 86400:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0 and at most 86400, got {text!r}")
    return v


def _decimal(text: str) -> str:
    """A number given exactly (a decimal; certificates take it as written, float64 rounds it)."""
    try:
        return decimal(text, "the number")
    except InputError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _digits(text: str) -> int:
    try:
        return validate.digits(int(text))
    except (ValueError, InputError):
        raise argparse.ArgumentTypeError(f"expected a whole number of digits from 1 to {validate.MAX_DIGITS}, "
                                         f"got {text!r}") from None


class _Version(argparse.Action):
    """``--version``: the suite's version and, from a git checkout, its commit (asked of git only then)."""

    def __init__(self, option_strings: list[str], dest: str = argparse.SUPPRESS, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any) -> None:
        print(f"verify ({NAME}) {describe(provenance())}")
        parser.exit(0)


def _add_force(p: argparse.ArgumentParser, what: str) -> None:
    p.add_argument("--force", action="store_true", help=f"replace {what} if it exists (default: refuse before any work)")


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line with a hint (exit 2), not the usage block."""

    def error(self, message: str) -> Any:
        self.exit(EXIT_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="verify",
        description="Verification suite for universal interpolation by two frozen attention blocks.",
    )
    p.add_argument("--version", action=_Version, help="print the suite's version and git commit, and exit")
    p.add_argument("--max-file-mb", type=_count, default=Limits().max_bytes // 2**20, metavar="MB",
                   help="largest input file read, in MiB (default %(default)s)")
    p.add_argument("--max-steps", type=_count, default=Limits().max_steps, metavar="K",
                   help="most steps or layers in a witness (default %(default)s)")
    sub = p.add_subparsers(dest="command", metavar="COMMAND", required=True, parser_class=_Parser)
    for add in (_add_check, _add_rank, _add_interpolate, _add_run, _add_appendix, _add_selfcheck):
        add(sub)
    return p


def _add_check(sub: Any) -> None:
    c = sub.add_parser("check", help="prove (or refute) that a witness file maps its inputs within its tolerance",
                       description="Enclose the image of WITNESS.json (schema attention-interpolation-witness/1) in Arb "
                                   "ball arithmetic, every number as written: CERTIFIED (exit 0), FAIL or UNDECIDED "
                                   "(exit 1); for a control also try to prove that exact durations exist. --estimate "
                                   "replays in float64 or at --dps digits instead and says so: an estimate, not a proof.")
    c.add_argument("witness", metavar="WITNESS.json", help="a witness file (schema attention-interpolation-witness/1)")
    c.add_argument("--estimate", action="store_true",
                   help="replay with an integration error estimate instead of a certificate (fast; not a proof)")
    c.add_argument("--dps", type=_digits, default=None,
                   help="digits: of the estimate's replay (default: the witness's recorded precision, float64 if it "
                        "records none), or the first of the certificate's Arb precisions (default 30)")
    c.add_argument("--budget", type=_seconds, default=600.0, metavar="SECONDS",
                   help="seconds the certificate may take before it says UNDECIDED (default 600)")
    c.add_argument("--certify", action="store_true", help="the default (kept for scripts that ask for it)")
    c.add_argument("--json", action="store_true", help="print the verdict as JSON")


def _add_blocks_source(p: argparse.ArgumentParser) -> None:
    """The blocks a command works with (read by ``commands._blocks_from``): a file or a seed, and
    the attention settings."""
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--blocks", metavar="B.json", help="JSON with a 'blocks' field (a witness file works)")
    src.add_argument("--seed", type=_seed, help="Gaussian blocks from this seed")
    p.add_argument("--dim", type=_count, help="token dimension d for --seed (default: the data's)")
    p.add_argument("--causal", action="store_true", help="causal masking (overrides the blocks file)")
    p.add_argument("--beta", type=_decimal, default=None,
                   help="inverse temperature, a decimal taken exactly (default 1, or the blocks file's)")


def _add_rank(sub: Any) -> None:
    r = sub.add_parser("rank", help="prove the rank of the Lie-bracket matrix on a collection equal to the invariants' bound",
                       description="Iterated Lie brackets (Hall basis) of the two attention fields evaluated on every "
                                   "sequence. CERTIFIED (exit 0) when the rank is proved equal to the invariants' exact "
                                   "bound (at least it in Arb ball arithmetic, at most it by the invariants); a rank "
                                   "below the bound is UNDECIDED (exit 1), never decided in floating point. --estimate "
                                   "stops at the floating-point rank and says so.")
    r.add_argument("--inputs", required=True, metavar="X",
                   help="collection (N, n, d) as .npy, .npz or .json (JSON numbers or decimal strings)")
    _add_blocks_source(r)
    r.add_argument("--max-degree", type=_count, default=rank.DEFAULT_MAX_DEGREE,
                   help=f"largest bracket degree tried (default %(default)s, at most {rank.MAX_DEGREE})")
    r.add_argument("--estimate", action="store_true", help="the floating-point rank only, without the Arb certificate")
    r.add_argument("--certify", action="store_true", help="the default (kept for scripts that ask for it)")
    r.add_argument("--dps", type=_digits, default=None, help="compute the brackets at this many digits (no escalation)")
    r.add_argument("--budget", type=_seconds, default=600.0, metavar="SECONDS",
                   help="seconds after which no more digits are tried (default 600)")
    r.add_argument("--dump", metavar="M.npz", help="write the bracket matrix and its words to a new file")
    _add_force(r, "the --dump file")
    r.add_argument("--json", action="store_true", help="print the result as JSON")


def _add_interpolate(sub: Any) -> None:
    i = sub.add_parser("interpolate", help="construct a control (or network) mapping inputs onto targets; write a witness",
                       description="Refuses inadmissible data with the obstruction; otherwise searches a control "
                                   "(continuous depth) or residual network (finite depth), replays it, and writes a "
                                   "witness. Exit 0 only when the witness replays within its tolerance.")
    i.add_argument("--inputs", required=True, metavar="X",
                   help="collection (N, n, d) as .npy, .npz or .json (JSON numbers or decimal strings)")
    i.add_argument("--targets", required=True, metavar="Y", help="collection of the same shape as X, same formats")
    _add_blocks_source(i)
    i.add_argument("--depth", choices=["continuous", "finite"], default="continuous",
                   help="continuous: a control (flow durations); finite: a residual network (layer steps); "
                        "default continuous")
    i.add_argument("--tolerance", type=float, default=1e-10, help="claimed max |image - target| (default 1e-10)")
    i.add_argument("--dps", type=_digits, default=None, help="also replay the witness at this many digits")
    i.add_argument("--max-depth", type=_count, default=None, help="largest number of steps/layers")
    i.add_argument("--time-budget", type=float, default=60.0, help="seconds of search (default 60)")
    i.add_argument("--search-seed", type=_seed, default=0, help="seed of the random starts (recorded in the witness)")
    i.add_argument("--prune", type=float, default=0.0, metavar="SECONDS",
                   help="then spend up to this long removing steps from the control or network found, each removal "
                        "corrected and replayed within the tolerance (default 0: no pruning)")
    i.add_argument("--out", metavar="W.json", help="witness file to write (a new file)")
    _add_force(i, "the --out witness")
    i.add_argument("--json", action="store_true", help="print the result (and the replays) as JSON")
    i.add_argument("--quiet", action="store_true", help="no progress on stderr")


def _add_run(sub: Any) -> None:
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
    t.add_argument("--scheduler", type=_scheduler, default="local", metavar="WHERE",
                   help="where the theorem checks and reach instances run: local (default: a Dask cluster of one "
                        "single-threaded process per core), none (in this process), or tcp://HOST:PORT (a running "
                        "Dask scheduler); the report is the same, timings aside")
    t.add_argument("--workers", type=_count, default=None, metavar="N",
                   help="worker processes of the local cluster (default: one per core)")
    t.add_argument("--resume", action="store_true",
                   help="take units finished by an earlier run with the same code from OUT/journal.jsonl "
                        "instead of computing them again (the report counts them)")
    _add_force(t, "verification.json, summary.md, the journal and appendix/ in OUT")
    t.add_argument("--json", action="store_true", help="print the report as JSON")
    t.add_argument("--quiet", action="store_true", help="no progress on stderr")


def _add_appendix(sub: Any) -> None:
    a = sub.add_parser("appendix", help="regenerate the LaTeX appendix from an existing verification.json",
                       description="Render appendix.tex (tables of every check, figures; \\input it into a paper whose "
                                   "preamble has the line its first comments give) and standalone.tex (compiles on its "
                                   "own with pdflatex) from a report written by `verify run`, without recomputing "
                                   "anything.")
    a.add_argument("--report", default="reports/verification.json", help="default: reports/verification.json")
    a.add_argument("--out", default=None, help="directory to write into (default: appendix/ next to the report)")
    _add_force(a, "the appendix's files in that directory")


def _add_selfcheck(sub: Any) -> None:
    s = sub.add_parser("selfcheck", help="run the engine's self-checks and write reports/selfcheck/verification.json",
                       description="Conventions and invariants of the engine measured on seeded instances.")
    s.add_argument("--seed", type=_seed, default=0, help="seed of the blocks and instances (default 0)")
    s.add_argument("--quick", action="store_true", help="one small shape instead of four")
    s.add_argument("--out", default="reports/selfcheck",
                   help="directory for verification.json (default: reports/selfcheck, where `verify run --out reports` "
                        "finds it and reports its verdict)")
    _add_force(s, "verification.json in that directory")
    s.add_argument("--json", action="store_true", help="print the report as JSON")
    s.add_argument("--quiet", action="store_true", help="print nothing but errors")


# The engine names its parameters; the command line says which flag sets each.
FLAGS = {"workers=": "--workers ", "scheduler 'local'": "--scheduler local",
         "raise the limit max_bytes": "raise it with --max-file-mb", "raise the limit max_steps": "raise it with --max-steps",
         "(max_degree)": "(--max-degree)",
         "give dps ": "give --dps ", "(dps)": "(--dps)", "(force)": "(--force)"}


def flags(text: str) -> str:
    """An engine message with its parameter names replaced by the flags that set them."""
    for name, flag in FLAGS.items():
        text = text.replace(name, flag)
    return text
