"""The Python API is as strict as the command line: one validation path (:mod:`verify.io.validate`),
one documented exception (:class:`verify.InputError`), the same one-line messages, before any work.

The mistakes of issue 65 (a 2-D X, blocks of d = 3 on d = 2 data, NaN targets) gave a NumPy
unpacking error, a matmul error and ``LinAlgError: SVD did not converge``; others of their
kinds are here too."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest

import verify

B2, B3 = verify.gaussian_blocks(0, 2), verify.gaussian_blocks(0, 3)
X = np.random.default_rng(0).normal(size=(1, 2, 2))
NAN = X.copy()
NAN[0, 0, 0] = np.nan

MISTAKES = {
    "a 2-D X": (lambda: verify.rank(B2, X[0]), "inputs: expected an array of shape (N, n, d), got shape (2, 2)"),
    "blocks of d = 3 on d = 2 data": (lambda: verify.rank(B3, X), "blocks are 3 x 3 but the tokens have dimension d = 2"),
    "NaN targets": (lambda: verify.interpolate(B2, X, NAN, verify.Settings(time_budget=5)),
                    "targets: entry (0, 0, 0) is nan; every entry must be a finite number"),
    "targets of another shape": (lambda: verify.interpolate(B2, X, X[:, :1]), "targets have shape (1, 1, 2) but inputs"),
    "infinite inputs": (lambda: verify.apply_control(B2, [(0, 0.1)], X * np.inf), "inputs: entry (0, 0, 0) is inf"),
    "complex inputs": (lambda: verify.rank(B2, X + 1j), "inputs: complex entries"),
    "a word among the numbers": (lambda: verify.rank(B2, np.array([[["abc", "1"], ["1", "2"]]], dtype=object)),
                                 "'abc' is not a decimal number"),
    "a decimal with a huge exponent": (lambda: verify.rank(B2, np.array([[["6e-99999999999", 1.0], [1.0, 2.0]]],
                                                                        dtype=object)), "beyond the limit of +-10000"),
    "one block": (lambda: verify.rank(B2[:1], X), "expected exactly two blocks, got 1"),
    "not blocks": (lambda: verify.rank([1, 2], X), "each must have Q, K, V and beta"),
    "an unknown block index": (lambda: verify.apply_control(B2, [(2, 0.1)], X), "unknown block index 2"),
    "an unknown depth": (lambda: verify.apply_control(B2, [(0, 0.1)], X, depth="deep"), "depth 'deep'"),
    "digits out of range": (lambda: verify.rank(B2, X, dps=0), "dps must be a whole number of digits from 1 to 200"),
    "a negative budget": (lambda: verify.check(verify.witness(B2, X, X, _solution()), budget=-1),
                          "budget must be a positive number of seconds"),
    "a path instead of a witness": (lambda: verify.check("w.json"), "check: expected a witness"),
    "a witness without fields": (lambda: verify.check({"schema": "x"}), "missing field(s)"),
    "a fractional dimension": (lambda: verify.gaussian_blocks(0, 2.5), "token dimension d must be a whole number"),
    "a NaN beta": (lambda: verify.gaussian_blocks(0, 2, beta=math.nan), "beta must be a finite number"),
    "an unknown profile": (lambda: verify.run_theorems("huge", 0), "profile 'huge': choose one of quick"),
    "an unknown theorem": (lambda: verify.run_theorems("quick", 0, theorems=["T9"]), "theorem 'T9': choose from"),
    "inadmissible targets": (lambda: verify.interpolate(B2, np.array([[[1.0, 2.0], [1.0, 2.0]]]), X),
                             "tokens 0 and 1 coincide in the inputs only"),
    "a negative tolerance": (lambda: verify.interpolate(B2, X, 1.01 * X, verify.Settings(tolerance=-1)),
                             "the tolerance must be a positive number"),
    "a report that is not one": (lambda: verify.write_report({}, "/nonexistent/out"), "lacks the field 'schema'"),
    "a witness of no solution": (lambda: verify.witness(B2, X, X, None), "solution: expected what verify.interpolate"),
    "a witness document with no fields": (lambda: verify.save_witness({"a": 1}, "/nonexistent/w.json"), "missing field(s)"),
    "settings as a dict": (lambda: verify.interpolate(B2, X, X, settings={"tolerance": 1}), "expected verify.Settings"),
    "a degree as text": (lambda: verify.rank(B2, X, max_degree="3"), "a max degree of '3': give one from 1 to 14"),
    "a duration as a word": (lambda: verify.apply_control(B2, [(0, "abc")], X), "'abc' is not a decimal number"),
    "causal as text": (lambda: verify.gaussian_blocks(0, 2, causal="yes"), "causal must be True or False"),
}


def _solution():
    return verify.interpolate(B2, X, verify.apply_control(B2, [(0, 0.2), (1, -0.1)], X), verify.Settings(time_budget=20))


@pytest.mark.parametrize("name", list(MISTAKES))
def test_every_api_mistake_raises_the_documented_exception_with_one_line(name):
    call, message = MISTAKES[name]
    with pytest.raises(verify.InputError) as caught:
        call()
    assert message in str(caught.value) and "\n" not in str(caught.value)
    assert isinstance(caught.value, ValueError)  # InputError is a ValueError, as documented


@pytest.mark.parametrize("mistake, files, args", [
    ("a 2-D X", {"x.npy": X[0]}, ["rank", "--inputs", "x.npy", "--seed", "0"]),
    ("NaN targets", {"x.npy": X, "y.npy": NAN}, ["interpolate", "--inputs", "x.npy", "--targets", "y.npy", "--seed", "0"]),
])
def test_the_api_says_what_the_command_line_says(tmp_path, mistake, files, args):
    """The same check on both paths: the message after the name of the offending input (a file
    on the command line, the parameter's role in the API) is the same text."""
    for name, array in files.items():
        np.save(tmp_path / name, array)
    r = subprocess.run([sys.executable, "-m", "verify", *args], cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    with pytest.raises(verify.InputError) as caught:
        MISTAKES[mistake][0]()
    assert r.stderr.strip().split(": ", 1)[1].endswith(str(caught.value).split(": ", 1)[1]), (r.stderr, caught.value)


def test_blocks_of_another_dimension_are_refused_alike(tmp_path):
    (tmp_path / "b.json").write_text(json.dumps({"blocks": [{m: getattr(b, m).tolist() for m in "QKV"} for b in B3]}))
    np.save(tmp_path / "x.npy", X)
    r = subprocess.run([sys.executable, "-m", "verify", "rank", "--inputs", "x.npy", "--blocks", "b.json"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 2 and MISTAKES["blocks of d = 3 on d = 2 data"][1] in r.stderr


def test_dir_and_help_list_the_lazily_loaded_api():
    import pydoc

    import verify

    assert {"check", "rank", "interpolate", "write_report", "gaussian_blocks"} <= set(dir(verify))
    text = pydoc.render_doc(verify, renderer=pydoc.plaintext)
    assert all(f"{name}(" in text for name in ("check", "rank", "interpolate"))


def test_long_calls_print_progress_to_stderr_only_when_asked_and_results_print_briefly(capsys):
    import verify

    blocks = verify.gaussian_blocks(0, 2)
    X = np.array([[[1.0, 0.0], [0.0, 1.0]], [[0.5, -1.0], [2.0, 0.3]]])
    quiet = verify.rank(blocks, X)
    assert capsys.readouterr() == ("", "")  # the default says nothing
    lines = []
    verify.rank(blocks, X, progress=lines.append)
    told = verify.rank(blocks, X, progress=True)
    out, err = capsys.readouterr()
    assert out == "" and lines and err.splitlines() == lines  # True prints what a callback receives, to stderr
    assert told.verdict == quiet.verdict == "CERTIFIED"
    shown = repr(told)  # the verdict and its numbers, not the bracket matrix behind them
    assert shown.startswith("RankAnalysis(verdict='CERTIFIED'") and "matrix" not in shown and len(shown) < 600
    with pytest.raises(verify.InputError, match="progress: expected a function"):
        verify.rank(blocks, X, progress="yes")
