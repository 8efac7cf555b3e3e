"""The suite from Python: what the command line does, as functions with typed results.

This module sits where :mod:`verify.cli` sits, on top of the engine and of the theorem checks
(``theorems/``); the command line is a thin layer over it, and ``verify`` re-exports its names
(``from verify import check``).  Shapes follow docs/conventions.md: a collection is an array
(N, n, d) of N sequences of n tokens in R^d; blocks are the two frozen attention blocks.

* :func:`gaussian_blocks` -- the two blocks drawn from a seed (Q, K, V i.i.d. N(0, 1/d));
* :func:`rank` -- the Lie-bracket rank of a collection against the invariants' exact bound,
  proved in Arb (:class:`~verify.lie.rank.RankAnalysis`);
* :func:`interpolate` -- a control (continuous depth) or network (finite depth) mapping X onto
  Y (:class:`~verify.search.settings.Settings` in, :class:`~verify.search.solution.Solution` out);
* :func:`witness`, :func:`save_witness`, :func:`load_witness` -- the witness file;
* :func:`check` -- its verdict: a certificate in Arb ball arithmetic (the default) or an
  estimate, as a :class:`~verify.verdicts.verdict.Verdict`;
* :func:`run_theorems` and :func:`write_report` -- the theorem checks T1-T3 and the solver's
  reach to a report (``verification-report/2``), and its summary and appendix.

The long calls (:func:`rank`, :func:`interpolate`, :func:`check`, :func:`run_theorems`) say
nothing unless asked: ``progress=True`` prints their progress lines to stderr, as the command
line does, and a function of one line of text receives them instead.

Bad input is refused before any work with :class:`verify.InputError` (a ``ValueError``), whose
one-line message is the command line's (shapes, dimensions, non-finite values, decimals,
admissibility): both go through :mod:`verify.io.validate`.

>>> import numpy as np
>>> import verify
>>> blocks = verify.gaussian_blocks(0, 2)
>>> X = np.array([[[1.0, 0.0], [0.0, 1.0]]])
>>> verify.rank(blocks, X).verdict
'CERTIFIED'
>>> Y = verify.apply_control(blocks, [(0, 0.3), (1, -0.2)], X)
>>> sol = verify.interpolate(blocks, X, Y, verify.Settings(seed=0, time_budget=30))
>>> sol.success, verify.check(verify.witness(blocks, X, Y, sol)).verdict
(True, 'CERTIFIED')
>>> verify.check(verify.witness(blocks, X, Y, sol), estimate=True).verdict  # an estimate says so
'WITHIN'

"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from verify.io import validate
from verify.io import witness as _witness
from verify.io.errors import InputError
from verify.io.files import DEFAULT_LIMITS, Limits, check_outputs, replace_file
from verify.io.witness import Witness
from verify.lie import certify as _certify_rank
from verify.lie import rank as _rank
from verify.lie.rank import DEFAULT_MAX_DEGREE, RankAnalysis
from verify.model.blocks import Block, gaussian_blocks
from verify.model.dynamics import dynamics
from verify.search import solver as _solver
from verify.search.settings import Settings
from verify.search.solution import Solution
from verify.sweep import runner
from verify.sweep.records import JOURNAL as _FROM_JOURNAL
from verify.sweep.runner import SweepOptions
from verify.verdicts import replay as _replay
from verify.verdicts.verdict import Verdict

__all__ = ["Block", "RankAnalysis", "Settings", "Solution", "SweepOptions", "Verdict", "Witness", "apply_control",
           "check", "gaussian_blocks", "interpolate", "load_witness", "rank", "run_theorems", "save_witness", "witness",
           "write_report"]

Progress = Callable[[str], None]
ProgressArg = Progress | bool | None  # a callback for each progress line; True: print them to stderr; None/False: quiet
REPORT_FILES = ("verification.json", "summary.md")  # what write_report writes besides appendix/


def rank(blocks: Sequence[Block], X: Any, *, max_degree: int = DEFAULT_MAX_DEGREE, certify: bool = True,
         dps: int | None = None, budget: float = 600.0, progress: ProgressArg = None) -> RankAnalysis:
    """The rank of the bracket matrix of the two blocks' fields on ``X`` (N, n, d: floats, or
    decimal strings taken exactly) against the invariants' exact bound: ``verdict`` CERTIFIED
    when an Arb minor proves it equal to the bound, UNDECIDED when it is not proved (a deficit is
    never decided numerically), ESTIMATE with ``certify=False``.  ``budget``: seconds after which
    no more digits are tried.  As ``verify rank``."""
    blocks, X, _ = validate.problem(blocks, X)
    _budget(budget)
    dps = None if dps is None else validate.digits(dps)
    return _rank.analyse(blocks, X, max_degree=max_degree, dps=dps, certify=certify,
                         deadline=time.perf_counter() + budget, progress=_reporter(progress))


def apply_control(blocks: Sequence[Block], steps: Sequence[tuple[int, float]], X: Any, depth: str = "continuous",
                  dps: int | None = None) -> np.ndarray:
    """The image of ``X`` under ``steps``: the flow exp(tau_K F_{b_K}) o ... o exp(tau_1 F_{b_1})
    for a control (``depth`` "continuous", steps (block, duration)), or the residual network of
    layers X -> X + h F_b(X) (``depth`` "finite", steps (block, step)); in float64, or at ``dps``
    digits (an array of mpmath numbers)."""
    blocks, X, _ = validate.problem(blocks, X)
    return dynamics(_depth(depth)).end(blocks, validate.steps(steps), X, dps=None if dps is None else validate.digits(dps))


def interpolate(blocks: Sequence[Block], X: np.ndarray, Y: np.ndarray, settings: Settings | None = None,
                progress: ProgressArg = None) -> Solution:
    """A control or network (``settings.depth``) mapping ``X`` onto ``Y`` within
    ``settings.tolerance``, searched within ``settings.time_budget`` seconds; inadmissible data
    are refused first (:class:`verify.InputError` naming the obstruction).  As ``verify interpolate``."""
    from verify.lie.admissibility import check_admissible

    settings = settings or Settings()
    if not isinstance(settings, Settings):
        raise InputError(f"settings: expected verify.Settings(...), got {type(settings).__name__}")
    blocks, X, Y = validate.problem(blocks, X, Y)
    check_admissible(X, Y, bool(blocks[0].causal), _depth(settings.depth))
    return _solver.solve(blocks, np.asarray(X, dtype=float), np.asarray(Y, dtype=float), settings, _reporter(progress))


def witness(blocks: Sequence[Block], X: Any, Y: Any, solution: Solution, tolerance: float | None = None,
            **provenance: Any) -> dict[str, Any]:
    """The witness document of a solution (schema ``attention-interpolation-witness/1``, JSON
    values): the blocks, X and Y as given (decimal strings stay exact), the steps, the tolerance
    (default: the solution's settings', else 1e-10) and the precision it replays at; its
    ``provenance`` names the code, the search's settings and seeds, and what is given here.
    :func:`save_witness` writes it, :func:`check` judges it."""
    blocks, X, Y = validate.problem(blocks, X, Y)
    if not isinstance(solution, Solution):
        raise InputError(f"solution: expected what verify.interpolate returns, got {type(solution).__name__}")
    tol = tolerance if tolerance is not None else solution.settings.get("tolerance", 1e-10)
    return _witness.make(blocks, X, Y, solution.settings.get("depth", "continuous"), solution.steps, tol,
                         precision=_witness.precision_label(solution.dps),
                         provenance={"settings": solution.settings, "seeds": solution.seeds, **provenance})


def save_witness(doc: dict[str, Any], path: str | Path, *, force: bool = False) -> Path:
    """Write a witness document, validated first as :func:`check` would read it; an existing
    file is refused unless ``force`` (then replaced, a link included, never written through)."""
    if not isinstance(doc, dict):
        raise InputError(f"save_witness: expected a witness document (a dict, as verify.witness makes it), "
                         f"got {type(doc).__name__}")
    _witness.parse(_witness.dumps(doc))
    return _witness.save(doc, path, force=force)


def load_witness(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> Witness:
    """A witness file read and validated (one :class:`verify.InputError` naming what is wrong)."""
    return _witness.load(path, limits)


def check(w: Witness | dict[str, Any], *, estimate: bool = False, dps: int | None = None, budget: float = 600.0,
          existence: bool = True, progress: ProgressArg = None) -> Verdict:
    """The verdict on a witness (loaded, or a document as :func:`witness` makes it, validated
    here): by default a certificate (Arb ball arithmetic with every number as written; for a
    control also the existence of exact durations, ``existence``) within ``budget`` seconds; with
    ``estimate`` a replay in float64 or at ``dps`` digits, labelled as an estimate.  As ``verify
    check``."""
    if isinstance(w, dict):
        w = _witness.parse(_witness.dumps(w))
    elif not isinstance(w, Witness):
        raise InputError(f"check: expected a witness (verify.load_witness, or a document as verify.witness makes it), "
                         f"got {type(w).__name__}")
    _budget(budget)
    dps = None if dps is None else validate.digits(dps)
    progress = _reporter(progress)
    if estimate:
        return Verdict.of(_replay.replay(w, dps or w.digits, progress))
    return Verdict.of(_replay.certify(w, dps, deadline=time.perf_counter() + budget, existence=existence,
                                      progress=progress))


def _reporter(progress: Any) -> Progress | None:
    """The callback a long call reports to: ``progress`` itself, stderr for True, none for None or False."""
    if progress is True:
        return lambda line: print(line, file=sys.stderr, flush=True)
    if progress is None or progress is False:
        return None
    if not callable(progress):
        raise InputError(f"progress: expected a function of one line of text, True (print to stderr) or None, "
                         f"got {type(progress).__name__}")
    return progress


def _budget(seconds: Any) -> None:
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds > 0:
        raise InputError(f"budget must be a positive number of seconds, got {seconds!r}")


def _depth(depth: Any) -> str:
    if depth not in ("continuous", "finite"):
        raise InputError(f"depth {depth!r}: choose 'continuous' (a control of durations) or 'finite' (a network of layers)")
    return depth


def run_theorems(profile: str = "quick", seed: int = 0, *, theorems: Sequence[str] | None = None, reach: bool = True,
                 options: SweepOptions | None = None, selfcheck: dict[str, Any] | None = None,
                 progress: ProgressArg = None) -> dict[str, Any]:
    """The theorem checks (all, or ``theorems``) of ``profile`` on instances drawn from ``seed``,
    and with ``reach`` (when all theorems run) the solver's reach on independent targets, as a
    sweep (``options``; default in this process, no journal): the report document
    (``verification-report/2``, :mod:`verify.reporting.report`).  ``selfcheck``: the verdict
    of an engine self-check to record in it.  As ``verify run``, without writing anything."""
    from theorems import reach as _reach
    from theorems import registry
    from verify.reporting import report

    if profile not in registry.PROFILES:
        raise InputError(f"profile {profile!r}: choose one of {', '.join(registry.PROFILES)}")
    unknown = [t for t in theorems or () if t not in registry.THEOREMS]
    if unknown:
        raise InputError(f"theorem {unknown[0]!r}: choose from {', '.join(registry.THEOREMS)}")
    validate.seed(seed)
    progress = _reporter(progress)
    options = options or SweepOptions(scheduler="none")
    if options.check is None:  # results read back from a journal are validated like any input
        options = dataclasses.replace(options, check=registry.check_resumed)
    t0 = time.perf_counter()
    theorem_units = registry.units(theorems, profile, seed)
    # with every theorem, the modules whose instances are units of their own (genericity draws, large instances)
    modules = [(m, m.units(profile, seed)) for m in registry.UNIT_MODULES if not theorems]
    own = [u for _, us in modules for u in us]
    with_reach = reach and not theorems
    sweep = runner.run(theorem_units + own + (_reach.units(profile, seed) if with_reach else []), options, progress)
    T, G = len(theorem_units), len(theorem_units) + len(own)
    records, rest = sweep.records[:T], sweep.records[G:]
    results = [rec.result if rec.status == "done" else registry.failed(u.params["name"], profile, rec.error)
               for u, rec in zip(theorem_units, records, strict=True)]
    timings: dict[str, Any] = {"theorems": {u.params["name"]: r.seconds for u, r in zip(theorem_units, records, strict=True)}}
    start, taken = T, {}
    for module, us in modules:
        recs = sweep.records[start:start + len(us)]
        start += len(us)
        if us:
            results.append(registry.unit_result(module, profile, seed, [r.result if r.status == "done" else None
                                                                       for r in recs], [r.error for r in recs]))
            timings[module.NAME] = [u.params | {"seconds": r.seconds} for u, r in zip(us, recs, strict=True)]
            taken[module.NAME] = sum(r.where == _FROM_JOURNAL for r in recs)
    resumed = {"theorems": [t["name"] for t in results if t.get("from_journal")],
               "reach_instances": sum(r.where == _FROM_JOURNAL for r in rest), "units": taken}
    reach_rows = None
    if with_reach:
        reach_rows = _reach.rows(profile, sweep.results()[G:])
        timings["reach"] = _reach.row_seconds(profile, [r.seconds for r in rest])
    timings["sweep"] = sweep.summary()
    precision = {"working": "float64", "replay_digits": 40, "rank_escalation_digits": list(_rank.ESCALATION),
                 "certificates": f"Arb ball arithmetic (python-flint): bracket rank at {_certify_rank.DEFAULT_DIGITS} "
                                 "digits, Krawczyk at 50 to 400 digits (escalating); gl(d) exactly over Q"}
    return report.theorem_document(profile, seed, results, timings | {"total_s": round(time.perf_counter() - t0, 3)},
                                   precision, reach_rows, resumed=resumed, selfcheck=selfcheck)


def write_report(doc: dict[str, Any], directory: str | Path, *, force: bool = False,
                 benchmark_reach: list[dict[str, Any]] | None = None,
                 performance: list[dict[str, Any]] | None = None) -> Path:
    """Write ``verification.json``, ``summary.md``, ``appendix/`` (figures, appendix.tex,
    standalone.tex) and ``witnesses/`` (each replayed witness as a file that ``verify check``
    re-checks, :mod:`verify.reporting.witness_files`) of a report into ``directory``; existing
    ones are refused unless ``force``.  The benchmark rows (``make reach``, ``make bench``) join
    the summary when given.  Returns the path of ``verification.json``."""
    from theorems import registry
    from verify.reporting import appendix, report, summary, witness_files

    report.check_theorem_document(doc, "write_report")
    files, doc = witness_files.take(doc)
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    check_outputs(d, REPORT_FILES, ("appendix",), force=force)
    check_outputs(d / "appendix", appendix.OUTPUTS, force=force)
    witness_files.check(list(files), d, force=force)  # before anything is written
    witness_files.write(files, d)
    path = report.write(doc, d)
    rendered = report.plain(doc)
    replace_file(d / "summary.md", summary.render(rendered, benchmark_reach, performance))
    appendix.write(rendered, d / "appendix", registry.statements())
    return path
