"""The command line as a user meets it: exit codes, one-line errors, no tracebacks."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from .test_witness import independent_doc


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True, text=True, cwd=cwd)


def write(tmp_path, name, doc):
    p = tmp_path / name
    p.write_text(json.dumps(doc) if not isinstance(doc, str) else doc)
    return p


@pytest.mark.parametrize("depth", ["continuous", "finite"])
@pytest.mark.parametrize("causal", [False, True])
def test_check_accepts_and_rejects(tmp_path, depth, causal):
    doc = independent_doc(depth, causal, seed=7)
    ok = run("check", str(write(tmp_path, "ok.json", doc)))
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.startswith("PASS")
    doc["targets"][1][2][0] += 1e-4
    bad = run("check", "--json", str(write(tmp_path, "moved.json", doc)))
    assert bad.returncode == 1
    verdict = json.loads(bad.stdout)
    assert verdict["passed"] is False and verdict["error"] > 5e-5


@pytest.mark.parametrize("content, message", [
    ("{oops", "not valid JSON"),
    ('{"schema": "attention-interpolation-witness/1"}', "missing field"),
    (None, "no such file"),
])
def test_check_refuses_cleanly(tmp_path, content, message):
    path = tmp_path / "absent.json" if content is None else write(tmp_path, "w.json", content)
    r = run("check", str(path))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and message in r.stderr


@pytest.mark.parametrize("uniform, message", [(True, "overflowed"), (False, "would need more than")])
def test_integration_failure_during_replay_is_one_line(tmp_path, uniform, message):
    doc = independent_doc("continuous", False, seed=1)
    doc["blocks"][0]["V"] = [[60.0, 0.0], [0.0, 60.0]]
    if uniform:  # Q = 0: uniform attention, exponential growth until float64 overflows
        doc["blocks"][0]["Q"] = [[0.0, 0.0], [0.0, 0.0]]
    doc["steps"] = [{"block": 0, "duration": 20.0}]
    r = run("check", str(write(tmp_path, "w.json", doc)))
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_check_with_dps(tmp_path):
    doc = independent_doc("continuous", False, seed=3)
    r = run("check", "--dps", "20", "--json", str(write(tmp_path, "w.json", doc)))
    assert r.returncode == 0 and json.loads(r.stdout)["precision"] == "20 digits"
    r = run("check", "--dps", "0", str(write(tmp_path, "w.json", doc)))
    assert r.returncode == 2 and "positive integer" in r.stderr


def test_help_lists_subcommands():
    r = run("--help")
    assert r.returncode == 0 and "check" in r.stdout and "selfcheck" in r.stdout


def test_selfcheck_writes_report(tmp_path):
    r = run("selfcheck", "--quick", "--quiet", "--out", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stderr
    doc = json.loads((tmp_path / "rep" / "verification.json").read_text())
    assert doc["schema"] == "verification-report/1" and doc["passed"] and len(doc["checks"]) > 10
    r2 = run("selfcheck", "--quick", "--quiet", "--out", str(tmp_path / "rep2"))
    assert r2.returncode == 0, r2.stderr
    doc2 = json.loads((tmp_path / "rep2" / "verification.json").read_text())
    doc.pop("timings"), doc2.pop("timings")
    assert doc == doc2  # deterministic apart from timings
