"""Writing results: ``reports/verification.json`` (deterministic; timings kept apart).

Two versioned schemas.  ``verification-report/1`` (engine self-checks, ``verify selfcheck``)::

    {"schema": ..., "suite": ..., "seed": ..., "passed": bool,
     "checks": [{"name", "value", "bound", "origin", "passed", "certified", "details", "kind",
                 "quantity", "boolean"}, ...],
     "code": {"name", "version", "commit", "dirty"},      <- verify.version.provenance
     "versions": {package: version},
     "timings": {...}}       <- the only part that differs between two runs with one seed

``verification-report/2`` (theorem checks, ``verify run``)::

    {"schema": ..., "suite": "theorems", "profile": ..., "seed": ..., "passed": bool,
     "blocks": {"seed": ..., "initialisation": ...},
     "precision": {...},
     "theorems": [{"name", "title", "statement", "latex", "hypotheses", "profile_settings",
                   "passed", "checks": [check, ...]}, ...],
     "reach": [{"m", "shape", "depth", "method", "instances", "budget", "success_rate",
                "median_jacobians_solved", "median_depth", "worst_replay_error",
                "high_precision_witnesses", "failed_units"}, ...] or null,
     "resumed": {"theorems": [names taken from the journal], "reach_instances": count,
                 "units": {result name: count of its units taken from the journal}},
     "selfcheck": {"passed", "checks", "checks_passed", "seed", "file", "code"} or null,
     "code": {"name", "version", "commit", "dirty"},
     "versions": {...},
     "timings": {"theorems": {name: seconds}, "reach": [seconds per row], "total_s": ...,
                 "sweep": {"scheduler", "units", "ran": {where: count}, "retried", "failed", "seconds"},
                 "machine": {...}}}

A check's ``quantity`` says what its value is; ``boolean`` marks a yes/no check (value 0 for
yes); both were added within schema /2 and are optional when a report is read (an older one
renders with "not recorded").  ``details.witness_file``, also optional, names the file of the
witness a row replays, relative to the report's folder (:mod:`verify.reporting.witness_files`).
``code`` names the suite's version and git commit (with ``dirty`` when tracked files differed
from it), so that two reports from different code say so; ``selfcheck`` is the verdict of the
engine self-check found beside the report, if any.

``sweep`` (:mod:`verify.sweep.records`) says where the units ran; "journal" counts those taken
from an earlier run's journal (``--resume``).

``reach`` is the solver measured on independent Gaussian targets (:mod:`theorems.reach`), with
budgets counted in Jacobians so that it is deterministic; null when the run skipped it.

Non-finite numbers are written as the strings "inf", "-inf", "nan" (JSON has no infinities).

>>> from verify.reporting.results import check
>>> doc = document("engine-selfcheck", 0, [check("x", 0.0, 1.0, "test", quantity="x")], {"total_s": 1.0})
>>> doc["passed"], doc["code"]["version"] == __import__("verify").__version__
(True, True)
"""

from __future__ import annotations

import json
import math
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from verify.io.errors import InputError
from verify.io.files import DEFAULT_LIMITS, Limits, load_json, replace_file
from verify.reporting.results import Check, passes
from verify.version import provenance

SCHEMA = "verification-report/1"
THEOREM_SCHEMA = "verification-report/2"
PACKAGES = ("numpy", "scipy", "mpmath", "gmpy2", "python-flint", "array-api-compat")


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = "not installed"
    return out


def document(suite: str, seed: int, checks: list[Check], timings: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "suite": suite,
        "seed": seed,
        "passed": all(c.passed for c in checks),
        "checks": [c.as_dict() for c in checks],
        "code": provenance(),
        "versions": versions(),
        "timings": timings,
    }


def theorem_document(profile: str, seed: int, theorems: list[dict[str, Any]], timings: dict[str, Any],
                     precision: dict[str, Any], reach: list[dict[str, Any]] | None = None,
                     resumed: dict[str, Any] | None = None, selfcheck: dict[str, Any] | None = None) -> dict[str, Any]:
    """``resumed``: the theorems and the number of reach instances taken from a journal
    (``--resume``) rather than computed in this run; the summary and the appendix say so.
    ``selfcheck``: :func:`selfcheck_verdict` of the engine self-check run beside it, or None."""
    return {
        "schema": THEOREM_SCHEMA,
        "suite": "theorems",
        "profile": profile,
        "seed": seed,
        "passed": all(t["passed"] for t in theorems),
        "blocks": {"seed": seed, "initialisation": "Q0, K0, V0, Q1, K1, V1 i.i.d. N(0, 1/d) from "
                   "numpy.random.default_rng(seed), in that order (verify.model.blocks.gaussian_blocks)"},
        "precision": precision,
        "theorems": theorems,
        "reach": reach,
        "resumed": resumed or {"theorems": [], "reach_instances": 0},
        "selfcheck": selfcheck,
        "code": provenance(),
        "versions": versions(),
        "timings": timings | {"machine": {"platform": platform.platform(), "processor": platform.processor(),
                                          "python": platform.python_version()}},
    }


def selfcheck_verdict(path: str | Path, shown_as: str, limits: Limits = DEFAULT_LIMITS) -> dict[str, Any] | None:
    """The verdict of the self-check report at ``path`` (``verify selfcheck``), for the theorem
    report: None when there is none; its fields checked, so a damaged file is refused in one line."""
    p = Path(path)
    if not p.exists():
        return None
    doc = load_json(p, limits)
    if not isinstance(doc, dict) or doc.get("schema") != SCHEMA or not isinstance(doc.get("checks"), list):
        raise InputError(f"{p}: not a self-check report (schema {SCHEMA!r}); remove it or rerun `verify selfcheck`")
    passed = [passes(c.get("value"), c.get("bound")) if isinstance(c, dict) else False for c in doc["checks"]]
    return {"passed": all(passed), "checks": len(passed), "checks_passed": sum(passed), "seed": doc.get("seed"),
            "file": shown_as, "code": doc.get("code")}


def plain(x: Any) -> Any:
    """JSON-ready copy: NumPy scalars to Python, tuples to lists, non-finite floats to strings."""
    if isinstance(x, dict):
        return {str(k): plain(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [plain(v) for v in x]
    if isinstance(x, np.generic):
        x = x.item()
    if isinstance(x, float) and not math.isfinite(x):
        return str(x)
    return x


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(plain(doc), indent=1, allow_nan=False) + "\n"


def write(doc: dict[str, Any], directory: str | Path) -> Path:
    """verification.json in ``directory``, replacing an earlier one (never writing through a link)."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    return replace_file(d / "verification.json", dumps(doc))


_CHECK = {"name": str, "passed": bool, "certified": bool, "origin": str, "value": (int, float, str), "bound": (int, float, str),
          "details": dict}
_THEOREM = {"name": str, "title": str, "latex": str, "passed": bool, "checks": list}
_REACH = {"m": int, "shape": list, "depth": str, "instances": int, "success_rate": (int, float),
          "median_jacobians_solved": (int, float, type(None)), "median_depth": (int, float, type(None)),
          "worst_replay_error": (int, float, str, type(None)), "high_precision_witnesses": int}


def check_theorem_document(doc: Any, source: str) -> dict[str, Any]:
    """A theorem report read from a file, its fields and their types checked (what the appendix
    reads), so that a damaged or hand-made report is refused in one line, not half rendered."""
    def fields(obj: Any, spec: dict, where: str) -> None:
        if not isinstance(obj, dict):
            raise InputError(f"{source}: {where} must be an object")
        for k, kind in spec.items():
            if k not in obj:
                raise InputError(f"{source}: {where} lacks the field {k!r}; regenerate the report with `verify run`")
            if not isinstance(obj[k], kind) or (kind is int and isinstance(obj[k], bool)):
                raise InputError(f"{source}: {where}.{k} has the wrong type ({type(obj[k]).__name__})")

    fields(doc, {"schema": str, "profile": str, "seed": int, "passed": bool, "theorems": list}, "the report")
    if doc["schema"] != THEOREM_SCHEMA:
        raise InputError(f"{source}: not a theorem report (schema {THEOREM_SCHEMA!r}); `verify run` writes one")
    for i, t in enumerate(doc["theorems"]):
        fields(t, _THEOREM, f"theorems[{i}]")
        for j, c in enumerate(t["checks"]):
            fields(c, _CHECK, f"theorems[{i}].checks[{j}]")
            c["passed"] = passes(c["value"], c["bound"])  # recomputed: a report is read like any input
        t["passed"] = all(c["passed"] for c in t["checks"])
    doc["passed"] = all(t["passed"] for t in doc["theorems"])
    if doc.get("reach") is not None and not isinstance(doc["reach"], list):
        raise InputError(f"{source}: reach must be a list of rows or null")
    for i, r in enumerate(doc.get("reach") or []):
        fields(r, _REACH, f"reach[{i}]")
    resumed = doc.setdefault("resumed", {"theorems": [], "reach_instances": 0})
    fields(resumed, {"theorems": list, "reach_instances": int}, "resumed")
    return doc
