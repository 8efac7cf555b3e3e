"""What a sweep returns: one record per unit, in the order the units were given.

>>> r = UnitRecord(key="k", task="statistics:fmean", params={"data": [1, 2, 6]}, version="v", status="done", result=3.0,
...                where="in-process", attempts=1, seconds=0.1)
>>> s = Sweep(scheduler="none", records=[r])
>>> s.results(), s.summary()["ran"]
([3.0], {'in-process': 1})
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any

STATUSES = ("done", "failed")
JOURNAL = "journal"  # ``where`` of a record taken from the journal instead of computed


@dataclass(frozen=True, kw_only=True)
class UnitRecord:
    """One unit's outcome: ``status`` "done" with its ``result``, or "failed" with the ``error``
    of its last attempt (``attempts`` counts them); ``where`` it ran (a worker's address,
    "in-process", or "journal" when resumed); ``seconds`` of its last attempt."""

    key: str
    task: str
    params: dict[str, Any]
    version: str
    status: str
    result: Any = None
    where: str = ""
    attempts: int = 0
    seconds: float = 0.0
    error: str | None = None

    def __post_init__(self):
        if self.status not in STATUSES or not isinstance(self.key, str) or not isinstance(self.params, dict):
            raise ValueError(f"a unit record needs a key, a params object and a status in {STATUSES}")
        kinds = {"task": str, "version": str, "where": str, "attempts": int, "seconds": (int, float)}
        for name, kind in kinds.items():
            v = getattr(self, name)
            if not isinstance(v, kind) or isinstance(v, bool):
                raise ValueError(f"the field {name!r} of a unit record is a {type(v).__name__}")
        if self.error is not None and not isinstance(self.error, str):
            raise ValueError("the field 'error' of a unit record must be text or null")

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True, kw_only=True)
class Sweep:
    """Every unit's record, in the units' order, and the scheduler that ran them."""

    scheduler: str
    records: list[UnitRecord]

    def results(self) -> list[Any]:
        """Each unit's result, None where it failed."""
        return [r.result if r.status == "done" else None for r in self.records]

    def failed(self) -> list[int]:
        return [i for i, r in enumerate(self.records) if r.status == "failed"]

    def summary(self) -> dict[str, Any]:
        """How many units ran where, were retried, failed (with why) or came from the journal:
        for a report's timings (it differs between schedulers; the results do not)."""
        return {
            "scheduler": self.scheduler,
            "units": len(self.records),
            "ran": dict(sorted(Counter(r.where for r in self.records if r.status == "done").items())),
            "retried": sum(r.attempts > 1 for r in self.records if r.where != JOURNAL),
            "failed": [{"unit": i, "task": self.records[i].task, "params": self.records[i].params,
                        "error": self.records[i].error} for i in self.failed()],
            "seconds": round(sum(r.seconds for r in self.records if r.where != JOURNAL), 3),
        }
