"""Witness files: round trip, replay of independently made witnesses, refusals."""

from __future__ import annotations

import copy
import dataclasses
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from property_tests.conftest import examples
from verify.io import witness
from verify.io.errors import InputError
from verify.model.backend import precision
from verify.model.blocks import gaussian_blocks
from verify.model.flow import flow
from verify.verdicts import replay

from . import independent
from .strategies import problems


def independent_doc(depth, causal, seed=0, N=2, n=3, d=2, tolerance=1e-8):
    rng = np.random.default_rng([seed, int(causal)])
    mats = [tuple(rng.normal(0, 1 / np.sqrt(d), size=(d, d)) for _ in range(3)) for _ in range(2)]
    X = rng.normal(size=(N, n, d))
    steps = [(k % 2, float(rng.uniform(-0.8, 0.8))) for k in range(5)]
    if depth == "finite":
        steps = [(b, t / 4) for b, t in steps for _ in range(4)]
    return independent.witness(mats, X, depth, steps, tolerance, beta=1.0, causal=causal)


@pytest.mark.parametrize("depth", ["continuous", "finite"])
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_independent_witnesses_are_accepted_and_moved_targets_rejected(depth, causal, seed):
    doc = independent_doc(depth, causal, seed)
    verdict = replay.replay(witness.parse(json.dumps(doc)))
    assert verdict["passed"], verdict
    moved = copy.deepcopy(doc)
    moved["targets"][0][0][0] += 1e-4
    assert not replay.replay(witness.parse(json.dumps(moved)))["passed"]


@pytest.mark.parametrize("depth", ["continuous", "finite"])
def test_high_precision_replay_of_independent_witness(depth):
    doc = independent_doc(depth, causal=False, seed=4)
    verdict = replay.replay(witness.parse(json.dumps(doc)), dps=25)
    assert verdict["passed"] and verdict["precision"] == "25 digits"


@settings(max_examples=examples(10, "each example round-trips a witness through JSON and replays it"))
@given(problems(max_N=2, max_n=3, max_d=2), st.sampled_from(["continuous", "finite"]))
def test_round_trip(p, depth):
    blocks, X, control = p
    Y = flow(blocks, control, X).end if depth == "continuous" else X
    steps = control if depth == "continuous" else [(0, 0.0)]
    doc = witness.make(blocks, X, Y, depth, steps, 1e-9, provenance={"test": True})
    w = witness.parse(witness.dumps(doc))
    arrays = w.array_at("inputs"), w.array_at("targets")
    again = witness.make(w.blocks_at(), *arrays, w.depth, w.steps_at(), w.tolerance, **w.extra)
    assert again == doc
    assert replay.replay(w)["passed"]


def test_decimal_strings_carry_more_than_float64():
    blocks = gaussian_blocks(0, 2)
    X = np.random.default_rng(0).normal(size=(1, 2, 2))
    control = [(0, 0.5), (1, -0.25)]
    with precision(40):
        Y = flow(blocks, control, X, dps=40).end
        doc = witness.make(blocks, X, Y, "continuous", control, 1e-30)
    assert isinstance(doc["targets"][0][0][0], str) and len(doc["targets"][0][0][0]) > 30
    w = witness.parse(witness.dumps(doc))
    assert replay.replay(w, dps=40)["passed"]
    assert not replay.replay(w)["passed"]  # float64 cannot reach 1e-30


def test_save_refuses_to_overwrite(tmp_path):
    doc = independent_doc("finite", False)
    p = tmp_path / "w.json"
    witness.save(doc, p)
    before = p.read_text()
    with pytest.raises(InputError, match="already exists"):
        witness.save(doc, p)
    assert p.read_text() == before


def _mutations():
    def drop(k):
        return lambda d: d.pop(k)

    def setter(path, value):
        def f(d):
            node = d
            for k in path[:-1]:
                node = node[k]
            node[path[-1]] = value
        return f

    return [
        (drop("schema"), "missing field"),
        (drop("steps"), "'steps' is missing"),
        (setter(["schema"], "other/2"), "schema is"),
        (setter(["depth"], "infinite"), "depth is"),
        (setter(["inputs", 0, 0, 0], float("nan")), "not a number JSON allows"),
        (setter(["inputs", 0, 0, 0], "1e999"), "beyond float64's range"),
        (setter(["inputs", 0, 0, 0], "1_0"), "not a decimal number"),
        (setter(["inputs", 0, 0, 0], "\u0661.5"), "not a decimal number"),
        (setter(["tolerance"], 10**320), "beyond float64.s range"),
        (setter(["tolerance"], 1e300), "not small against the targets"),
        (setter(["tolerence"], 1e300), "unknown field"),
        (setter(["steps", 0, "durations"], 1.0), "exactly the fields"),
        (setter(["attention", "betta"], 2.0), "attention"),
        (setter(["precision"], "\u0663\u0660 digits"), "expected 'float64' or 'N digits'"),
        (setter(["inputs", 0, 0, 0], "abc"), "not a decimal number"),
        (setter(["inputs", 0, 0, 0], True), "expected a number"),
        (setter(["inputs", 0, 1], [1.0]), "ragged"),
        (setter(["inputs"], [[1.0, 2.0]]), "nested lists"),
        (setter(["targets"], [[[0.0, 0.0]]]), "targets have shape"),
        (setter(["blocks"], []), "exactly two"),
        (setter(["blocks", 0, "Q"], [[1.0]]), "expected a 2 x 2 matrix"),
        (setter(["blocks", 1], {"Q": [[1.0]]}), "fields Q, K, V"),
        (setter(["steps", 0, "block"], 3), "unknown block index 3"),
        (setter(["steps", 0], {"block": 0}), "'duration'"),
        (setter(["tolerance"], -1.0), "non-negative"),
        (setter(["attention"], {"causal": "yes"}), "boolean"),
    ]


@pytest.mark.parametrize("mutate, message", _mutations())
def test_malformed_witnesses_are_refused(mutate, message):
    doc = independent_doc("continuous", False)
    mutate(doc)
    with pytest.raises(InputError, match=message):
        witness.parse(json.dumps(doc))


def test_non_json_and_missing_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InputError, match="not valid JSON"):
        witness.load(bad)
    with pytest.raises(InputError, match="no such file"):
        witness.load(tmp_path / "absent.json")
    with pytest.raises(InputError, match="JSON object"):
        witness.parse("[1, 2]")


@pytest.mark.parametrize("depth", ["continuous", "finite"])
@pytest.mark.parametrize("causal", [False, True])
def test_certified_replay_of_independent_witnesses(depth, causal):
    """check --certify (Arb balls): the independent implementation's witnesses are CERTIFIED,
    and a target moved by 1e-4 (far outside the enclosure) is a FAIL, never certified."""
    doc = independent_doc(depth, causal, seed=2)
    cert = replay.certify(witness.parse(json.dumps(doc)))
    assert cert["verdict"] == "CERTIFIED" and cert["error_upper"] <= doc["tolerance"], cert
    assert cert["width"] < 1e-3 * doc["tolerance"]  # each step's remainder is its share of 1e-6 tol, then wraps
    moved = copy.deepcopy(doc)
    moved["targets"][1][2][0] += 1e-4
    assert replay.certify(witness.parse(json.dumps(moved)))["verdict"] == "FAIL"


def test_the_false_pass_witness_is_never_certified():
    from pathlib import Path

    w = witness.load(Path(__file__).parent / "data" / "false_pass_witness.json")
    import time
    assert replay.certify(w, deadline=time.perf_counter() + 20)["verdict"] in ("FAIL", "UNDECIDED")


@settings(max_examples=examples(6, "each example certifies a witness in Arb (seconds)"), deadline=None)
@given(seed=st.integers(0, 2**16), depth=st.sampled_from(["continuous", "finite"]), causal=st.booleans())
def test_the_enclosure_contains_the_exact_image(seed, depth, causal):
    """Every ball of verify.verdicts.enclosure contains the 50-digit image (a first version let the
    durations' float64 remainders drift by 1e-17 while the balls were 1e-23 wide; the
    certificate tests, with tolerances of 1e-8, could not see it)."""
    import flint

    from verify.model.network import apply
    from verify.verdicts import enclosure

    rng = np.random.default_rng(seed)
    blocks = tuple(dataclasses.replace(b, causal=causal) for b in gaussian_blocks(seed, 2))
    X = rng.normal(size=(1, 3, 2))
    steps = [(k % 2, float(rng.uniform(-0.7, 0.7))) for k in range(3)]
    if depth == "continuous":
        ball, exact = enclosure.enclose_flow(blocks, steps, X), flow(blocks, steps, X, dps=50).end
    else:
        ball, exact = enclosure.enclose_network(blocks, steps, X), apply(blocks, steps, X, dps=50).end
    with precision(50):
        assert all(b.contains(flint.arb(str(y))) for b, y in zip(ball.end.ravel(), exact.ravel(), strict=True))
    assert ball.width < 1e-15


@settings(max_examples=examples(3, "each example certifies a witness in Arb (seconds)"), deadline=None)
@given(seed=st.integers(0, 2**16), causal=st.booleans(), scale=st.sampled_from([1.0, 3.0]))
def test_the_flow_enclosure_contains_the_image_on_harder_draws(seed, causal, scale):
    """The mean-value step on two sequences (block-diagonal Jacobians), states up to |x| ~ 10
    and durations up to 1, with a tolerance so that the remainders take their share of it:
    every ball still contains the 50-digit image, and the width stays below the tolerance."""
    import flint

    from verify.verdicts import enclosure

    rng = np.random.default_rng(seed)
    blocks = tuple(dataclasses.replace(b, causal=causal) for b in gaussian_blocks(seed, 2))
    X = scale * rng.normal(size=(2, 2, 2))
    steps = [(k % 2, float(rng.uniform(-1.0, 1.0)) / scale) for k in range(4)]
    ball, exact = enclosure.enclose_flow(blocks, steps, X, tolerance=1e-8), flow(blocks, steps, X, dps=50).end
    with precision(50):
        assert all(b.contains(flint.arb(str(y))) for b, y in zip(ball.end.ravel(), exact.ravel(), strict=True))
    assert ball.width < 1e-8
