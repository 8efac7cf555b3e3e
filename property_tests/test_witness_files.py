"""Every replayed witness of a report is a file that `verify check` re-checks (issue 67, item 3)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from property_tests import independent
from verify import api
from verify.io import witness
from verify.io.errors import InputError
from verify.model.blocks import gaussian_blocks
from verify.reporting import report
from verify.reporting.results import check
from verify.verdicts import replay


def _witness(seed):
    blocks = gaussian_blocks(seed, 2)
    X = np.random.default_rng(seed).normal(size=(1, 2, 2))
    return witness.make(blocks, X, X, "finite", [(0, 0.0)], 1e-12)  # no step: the image is X, exactly


def _doc(*seeds):
    checks = [check("the witness file maps the inputs within its tolerance [N=1,n=2,d=2]", 0.0, 1e-12, "tolerance",
                    quantity="max |image - target|", certified=True, witness=_witness(s)).as_dict() for s in seeds]
    checks.append(check("a row without a witness [N=1,n=2,d=2]", 0.0, 1.0, "o", quantity="q").as_dict())
    theorem = {"name": "T2", "title": "finite depth", "statement": "s", "latex": "s", "hypotheses": [],
               "profile_settings": {}, "passed": True, "checks": checks}
    return report.theorem_document("quick", 0, [theorem], {}, {})


def test_the_report_writes_each_witness_to_a_file_that_verify_check_certifies(tmp_path):
    doc = _doc(1, 2)
    api.write_report(doc, tmp_path)
    files = sorted(p.name for p in (tmp_path / "witnesses").iterdir())
    assert files == ["T2-N=1-n=2-d=2-2.json", "T2-N=1-n=2-d=2.json"]
    for name, seed in (("T2-N=1-n=2-d=2.json", 1), ("T2-N=1-n=2-d=2-2.json", 2)):
        w = witness.parse((tmp_path / "witnesses" / name).read_text())
        assert replay.certify(w)["verdict"] == "CERTIFIED"
        assert np.array_equal(w.inputs, np.asarray(_witness(seed)["inputs"]))
    written = json.loads((tmp_path / "verification.json").read_text())
    details = [c["details"] for c in written["theorems"][0]["checks"]]
    assert [d["witness_file"] for d in details[:2]] == ["witnesses/T2-N=1-n=2-d=2.json", "witnesses/T2-N=1-n=2-d=2-2.json"]
    described = {k: details[0][k] for k in ("witness_depth", "witness_length", "witness_shape")}
    assert described == {"witness_depth": "finite", "witness_length": 1, "witness_shape": [1, 2, 2]}
    assert "witness_file" not in details[2]
    assert "witness" in doc["theorems"][0]["checks"][0]["details"]  # the caller's document is left as it was
    summary = (tmp_path / "summary.md").read_text()
    row = "| T2 | N=1,n=2,d=2 | 4 | finite | 1 | 0 (certified) | <= 9.99e-13 | not tried | `witnesses/T2-N=1-n=2-d=2.json` |"
    assert row in summary
    assert summary.count("`witnesses/T2-N=1-n=2-d=2-2.json`") == 1
    recheck = summary[summary.index("## How to re-check"):]  # the commands for the first file, and the whole run
    assert all(f"`{cmd} witnesses/T2-N=1-n=2-d=2.json`" in recheck for cmd in ("verify check", "verify-replay"))
    assert "`verify run --profile" in recheck
    tex = (tmp_path / "appendix" / "appendix.tex").read_text()
    assert "file \\texttt{witnesses/\\allowbreak{}T2-\\allowbreak{}N=1-\\allowbreak{}n=2-\\allowbreak{}d=2.json}." in tex


def test_a_control_written_by_the_report_replays_within_its_tolerance_independently(tmp_path):
    blocks = gaussian_blocks(3, 2)
    X = np.random.default_rng(3).normal(size=(2, 2, 2))
    steps = [(0, 0.3), (1, -0.2), (0, 0.25)]
    made = independent.witness([(b.Q, b.K, b.V) for b in blocks], X, "continuous", steps, 1e-9)
    doc = _doc(1)
    doc["theorems"][0]["checks"][0]["details"]["witness"] = made
    api.write_report(doc, tmp_path)
    written = json.loads((tmp_path / "witnesses" / "T2-N=1-n=2-d=2.json").read_text())
    assert written == json.loads(witness.dumps(made))
    assert independent.replay(written, dps=30) <= written["tolerance"]
    assert replay.certify(witness.parse(json.dumps(written)))["verdict"] == "CERTIFIED"


def test_a_witness_file_there_is_replaced_only_when_asked_and_before_anything_is_written(tmp_path):
    (tmp_path / "witnesses").mkdir()
    mine = tmp_path / "witnesses" / "T2-N=1-n=2-d=2.json"
    mine.write_text("a file of mine")
    with pytest.raises(InputError, match="already exists"):
        api.write_report(_doc(1), tmp_path)
    assert mine.read_text() == "a file of mine" and not (tmp_path / "verification.json").exists()
    api.write_report(_doc(1), tmp_path, force=True)
    assert witness.parse(mine.read_text()).depth == "finite"


def test_a_linked_witnesses_folder_is_refused_and_nothing_is_written_through_it(tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    out = tmp_path / "out"
    out.mkdir()
    (out / "witnesses").symlink_to(elsewhere)
    with pytest.raises(InputError, match="symbolic link"):
        api.write_report(_doc(1), out, force=True)
    assert list(elsewhere.iterdir()) == [] and not (out / "verification.json").exists()


def test_a_witness_that_is_not_a_document_is_refused_in_one_line_before_anything_is_written(tmp_path):
    doc = _doc(1)
    doc["theorems"][0]["checks"][0]["details"]["witness"] = "not a witness"
    with pytest.raises(InputError, match="details.witness must be a witness document"):
        api.write_report(doc, tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_the_witnesses_table_shows_the_exact_solution_proved_for_the_same_instance(tmp_path):
    doc = _doc(1)
    checks = doc["theorems"][0]["checks"]
    checks.append(check("Krawczyk: K(B) inside B [N=1,n=2,d=2]", 0.5, 1.0, "Krawczyk", quantity="K reach / r", certified=True,
                        radius=3e-14).as_dict())
    checks.append(check("Krawczyk: K(B) inside B [N=9,n=2,d=2]", 0.5, 1.0, "Krawczyk", quantity="K reach / r", certified=True,
                        radius=7e-14).as_dict())  # another instance's proof does not count
    api.write_report(doc, tmp_path)
    failed = _doc(1)
    failed["theorems"][0]["checks"].append(check("Krawczyk: K(B) inside B [N=1,n=2,d=2]", np.inf, 1.0, "Krawczyk",
                                                 quantity="K reach / r", radius=None).as_dict())
    api.write_report(failed, tmp_path / "failed")
    assert "| not proved | `witnesses/T2-N=1-n=2-d=2.json` |" in (tmp_path / "failed" / "summary.md").read_text()
    row = [x for x in (tmp_path / "summary.md").read_text().splitlines()
           if x.startswith("| ") and "witnesses/T2-N=1-n=2-d=2.json" in x]  # the table's rows, not the re-check commands
    cells = [x.strip() for x in row[0].split("|")]
    assert len(row) == 1 and cells[8] == "proved, radius 3e-14", cells
