"""Reading the user's collections and blocks from files (.npy, .npz, .json).

* a collection: an .npy array of shape (N, n, d); an .npz holding one array, or one named for
  the role asked (``inputs`` or ``X``; ``targets`` or ``Y``: :data:`COLLECTION_KEYS`); a .json
  file holding N x n x d nested lists, or an object with a field so named (a witness file
  works: its ``inputs``/``targets``).  A file holding both roles gives each its own array, and
  one that holds several arrays but none named for the role is refused;
* blocks: any JSON object with a ``blocks`` field as in the witness schema (two objects with
  Q, K, V), optionally ``attention`` (``causal``, ``beta``).

Every problem is an :class:`~verify.io.errors.InputError` naming the file and what was wrong.

>>> import json, tempfile, os, numpy as np
>>> p = os.path.join(tempfile.mkdtemp(), "x.json")
>>> _ = open(p, "w").write(json.dumps([[[0.0, 1.0], [2.0, 3.0]]]))
>>> load_collection(p).shape
(1, 2, 2)
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from verify.io import validate
from verify.io.errors import InputError
from verify.io.files import DEFAULT_LIMITS, Limits, load_json, parse_json, read_bytes
from verify.io.witness import parse_attention, parse_blocks
from verify.model.blocks import Block

COLLECTION_KEYS = {"inputs": ("inputs", "X"), "targets": ("targets", "Y")}  # the names each role is read from


def output_directory(path: str | Path, option: str = "output") -> Path:
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


def _npy(data: bytes, where: str, limits: Limits) -> np.ndarray:
    """An .npy array from its bytes, its header checked first: a real numeric dtype, and a
    shape whose bytes the file holds (a header may claim any shape; numpy would allocate it)."""
    f = io.BytesIO(data)
    try:
        version = np.lib.format.read_magic(f)
        read = np.lib.format.read_array_header_1_0 if version == (1, 0) else np.lib.format.read_array_header_2_0
        shape, _, dtype = read(f, max_header_size=10_000)
    except (ValueError, OSError, SyntaxError, TypeError) as exc:
        raise InputError(f"{where}: not a readable .npy array ({exc})") from None
    if dtype.kind == "c":
        raise InputError(f"{where}: complex entries; every entry must be a real number")
    if dtype.kind not in "iuf":
        raise InputError(f"{where}: entries of dtype {dtype}; every entry must be a real number (integer or float)")
    if int(np.prod(shape, dtype=object)) * dtype.itemsize > len(data) - f.tell():
        raise InputError(f"{where}: the header claims shape {shape}, more than the file's {len(data)} bytes hold")
    return np.load(io.BytesIO(data), allow_pickle=False)


def _npz(data: bytes, where: str, names: tuple[str, str], role: str, limits: Limits) -> np.ndarray:
    wanted = f"'{names[0]}' (or '{names[1]}')"
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        members = {Path(i.filename).stem: i for i in z.infolist() if i.filename.endswith(".npy")}
        keys = list(members)
        pick = next((k for k in names if k in keys), keys[0] if len(keys) == 1 else None)
        if pick is None:
            raise InputError(f"{where}: holds arrays {keys}, none named {wanted}; name the {role} so")
        if members[pick].file_size > limits.max_bytes:
            raise InputError(f"{where}: the array {pick!r} unpacks to {members[pick].file_size} bytes, over the limit of "
                             f"{limits.max_bytes}; raise the limit max_bytes")
        return _npy(z.read(members[pick]), f"{where}[{pick}]", limits)


def _utf8(raw: bytes, where: str) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{where}: not a UTF-8 text file") from None


def load_collection(path: str | Path, role: str = "inputs", limits: Limits = DEFAULT_LIMITS,
                    exact: bool = False) -> np.ndarray:
    """A finite float64 (N, n, d) array from .npy, .npz or .json (see module docstring), read as
    the ``role`` "inputs" or "targets"; with ``exact``, an object array of the numbers as written
    (floats, and the decimal strings a .json file may hold, as their text), for exact decisions
    and certificates.

    >>> import tempfile, os, numpy as np
    >>> p = os.path.join(tempfile.mkdtemp(), "xy.npz")
    >>> np.savez(p, X=np.zeros((1, 2, 2)), Y=np.ones((1, 2, 2)))
    >>> float(load_collection(p, "inputs").max()), float(load_collection(p, "targets").max())
    (0.0, 1.0)
    """
    names = COLLECTION_KEYS[role]
    wanted = f"'{names[0]}' (or '{names[1]}')"
    p = Path(path)
    name = str(p)
    suffix = p.suffix.lower()
    raw = read_bytes(p, limits)  # first: a missing file, a directory or a FIFO is named as such
    if suffix not in (".npy", ".npz", ".json"):
        raise InputError(f"{name}: unknown file type {suffix!r}; use .npy, .npz or .json")
    try:
        if suffix == ".npy":
            data = _npy(raw, name, limits)
        elif suffix == ".npz":
            data = _npz(raw, name, names, role, limits)
        else:
            doc = parse_json(_utf8(raw, name), name)
            if isinstance(doc, dict):
                pick = next((k for k in names if k in doc), None)
                if pick is None:
                    raise InputError(f"{name}: a JSON object needs a field {wanted} with the {role} as N x n x d lists")
                doc = doc[pick]
            data = validate.numbers(doc, name)
    except (ValueError, OSError, zipfile.BadZipFile, EOFError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{name}: cannot read as {suffix} ({exc})") from None
    if data.dtype == object:
        validate.collection(data.astype(float), name)
        return data if exact else data.astype(float)
    data = validate.collection(data, name)
    return data.astype(float).astype(object) if exact else data


def load_blocks(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> tuple[tuple[Block, Block], dict[str, Any]]:
    """Two blocks (and the ``attention`` settings found) from a JSON file with ``blocks``."""
    return blocks_from(load_json(path, limits), str(Path(path)))


def blocks_from(doc: Any, source: str = "blocks") -> tuple[tuple[Block, Block], dict[str, Any]]:
    """Two blocks (and the ``attention`` settings) from a document as a blocks file holds it:
    ``{"blocks": [{"Q": .., "K": .., "V": ..}, ..], "attention": {"beta": .., "causal": ..}}``,
    numbers as JSON numbers or decimal strings; each block keeps them as written
    (:meth:`verify.model.blocks.Block.exact_entries`), so that certificates and exact decisions
    take "1e-400" as the decimal it writes, not as the 0.0 it rounds to.

    >>> (b0, b1), att = blocks_from({"blocks": [{"Q": [["1e-400"]], "K": [[1.0]], "V": [[2.0]]}] * 2})
    >>> float(b0.Q[0, 0]), b0.exact_entries("Q")[0, 0]
    (0.0, '1e-400')
    """
    if not isinstance(doc, dict) or "blocks" not in doc:
        raise InputError(f"{source}: expected a JSON object with a field 'blocks' (two objects with Q, K, V)")
    causal, beta = parse_attention(doc.get("attention", {}), source)
    mats = parse_blocks(doc["blocks"], source)
    blocks = tuple(Block(*(m[k].astype(float) for k in "QKV"), beta=float(beta), causal=causal,
                         exact={**{k: m[k] for k in "QKV"}, "beta": beta}) for m in mats)  # as written, for certificates
    return validate.blocks(blocks), {"causal": causal, "beta": beta}
