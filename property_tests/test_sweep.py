"""Sweeps (verify.sweep): the scheduler changes where units run, never what they return; a
lost worker or a unit over its time is retried once and then recorded; a resumed sweep
recomputes nothing that finished; a damaged journal is refused in one line."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from theorems import genericity, reach, registry
from verify import api
from verify.io.errors import InputError
from verify.reporting.summary import journal_line
from verify.sweep import runner
from verify.sweep.journal import Journal
from verify.sweep.runner import SweepOptions
from verify.sweep.unit import Unit

TINY = {"sizes": (4, 8), "instances": 2, "starts": 1, "depths": ("finite",)}  # a few seconds of work
HERE = __name__


# Units for the tests below: top-level functions, so that worker processes can import them.
def logged_square(log: str, x: int) -> int:
    with open(log, "a") as f:
        f.write(f"{x}\n")
    return x * x


def dies_once(marker: str, x: int) -> int:
    """Kills its worker process the first time (``marker`` absent), returns x the second."""
    if not os.path.exists(marker):
        Path(marker).touch()
        os._exit(1)
    return x


def dies_always() -> None:
    os._exit(1)


def sleeps(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


def raises() -> None:
    raise RuntimeError("a unit's own error")


def test_two_local_workers_give_the_rows_computed_in_process():
    here, _ = reach.measure(TINY, 3, options=SweepOptions(scheduler="none"))
    there, _ = reach.measure(TINY, 3, options=SweepOptions(scheduler="local", workers=2))
    assert json.dumps(there) == json.dumps(here)
    assert [r["failed_units"] for r in here] == [[], []] and any(r["success_rate"] > 0 for r in here)


def test_lost_workers_and_late_units_are_retried_once_then_recorded(tmp_path):
    marker = str(tmp_path / "died")
    units = ([Unit(task=f"{HERE}:logged_square", params={"log": str(tmp_path / "log"), "x": x}) for x in range(4)]
             + [Unit(task=f"{HERE}:dies_once", params={"marker": marker, "x": 7}), Unit(task=f"{HERE}:dies_always"),
                Unit(task=f"{HERE}:raises"), Unit(task=f"{HERE}:sleeps", params={"seconds": 60.0})])
    sweep = runner.run(units, SweepOptions(scheduler="local", workers=2, timeout=3.0))
    assert sweep.results() == [0, 1, 4, 9, 7, None, None, None]
    assert [r.attempts for r in sweep.records] == [1, 1, 1, 1, 2, 2, 2, 2]
    assert sweep.failed() == [5, 6, 7]
    errors = [sweep.records[i].error for i in sweep.failed()]
    assert errors[0].startswith("KilledWorker") and errors[1] == "RuntimeError: a unit's own error"
    assert errors[2] == "timed out after 3 s"
    summary = sweep.summary()
    assert sum(summary["ran"].values()) == 5 and all(w.startswith("tcp://") for w in summary["ran"])
    assert summary["retried"] == 4 and [f["unit"] for f in summary["failed"]] == [5, 6, 7]


def test_in_process_failures_are_retried_once_too():
    sweep = runner.run([Unit(task=f"{HERE}:raises"), Unit(task="statistics:fmean", params={"data": [1, 2, 6]})],
                       SweepOptions(scheduler="none"))
    assert sweep.results() == [None, 3.0] and [r.attempts for r in sweep.records] == [2, 1]


def test_a_resumed_sweep_recomputes_nothing_that_finished(tmp_path):
    log, journal = tmp_path / "log", tmp_path / "journal.jsonl"
    units = [Unit(task=f"{HERE}:logged_square", params={"log": str(log), "x": x}) for x in range(5)]
    options = SweepOptions(scheduler="none", journal=journal, resume=True)
    runner.run(units[:2], options)  # an interrupted sweep: two units finished
    journal.write_bytes(journal.read_bytes() + b'{"key": "cut sh')  # and a third cut short by the kill
    sweep = runner.run(units, options)
    assert log.read_text().split() == ["0", "1", "2", "3", "4"]  # each unit computed once
    assert sweep.results() == [0, 1, 4, 9, 16] and [r.where for r in sweep.records[:2]] == ["journal"] * 2
    again = runner.run(units, options)
    assert log.read_text().split() == ["0", "1", "2", "3", "4"] and again.results() == sweep.results()
    assert again.summary()["ran"] == {"journal": 5} and again.summary()["seconds"] == 0
    fresh = runner.run(units, SweepOptions(scheduler="none", journal=journal))  # without resume: computed again
    assert len(log.read_text().split()) == 10 and fresh.results() == sweep.results()
    # a record under a unit's key but with other parameters is not taken: the unit is computed again
    forged = json.loads(journal.read_text().splitlines()[-1])
    forged |= {"params": {"log": str(log), "x": 99}, "result": -1}
    journal.write_text(journal.read_text() + json.dumps(forged) + "\n")
    again = runner.run(units, options)
    assert again.results() == sweep.results() and again.records[-1].where == "in-process"


def test_a_theorem_whose_unit_failed_fails_the_report_and_says_why():
    t = registry.failed("causal", "quick", "KilledWorker: the worker died twice")
    assert t["name"] == "causal" and not t["passed"] and len(t["checks"]) == 1
    assert "KilledWorker: the worker died twice" in t["checks"][0]["origin"] and not t["checks"][0]["passed"]


def test_a_unit_key_changes_with_its_parameters_and_the_code():
    u = Unit(task="statistics:fmean", params={"data": [1, 2, 6]})
    assert u.key("a") != Unit(task="statistics:fmean", params={"data": [1, 2, 7]}).key("a") and u.key("a") != u.key("b")


def test_a_damaged_journal_is_refused_in_one_line(tmp_path):
    bad = tmp_path / "journal.jsonl"
    bad.write_text('{"not": "a record"}\n{}\n')
    with pytest.raises(InputError, match="line 1 is not a journal record"):
        Journal(bad).finished()
    link = tmp_path / "link.jsonl"
    link.symlink_to(tmp_path / "elsewhere.jsonl")
    with pytest.raises(InputError, match="symbolic link"):
        Journal(link)
    out = tmp_path / "out"
    out.mkdir()
    (out / "journal.jsonl").write_text("[1, 2]\n\n")
    p = subprocess.run([sys.executable, "-m", "verify", "run", "--theorem", "causal", "--scheduler", "none",
                        "--resume", "--out", str(out)], capture_output=True, text=True)
    assert p.returncode == 2 and "is not a journal record" in p.stderr and p.stderr.count("\n") == 1
    assert not (out / "verification.json").exists()


@pytest.mark.parametrize("flags, message", [(["--scheduler", "ftp://x:1"], "expected none, local or tcp://HOST:PORT"),
                                            (["--scheduler", "none", "--workers", "2"], "--workers 2 needs --scheduler local"),
                                            (["--workers", "0"], "from 1 to 10^9"),
                                            (["--workers", "100000"], "more than 4 per core")])
def test_verify_run_refuses_bad_sweep_flags(tmp_path, flags, message):
    p = subprocess.run([sys.executable, "-m", "verify", "run", *flags, "--out", str(tmp_path)],
                       capture_output=True, text=True)
    assert p.returncode == 2 and message in p.stderr and p.stderr.count("\n") == 1 and "Traceback" not in p.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_scheduler_and_a_worker_over_tcp_give_the_rows_computed_in_process(tmp_path):
    """The two-machine set-up on one machine: `dask scheduler` and `dask worker` as two processes."""
    address = f"tcp://127.0.0.1:{_free_port()}"
    env = os.environ | {"PYTHONPATH": os.pathsep.join([str(Path(__file__).parents[1]), os.environ.get("PYTHONPATH", "")])}
    dask = [sys.executable, "-m", "dask"]
    scheduler = subprocess.Popen([*dask, "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                                  "--no-dashboard"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    worker = subprocess.Popen([*dask, "worker", address, "--nthreads", "1", "--nworkers", "1", "--no-dashboard"],
                              env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        there, _ = reach.measure(TINY, 3, options=SweepOptions(scheduler=address))
        here, _ = reach.measure(TINY, 3, options=SweepOptions(scheduler="none"))
        assert json.dumps(there) == json.dumps(here)
    finally:
        for p in (worker, scheduler):
            p.terminate()
            p.wait(timeout=30)


def test_resumed_genericity_draws_are_counted_and_said(tmp_path):
    journal = tmp_path / "journal.jsonl"
    first = api.run_theorems("quick", 4, reach=False, options=SweepOptions(scheduler="none", journal=journal))
    again = api.run_theorems("quick", 4, reach=False, options=SweepOptions(scheduler="none", journal=journal, resume=True))
    draws = len(genericity.units("quick", 4))
    assert first["resumed"]["units"] == {"genericity": 0} and again["resumed"]["units"] == {"genericity": draws}
    assert [t for t in again["theorems"] if t["name"] == "genericity"][0]["checks"] == \
        [t for t in first["theorems"] if t["name"] == "genericity"][0]["checks"]
    assert f"{draws} units of genericity" in journal_line(again) and "none was taken" in journal_line(first)
