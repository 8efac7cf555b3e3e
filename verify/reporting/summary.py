"""``summary.md``: the human summary of a theorem report (``verification-report/2``).

Renders only what the report holds (no recomputation), and nothing from its ``timings``
section, so two runs with the same seed give identical summaries: a verdict per theorem, each
theorem's statement and a table of its checks (value, bound, verdict, kind, origin of the
bound), the solver's reach measured in the run (work budget), and, when their pytest-benchmark
JSON files are given, the wall-clock reach table (``make reach``) and the performance ratios
(``make bench``); those two come from files outside the report, so they change only with them.

>>> doc = {"profile": "quick", "seed": 0, "passed": True, "theorems": [{"name": "t", "title": "T",
...        "statement": "S.", "passed": True, "checks": [{"name": "c", "value": 0.0, "bound": 1.0,
...        "passed": True, "certified": False, "origin": "o"}]}]}
>>> print(render(doc).splitlines()[0])
# Verification summary: PASS (quick profile, seed 0): checks 0 certified, 1 estimate, 0 exact
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from verify.reporting.results import kind_of


def _number(x: Any) -> str:
    return f"{x:.3g}" if isinstance(x, (int, float)) else "-" if x is None else str(x)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def _benchmarks(benchmark_json: str | Path) -> list[dict[str, Any]]:
    return json.loads(Path(benchmark_json).read_text(encoding="utf-8")).get("benchmarks", [])


def reach_rows(benchmark_json: str | Path) -> list[dict[str, Any]]:
    """The ``extra_info`` of every reach benchmark in a pytest-benchmark JSON file."""
    return [b["extra_info"] for b in _benchmarks(benchmark_json) if "success_rate" in b.get("extra_info", {})]


def performance_rows(benchmark_json: str | Path) -> list[dict[str, Any]]:
    """Group, name and median seconds of every timed benchmark, with its ratio to the group's
    baseline (the benchmark whose name contains ``baseline``; None when the group has none).

    >>> import tempfile, os
    >>> bench = {"benchmarks": [{"group": "g", "name": "t[ours]", "stats": {"median": 1.0}},
    ...                         {"group": "g", "name": "t[baseline-x]", "stats": {"median": 4.0}}]}
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = open(os.path.join(d, "b.json"), "w").write(json.dumps(bench))
    ...     [r["ratio"] for r in performance_rows(os.path.join(d, "b.json"))]
    [0.25, 1.0]
    """
    rows = [{"group": b["group"], "name": b["name"], "median_s": b["stats"]["median"]}
            for b in _benchmarks(benchmark_json) if "success_rate" not in b.get("extra_info", {})]
    base = {r["group"]: r["median_s"] for r in rows if "baseline" in r["name"]}
    return [r | {"ratio": r["median_s"] / base[r["group"]] if r["group"] in base else None} for r in rows]


def provenance(doc: dict[str, Any]) -> str:
    """How many results of the report ``doc`` this run computed, and how many it took from a
    journal (``--resume``; ``doc["resumed"]``)."""
    resumed = doc.get("resumed") or {}
    names, k = resumed.get("theorems") or [], resumed.get("reach_instances") or 0
    if not names and not k:
        return "Every result in this report was computed in this run (none was taken from a journal)."
    total = sum(int(r.get("instances", 0)) for r in doc.get("reach") or [])
    taken = ([f"{len(names)} of {len(doc.get('theorems') or [])} theorem results ({', '.join(map(str, names))})"]
             if names else []) + ([f"{k} of {total} reach instances"] if k else [])
    return (f"Taken from the journal of an earlier run (`--resume`), not recomputed: {' and '.join(taken)}; their "
            "values are what the journal says (validated and re-judged against their bounds). Run without `--resume` "
            "to recompute everything.")


def render(doc: dict[str, Any], benchmark_reach: list[dict[str, Any]] | None = None,
           performance: list[dict[str, Any]] | None = None) -> str:
    """Markdown summary of a theorem report, with the wall-clock reach table (``make reach``) and
    the performance table (``make bench``) when their benchmark JSON rows are given."""
    verdict = "PASS" if doc["passed"] else "FAIL"
    every = [c for t in doc["theorems"] for c in t["checks"]]
    kinds = ", ".join(f"{sum(kind_of(c) == k for c in every)} {k}" for k in ("certified", "estimate", "exact"))
    out = [f"# Verification summary: {verdict} ({doc['profile']} profile, seed {doc['seed']}): checks {kinds}", ""]
    out += ["| theorem | verdict | checks passed | certified | estimates |", "|---|---|---|---|---|"]
    for t in doc["theorems"]:
        n_pass = sum(c["passed"] for c in t["checks"])
        n_cert = sum(c["certified"] and c["passed"] for c in t["checks"])
        n_est = sum(kind_of(c) == "estimate" and c["passed"] for c in t["checks"])
        out.append(f"| {t['name']}: {_cell(t['title'])} | {'PASS' if t['passed'] else 'FAIL'} | "
                   f"{n_pass} of {len(t['checks'])} | {n_cert} | {n_est} |")
    out += ["", "A check's kind: *certified* (every rounding enclosed: Arb balls or exact rational arithmetic), "
            "*estimate* (a floating-point measurement: not a proof), *exact* (a decision on the exact data, such as a "
            "refusal)."]
    out += ["", provenance(doc)]
    for t in doc["theorems"]:
        told = " (taken from the journal of an earlier run)" if t.get("from_journal") else ""
        out += ["", f"## {t['name']}: {t['title']}{told}", "", t["statement"], "",
                "| check | value | bound | verdict | kind | bound from |", "|---|---|---|---|---|---|"]
        for c in t["checks"]:
            out.append(f"| {_cell(c['name'])} | {_number(c['value'])} | {_number(c['bound'])} | "
                       f"{'pass' if c['passed'] else 'FAIL'} | {kind_of(c)} | {_cell(c['origin'])} |")
    out += ["", "## Solver reach on independent Gaussian targets", ""]
    if doc.get("reach"):
        out += ["Measured in this run with a work budget (the same on every machine); "
                "see `theorems/reach.py`.", "",
                "| N n d | shape | depth | instances | budget | solved | median Jacobians (solved) | "
                "median depth | worst replay error | of which high precision |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for r in doc["reach"]:
            out.append(f"| {r['m']} | {tuple(r['shape'])} | {r['depth']} | {r['instances']} | {r['budget']} | "
                       f"{round(100 * r['success_rate'])} % | {_number(r['median_jacobians_solved'])} | "
                       f"{_number(r['median_depth'])} | {_number(r['worst_replay_error'])} | "
                       f"{r.get('high_precision_witnesses', 0)} |")
    else:
        out.append("Not measured in this run (it was limited to some theorems, or left the reach table out).")
    if benchmark_reach:
        out += ["", "Wall-clock reach table from `reports/benchmarks/reach.json` (`make reach`):", "",
                "| N n d | depth | method | instances | budget (s) | solved | median depth | worst replay error | "
                "of which high precision |", "|---|---|---|---|---|---|---|---|---|"]
        for r in sorted(benchmark_reach, key=lambda r: (r["m"], r["depth"], r["method"])):
            out.append(f"| {r['m']} | {r['depth']} | {r['method']} | {r['instances']} | {_number(r['budget_s'])} | "
                       f"{round(100 * r['success_rate'])} % | {_number(r['median_depth'])} | "
                       f"{_number(r['worst_replay_error'])} | {r.get('high_precision_witnesses', 0)} |")
    out += ["", "## Performance", ""]
    if performance:
        out += ["From `reports/benchmarks/latest.json` (`make bench`); ratio = median time over the median "
                "of the named baseline in the same group and run.", "",
                "| group | benchmark | median (s) | ratio to baseline |", "|---|---|---|---|"]
        for r in performance:
            ratio = "" if r["ratio"] is None else f"{r['ratio']:.3g}"
            out.append(f"| {_cell(r['group'])} | {_cell(r['name'])} | {r['median_s']:.3g} | {ratio} |")
    else:
        out.append("No benchmark JSON in this report set (run `make bench`).")
    return "\n".join(out) + "\n"
