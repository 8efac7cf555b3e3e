"""The witness files of a theorem report: every row that replays a witness names a file a referee
re-checks.

A check whose ``details`` hold the witness it judged (``"witness"``: the witness document of
:func:`verify.io.witness.make`, as :func:`theorems.witnesses.control_checks` records it) gets
the file ``witnesses/<theorem>-<label>.json`` beside ``verification.json`` instead: the
document moves into the file, ``details["witness_file"]`` names it (relative to the report's
directory) and ``witness_depth``, ``witness_length`` (steps or layers) and ``witness_shape``
(N, n, d) describe it, so that ``verify check OUT/witnesses/<file>`` re-checks the row.  The
label is the check's bracketed instance (``[N=2,n=2,d=2]``), so the names follow from the
profile and do not depend on the run.

>>> doc = {"theorems": [{"name": "T1", "checks": [
...     {"name": "the witness file maps the inputs within its tolerance [N=2,n=2,d=2]",
...      "details": {"witness": {"schema": "..."}}}]}]}
>>> files, written = take(doc)
>>> sorted(files), written["theorems"][0]["checks"][0]["details"]["witness_file"]
(['T1-N=2-n=2-d=2.json'], 'witnesses/T1-N=2-n=2-d=2.json')
"""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import numpy as np

from verify.io import witness
from verify.io.errors import InputError
from verify.io.files import check_outputs, replace_file

FOLDER = "witnesses"


def _name(theorem: str, check: str) -> str:
    """``<theorem>-<label>.json`` in letters, digits, ``_``, ``=`` and ``.`` (each other run of
    characters one ``-``)."""
    label = re.findall(r"\[([^\]]*)\]", check)
    stem = "-".join([theorem, *label[-1:]])
    return re.sub(r"[^A-Za-z0-9_=.]+", "-", stem).strip("-") + ".json"


def take(doc: dict[str, Any]) -> tuple[dict[str, str], dict[str, Any]]:
    """The witness files of ``doc`` as {file name: text}, and a copy of ``doc`` in which each
    check's witness is replaced by the file's path (module docstring); a second witness under
    one name gets ``-2``, ``-3``, ... before ``.json``."""
    doc, files = copy.deepcopy(doc), {}
    for t in doc["theorems"]:
        for c in t["checks"]:
            w = c["details"].pop("witness", None)
            if w is None:
                continue
            if not isinstance(w, dict):  # a report made or edited by hand
                raise InputError(f"the check {c['name']!r} of {t['name']}: details.witness must be a witness document "
                                 f"(a JSON object), not {type(w).__name__}")
            name, k = _name(t["name"], c["name"]), 1
            while name in files:
                k += 1
                name = _name(t["name"], c["name"]).removesuffix(".json") + f"-{k}.json"
            files[name] = witness.dumps(w)
            steps = w.get("steps", w.get("layers"))
            c["details"] |= {"witness_file": f"{FOLDER}/{name}", "witness_depth": w.get("depth"),
                             "witness_length": len(steps) if isinstance(steps, list) else None,
                             "witness_shape": list(np.shape(w.get("inputs")))}
    return files, doc


def check(names: list[str] | None, directory: str | Path, *, force: bool = False) -> None:
    """Refuse, before anything is written, a link or non-folder at ``directory``/witnesses, or
    one of the files ``names`` there (None: any file, for a check before the names are known)
    without ``force`` (:func:`verify.io.files.check_outputs`)."""
    d = Path(directory)
    check_outputs(d, (), (FOLDER,), force=force)
    folder = d / FOLDER
    if names is None:
        names = sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []
    check_outputs(folder, tuple(names), force=force)


def write(files: dict[str, str], directory: str | Path) -> list[Path]:
    """Write ``files`` into ``directory``/witnesses (checked by :func:`check`), each replacing a
    file of its name by a new one, never written through a link."""
    d = Path(directory)
    if files:
        (d / FOLDER).mkdir(exist_ok=True)
    return [replace_file(d / FOLDER / name, text) for name, text in files.items()]
