"""The certificates table's witness files (issue 66): one per row, re-checked as a referee would."""

from __future__ import annotations

import json

import numpy as np
import pytest

from property_tests.certificates_table import CASES, WITNESSES, _origin, targets, witness_file
from verify.io.witness import parse


def test_every_row_of_the_table_has_its_witness_file_and_nothing_else_is_there():
    assert sorted(p.stem for p in WITNESSES.glob("*.json")) == sorted(["t1", *CASES])
    for name in ["t1", *CASES]:
        w = parse((WITNESSES / f"{name}.json").read_text())
        _, shape, depth = _origin(name)
        assert w.depth == depth and w.inputs.shape == tuple(shape)


@pytest.mark.parametrize("name, origin", [("c18a", "the hidden control itself"), ("f18", "independent"),
                                          ("t1", "hidden-control targets")])
def test_a_rows_targets_are_read_off_its_witness(name, origin):
    w = parse((WITNESSES / f"{name}.json").read_text())
    assert targets(name, w) == origin


def test_targets_moved_by_one_ulp_are_of_unknown_origin():
    doc = json.loads((WITNESSES / "c18a.json").read_text())
    doc["targets"][0][0][0] = float(np.nextafter(doc["targets"][0][0][0], np.inf))
    doc["steps"][0]["duration"] = float(np.nextafter(doc["steps"][0]["duration"], np.inf))
    assert targets("c18a", parse(json.dumps(doc))) == "targets of unknown origin"


def test_the_table_copies_its_witness_but_keeps_a_file_that_is_there(tmp_path):
    made = witness_file("c18a", tmp_path)
    assert made.read_bytes() == (WITNESSES / "c18a.json").read_bytes()
    mine = tmp_path / "c18b.json"
    mine.write_text("a user's own file")
    assert witness_file("c18b", tmp_path) == mine and mine.read_text() == "a user's own file"
