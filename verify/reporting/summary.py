"""``summary.md``: the human summary of a theorem report (``verification-report/2``).

Written for a referee who has not seen the code.  It renders only what the report holds (no
recomputation), and nothing from its ``timings`` section, so two runs with the same seed give
identical summaries: first the scope (:func:`verify.reporting.results.scope`: the blocks, the
shapes as the checks used them, the kinds of checks, evidence on these instances), then the code
that ran (version and commit), the profile and seed, the engine self-check's verdict and the
instance shapes of each theorem; then per theorem its
statement, hypotheses and a table of its checks (value rounded up, bound rounded down, verdict,
kind), each row citing a note that says what its value is and where its bound comes from; the
solver's reach measured in the run (work budget); and, when their pytest-benchmark JSON files
are given, the wall-clock reach table (``make reach``) and the performance ratios (``make
bench``).  What was not run is left out or named in one line that says how to add it.

>>> doc = {"profile": "quick", "seed": 0, "passed": True, "theorems": [{"name": "t", "title": "T",
...        "statement": "S.", "passed": True, "checks": [{"name": "c", "value": 0.0, "bound": 1.0,
...        "passed": True, "certified": False, "origin": "o", "quantity": "q"}]}]}
>>> text = render(doc)
>>> print(text.splitlines()[0])
# Verification summary: PASS (quick profile, seed 0)
>>> "| 1 | c | 0 | <= 1 | pass | estimate | [1] |" in text and "1. value: q; bound: o" in text
True
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from verify.reporting.latex import plain
from verify.reporting.results import KINDS, draws_only, kind_of, notes, scope, shapes_used, witness_table, yes_no
from verify.reporting.rounding import bound, down, up
from verify.version import NAME, describe


def _number(x: Any, rounding: Callable[..., str] | None = None) -> str:
    """A number to three significant digits (``rounding``: :func:`up` or :func:`down`, else to nearest)."""
    if not isinstance(x, (int, float)) or isinstance(x, bool):
        return "-" if x is None else str(x)
    return rounding(x, 3, "g") if rounding else f"{x:.3g}"


def _shown(c: dict[str, Any], key: str) -> str:
    """A check's value (rounded up) or bound ('< 1', '<= 1e-10': rounded down); yes/no for a yes/no check."""
    if yes_no(c, key):
        return yes_no(c, key)
    if not isinstance(c[key], (int, float)):  # "inf", "nan": as the report writes them
        return str(c[key])
    return _number(c[key], up) if key == "value" else bound(c[key], "g")


def shapes(t: dict[str, Any]) -> str:
    """The instance shapes a theorem was checked on: those its checks' names carry ((N, n, d)
    triples), or its grid of kinds and shapes as its profile settings give it."""
    settings = t.get("profile_settings") or {}
    for key, one, many in (("grid", "kind and shape", "kinds and shapes"), ("rows", "instance", "instances")):
        if isinstance(settings.get(key), list) and settings[key]:
            ms = [math.prod(g[1]) for g in settings[key] if isinstance(g, list) and len(g) >= 2 and g[0] != "gl"
                  and isinstance(g[1], list) and all(isinstance(x, int) and not isinstance(x, bool) for x in g[1])]
            k = len(settings[key])  # genericity's (kind, shape) pairs, large instances' (theorem, shape, targets)
            return (f"{k} {one if k == 1 else many}" + (f", m = {min(ms)} to {max(ms)}" if ms else "")
                    + (f", {settings['draws']} draws each" if "draws" in settings else ""))
    return ", ".join(map(str, shapes_used(t["checks"]))) or "not recorded"


def selfcheck_line(doc: dict[str, Any], file: bool = True) -> str:
    """What the report says of the engine's self-check run beside it (``doc["selfcheck"]``);
    ``file``: with the name of its report (not in a paper's text)."""
    s = doc.get("selfcheck")
    if not s:
        return ("not run with this report; `verify selfcheck --out OUT/selfcheck` before `verify run --out OUT` "
                "adds it (`make verify` does).")
    same = "the same code" if s.get("code") == doc.get("code") else f"other code: {describe(s.get('code'))}"
    where = f"{s['file']}, " if file else ""
    return (f"{'PASS' if s['passed'] else 'FAIL'}, {s['checks_passed']} of {s['checks']} checks (seed {s['seed']}, "
            f"{where}{same}).")


def _witness_table(witnesses: list[dict[str, Any]]) -> list[str]:
    """One row per witness file (``witnesses``: :func:`verify.reporting.results.witness_table`),
    or nothing where the report has none."""
    rows = []
    for r in witnesses:
        c = r["check"]
        exact = ("not tried" if r["exact"] is None else "not proved" if r["exact"] is False
                 else f"proved, radius {_number(r['exact'], up)}")
        rows.append(f"| {r['theorem']} | {_cell(r['instance'])} | {r['m']} | {_cell(r['depth'])} | {_cell(r['length'])} | "
                    f"{_shown(c, 'value')} ({kind_of(c)}) | {_shown(c, 'bound')} | {exact} | `{_cell(r['file'])}` |")
    if not rows:
        return []
    return ["", "## Witnesses", "",
            "Each witness a row replays, as a file relative to this summary's folder: `verify check FILE` re-checks it "
            "(the image's bound, and the exact solution near it where one was proved).", "",
            "| theorem | instance | m | depth | steps or layers | max \\|image - target\\| | tolerance | exact solution | file |",
            "|---|---|---|---|---|---|---|---|---|", *rows]


def _recheck(doc: dict[str, Any], rows: list[dict[str, Any]]) -> list[str]:
    """How a referee re-checks a row: the first witness file (of ``rows``, :func:`_witness_table`'s),
    `verify check` and the independent replay on it, and the whole report again at the code's commit."""
    code = doc.get("code") if isinstance(doc.get("code"), dict) else {}
    commit = str(code.get("commit") or "")[:12]
    out = ["", "## How to re-check", ""]
    if rows:
        f = _cell(rows[0]["file"])
        out += [f"A row with a witness file, from this summary's folder (here `{f}`):", "",
                f"- `verify check {f}`: the certificate again (Arb balls around every number as written), and the exact "
                "solution near it where the row proved one;",
                f"- `verify-replay {f}`: an independent replay (no code shared with the suite: SciPy's DOP853 in "
                "float64 and an extrapolated integrator in mpmath), max |image - target| against the file's tolerance.", ""]
    where = f"at commit `{commit}` (`git checkout {commit}`)" if commit else "with the version named above"
    out.append(f"The whole report: `verify run --profile {_cell(str(doc['profile']))} --seed {doc['seed']}` {where}; "
               "two runs give the same `verification.json` apart from its timings.")
    return out


GENERICITY_KINDS = {"rank": "bracket rank", "causal": "causal bracket rank", "gl": "V_0, V_1 generate gl(d)",
                    "coincident": "rank, a repeated token", "permuted": "rank, a reversed copy of a sequence",
                    "negated": "rank, a negated copy of a sequence", "odd": "rank, an odd sequence {a, -a, ...}"}


def _genericity_table(rows: list[dict[str, Any]]) -> list[str]:
    """The draws aggregated per (kind, shape) (:func:`verify.reporting.results.genericity_rows`)."""
    out = ["Each draw (blocks and data drawn afresh) is its own check in `verification.json`; here they are "
           "aggregated per kind and shape. A draw is proved when its rank is certified equal to the invariants' bound "
           "(an Arb minor; at most the bound by the invariants) or gl(d) is generated (exactly over Q); a draw not "
           "proved is listed by number, never dropped. Degrees: the least and largest degree whose brackets reached the "
           "bound, against the counting degree (the least with as many Hall words as the bound).", "",
           "| kind | (N, n, d) | m | proved | not proved | bound | degree reached / counting | smallest certified "
           "sigma_min |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        degs = "-" if r["degrees"] is None else "-".join(dict.fromkeys(map(str, r["degrees"])))
        counting = " / " + ", ".join(map(str, r["counting"])) if r["counting"] else ""
        gl = r["kind"] == "gl"  # its shape is (1, 1, d) and its "m" the dimension d^2 of gl(d)
        shape = f"d = {r['shape'][-1]}" if gl and r["shape"] else str(r["shape"])
        bound_ = "d^2 = " + ", ".join(map(str, r["m"])) if gl else ", ".join(map(str, r["bound"]))
        sigma = "-" if r["sigma_min_lower"] is None else down(r["sigma_min_lower"])
        out.append(f"| {GENERICITY_KINDS.get(r['kind'], _cell(r['kind']))} | {shape} | "
                   f"{'-' if gl else ', '.join(map(str, r['m']))} | {r['proved']} of {r['draws']} | "
                   f"{', '.join(map(str, r['not_proved'])) or 'none'} | {bound_} | {degs}{counting} | {sigma} |")
    return out


def _cell(text: str) -> str:
    """Report text in a Markdown table cell: its mathematics as plain text (:func:`plain`), bars escaped."""
    return plain(text).replace("|", "\\|")


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


def journal_line(doc: dict[str, Any]) -> str:
    """How many results of the report ``doc`` this run computed, and how many it took from a
    journal (``--resume``; ``doc["resumed"]``)."""
    resumed = doc.get("resumed") or {}
    names, k = resumed.get("theorems") or [], resumed.get("reach_instances") or 0
    units = resumed.get("units") if isinstance(resumed.get("units"), dict) else {}  # genericity draws, large instances
    if not names and not k and not any(isinstance(v, int) and v > 0 for v in units.values()):
        return "Every result in this report was computed in this run (none was taken from a journal)."
    total = sum(int(r.get("instances", 0)) for r in doc.get("reach") or [])
    taken = ([f"{len(names)} of {len(doc.get('theorems') or [])} theorem results ({', '.join(map(str, names))})"]
             if names else []) + ([f"{k} of {total} reach instances"] if k else []) + [
                 f"{v} units of {_cell(str(name))}" for name, v in units.items() if isinstance(v, int) and v > 0]
    return (f"Taken from the journal of an earlier run (`--resume`), not recomputed: {' and '.join(taken)}; their "
            "values are what the journal says (validated and re-judged against their bounds). Run without `--resume` "
            "to recompute everything.")


def render(doc: dict[str, Any], benchmark_reach: list[dict[str, Any]] | None = None,
           performance: list[dict[str, Any]] | None = None) -> str:
    """Markdown summary of a theorem report, with the wall-clock reach table (``make reach``) and
    the performance table (``make bench``) when their benchmark JSON rows are given."""
    verdict = "PASS" if doc["passed"] else "FAIL"
    every = [c for t in doc["theorems"] for c in t["checks"]]
    kinds = ", ".join(f"{sum(kind_of(c) == k for c in every)} {k}" for k in KINDS)
    out = [f"# Verification summary: {verdict} ({doc['profile']} profile, seed {doc['seed']})", "",
           f"{scope(doc)} How to re-check a row: the section \"How to re-check\" below.", "",
           f"- Code: {NAME} {describe(doc.get('code'))}.",
           f"- Profile `{doc['profile']}`, seed {doc['seed']}: the blocks and every instance are drawn from the seed; "
           f"{doc.get('blocks', {}).get('initialisation', 'blocks as recorded in verification.json')}.",
           f"- Engine self-check: {selfcheck_line(doc)}",
           f"- {len(every)} checks: {kinds}. A check passes when its value is at most its bound. *certified*: every "
           "rounding error enclosed (Arb balls or exact rational arithmetic), a proof; *estimate*: a floating-point "
           "measurement, not a proof; *exact*: a decision on the exact data, such as a refusal. A yes/no check "
           "shows yes or no.",
           f"- {journal_line(doc)}", "",
           "| theorem | instance shapes (N, n, d) | verdict | checks passed | certified | estimates | exact |",
           "|---|---|---|---|---|---|---|"]
    for t in doc["theorems"]:
        count = {k: sum(kind_of(c) == k and c["passed"] for c in t["checks"]) for k in KINDS}
        out.append(f"| {t['name']}: {_cell(t['title'])} | {_cell(shapes(t))} | {'PASS' if t['passed'] else 'FAIL'} | "
                   f"{sum(c['passed'] for c in t['checks'])} of {len(t['checks'])} | {count['certified']} | "
                   f"{count['estimate']} | {count['exact']} |")
    for t in doc["theorems"]:
        told = " (taken from the journal of an earlier run)" if t.get("from_journal") else ""
        distinct, cited = notes(t["checks"])
        out += ["", f"## {t['name']}: {plain(t['title'])}{told}", "", plain(t["statement"]), ""]
        if t.get("hypotheses"):
            out += ["Hypotheses:", "", *(f"- {plain(h)}" for h in t["hypotheses"]), ""]
        if rows := draws_only(t["checks"]):
            out += _genericity_table(rows)
            continue
        out += ["Values are rounded up and bounds down to three digits, so a printed row never looks better than "
                "the computed one; a bound \"< 1\" is strict. The last column cites the note that says what the "
                "value is and where the bound comes from.", "",
                "| # | check | value | bound | verdict | kind | note |", "|---|---|---|---|---|---|---|"]
        for i, (c, k) in enumerate(zip(t["checks"], cited, strict=True), 1):
            out.append(f"| {i} | {_cell(c['name'])} | {_shown(c, 'value')} | {_shown(c, 'bound')} | "
                       f"{'pass' if c['passed'] else 'FAIL'} | {kind_of(c)} | [{k}] |")
        out += ["", "Notes:", ""]
        out += [f"{k}. value: {_cell(q)}; bound: {_cell(o)}" for k, (q, o) in enumerate(distinct, 1)]
    witnesses = witness_table(doc)
    out += _witness_table(witnesses)
    out += _recheck(doc, witnesses)
    out += ["", "## Solver reach on independent Gaussian targets", ""]
    if doc.get("reach"):
        out += ["Not a theorem check: the share of instances (inputs and targets i.i.d. N(0, 1)) for which the "
                "solver found a control or network within a work budget counted in Jacobians (the same on every "
                "machine; `theorems/reach.py`). Replay errors are float64 estimates, or high-precision replays for "
                "the witnesses counted in the last column.", "",
                "| N n d | shape | depth | instances | budget | solved | median Jacobians (solved) | "
                "median depth (steps or layers) | worst replay error | replayed in high precision |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for r in doc["reach"]:
            out.append(f"| {r['m']} | {tuple(r['shape'])} | {r['depth']} | {r['instances']} | {r['budget']} | "
                       f"{round(100 * r['success_rate'])} % | {_number(r['median_jacobians_solved'])} | "
                       f"{_number(r['median_depth'])} | {_number(r['worst_replay_error'], up)} | "
                       f"{r.get('high_precision_witnesses', 0)} |")
    else:
        out.append("Not measured in this run: `verify run` without `--theorem` and `--no-reach` measures it.")
    if benchmark_reach:
        out += ["", "Wall-clock reach table from `reports/benchmarks/reach.json` (`make reach`); difficulty is the "
                "lower bound on the total |duration| (|step|) that any control (network) from X to Y needs, and a bin "
                "[a, b) shows solved of instances:", "",
                "| N n d | depth | method | instances | budget (s) | solved | by difficulty | longest solved | "
                "largest amplification | median depth | worst replay error | replayed in high precision |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in sorted(benchmark_reach, key=lambda r: (r["m"], r["depth"], r["method"])):
            bins = ", ".join(f"[{b['bound_from']:g}, {_number(b['bound_below']) if b['bound_below'] is not None else 'inf'}): "
                             f"{b['solved']}/{b['instances']}"
                             for b in r.get("by_difficulty") or []) or "-"
            out.append(f"| {r['m']} | {r['depth']} | {r['method']} | {r['instances']} | {_number(r['budget_s'])} | "
                       f"{round(100 * r['success_rate'])} % | {bins} | {_number(r.get('longest_solved'))} | "
                       f"{_number(r.get('largest_amplification'))} | {_number(r['median_depth'])} | "
                       f"{_number(r['worst_replay_error'], up)} | {r.get('high_precision_witnesses', 0)} |")
    if performance:
        out += ["", "## Performance", "",
                "From `reports/benchmarks/latest.json` (`make bench`); ratio = median time over the median "
                "of the named baseline in the same group and run.", "",
                "| group | benchmark | median (s) | ratio to baseline |", "|---|---|---|---|"]
        for r in performance:
            ratio = "" if r["ratio"] is None else f"{r['ratio']:.3g}"
            out.append(f"| {_cell(r['group'])} | {_cell(r['name'])} | {r['median_s']:.3g} | {ratio} |")
    if not (benchmark_reach and performance):
        out += ["", "Timed benchmarks are not part of this report; `make reach` and `make bench` write them to "
                "`reports/benchmarks/`, and the next `verify run` into `reports` adds their tables here."]
    return "\n".join(out) + "\n"
