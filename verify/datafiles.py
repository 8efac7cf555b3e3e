"""Reading the user's collections and blocks from files (.npy, .npz, .json).

* a collection: an .npy array of shape (N, n, d); an .npz holding one array, or one named for
  the role asked (``inputs`` or ``X``; ``targets`` or ``Y``: :data:`COLLECTION_KEYS`); a .json
  file holding N x n x d nested lists, or an object with a field so named (a witness file
  works: its ``inputs``/``targets``).  A file holding both roles gives each its own array, and
  one that holds several arrays but none named for the role is refused;
* blocks: any JSON object with a ``blocks`` field as in the witness schema (two objects with
  Q, K, V), optionally ``attention`` (``causal``, ``beta``).

Every problem is an :class:`~verify.errors.InputError` naming the file and what was wrong.

>>> import json, tempfile, os, numpy as np
>>> p = os.path.join(tempfile.mkdtemp(), "x.json")
>>> _ = open(p, "w").write(json.dumps([[[0.0, 1.0], [2.0, 3.0]]]))
>>> load_collection(p).shape
(1, 2, 2)
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from . import validate
from .blocks import Block
from .errors import InputError

COLLECTION_KEYS = {"inputs": ("inputs", "X"), "targets": ("targets", "Y")}  # the names each role is read from


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not a UTF-8 text file") from None


def ensure_new(path: str | Path, option: str = "--out", suffix: str | None = None) -> Path:
    """Refuse to write over an existing file (nothing a user has is overwritten), into a
    directory that does not exist, or (``suffix``) under another suffix: checked before the work,
    so that a path that cannot be written is refused at once rather than after the search."""
    p = Path(path)
    if suffix is not None and p.suffix.lower() != suffix:
        raise InputError(f"{option} {p}: writes a {suffix} file; give a path ending in {suffix}")
    if p.exists():
        raise InputError(f"{p} already exists; choose another {option} path or remove it first")
    if not p.parent.is_dir():
        raise InputError(f"{option} {p}: the directory {p.parent} does not exist; make it or choose another path")
    return p


def output_directory(path: str | Path, option: str = "--out") -> Path:
    """The directory a command writes its reports into, made now (before the work) so that a
    path that cannot be one is refused at once rather than after minutes of checks."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise InputError(f"{p} exists and is not a directory; choose another {option} directory")
    try:
        p.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"{p}: cannot make the {option} directory ({e.strerror}); choose another") from None
    return p


def _exists(path: str | Path) -> Path:
    p = Path(path)
    if not p.is_file():
        raise InputError(f"{p}: {'a directory, not a file' if p.is_dir() else 'no such file'}")
    return p


def load_collection(path: str | Path, role: str = "inputs") -> np.ndarray:
    """A finite float64 (N, n, d) array from .npy, .npz or .json (see module docstring), read as
    the ``role`` "inputs" or "targets".

    >>> import tempfile, os, numpy as np
    >>> p = os.path.join(tempfile.mkdtemp(), "xy.npz")
    >>> np.savez(p, X=np.zeros((1, 2, 2)), Y=np.ones((1, 2, 2)))
    >>> float(load_collection(p, "inputs").max()), float(load_collection(p, "targets").max())
    (0.0, 1.0)
    """
    names = COLLECTION_KEYS[role]
    wanted = f"'{names[0]}' (or '{names[1]}')"
    p = _exists(path)
    name = str(p)
    suffix = p.suffix.lower()
    try:
        if suffix == ".npy":
            data = np.load(p, allow_pickle=False)
        elif suffix == ".npz":
            with np.load(p, allow_pickle=False) as z:
                keys = list(z.keys())
                pick = next((k for k in names if k in keys), keys[0] if len(keys) == 1 else None)
                if pick is None:
                    raise InputError(f"{name}: holds arrays {keys}, none named {wanted}; name the {role} so")
                data = z[pick]
        elif suffix == ".json":
            doc = _read_json(p)
            if isinstance(doc, dict):
                pick = next((k for k in names if k in doc), None)
                if pick is None:
                    raise InputError(f"{name}: a JSON object needs a field {wanted} with the {role} as N x n x d lists")
                doc = doc[pick]
            data = doc
        else:
            raise InputError(f"{name}: unknown file type {suffix!r}; use .npy, .npz or .json")
    except (ValueError, OSError, zipfile.BadZipFile) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{name}: cannot read as {suffix} ({exc})") from None
    return validate.collection(data, name)


def load_blocks(path: str | Path) -> tuple[tuple[Block, Block], dict[str, Any]]:
    """Two blocks (and the ``attention`` settings found) from a JSON file with ``blocks``."""
    from .witness import parse_attention, parse_blocks

    p = _exists(path)
    doc = _read_json(p)
    if not isinstance(doc, dict) or "blocks" not in doc:
        raise InputError(f"{p}: expected a JSON object with a field 'blocks' (two objects with Q, K, V)")
    causal, beta = parse_attention(doc.get("attention", {}), str(p))
    mats = parse_blocks(doc["blocks"], str(p))
    blocks = tuple(Block(*(m[k].astype(float) for k in "QKV"), beta=beta, causal=causal) for m in mats)
    return validate.blocks(blocks), {"causal": causal, "beta": beta}
