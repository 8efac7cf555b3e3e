"""`verify-replay`: the independent replay as a command, importing nothing of the engine."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

from verify.model.blocks import gaussian_blocks
from verify_replay import witness


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "verify_replay", *args], capture_output=True, text=True)


def test_it_imports_nothing_of_the_engine_or_the_theorems():
    code = ("import sys, verify_replay; verify_replay.replay; "
            "print([m for m in sys.modules if m.split('.')[0] in ('verify', 'theorems', 'property_tests')])")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert p.stdout.strip() == "[]"


def test_it_replays_a_network_witness_and_says_both_errors(tmp_path):
    b = gaussian_blocks(3, 2)
    blocks = [(x.Q, x.K, x.V) for x in b]
    X = np.random.default_rng(3).normal(size=(1, 2, 2))
    doc = witness(blocks, X, "finite", [(0, 0.2), (1, -0.1)], 1e-10)
    path = tmp_path / "w.json"
    path.write_text(json.dumps(doc))
    p = _run(str(path), "--dps", "20")
    assert p.returncode == 0, p.stderr
    assert "in float64 (the layers)" in p.stdout and "at 20 digits" in p.stdout
    doc["targets"][0][0][0] += 1e-6  # moved past the tolerance: exit 1
    path.write_text(json.dumps(doc))
    assert _run(str(path)).returncode == 1


def test_bad_input_gets_one_line_and_exit_2(tmp_path):
    (tmp_path / "bad.json").write_text('{"depth": "finite"}')
    (tmp_path / "text.json").write_text("not json")
    for args, message in (([str(tmp_path / "missing.json")], "cannot open"), ([str(tmp_path)], "not a regular file"),
                          ([str(tmp_path / "bad.json")], "lacks the field"), ([str(tmp_path / "text.json")], "not a JSON"),
                          ([str(tmp_path / "bad.json"), "--dps", "5"], "give 10 to 200")):
        p = _run(*args)
        assert p.returncode == 2 and message in p.stderr and p.stderr.count("\n") == 1, (args, p.stderr)
