"""A hostile referee's cases (issue 50): exactly the problem written, no pass from a journal edit,
nothing written outside OUT, and one clear line for every refusal."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from verify.io import witness
from verify.model.blocks import gaussian_blocks
from verify.model.network import apply
from verify.verdicts import replay


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-m", "verify", *args], capture_output=True, text=True, cwd=cwd)


def one_line(r, code=2):
    return r.returncode == code and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


X0 = np.random.default_rng(0).normal(size=(1, 2, 2))


def test_a_decimal_beta_is_certified_as_the_decimal_it_writes():
    """beta "0.1" is not the double 0.1: targets computed with the double miss the exact problem
    by ~1e-18, so a tolerance of 1e-22 cannot be CERTIFIED (it was, from float("0.1"))."""
    blocks = gaussian_blocks(0, 2, beta=0.1)
    layers = [(0, 0.3), (1, -0.2), (0, 0.25)]
    import mpmath

    with mpmath.workdps(50):
        end = apply(blocks, layers, X0, dps=50).end
        Y = [[[mpmath.nstr(v, 45) for v in tok] for tok in seq] for seq in end]
    doc = witness.make(blocks, X0, Y, "finite", layers, 1e-22, precision="50 digits")
    assert replay.certify(witness.from_dict(doc))["verdict"] == "CERTIFIED"  # the double beta: exact
    doc["attention"]["beta"] = "0.1"
    verdict = replay.certify(witness.from_dict(doc))
    assert verdict["verdict"] == "FAIL" and verdict["error_lower"] > 1e-22, verdict


@pytest.mark.parametrize("inputs, target, tolerance, steps", [
    (0.0, "1e-330", 0, []),                                   # a target below every double, tolerance 0
    (0.0, "1e-40", "1e-45", [(0, 0.0)]),                      # a zero step: the identity, exactly
    (0.5, "0.50000000000000000001", 1e-20, []),               # 1e-20 off; the double 1e-20 is below 1e-20: FAIL
    (0.5, "0.50000000000000000001", "1e-20", []),             # the decimal 1e-20: CERTIFIED, exactly at the edge
])
def test_empty_and_zero_controls_are_decided_exactly(inputs, target, tolerance, steps):
    X = np.full((1, 2, 2), inputs)
    doc = witness.make(gaussian_blocks(0, 2), X, X, "continuous", steps, 1e-3)
    doc["targets"][0][0][0], doc["tolerance"] = target, tolerance
    w = witness.from_dict(doc)
    verdict = replay.certify(w)
    from fractions import Fraction

    gap, tol = abs(Fraction(target) - Fraction(inputs)), Fraction(tolerance)  # a JSON number: its binary64, exactly
    assert verdict["precision"] == "exact rational arithmetic"
    assert verdict["verdict"] == ("CERTIFIED" if gap <= tol else "FAIL")
    assert replay.replay(w)["verdict"] != "WITHIN" or gap <= tol
    assert replay.replay(w, 30)["verdict"] != "WITHIN" or gap <= tol


def test_a_json_number_that_readers_would_round_is_refused(tmp_path):
    doc = witness.make(gaussian_blocks(0, 2), X0, X0, "finite", [(0, 0.0)], 1e-10)
    text = json.dumps(doc).replace(json.dumps(doc["tolerance"]), "0.100000000000000000000000001", 1)
    p = tmp_path / "w.json"
    p.write_text(text)
    r = run("check", str(p))
    assert one_line(r) and "write it as a decimal string" in r.stderr, r.stderr


@pytest.mark.parametrize("inputs, message", [([], "inputs is an empty list"), ([[]], "inputs[0] is an empty list")])
def test_empty_axes_are_named_not_called_ragged(tmp_path, inputs, message):
    doc = witness.make(gaussian_blocks(0, 2), X0, X0, "finite", [(0, 0.1)], 1e-10)
    doc["inputs"] = doc["targets"] = inputs
    p = tmp_path / "w.json"
    p.write_text(json.dumps(doc))
    r = run("check", str(p))
    assert one_line(r) and message in r.stderr and "ragged" not in r.stderr, r.stderr


def test_interpolate_refuses_large_collections_and_odd_obstructions_at_once(tmp_path):
    X = np.random.default_rng(0).normal(size=(20000, 2, 2))
    np.save(tmp_path / "x.npy", X)
    np.save(tmp_path / "y.npy", X[::-1].copy())
    r = run("interpolate", "--inputs", "x.npy", "--targets", "y.npy", "--seed", "0", cwd=tmp_path)
    assert one_line(r) and "at most 1024" in r.stderr, r.stderr
    np.save(tmp_path / "c.npy", np.array([[[0.3, 0.4], [-0.3, -0.4]]]))  # centred: odd
    np.save(tmp_path / "d.npy", np.array([[[0.3, 0.4], [0.1, -0.4]]]))
    r = run("interpolate", "--inputs", "c.npy", "--targets", "d.npy", "--seed", "0", cwd=tmp_path)
    assert one_line(r) and "minus a permutation of itself" in r.stderr and "F(-X) = -F(X)" in r.stderr


def test_rank_refuses_limits_in_one_line(tmp_path):
    np.save(tmp_path / "x.npy", X0)
    r = run("rank", "--inputs", "x.npy", "--seed", "0", "--max-degree", "18", cwd=tmp_path)
    assert one_line(r) and "give one from 1 to 14" in r.stderr
    np.save(tmp_path / "big.npy", np.random.default_rng(0).normal(size=(2000, 2, 2)))
    r = run("rank", "--inputs", "big.npy", "--seed", "0", cwd=tmp_path)
    assert one_line(r) and "over the limit of 512" in r.stderr
    # 20000 x 32 x 2 as JSON, with the file limit raised: refused from its commas, before it is parsed
    (tmp_path / "big.json").write_text(json.dumps(np.random.default_rng(0).normal(size=(20000, 32, 2)).round(3).tolist()))
    r = run("--max-file-mb", "200", "rank", "--inputs", "big.json", "--seed", "0", cwd=tmp_path)
    assert one_line(r) and "holds about 1280000 JSON values, over the limit of 400000" in r.stderr, r.stderr


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("run") / "out"
    r = run("run", "--theorem", "causal", "--profile", "quick", "--no-reach", "--scheduler", "none", "--quiet",
            "--out", str(out))
    assert r.returncode == 0, r.stdout + r.stderr
    return out


def _copy(report: Path, tmp_path: Path) -> Path:
    import shutil

    out = tmp_path / "out"
    shutil.copytree(report, out)
    for name in ("verification.json", "summary.md"):
        (out / name).unlink()
    shutil.rmtree(out / "appendix")
    shutil.rmtree(out / "witnesses")  # the run's outputs gone, its journal kept
    return out


def _edit_journal(out: Path, edit) -> None:
    lines = (out / "journal.jsonl").read_text().splitlines()
    rec = json.loads(lines[0])
    edit(rec["result"]["checks"][0])
    (out / "journal.jsonl").write_text("\n".join([json.dumps(rec), *lines[1:]]) + "\n")


def test_an_edited_journal_result_cannot_pass(report, tmp_path):
    out = _copy(report, tmp_path)
    _edit_journal(out, lambda c: c.update(value=5.0, passed=True))  # only the result edited
    r = run("run", "--theorem", "causal", "--profile", "quick", "--no-reach", "--scheduler", "none", "--resume",
            "--out", str(out))
    assert r.returncode == 1 and "FAIL   5.00e+00" in r.stdout, r.stdout
    summary = (out / "summary.md").read_text()
    assert "from the journal" in summary and "1 of 1 theorem results" in summary, summary
    assert "journal" in (out / "appendix" / "appendix.tex").read_text()


@pytest.mark.parametrize("edit", [lambda c: c.update(value="small"), lambda c: c.pop("origin"),
                                  lambda c: c.pop("passed"), lambda c: c.update(kind="proved")])
def test_a_damaged_journal_result_is_one_line_before_any_report(report, tmp_path, edit):
    out = _copy(report, tmp_path)
    _edit_journal(out, edit)
    r = run("run", "--theorem", "causal", "--profile", "quick", "--no-reach", "--scheduler", "none", "--resume",
            "--out", str(out))
    if r.returncode == 0:  # a field the registry recomputes (passed) may be absent
        assert "FAIL" not in r.stdout
        return
    assert one_line(r) and "run without --resume" in r.stderr, r.stderr
    assert not (out / "verification.json").exists()


def test_nothing_is_written_through_a_symlink_inside_out(report, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "appendix.tex").write_text("the user's")
    out = tmp_path / "out"
    out.mkdir()
    (out / "appendix").symlink_to(elsewhere)
    r = run("run", "--theorem", "causal", "--profile", "quick", "--no-reach", "--scheduler", "none", "--out", str(out))
    assert one_line(r) and "symbolic link" in r.stderr, r.stderr
    assert (elsewhere / "appendix.tex").read_text() == "the user's"
    target = tmp_path / "app"
    target.mkdir()
    (target / "appendix.tex").symlink_to(elsewhere / "appendix.tex")
    r = run("appendix", "--report", str(report / "verification.json"), "--out", str(target))
    assert one_line(r) and "already exists" in r.stderr and "--force" in r.stderr, r.stderr  # not unasked
    r = run("appendix", "--report", str(report / "verification.json"), "--out", str(target), "--force")
    assert r.returncode == 0, r.stderr  # a link where a file goes is replaced by the file, never written through
    assert not (target / "appendix.tex").is_symlink() and "\\begin" in (target / "appendix.tex").read_text()
    assert (elsewhere / "appendix.tex").read_text() == "the user's"


def test_a_summary_that_is_a_directory_is_refused_in_one_line(tmp_path):
    out = tmp_path / "out"
    (out / "summary.md").mkdir(parents=True)
    r = run("run", "--theorem", "causal", "--profile", "quick", "--no-reach", "--scheduler", "none", "--out", str(out))
    assert one_line(r) and "summary.md" in r.stderr, r.stderr


@pytest.mark.parametrize("edit, field", [
    (lambda doc: doc["theorems"][0]["checks"][0].update(details={"trajectory": "oops"}), "fig-trajectories"),
    (lambda doc: doc["theorems"][0]["checks"][0].update(details={"sigma_by_degree": [1, "x"], "sigma_min": 1,
                                                                 "rank_bound": 2}),
     "fig-singular-values"),
    (lambda doc: doc.update(reach=[{"m": 8, "shape": [1, 2, 4], "depth": "finite", "instances": 2, "budget": 1,
                                   "success_rate": 0.5, "median_depth": 3, "worst_replay_error": 1e-12}]),
     "median_jacobians_solved"),
])
def test_damaged_figure_data_is_one_line(report, tmp_path, edit, field):
    doc = json.loads((report / "verification.json").read_text())
    doc["theorems"][0]["name"] = "two_block"  # the figures read the two-block theorem's checks
    edit(doc)
    p = tmp_path / "v.json"
    p.write_text(json.dumps(doc))
    r = run("appendix", "--report", str(p), "--out", str(tmp_path / "app"))
    assert one_line(r) and field in r.stderr, r.stderr


HUGE_EXPONENTS = ["0e999999999", "6e-99999999999", "1e-400000", "-2.5E+10001"]


def _witness_with(position: str, value: str) -> dict:
    doc = witness.make(gaussian_blocks(0, 2), X0, X0, "finite" if position == "step" else "continuous",
                       [(0, 0.25), (1, -0.5)], 1e-8)
    where = {"blocks": lambda d: d["blocks"][1]["K"][0], "inputs": lambda d: d["inputs"][0][1],
             "targets": lambda d: d["targets"][0][0]}
    if position in where:
        where[position](doc)[1] = value
    elif position == "beta":
        doc["attention"]["beta"] = value
    elif position == "tolerance":
        doc["tolerance"] = value
    else:
        key, field = ("layers", "step") if position == "step" else ("steps", "duration")
        doc[key][0][field] = value
    return doc


@pytest.mark.parametrize("position", ["blocks", "beta", "inputs", "targets", "duration", "step", "tolerance"])
@pytest.mark.parametrize("value", HUGE_EXPONENTS)
def test_exact_decimals_with_huge_exponents_are_refused_before_any_work(position, value):
    """Their float is 0.0 (or they are 400 characters), but the exact conversion builds
    10^exponent: minutes and gigabytes.  Every position a decimal can take refuses them at once,
    naming the field and the limit (issue 65)."""
    import time

    from verify.io.errors import InputError

    text = json.dumps(_witness_with(position, value))
    started = time.perf_counter()
    with pytest.raises(InputError, match=r"beyond the limit of \+-10000"):
        witness.parse(text, "w.json")
    assert time.perf_counter() - started < 5


@pytest.mark.parametrize("args", [
    lambda d: ["check", str(d / "w.json")],
    lambda d: ["rank", "--inputs", str(d / "x.json"), "--seed", "0"],
    lambda d: ["rank", "--inputs", str(d / "ok.json"), "--seed", "0", "--beta", "1e-99999999999"],
    lambda d: ["rank", "--inputs", str(d / "n.json"), "--seed", "0"],
])
def test_the_command_line_refuses_huge_exponents_in_one_line(tmp_path, args):
    (tmp_path / "w.json").write_text(json.dumps(_witness_with("targets", "6e-99999999999")))
    (tmp_path / "x.json").write_text(json.dumps([[["0e999999999", 1.0], [0.5, 2.0]]]))
    (tmp_path / "ok.json").write_text(json.dumps([[[1.0, 0.0], [0.5, 2.0]]]))
    (tmp_path / "n.json").write_text("[[[1.00000000000000000001e-99999999999, 1.0], [0.5, 2.0]]]")  # a JSON number
    r = subprocess.run([sys.executable, "-m", "verify", *args(tmp_path)], capture_output=True, text=True, timeout=60)
    assert one_line(r) and "beyond the limit of +-10000" in r.stderr, r.stderr
