"""The theorem checks (theorems/): their parts over random seeds, and `verify run` end to end."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from property_tests.conftest import examples
from theorems import causal, finite_depth, genericity, large_instances, necessity, reach, registry
from theorems.instances import collection, hidden_control_targets
from theorems.witnesses import rank_checks, refusal_check
from verify.io.errors import InputError
from verify.model.blocks import gaussian_blocks
from verify.reporting import appendix, report
from verify.reporting.results import check, genericity_rows

from .test_appendix import CLASSES, OVERFULL_PT, class_missing, overfull, pdflatex, set_in_class

seeds = st.integers(0, 2**31 - 1)


def test_a_check_with_an_infinite_bound_never_passes():
    assert not check("vacuous", 1.0, np.inf, "none", quantity="q").passed
    assert not check("nan", np.nan, 1.0, "none", quantity="q").passed
    assert check("ok", 1.0, 1.0, "equal", quantity="q").passed


@given(seeds, st.sampled_from([(1, 2, 2), (2, 2, 1), (1, 3, 1), (2, 2, 2)]))
def test_rank_witness_on_admissible_collections(seed, shape):
    blocks = gaussian_blocks(seed, shape[2])
    X = collection(seed, shape, "test")
    checks = rank_checks("test", blocks, X)
    assert all(c.passed for c in checks), [c for c in checks if not c.passed]
    assert any(c.certified for c in checks)


@given(seeds)
def test_necessity_deficits_hold_for_any_seed(seed):
    checks = necessity.run(seed, (1, 2, 2))
    assert all(c.passed for c in checks), [c for c in checks if not c.passed]
    assert [c.details["deficit"] for c in checks] == [2, 3, 3, 2]


@given(seeds)
def test_refusal_check_can_fail(seed):
    blocks = gaussian_blocks(seed, 2)
    X = collection(seed, (1, 2, 2), "test")
    Y = hidden_control_targets(blocks, X, seed, "finite", steps=4)
    assert not refusal_check("admissible", X, Y, False, "none").passed
    Y[0, 1] = Y[0, 0]
    assert refusal_check("coincident", X, Y, False, "coincident").passed


@given(seeds)
def test_causal_first_tokens_are_linear(seed):
    blocks = gaussian_blocks(seed, 2, causal=True)
    X = collection(seed, (2, 3, 2), "test")
    assert causal.linearity_check("test", blocks, X, seed).passed


@settings(max_examples=examples(3, "each example runs the T2 quick profile (seconds)"))
@given(seeds)
def test_finite_depth_theorem_quick_profile(seed):
    checks = finite_depth.run("quick", seed)
    assert all(c.passed for c in checks), [c.name for c in checks if not c.passed]
    assert any(c.certified and "Krawczyk" in c.name for c in checks)


TINY = {"sizes": (4,), "instances": 2, "starts": 1, "jacobians": 20}


def test_reach_rows_are_deterministic_and_their_successes_replay():
    rows, seconds = reach.measure(TINY, 3)
    assert [(r["m"], r["depth"]) for r in rows] == [(4, "finite"), (4, "continuous")] and len(seconds) == 2
    for r in rows:
        assert 0 <= r["success_rate"] <= 1 and r["instances"] == 2
        assert (r["worst_replay_error"] is None) == (r["success_rate"] == 0)
        assert r["worst_replay_error"] is None or r["worst_replay_error"] <= 1e-10
    assert reach.measure(TINY, 3)[0] == rows  # a work budget, not a clock: the same rows again


def test_reach_instances_past_nine_are_distinct_and_the_first_ten_keep_their_draws():
    # Indices 13, 22, 31 and 40 have equal digit sums, which rng's character-sum keys could not tell apart.
    inputs = [reach.instance(8, i, seed=5)[0] for i in (13, 22, 31, 40, 11, 20)]
    assert all(not np.array_equal(a, b) for k, a in enumerate(inputs) for b in inputs[k + 1:])
    legacy = np.random.default_rng([5, sum(map(ord, "reach")), sum(map(ord, "8")), sum(map(ord, "3"))])
    assert np.array_equal(reach.instance(8, 3, seed=5)[0], legacy.normal(size=reach.SHAPES[8]))


@settings(max_examples=examples(1, "each example runs every quick-profile theorem and renders the appendix (about 20 s)"))
@given(seeds)
def test_quick_profile_passes_for_a_drawn_seed_and_renders_the_appendix(tmp_path_factory, seed):
    results = [registry.result(name, "quick", seed) for name in registry.THEOREMS]
    rows, _ = reach.measure(TINY, seed)
    failed = [(t["name"], c["name"], c["value"], c["bound"]) for t in results for c in t["checks"] if not c["passed"]]
    assert not failed, f"seed {seed}: {failed}"
    assert [t["name"] for t in results] == ["two_block", "finite_depth", "causal"]
    doc = report.plain(report.theorem_document("quick", seed, results, {}, {}, rows))
    out = tmp_path_factory.mktemp("appendix")
    appendix.write(doc, out, registry.statements())
    stems = ["fig-trajectories", "fig-singular-values", "fig-discretisation"]  # reach: one size says nothing
    assert all((out / f"{s}.{ext}").stat().st_size > 1000 for s in stems for ext in ("pdf", "png"))
    assert not (out / "fig-reach.pdf").exists()
    tex = (out / "appendix.tex").read_text()
    assert all(f"\\includegraphics[width=\\VerifyFigureWidth]{{\\VerifyAppendixDir/{s}.pdf}}" in tex for s in stems)
    assert f"Seed {seed}.}}" in tex and f"\\caption{{Solver reach (seed {seed}).}}" in tex
    assert "not recorded" not in tex  # every check says what its value is
    # paper text: no repository paths, module names or development history (issue 68)
    assert not re.search(r"docs/|\.py\b|\b(verify|theorems)\.[a-z]|first statement|python-flint", tex), \
        re.search(r".{60}(docs/|\.py\b|\b(verify|theorems)\.[a-z]|first statement|python-flint).{60}", tex)
    if shutil.which("pdflatex"):  # CI installs TeX where it can (.ci/run); the full appendix must compile, and fit
        log = pdflatex(out, "standalone.tex")
        assert max(overfull(log), default=0.0) <= OVERFULL_PT, overfull(log)
        for name in (name for name in CLASSES if not class_missing(name)):  # and in the journals' two columns
            set_in_class(name, doc, out, tmp_path_factory.mktemp(f"paper-{name}") / "paper")


WHERE = "\\providecommand{\\VerifyAppendixDir}"  # the one line of appendix.tex that names where it was written


def _but_its_directory(tex):
    return [line for line in tex.read_text().splitlines() if not line.startswith(WHERE)]


def _run_cli(tmp_path, name):
    out = tmp_path / name
    p = subprocess.run([sys.executable, "-m", "verify", "run", "--theorem", "finite_depth", "--seed", "5",
                        "--json", "--out", str(out)], capture_output=True, text=True)
    return p, out / "verification.json"


def test_verify_run_json_and_determinism(tmp_path):
    p1, f1 = _run_cli(tmp_path, "a")
    p2, f2 = _run_cli(tmp_path, "b")
    assert p1.returncode == 0, p1.stderr
    doc = json.loads(p1.stdout)
    assert doc["schema"] == "verification-report/2" and doc["passed"] is True
    t = doc["theorems"][0]
    assert t["name"] == "finite_depth" and t["passed"]
    assert {"name", "passed", "value", "bound", "certified", "origin"} <= set(t["checks"][0])
    a, b = json.loads(f1.read_text()), json.loads(f2.read_text())
    a.pop("timings"), b.pop("timings")
    assert a == b
    s1, s2 = (f.parent / "summary.md" for f in (f1, f2))
    assert s1.read_text() == s2.read_text()
    assert s1.read_text().startswith("# Verification summary: PASS (quick profile, seed 5)")
    tex1, tex2 = (f.parent / "appendix" / "appendix.tex" for f in (f1, f2))
    assert _but_its_directory(tex1) == _but_its_directory(tex2) and "\\begin{enumerate}" in tex1.read_text()
    assert f"{WHERE}{{.}}" in tex1.read_text()  # written outside the working directory: no absolute path in the paper
    for ext in ("pdf", "png"):  # figures are byte-identical too (no creation dates)
        a_fig, b_fig = (f.parent / "appendix" / f"fig-discretisation.{ext}" for f in (f1, f2))
        assert a_fig.read_bytes() == b_fig.read_bytes()
    # `verify appendix` regenerates the same file from the report alone
    again = subprocess.run([sys.executable, "-m", "verify", "appendix", "--report", str(f1), "--out",
                            str(tmp_path / "again")], capture_output=True, text=True)
    assert again.returncode == 0, again.stderr
    assert _but_its_directory(tmp_path / "again" / "appendix.tex") == _but_its_directory(tex1)
    assert (tmp_path / "again" / "standalone.tex").read_text().count("\\input{appendix}") == 1


def test_verify_appendix_refuses_what_is_not_a_theorem_report(tmp_path):
    bad = tmp_path / "r.json"
    bad.write_text('{"schema": "verification-report/1"}')
    for path in (bad, tmp_path / "missing.json"):
        p = subprocess.run([sys.executable, "-m", "verify", "appendix", "--report", str(path)],
                           capture_output=True, text=True)
        assert p.returncode == 2 and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr


def test_summary_renders_the_benchmark_tables(tmp_path):
    from verify.reporting import summary

    bench = tmp_path / "reach.json"
    row = {"m": 8, "depth": "finite", "method": "lm", "instances": 10, "budget_s": 30.0, "success_rate": 0.4,
           "median_time_s": 30.0, "median_depth": 80.0, "worst_replay_error": 8.7e-11, "longest_solved": 12.5,
           "by_difficulty": [{"bound_from": 0.0, "bound_below": 1.0, "instances": 6, "solved": 4},
                             {"bound_from": 8.0, "bound_below": None, "instances": 4, "solved": 0}]}
    timed = [{"group": "flow m=8", "name": f"test_flow[{k}]", "stats": {"median": t}, "extra_info": {}}
             for k, t in (("taylor", 0.03), ("baseline-dop853", 0.02))]
    bench.write_text(json.dumps({"benchmarks": [{"extra_info": row}, *timed]}))
    doc = {"profile": "quick", "seed": 1, "passed": False, "theorems": []}
    text = summary.render(doc, summary.reach_rows(bench), summary.performance_rows(bench))
    assert "| 8 | finite | lm | 10 | 30 | 40 % | [0, 1): 4/6, [8, inf): 0/4 | 12.5 | - | 80 | 8.7e-11 |" in text
    assert "FAIL" in text.splitlines()[0]
    assert "| flow m=8 | test_flow[taylor] | 0.03 | 1.5 |" in text
    assert "Not measured in this run" in text


def test_verify_run_rejects_unknown_theorems():
    p = subprocess.run([sys.executable, "-m", "verify", "run", "--theorem", "nope"], capture_output=True, text=True)
    assert p.returncode == 2 and "invalid choice" in p.stderr and "Traceback" not in p.stderr


def test_cli_knows_every_registered_theorem():
    from verify import cli

    assert cli.THEOREM_NAMES == list(registry.THEOREMS)


def test_a_genericity_draw_not_proved_in_time_is_a_failing_check_and_a_lost_unit_is_named():
    [late] = genericity.unit("rank", (2, 4, 4), 0, seed=3, seconds=0.0)  # the Arb minor stops at its deadline
    assert not late["passed"] and late["details"]["verdict"] == "UNDECIDED"
    assert late["name"].endswith("[draw 1, N=2,n=4,d=4]") and late["details"]["genericity"]["draw"] == 0
    units = genericity.units("quick", 3)
    result = registry.unit_result(genericity, "quick", 3, [None] * len(units), ["a worker died"] * len(units))
    assert not result["passed"] and len(result["checks"]) == len(units)
    rows = genericity_rows(result["checks"])  # lost draws still count, as not proved
    assert [r["not_proved"] for r in rows] == [[1, 2]] * 3 and all(r["proved"] == 0 for r in rows)


def test_genericity_draws_differ_by_index_kind_and_shape():
    a, b = genericity.draw("rank", (2, 2, 2), 0, 0), genericity.draw("rank", (2, 2, 2), 1, 0)
    c = genericity.draw("causal", (2, 2, 2), 0, 0)
    assert not np.array_equal(a[1], b[1]) and not np.array_equal(a[1], c[1]) and c[0][0].causal
    for n in (4, 5):  # the sequence is minus a permutation of itself
        X = genericity.draw("odd", (2, n, 4), 0, 0)[1]
        assert sorted(map(tuple, -X[0])) == sorted(map(tuple, X[0])) and sorted(map(tuple, -X[1])) != sorted(map(tuple, X[1]))


def test_resumed_unit_results_are_lists_of_valid_checks():
    [u] = [u for u in genericity.units("quick", 0)][:1]
    good = genericity.unit(**u.params)
    assert registry.check_resumed(u, good)[0]["passed"] == good[0]["passed"]
    for bad in ({"name": "x"}, [], [{"name": "x"}], [good[0] | {"value": "0"}]):
        with pytest.raises(InputError):
            registry.check_resumed(u, bad)


def test_a_large_instance_row_certifies_its_witness_and_proves_an_exact_network():
    rows = large_instances.unit("T2", (1, 2, 2), "independent", seed=0, starts=8, seconds=120.0)
    replayed, exact = rows
    assert replayed["passed"] and replayed["certified"] and replayed["details"]["targets"] == "independent"
    assert replayed["details"]["tried"] >= 1 and replayed["details"]["witness"]["depth"] == "finite"
    assert exact["name"].startswith("exact network exists") and exact["passed"] and exact["certified"]
    assert exact["name"].endswith("[T2 m=4, N=1,n=2,d=2]")
