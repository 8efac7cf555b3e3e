"""The command line as a user meets it: exit codes, one-line errors, no tracebacks."""

from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from verify.cli.parser import parser

from .test_witness import independent_doc

ROOT = Path(__file__).resolve().parents[1]


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
    assert ok.stdout.startswith("CERTIFIED") and "numbers: JSON numbers as the binary64" in ok.stdout
    # a network proves that exact step sizes near those written exist (issue 66); this control has fewer durations
    # than equations, which the line says
    proved = ("exact solution: not proved (5 durations for 12 equations" if depth == "continuous"
              else "exact solution: step sizes within")
    assert proved in ok.stdout, ok.stdout
    est = run("check", "--estimate", str(tmp_path / "ok.json"))
    assert est.returncode == 0 and est.stdout.startswith("WITHIN TOLERANCE (estimate, not a proof)")
    doc["targets"][1][2][0] += 1e-4
    bad = run("check", "--json", str(write(tmp_path, "moved.json", doc)))
    assert bad.returncode == 1
    verdict = json.loads(bad.stdout)
    assert verdict["passed"] is False and verdict["verdict"] == "FAIL" and verdict["error_lower"] > 5e-5
    est = json.loads(run("check", "--estimate", "--json", str(tmp_path / "moved.json")).stdout)
    assert (est["verdict"], est["kind"]) == ("OUTSIDE", "estimate") and est["error"] > 5e-5


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


@pytest.mark.parametrize("uniform, message", [(True, "overflow"), (False, "the durations or the data are too large")])
def test_integration_failure_during_replay_is_one_line(tmp_path, uniform, message):
    doc = independent_doc("continuous", False, seed=1)
    doc["blocks"][0]["V"] = [[60.0, 0.0], [0.0, 60.0]]
    if uniform:  # Q = 0: uniform attention, exponential growth until float64 overflows
        doc["blocks"][0]["Q"] = [[0.0, 0.0], [0.0, 0.0]]
    doc["steps"] = [{"block": 0, "duration": 20.0}]
    for extra in ([], ["--estimate"]):  # a verdict cannot be reached: UNDECIDED, exit 1, at once
        r = run("check", *extra, str(write(tmp_path, "w.json", doc)))
        assert r.returncode == 1 and r.stdout.startswith("UNDECIDED") and message in r.stdout and not r.stderr


def test_check_with_dps(tmp_path):
    doc = independent_doc("continuous", False, seed=3)
    r = run("check", "--estimate", "--dps", "20", "--json", str(write(tmp_path, "w.json", doc)))
    assert r.returncode == 0 and json.loads(r.stdout)["precision"] == "20 digits"
    r = run("check", "--dps", "60", "--json", str(tmp_path / "w.json"))
    assert r.returncode == 0 and json.loads(r.stdout)["precision"] == "Arb balls at 60 digits"
    r = run("check", "--dps", "0", str(write(tmp_path, "w.json", doc)))
    assert r.returncode == 2 and "expected a whole number of digits from 1 to 200" in r.stderr


def test_check_replays_at_the_recorded_precision(tmp_path):
    """A witness whose tolerance only holds in high precision says so ("precision": "30 digits"),
    and check replays it there; the same file claiming float64 fails, since float64 rounding
    alone exceeds its 1e-25 tolerance."""
    import mpmath

    from verify.io import witness
    from verify.model.network import apply

    doc = independent_doc("finite", False, seed=5, tolerance=1e-25)
    w = witness.parse(json.dumps(doc))
    with mpmath.workdps(30):
        end = apply(w.blocks_at(30), w.steps_at(30), w.array_at("inputs", 30), dps=30).end
        doc["targets"] = [[[mpmath.nstr(v, 30) for v in tok] for tok in seq] for seq in end]
    r = run("check", "--estimate", "--json", str(write(tmp_path, "w30.json", doc | {"precision": "30 digits"})))
    assert r.returncode == 0 and json.loads(r.stdout)["precision"] == "30 digits", r.stdout + r.stderr
    r = run("check", "--estimate", "--json", str(write(tmp_path, "w64.json", doc | {"precision": "float64"})))
    assert r.returncode == 1 and json.loads(r.stdout)["precision"] == "float64"
    r = run("check", "--json", str(tmp_path / "w64.json"))  # the certificate does not depend on the label
    assert r.returncode == 0 and json.loads(r.stdout)["verdict"] == "CERTIFIED", r.stdout


def test_help_lists_subcommands():
    r = run("--help")
    assert r.returncode == 0 and "check" in r.stdout and "selfcheck" in r.stdout


def test_selfcheck_writes_report_and_replaces_it_only_when_forced(tmp_path):
    r = run("selfcheck", "--quick", "--quiet", "--out", str(tmp_path / "rep"))
    assert r.returncode == 0, r.stderr
    path = tmp_path / "rep" / "verification.json"
    first = path.read_text()
    doc = json.loads(first)
    assert doc["schema"] == "verification-report/1" and doc["passed"] and len(doc["checks"]) > 10
    assert all(c["quantity"] for c in doc["checks"]) and doc["code"]["version"]
    refused = run("selfcheck", "--quick", "--quiet", "--out", str(tmp_path / "rep"))
    assert refused.returncode == 2 and "already exists" in refused.stderr and "--force" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and path.read_text() == first
    r2 = run("selfcheck", "--quick", "--quiet", "--force", "--out", str(tmp_path / "rep"))
    assert r2.returncode == 0, r2.stderr
    doc2 = json.loads(path.read_text())
    doc.pop("timings"), doc2.pop("timings")
    assert doc == doc2  # deterministic apart from timings


def test_run_refuses_to_replace_a_report_before_any_work(tmp_path):
    (tmp_path / "verification.json").write_text("the user's")
    r = run("run", "--theorem", "causal", "--no-reach", "--scheduler", "none", "--out", str(tmp_path))
    assert r.returncode == 2 and "already exists" in r.stderr and "--force" in r.stderr
    assert (tmp_path / "verification.json").read_text() == "the user's" and not (tmp_path / "summary.md").exists()


def test_the_terminal_and_the_summary_write_mathematics_as_plain_text(tmp_path):
    """T3's names hold typeset mathematics (gl(d), a product of exponentials) for the appendix;
    neither the terminal nor summary.md shows LaTeX, and the appendix typesets it."""
    r = run("run", "--theorem", "causal", "--profile", "quick", "--no-reach", "--scheduler", "none", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    summary = (tmp_path / "summary.md").read_text()
    for shown in (r.stdout, summary):
        assert "V_0, V_1 generate gl(d)" in shown and "first tokens move by prod_k exp(tau_k V_b_k)" in shown
        assert not re.search(r"\\[A-Za-z]|\$", shown), re.search(r".{40}(\\[A-Za-z]|\$).{40}", shown)
    assert "$\\mathfrak{gl}(d)$" in (tmp_path / "appendix" / "appendix.tex").read_text()


def test_a_run_beside_another_warns_of_no_port(tmp_path):
    """Another Dask cluster (or anything) on port 8787: the local cluster's HTTP server takes a free
    port instead and says nothing (it warned "Port 8787 is already in use" on every such run)."""
    with socket.socket() as other:
        try:
            other.bind(("", 8787))
        except OSError:
            pass  # already taken, as the test needs it to be
        other.listen()
        r = run("run", "--theorem", "causal", "--profile", "quick", "--no-reach", "--out", str(tmp_path))
    assert r.returncode == 0 and "Warning" not in r.stderr and "already in use" not in r.stderr, r.stderr


def test_run_refuses_a_witnesses_folder_with_files_before_any_work(tmp_path):
    (tmp_path / "witnesses").mkdir()
    (tmp_path / "witnesses" / "mine.json").write_text("the user's")
    r = run("run", "--theorem", "causal", "--no-reach", "--scheduler", "none", "--out", str(tmp_path))
    assert r.returncode == 2 and "mine.json already exists" in r.stderr and "--force" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and not (tmp_path / "verification.json").exists()


# ---------------------------------------------------------------- verify rank


def save_npy(tmp_path, name, X):
    p = tmp_path / name
    np.save(p, X)
    return p


def test_rank_json_dump_and_certify(tmp_path):
    X = np.random.default_rng(3).normal(size=(2, 2, 2))
    x = save_npy(tmp_path, "x.npy", X)
    dump = tmp_path / "m.npz"
    r = run("rank", "--inputs", str(x), "--seed", "4", "--certify", "--json", "--dump", str(dump))
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    for key in ("dimension", "rank", "bound", "min_degree", "verdict", "sigma_min", "levels", "kind"):
        assert key in out
    assert out["rank"] == out["dimension"] == out["bound"] == 8 and out["verdict"] == "CERTIFIED" and out["passed"]
    with np.load(dump) as z:
        assert z["matrix"].shape == (8, len(z["words"]))
        assert list(z["words"][:3]) == ["0", "1", "[0,1]"]
    again = run("rank", "--inputs", str(x), "--seed", "4", "--dump", str(dump))
    assert again.returncode == 2 and "already exists" in again.stderr
    dump.write_text("the user's")
    assert run("rank", "--inputs", str(x), "--seed", "4", "--dump", str(dump), "--force").returncode == 0
    with np.load(dump) as z:  # replaced, as asked
        assert z["matrix"].shape[0] == 8


def test_rank_saturated_attention_is_undecided_not_a_verdict(tmp_path):
    """Tokens ~ 1e20: softmax weights of 10^-5e39, which no precision tried holds; the rank is
    reported as undecided (exit 1), neither a theorem failure nor a pass."""
    X = 1e20 * np.random.default_rng(1).normal(size=(2, 2, 2))
    r = run("rank", "--inputs", str(save_npy(tmp_path, "x.npy", X)), "--seed", "0")
    assert r.returncode == 1 and r.stdout.startswith("UNDECIDED: ") and "FAIL" not in r.stdout
    assert "only an exact argument decides a deficit" in r.stdout and "float64: rank" in r.stdout
    j = json.loads(run("rank", "--inputs", str(tmp_path / "x.npy"), "--seed", "0", "--json").stdout)
    assert j["verdict"] == "UNDECIDED" and j["passed"] is False and j["weight_digits"] > 1e39


def test_rank_dump_matches_independent_high_precision_columns(tmp_path):
    """Dumped degree <= 3 columns against SymPy at 30 digits (an independent computation)."""
    from verify.model.blocks import gaussian_blocks

    from .symbolic import bracket_columns

    X = np.random.default_rng(5).normal(size=(2, 2, 2))
    x = save_npy(tmp_path, "x.npy", X)
    blocks_file = tmp_path / "b.json"
    blocks = gaussian_blocks(6, 2)
    blocks_file.write_text(json.dumps({"blocks": [{k: getattr(b, k).tolist() for k in "QKV"} for b in blocks]}))
    dump = tmp_path / "m.npz"
    r = run("rank", "--inputs", str(x), "--blocks", str(blocks_file), "--dump", str(dump), "--max-degree", "5")
    assert r.returncode == 0, r.stdout + r.stderr
    with np.load(dump) as z:
        M, words = z["matrix"], list(z["words"])
    for s in range(2):
        for w, col in bracket_columns(blocks, X[s]).items():
            got = M[s * 4:(s + 1) * 4, words.index(w)]
            assert np.abs(got - col).max() <= 1e-9 * np.abs(col).max()


def test_rank_causal_reports_gl_d(tmp_path):
    X = np.random.default_rng(3).normal(size=(3, 2, 2))
    r = run("rank", "--inputs", str(save_npy(tmp_path, "x.npy", X)), "--seed", "1", "--causal", "--certify", "--json")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["rank"] == out["bound"] == 2 * 2 + 2 * 3 and out["verdict"] == "CERTIFIED"
    assert out["gl_d"]["certified"] and out["gl_d"]["rank"] == 4


@pytest.mark.parametrize("args, message", [
    (["--inputs", "MISSING.npy", "--seed", "1"], "no such file"),
    (["--inputs", "BAD.npy", "--seed", "1"], "expected an array of shape (N, n, d)"),
    (["--inputs", "NAN.npy", "--seed", "1"], "finite number"),
    (["--inputs", "X.npy", "--seed", "1", "--dim", "3"], "does not match"),
    (["--inputs", "X.npy", "--seed", "1", "--dim", "0"], "expected a whole number from 1 to 10^9, got 0"),
    (["--inputs", "X.npy", "--seed", "1", "--max-degree", "1e3"], "expected a whole number from 1 to 10^9, got '1e3'"),
    (["--inputs", "X.npy", "--blocks", "NOTJSON.json"], "not valid JSON"),
    (["--inputs", "X.npy", "--blocks", "X.npy"], "not a UTF-8 text file"),
    (["--inputs", "TXT.txt", "--seed", "1"], "unknown file type"),
    (["--inputs", "HUGE.npy", "--seed", "1"], "exceeds 1e+150"),
    (["--inputs", "LARGE.npy", "--seed", "1"], "overflow float64"),
    (["--inputs", "COMPLEX.npy", "--seed", "1"], "complex entries"),
    (["--inputs", "RAGGED.json", "--seed", "1"], "nested lists are ragged"),
    (["--inputs", "/", "--seed", "1"], "a directory, not a file"),
    (["--inputs", "X.npy", "--blocks", "HEAD.json"], "blocks[0].Q: expected a square d x d matrix, got shape (3, 2)"),
])
def test_rank_refuses_bad_input(tmp_path, args, message):
    np.save(tmp_path / "X.npy", np.zeros((1, 2, 2)) + np.arange(2)[:, None])
    np.save(tmp_path / "BAD.npy", np.zeros((3, 2)))
    nan = np.ones((1, 2, 2))
    nan[0, 0, 0] = np.nan
    np.save(tmp_path / "NAN.npy", nan)
    (tmp_path / "NOTJSON.json").write_text("{")
    (tmp_path / "TXT.txt").write_text("1 2 3")
    spread = np.random.default_rng(0).normal(size=(2, 2, 2))
    np.save(tmp_path / "HUGE.npy", 1e200 * spread)
    np.save(tmp_path / "LARGE.npy", 1e80 * spread)  # below the refusal at load, but the brackets overflow
    np.save(tmp_path / "COMPLEX.npy", spread + 1j)  # float() would keep the real parts, with only a warning
    (tmp_path / "RAGGED.json").write_text("[[[1, 2], [3]]]")
    head = {m: np.ones((3, 2)).tolist() for m in "QK"}  # a head dimension 3 != d: Q and K must be d x d
    (tmp_path / "HEAD.json").write_text(json.dumps({"blocks": [{**head, "V": np.eye(2).tolist()}] * 2}))
    r = run("rank", *args, cwd=tmp_path)
    assert r.returncode == 2, r.stdout
    assert "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1 and message in r.stderr


@pytest.mark.parametrize("command", [["rank", "--inputs", "X.npy", "--seed"], ["run", "--seed"], ["selfcheck", "--seed"],
                                     ["interpolate", "--inputs", "X.npy", "--targets", "X.npy", "--seed"],
                                     ["interpolate", "--inputs", "X.npy", "--targets", "X.npy", "--seed", "0",
                                      "--search-seed"]])
@pytest.mark.parametrize("seed", ["-1", "2.5"])
def test_seeds_must_be_whole_numbers_from_zero(tmp_path, command, seed):
    np.save(tmp_path / "X.npy", np.random.default_rng(0).normal(size=(1, 2, 2)))
    r = run(*command, seed, cwd=tmp_path)
    assert r.returncode == 2 and "expected a whole number >= 0" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("command", [["run", "--profile", "quick"], ["selfcheck", "--quick"]])
def test_an_out_path_that_is_a_file_is_refused_before_any_work(tmp_path, command):
    taken = tmp_path / "taken.txt"
    taken.write_text("the user's")
    r = run(*command, "--out", str(taken))
    assert r.returncode == 2 and "is not a directory" in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and taken.read_text() == "the user's"


@pytest.mark.parametrize("dps", [None, "30"])
def test_a_network_that_overflows_is_refused_in_one_line(tmp_path, dps):
    doc = independent_doc("finite", False, seed=1)
    doc["layers"][0]["step"] = 1e300  # the next layers' logits overflow float64
    r = run("check", "--estimate", str(write(tmp_path, "w.json", doc)), *(["--dps", dps] if dps else []))
    assert r.returncode == 1 and r.stdout.startswith("UNDECIDED") and "the network's image overflowed" in r.stdout
    assert not r.stderr
    r = run("check", str(tmp_path / "w.json"), *(["--dps", dps] if dps else []))
    assert r.returncode == 1 and r.stdout.startswith("UNDECIDED") and "not finite in ball arithmetic" in r.stdout
    assert not r.stderr


@pytest.mark.parametrize("command, option, path, message", [
    (["interpolate", "--targets", "X.npy"], "--out", "missing/w.json", "does not exist"),
    (["rank"], "--dump", "m", "give a path ending in .npz"),  # np.savez would write m.npz, past the check
])
def test_an_output_file_that_cannot_be_written_is_refused_before_any_work(tmp_path, command, option, path, message):
    np.save(tmp_path / "X.npy", np.random.default_rng(0).normal(size=(1, 2, 2)))
    r = run(*command, "--inputs", "X.npy", "--seed", "0", option, path, cwd=tmp_path)
    assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1 and sorted(p.name for p in tmp_path.iterdir()) == ["X.npy"]


def test_one_file_holding_inputs_and_targets_gives_each_its_own(tmp_path):
    """An .npz with X and Y (or a JSON object with inputs only) is read by role: the targets are
    never the inputs' array."""
    from verify.io.datafiles import load_collection
    from verify.io.errors import InputError

    X, Y = np.random.default_rng(0).normal(size=(2, 1, 2, 2))
    np.savez(tmp_path / "xy.npz", X=X, Y=Y)
    assert np.array_equal(load_collection(tmp_path / "xy.npz", "inputs"), X)
    assert np.array_equal(load_collection(tmp_path / "xy.npz", "targets"), Y)
    np.savez(tmp_path / "ab.npz", a=X, b=Y)
    with pytest.raises(InputError, match=r"none named 'targets' \(or 'Y'\)"):
        load_collection(tmp_path / "ab.npz", "targets")
    only = write(tmp_path, "x.json", {"inputs": X.tolist()})
    assert np.array_equal(load_collection(only, "inputs"), X)
    with pytest.raises(InputError, match="needs a field 'targets'"):
        load_collection(only, "targets")
    r = run("interpolate", "--inputs", "xy.npz", "--targets", "x.json", "--seed", "0", cwd=tmp_path)
    assert r.returncode == 2 and "needs a field 'targets'" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("command", [["rank", "--inputs", "X.npy", "--seed", "0"], ["check", "w.json"],
                                     ["interpolate", "--inputs", "X.npy", "--targets", "X.npy", "--seed", "0"]])
def test_digits_beyond_the_limit_are_refused(tmp_path, command):
    """--dps 1000 ended in a traceback (10.0 ** (3 - dps) underflowed to 0; at 100000 mpmath
    could not parse the decimal strings); a witness's precision is held to the same limit, and
    one that is neither 'float64' nor 'N digits' (a typo) is refused, not replayed in float64."""
    np.save(tmp_path / "X.npy", np.random.default_rng(0).normal(size=(1, 2, 2)))
    write(tmp_path, "w.json", independent_doc("finite", False, seed=2))
    r = run(*command, "--dps", "1000", cwd=tmp_path)
    assert r.returncode == 2 and "expected a whole number of digits from 1 to 200" in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    for label, message in [("30 digit", "expected 'float64' or 'N digits'"), ("1000 digits", "from 1 to 200")]:
        doc = independent_doc("finite", False, seed=2)
        doc["precision"] = label
        r = run("check", str(write(tmp_path, "bad.json", doc)))
        assert r.returncode == 2 and message in r.stderr and "Traceback" not in r.stderr, r.stderr


def test_json_output_is_strict_json(tmp_path):
    """--json printed Python's 'Infinity' for a failed search's error, which strict JSON parsers
    (jq, JavaScript) reject; non-finite numbers are strings now, as in the reports."""
    def strict(text):
        return json.loads(text, parse_constant=lambda c: pytest.fail(f"non-standard JSON constant {c}"))

    np.save(tmp_path / "X.npy", np.random.default_rng(0).normal(size=(2, 2, 2)))
    np.save(tmp_path / "Y.npy", np.random.default_rng(1).normal(size=(2, 2, 2)))
    r = run("interpolate", "--inputs", "X.npy", "--targets", "Y.npy", "--seed", "0", "--time-budget", "0.001", "--json",
            cwd=tmp_path)
    assert r.returncode == 1 and strict(r.stdout)["error"] == "inf"


def test_the_engine_names_parameters_and_the_command_line_names_flags(tmp_path):
    """Engine messages name the parameter (``dps``, ``max_steps``); the CLI says which flag sets it."""
    from verify.cli import flags

    X = np.random.default_rng(0).normal(size=(1, 2, 2))
    r = run("rank", "--inputs", str(save_npy(tmp_path, "x.npy", X)), "--seed", "0", "--dps", "1")
    assert r.returncode == 1 and "give --dps 30 or more" in r.stdout and "give dps" not in r.stdout, r.stdout
    doc = independent_doc("finite", False, seed=7)
    r = run("--max-steps", "1", "check", str(write(tmp_path, "w.json", doc)))
    assert r.returncode == 2 and "raise it with --max-steps" in r.stderr
    assert flags("over the limit; raise the limit max_bytes") == "over the limit; raise it with --max-file-mb"


def _usage_blocks() -> dict[str, str]:
    """The README's usage lines per command (the 'verify COMMAND ...' line and its continuations)."""
    section = (ROOT / "README.md").read_text().split("## Command line", 1)[1].split("\n## ", 1)[0]
    blocks: dict[str, str] = {}
    current = None
    for line in section.splitlines():
        if line.startswith("    verify "):
            current = line.split()[1]
            blocks[current] = line
        elif current and line.startswith(" " * 12) and line.strip().startswith(("[", "--", "(")):
            blocks[current] += " " + line.strip()
        else:
            current = None
    return blocks


def test_every_flag_has_help_and_the_readme_usage_lines_match_the_parser():
    sub = next(a for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
    usage = _usage_blocks()
    assert set(usage) == set(sub.choices), set(usage) ^ set(sub.choices)
    for name, p in sub.choices.items():
        actions = [a for a in p._actions if "-h" not in a.option_strings]
        assert all(a.help for a in actions), (name, [a.dest for a in actions if not a.help])
        flags = {o for a in actions for o in a.option_strings}
        shown = set(re.findall(r"--[a-z][a-z-]*", usage[name]))
        assert flags == shown, (name, flags ^ shown)
        for a in actions:
            if a.choices and a.option_strings:  # the alternatives the README shows are the parser's
                alternatives = re.search(rf"{a.option_strings[0]} ([a-z_|]+)", usage[name]).group(1).split("|")
                assert alternatives == list(a.choices), (name, a.option_strings[0], alternatives)


def test_run_logs_progress_lines_when_stderr_is_not_a_terminal(tmp_path):
    r = run("run", "--theorem", "finite_depth", "--no-reach", "--scheduler", "none", "--out", str(tmp_path))
    assert r.returncode == 0, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.startswith("  sweep: ")]
    assert lines and lines[-1].startswith("  sweep: 1/1 units") and "s left" in lines[-1], r.stderr
    # the row's witness is a file that `verify check` certifies (issue 67), and the row names it
    files = sorted((tmp_path / "witnesses").iterdir())
    assert len(files) == 1 and files[0].name.startswith("finite_depth-N="), files
    named = [c["details"].get("witness_file") for t in json.loads((tmp_path / "verification.json").read_text())["theorems"]
             for c in t["checks"]]
    assert f"witnesses/{files[0].name}" in named
    again = run("check", str(files[0]))
    assert again.returncode == 0 and again.stdout.startswith("CERTIFIED"), again.stdout + again.stderr
