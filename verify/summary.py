"""``summary.md``: the human summary of a theorem report (``verification-report/2``).

Renders only what the report holds (no recomputation), and nothing from its ``timings``
section, so two runs with the same seed give identical summaries: a verdict per theorem, each
theorem's statement and a table of its checks (value, bound, verdict, certified, origin of the
bound), and the solver's reach when a reach benchmark JSON (pytest-benchmark, written by
``make reach``) is given.

>>> doc = {"profile": "quick", "seed": 0, "passed": True, "theorems": [{"name": "t", "title": "T",
...        "statement": "S.", "passed": True, "checks": [{"name": "c", "value": 0.0, "bound": 1.0,
...        "passed": True, "certified": False, "origin": "o"}]}]}
>>> print(render(doc).splitlines()[0])
# Verification summary: PASS (quick profile, seed 0)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def _number(x: Any) -> str:
    return f"{x:.3g}" if isinstance(x, (int, float)) else str(x)


def _cell(text: str) -> str:
    return str(text).replace("|", "\\|")


def reach_rows(benchmark_json: str | Path) -> list[dict[str, Any]]:
    """The ``extra_info`` of every reach benchmark in a pytest-benchmark JSON file."""
    data = json.loads(Path(benchmark_json).read_text(encoding="utf-8"))
    return [b["extra_info"] for b in data.get("benchmarks", []) if "success_rate" in b.get("extra_info", {})]


def render(doc: dict[str, Any], reach: list[dict[str, Any]] | None = None) -> str:
    """Markdown summary of a theorem report (and of a reach table, when given)."""
    verdict = "PASS" if doc["passed"] else "FAIL"
    out = [f"# Verification summary: {verdict} ({doc['profile']} profile, seed {doc['seed']})", ""]
    out += ["| theorem | verdict | checks passed | certified checks |", "|---|---|---|---|"]
    for t in doc["theorems"]:
        n_pass = sum(c["passed"] for c in t["checks"])
        n_cert = sum(c["certified"] and c["passed"] for c in t["checks"])
        out.append(f"| {t['name']}: {_cell(t['title'])} | {'PASS' if t['passed'] else 'FAIL'} | "
                   f"{n_pass} of {len(t['checks'])} | {n_cert} |")
    for t in doc["theorems"]:
        out += ["", f"## {t['name']}: {t['title']}", "", t["statement"], "",
                "| check | value | bound | verdict | certified | bound from |", "|---|---|---|---|---|---|"]
        for c in t["checks"]:
            out.append(f"| {_cell(c['name'])} | {_number(c['value'])} | {_number(c['bound'])} | "
                       f"{'pass' if c['passed'] else 'FAIL'} | {'yes' if c['certified'] else 'no'} | "
                       f"{_cell(c['origin'])} |")
    out += ["", "## Solver reach", ""]
    if reach:
        out += ["| N n d | depth | method | instances | budget (s) | solved | median depth | worst replay error |",
                "|---|---|---|---|---|---|---|---|"]
        for r in sorted(reach, key=lambda r: (r["m"], r["depth"], r["method"])):
            out.append(f"| {r['m']} | {r['depth']} | {r['method']} | {r['instances']} | {_number(r['budget_s'])} | "
                       f"{round(100 * r['success_rate'])} % | {_number(r['median_depth'])} | "
                       f"{_number(r['worst_replay_error'])} |")
    else:
        out.append("No reach benchmark in this report set (run `make reach`; see README for the last measured table).")
    return "\n".join(out) + "\n"
