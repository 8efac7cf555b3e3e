"""The journal of a sweep: one JSON line per finished or failed unit, appended as units end.

A line is a :class:`verify.sweep.records.UnitRecord` as JSON (its key, task, parameters, code
version, status, result, where it ran, attempts, seconds, error).  The file is only ever
appended to (opened with ``O_APPEND``, never through a symlink), so nothing an earlier sweep
recorded is lost; a sweep asked to resume reads it first and takes each key's last *finished*
record instead of computing the unit again.  A line that is not JSON (one cut short by a
killed process) is skipped: its unit is computed again, which is always safe.  A JSON line
that is not a record is refused in one line, before any work.

Trust: a resumed result is what the journal says.  The report counts the units taken from the
journal; a referee who wants every number recomputed runs without resuming.

>>> import tempfile, os
>>> from verify.sweep.records import UnitRecord
>>> path = os.path.join(tempfile.mkdtemp(), "j.jsonl")
>>> j = Journal(path)
>>> j.append(UnitRecord(key="k1", task="statistics:fmean", params={}, version="v", status="done", result=3.0,
...                     where="in-process", attempts=1, seconds=0.0))
>>> Journal(path).finished()["k1"].result
3.0
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from verify.io.errors import InputError
from verify.io.files import Limits, read_bytes
from verify.sweep.records import UnitRecord
from verify.sweep.unit import encode

MAX_BYTES = 1 << 30  # a journal of 1 GiB holds some 10^4 theorem results; beyond that, start another


class Journal:
    """Append-only JSON lines at ``path`` (created when the first record is written)."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        if os.path.islink(self.path):
            raise InputError(f"{self.path}: the journal is a symbolic link; give the path of a regular file")
        if self.path.exists() and not self.path.is_file():
            raise InputError(f"{self.path}: the journal path is not a regular file; choose another path")
        if not self.path.parent.is_dir():
            raise InputError(f"{self.path}: the directory {self.path.parent} does not exist; make it or choose another path")

    def finished(self) -> dict[str, UnitRecord]:
        """The last finished record of each key (none when the file does not exist yet)."""
        if not self.path.exists():
            return {}
        lines = read_bytes(self.path, Limits(max_bytes=MAX_BYTES)).split(b"\n")
        out: dict[str, UnitRecord] = {}
        for number, line in enumerate(lines, 1):
            try:
                obj = json.loads(line)
            except ValueError:  # empty, or cut short by a kill: the unit is computed again
                continue
            try:
                rec = UnitRecord(**obj)
            except (ValueError, TypeError) as exc:
                raise InputError(f"{self.path}: line {number} is not a journal record ({str(exc)[:80]}); remove "
                                 "the line or the file, or run without resuming") from None
            if rec.status == "done":
                out[rec.key] = rec
        return out

    def append(self, record: UnitRecord) -> None:
        """Add one record as one line (a single write, so lines of one process never interleave)."""
        flags = os.O_RDWR | os.O_CREAT | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0)
        try:
            fd = os.open(self.path, flags, 0o644)
        except OSError as exc:
            raise InputError(f"{self.path}: cannot write the journal ({exc.strerror})") from None
        with os.fdopen(fd, "ab") as f:
            size = os.fstat(fd).st_size
            cut = size > 0 and os.pread(fd, 1, size - 1) != b"\n"  # a line left cut short by a kill
            f.write((("\n" if cut else "") + encode(record.as_dict()) + "\n").encode())

