"""Running a sweep's units in-process, on a local Dask cluster, or on an existing one.

:func:`run` computes every unit of a list (:class:`verify.sweep.unit.Unit`) and returns their
records in the order given (:class:`verify.sweep.records.Sweep`).  The scheduler decides only
where units run, never what they return: a unit's result is a pure function of its task,
parameters and the code, passed through the same JSON encoding everywhere.

* ``"none"``: one after the other in this process.
* ``"local"``: a ``distributed.LocalCluster`` of ``workers`` single-threaded worker processes
  (default one per core this process may use), one BLAS thread each, started and closed here.
* ``"tcp://HOST:PORT"``: the Dask scheduler already listening there, with whatever workers have
  joined it (``dask scheduler`` on one machine, ``dask worker tcp://HOST:PORT --nthreads 1`` on
  each of the others; every machine needs this project installed).

Failures: a unit that raises, whose worker dies, or (cluster schedulers) that runs longer than
``timeout`` seconds is tried again ``retries`` times (once by default), then recorded as
failed with the last error; it is never dropped.  On the local cluster the scheduler's own
retries are switched off (``allowed-failures`` 0) so that the count is this module's; an
existing cluster applies its own setting first.  At most as many units are in flight as the
cluster has threads, and a unit's clock starts when the scheduler first reports it on a
worker (checked every POLL_SECONDS), so the seconds a restarted worker takes to come back do
not count; a unit over its time has its worker process ended (its nanny starts a fresh one; a
worker without one is lost).  In-process units cannot be stopped, so ``timeout`` needs a cluster.

Journal (:mod:`verify.sweep.journal`): every record is appended as its unit ends; with
``resume`` the units whose key has a finished record are taken from it, not computed.

>>> from verify.sweep.unit import Unit
>>> s = run([Unit(task="statistics:fmean", params={"data": [1, 2, 6]})], SweepOptions(scheduler="none"))
>>> s.results(), s.records[0].where
([3.0], 'in-process')
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verify.io.errors import InputError
from verify.sweep.journal import Journal
from verify.sweep.records import JOURNAL, Sweep, UnitRecord
from verify.sweep.unit import Unit, code_version

IN_PROCESS = "in-process"
ADDRESS = re.compile(r"tcp://[A-Za-z0-9.\-]+:[0-9]{1,5}|tcp://\[[0-9A-Fa-f:]+\]:[0-9]{1,5}")
CONNECT_SECONDS = 10  # waiting for an existing scheduler to answer
POLL_SECONDS = 1.0  # how often in-flight units are checked against their timeout
MAX_WORKERS_PER_CORE = 4  # a local cluster larger than this only makes the units compete (and can exhaust memory)
SINGLE_THREADED = {"OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}


@dataclass(frozen=True, kw_only=True)
class SweepOptions:
    """Where and how a sweep runs.  The main option is ``scheduler`` ("none", "local" or
    "tcp://HOST:PORT"); the others: ``workers`` (local cluster only; None: one per core),
    ``journal`` (a file to append records to; None: no journal), ``resume`` (take finished
    units from the journal), ``check`` (called as ``check(unit, result)`` on every result taken
    from the journal, before any unit runs: it returns the result as it is to be used, or raises
    :class:`~verify.io.errors.InputError`; a journal is read like any other input),
    ``retries`` per unit, ``timeout`` seconds per attempt (None: no limit; cluster schedulers
    only)."""

    scheduler: str = "local"
    workers: int | None = None
    journal: str | Path | None = None
    resume: bool = False
    check: Callable[[Unit, Any], Any] | None = None
    retries: int = 1
    timeout: float | None = None

    def __post_init__(self):
        check_scheduler(self.scheduler)
        if self.workers is not None and (self.scheduler != "local" or self.workers < 1):
            raise InputError(f"workers={self.workers} needs scheduler 'local' and a count >= 1; an existing cluster "
                             "has the workers that joined it, and 'none' runs in this process")
        if self.workers is not None and self.workers > MAX_WORKERS_PER_CORE * default_workers():
            raise InputError(f"workers={self.workers} is more than {MAX_WORKERS_PER_CORE} per core on this machine "
                             f"({default_workers()} cores); more processes only compete for them")
        if self.resume and self.journal is None:
            raise InputError("resume needs a journal to resume from")
        if self.retries < 0 or (self.timeout is not None and not self.timeout > 0):
            raise InputError(f"retries must be >= 0 and timeout > 0 seconds, got {self.retries} and {self.timeout}")
        if self.timeout is not None and self.scheduler == "none":
            raise InputError("a timeout needs a cluster scheduler ('local' or tcp://HOST:PORT): in-process units "
                             "cannot be stopped")


def check_scheduler(text: str) -> str:
    """'none', 'local' or a TCP address 'tcp://HOST:PORT'."""
    if text in ("none", "local") or ADDRESS.fullmatch(text):
        return text
    raise InputError(f"scheduler {text[:80]!r}: give 'none' (in-process), 'local' (a cluster on this machine) or "
                     "the address of a running Dask scheduler, tcp://HOST:PORT")


def default_workers() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def run(units: Sequence[Unit], options: SweepOptions, progress: Callable[[str], None] | None = None) -> Sweep:
    """Every unit's record, in order; see the module's description."""
    journal = Journal(options.journal) if options.journal is not None else None
    versions = {u.task: code_version(u.task.partition(":")[0]) for u in units}
    keys = [u.key(versions[u.task]) for u in units]
    finished = journal.finished() if (journal and options.resume) else {}
    records: list[UnitRecord | None] = [None] * len(units)
    for i, (u, k) in enumerate(zip(units, keys, strict=True)):
        rec = finished.get(k)
        if rec is not None and (rec.task, rec.params, rec.version) == (u.task, u.params, versions[u.task]):
            result = options.check(u, rec.result) if options.check else rec.result
            records[i] = UnitRecord(**(rec.as_dict() | {"where": JOURNAL, "result": result}))  # others' keys: ignored
    pending = [i for i, r in enumerate(records) if r is None]
    meter = _Meter([u.weight for u in units], pending, progress)

    def record(i: int, outcome: dict[str, Any], attempts: int) -> None:
        u = units[i]
        records[i] = UnitRecord(key=keys[i], task=u.task, params=u.params, version=versions[u.task], attempts=attempts,
                                **outcome)
        if journal:
            journal.append(records[i])
        meter.tick(i)

    if options.scheduler == "none":
        for i in pending:
            for attempt in range(1, options.retries + 2):
                outcome = _attempt(units[i])
                if outcome["status"] == "done" or attempt > options.retries:
                    record(i, outcome, attempt)
                    break
    elif pending:
        with _client(options) as client:
            _on_cluster(client, units, pending, options, record)
    return Sweep(scheduler=options.scheduler, records=list(records))


def _attempt(unit: Unit) -> dict[str, Any]:
    t0 = time.perf_counter()
    try:
        return {"status": "done", "result": unit.call(), "where": IN_PROCESS, "seconds": round(time.perf_counter() - t0, 3)}
    except Exception as exc:  # a unit's failure is recorded, not raised: the sweep goes on
        return {"status": "failed", "error": _describe(exc), "where": IN_PROCESS,
                "seconds": round(time.perf_counter() - t0, 3)}


def execute(task: str, params: dict[str, Any]) -> dict[str, Any]:
    """What a worker runs: the unit, where it ran and its seconds (an exception propagates)."""
    from distributed import get_worker

    t0 = time.perf_counter()
    result = Unit(task=task, params=params).call()
    return {"result": result, "where": get_worker().address, "seconds": round(time.perf_counter() - t0, 3)}


@contextlib.contextmanager
def _client(options: SweepOptions) -> Iterator[Any]:
    """A Dask client on a fresh local cluster or the existing scheduler (closed afterwards)."""
    import dask
    from distributed import Client, LocalCluster

    if options.scheduler == "local":
        config = {"distributed.scheduler.allowed-failures": 0, "distributed.nanny.pre-spawn-environ": SINGLE_THREADED}
        with dask.config.set(config), LocalCluster(n_workers=options.workers or default_workers(), threads_per_worker=1,
                                                   processes=True, dashboard_address=None,
                                                   # its HTTP server (health, metrics) on a free port: on 8787 a
                                                   # second run at once warned "Port 8787 is already in use"
                                                   scheduler_kwargs={"dashboard_address": ":0"},
                                                   silence_logs=logging.CRITICAL) as cluster, Client(cluster) as client:
            yield client
        return
    try:
        client = Client(options.scheduler, timeout=CONNECT_SECONDS)
    except (OSError, TimeoutError) as exc:
        raise InputError(f"cannot reach the Dask scheduler at {options.scheduler} ({str(exc)[:80]}); start it with "
                         "`dask scheduler`, or choose scheduler 'local' (this machine)") from None
    with client:
        yield client


def _on_cluster(client: Any, units: Sequence[Unit], pending: list[int], options: SweepOptions,
                record: Callable[[int, dict[str, Any], int], None]) -> None:
    """Submit the pending units (no more in flight than the cluster has threads), retry
    failures, restart the worker of a unit over its time, and record each unit as it ends."""
    from distributed import wait

    queue = list(reversed(pending))
    attempts = dict.fromkeys(pending, 0)
    flight: dict[Any, tuple[int, float | None]] = {}  # future -> (unit index, when a worker took it, or None)
    while queue or flight:
        capacity = max(1, sum(client.nthreads().values()))
        while queue and len(flight) < capacity:
            i = queue.pop()
            attempts[i] += 1
            u = units[i]
            f = client.submit(execute, u.task, u.params, key=f"unit-{i}-{attempts[i]}-{time.time_ns()}", pure=False)
            flight[f] = (i, None)
        try:
            done, _ = wait(list(flight), timeout=POLL_SECONDS, return_when="FIRST_COMPLETED")
        except TimeoutError:  # nothing ended within the poll; check the clocks
            done = set()
        now = time.perf_counter()
        if options.timeout is not None:  # a unit's clock starts when a worker takes it, not while workers restart
            running = {key for keys in client.processing().values() for key in keys}
            flight.update({f: (i, now) for f, (i, started) in flight.items() if started is None and f.key in running})
        for f in list(flight):
            i, started = flight[f]
            if f in done:
                outcome = _outcome(f)
            elif started is not None and now - started > options.timeout:
                outcome = {"status": "failed", "error": f"timed out after {options.timeout:g} s", "where": _stop(client, f),
                           "seconds": round(now - started, 3)}
            else:
                continue
            del flight[f]
            if outcome["status"] == "failed" and attempts[i] <= options.retries:
                queue.append(i)
            else:
                record(i, outcome, attempts[i])


def _outcome(future: Any) -> dict[str, Any]:
    if future.status == "finished":
        try:
            return {"status": "done", **future.result()}
        except Exception as exc:  # lost between finishing and fetching
            return {"status": "failed", "error": _describe(exc), "where": "", "seconds": 0.0}
    exc = future.exception() if future.status == "error" else None
    return {"status": "failed", "error": _describe(exc) if exc else f"the unit was {future.status}", "where": "",
            "seconds": 0.0}


def _stop(client: Any, future: Any) -> str:
    """Cancel a unit over its time and end the worker process running it (its nanny starts a
    fresh one); that worker's address.  A graceful restart would wait for the unit."""
    where = next((w for w, keys in client.processing().items() if future.key in keys), "")
    future.cancel()
    if where:
        with contextlib.suppress(Exception):  # the worker is gone before it can answer
            client.run(os._exit, 1, workers=[where], wait=False)
    return where


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:200]}"


class _Meter:
    """Progress lines: units done of the total and the time left, estimated as the elapsed time
    times the weight left over the weight done (units of very different sizes would make a
    count-based estimate jump: a reach instance of 0.1 s and a theorem of 15 s count alike)."""

    def __init__(self, weights: list[float], pending: list[int], progress: Callable[[str], None] | None):
        self.weights, self.say = weights, progress
        self.total, self.done = len(weights), len(weights) - len(pending)
        self.left = sum(weights[i] for i in pending)
        self.worked = 0.0
        self.t0 = time.perf_counter()
        if progress and self.done:
            progress(f"sweep: {self.done} of {self.total} units taken from the journal")

    def tick(self, i: int) -> None:
        self.done += 1
        self.worked += self.weights[i]
        self.left -= self.weights[i]
        if self.say:
            elapsed = time.perf_counter() - self.t0
            left = elapsed * max(self.left, 0.0) / max(self.worked, 1e-12)
            self.say(f"sweep: {self.done}/{self.total} units, {elapsed:.0f} s, about {left:.0f} s left")
