"""Reading and writing files safely: bounded input, exclusive output.

What a user hands us is read only when it is a regular file of at most ``max_bytes`` (FIFOs,
devices and directories are refused: a FIFO would block for ever, ``/dev/zero`` would be read
until memory runs out).  JSON is parsed strictly: nesting at most :data:`MAX_NESTING` deep
(checked before the parser recurses), no duplicate keys (the last would silently win), no
``NaN``/``Infinity``, and numbers that are finite in float64 (an integer literal beyond float
range, or of thousands of digits, is refused by name).  Decimal strings, where the formats
allow them for high-precision numbers, are ASCII only (:data:`DECIMAL`): ``"1_0"`` and
non-ASCII digits, which Python's ``float`` would accept, are refused.

What we write is created exclusively (``O_CREAT | O_EXCL``: never over an existing file, never
through a symlink, even a dangling one); files we rewrite inside our own output directory
(reports) go through a fresh temporary file and ``os.replace``, which replaces a link rather
than writing through it.

>>> import os, tempfile
>>> d = tempfile.mkdtemp()
>>> p = os.path.join(d, "w.json")
>>> create_exclusive(p, "{}")
>>> try:
...     create_exclusive(p, "{}")
... except InputError as e:
...     print(str(e).endswith("already exists; choose another path or remove it first"))
True
>>> try:
...     parse_json('{"a": 1, "a": 2}', "x.json")
... except InputError as e:
...     print(e)
x.json: the key 'a' appears twice in one object; each key may appear once
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np

from verify.io.errors import InputError

MAX_NESTING = 64  # the formats need at most 6 levels (a witness's inputs inside the document)
# values in one JSON file, counted by its commas before it is parsed (parsing 1.3 million numbers took 4.6 s): a
# witness at the step limit has about 2 per step; a collection, at most 512 independent numbers for a rank
MAX_JSON_VALUES = 400_000
DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?", re.ASCII)
# |exponent| of a decimal: the exact value of "6e-99999999999" (0.0 in binary64) is a rational whose
# denominator has 10^11 digits, which took minutes and tens of GB to build; float64 spans 10^-324..10^308,
# and 400 characters move the point by at most 400 more, so 10 000 keeps every number the formats need.
MAX_EXPONENT = 10_000


@dataclass(frozen=True)
class Limits:
    """Caps on what a command reads (raised by the caller; messages name the fields)."""

    max_bytes: int = 64 * 2**20  # a witness of 100 000 steps at 17 digits is about 5 MB
    max_steps: int = 100_000  # steps of a control or layers of a network in one witness


DEFAULT_LIMITS = Limits()


def read_bytes(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> bytes:
    """The contents of a regular file of at most ``limits.max_bytes`` bytes."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK)  # non-blocking: opening a FIFO must not wait for a writer
    except FileNotFoundError:
        raise InputError(f"{_shown(p)}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"{_shown(p)}: a directory, not a file") from None
    except OSError as exc:
        raise InputError(f"{_shown(p)}: cannot open ({exc.strerror})") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise InputError(f"{_shown(p)}: " + ("a directory, not a file" if stat.S_ISDIR(st.st_mode)
                                             else "not a regular file (a FIFO, socket or device); give a file"))
    with os.fdopen(fd, "rb") as f:
        if st.st_size > limits.max_bytes:
            raise InputError(f"{_shown(p)}: {st.st_size} bytes, over the limit of {limits.max_bytes}; "
                             "raise the limit max_bytes if the file is meant to be that large")
        data = f.read(limits.max_bytes + 1)
    if len(data) > limits.max_bytes:
        raise InputError(f"{_shown(p)}: over the limit of {limits.max_bytes} bytes; raise the limit max_bytes")
    return data


def _shown(p: Path) -> str:
    """A path as shown in a message: at most 200 characters, so that one line stays one line."""
    s = str(p)
    return s if len(s) <= 200 else s[:97] + "..." + s[-100:]


def _nesting(text: str) -> int:
    """The deepest nesting of [ and { outside strings (without recursion)."""
    bare = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)
    codes = np.frombuffer(bare.encode("utf-8"), dtype=np.uint8)
    steps = (codes == ord("[")).astype(np.int32) + (codes == ord("{")) - (codes == ord("]")) - (codes == ord("}"))
    return int(np.max(np.cumsum(steps), initial=0))


def _no_duplicates(where: str):
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for k, v in pairs:
            if k in out:
                raise InputError(f"{where}: the key {k!r} appears twice in one object; each key may appear once")
            out[k] = v
        return out
    return hook


SIGNIFICANT = 17  # a JSON number denotes the binary64 nearest to it; 17 significant digits determine it


def _significant(text: str) -> int:
    """The significant digits of a decimal literal (leading and trailing zeros aside)."""
    mantissa = re.split("[eE]", text.lstrip("+-"))[0].replace(".", "")
    return len(mantissa.strip("0"))


def exponent(text: str, where: str) -> None:
    """Refuse a decimal whose written exponent exceeds MAX_EXPONENT in size, before any exact
    arithmetic builds 10^exponent."""
    parts = re.split("[eE]", text, maxsplit=1)
    if len(parts) == 2 and abs(int(parts[1])) > MAX_EXPONENT:
        raise InputError(f"{where}: {text[:40]} has the exponent {parts[1][:20]}, beyond the limit of +-{MAX_EXPONENT} "
                         "for exact decimals; write it with a smaller exponent")


def _number(where: str):
    def parse(text: str) -> float | int:
        if len(text) > 400:
            raise InputError(f"{where}: a number of {len(text)} characters; write it as a decimal string if it needs them")
        exponent(text, where)
        v = float(text)
        if not math.isfinite(v):
            raise InputError(f"{where}: the number {text[:40]} is beyond float64's range; rescale or write a decimal string")
        if _significant(text) > SIGNIFICANT and Fraction(text) != Fraction(v):
            raise InputError(f"{where}: the JSON number {text[:40]} has more significant digits than binary64 holds "
                             "(a JSON number denotes the nearest binary64); write it as a decimal string to keep them")
        return v if any(c in text for c in ".eE") else int(text)
    return parse


def _constant(where: str):
    def refuse(name: str) -> None:
        raise InputError(f"{where}: {name} is not a number JSON allows; every number must be finite")
    return refuse


def parse_json(text: str, where: str) -> Any:
    """Strict JSON (see the module docstring); every problem is one :class:`InputError`."""
    values = text.count(",") + 1  # at least the values an array or object holds: a bound without parsing
    if values > MAX_JSON_VALUES:
        raise InputError(f"{where}: holds about {values} JSON values, over the limit of {MAX_JSON_VALUES}; a collection "
                         "that large is beyond every check (split it)")
    depth = _nesting(text)
    if depth > MAX_NESTING:
        raise InputError(f"{where}: nested {depth} levels deep, over the limit of {MAX_NESTING}; not a file of these formats")
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates(where), parse_int=_number(where),
                          parse_float=_number(where), parse_constant=_constant(where))
    except json.JSONDecodeError as exc:
        raise InputError(f"{where}: not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except RecursionError:
        raise InputError(f"{where}: nested too deep to read") from None


def load_json(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> Any:
    """A JSON file read by :func:`read_bytes` and parsed by :func:`parse_json`."""
    data = read_bytes(path, limits)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError(f"{_shown(Path(path))}: not a UTF-8 text file") from None
    return parse_json(text, _shown(Path(path)))


def decimal(text: str, where: str) -> str:
    """A decimal string (ASCII digits, optional sign, point and exponent), finite in float64,
    of at most 400 characters and with |exponent| <= MAX_EXPONENT."""
    if not DECIMAL.fullmatch(text):
        raise InputError(f"{where}: {text[:40]!r} is not a decimal number (ASCII digits, '.', an exponent)")
    if len(text) > 400:
        raise InputError(f"{where}: a decimal string of {len(text)} characters; 400 carry more digits than any replay uses")
    exponent(text, where)
    if not math.isfinite(float(text)):
        raise InputError(f"{where}: {text[:40]} is beyond float64's range; rescale the data")
    return text


def check_creatable(path: str | Path, option: str = "output", suffix: str | None = None, *, force: bool = False) -> Path:
    """Refuse, before any work, an output path that is taken (a file, a link, even a dangling
    one; with ``force`` a file or link is allowed, to be replaced by :func:`replace_file`), whose
    directory does not exist, whose name is too long, or (``suffix``) that ends otherwise."""
    p = Path(path)
    if suffix is not None and p.suffix.lower() != suffix:
        raise InputError(f"{option} {_shown(p)}: writes a {suffix} file; give a path ending in {suffix}")
    if any(len(part.encode("utf-8", "surrogateescape")) > 255 for part in p.parts):
        raise InputError(f"{option} {_shown(p)}: a name longer than 255 bytes; choose a shorter one")
    taken, parent_ok = os.path.lexists(p), p.parent.is_dir()  # lexists: a dangling link is taken too
    if taken and not (force and (p.is_symlink() or p.is_file())):
        raise InputError(f"{_shown(p)} already exists; choose another {option} path, remove it first, or replace it "
                         "(force)")
    if not parent_ok:
        raise InputError(f"{option} {_shown(p)}: the directory {_shown(p.parent)} does not exist; make it or choose another path")
    if not os.access(p.parent, os.W_OK | os.X_OK):
        raise InputError(f"{option} {_shown(p)}: the directory {_shown(p.parent)} is not writable; choose another path")
    return p


def create_exclusive(path: str | Path, text: str | bytes) -> None:
    """Write a new file: ``O_CREAT | O_EXCL`` (never over a file, never through a link)."""
    p = Path(path)
    try:
        fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except FileExistsError:
        raise InputError(f"{_shown(p)} already exists; choose another path or remove it first") from None
    except OSError as exc:
        raise InputError(f"{_shown(p)}: cannot create ({exc.strerror})") from None
    with os.fdopen(fd, "wb") as f:
        f.write(text.encode("utf-8") if isinstance(text, str) else text)


def write_output(path: str | Path, text: str | bytes, *, force: bool = False) -> Path:
    """A user's output file (a witness, a dump), checked by :func:`check_creatable` before the
    work: created exclusively, or with ``force`` an existing file or link replaced
    (:func:`replace_file`), never written through."""
    p = Path(path)
    if force and os.path.lexists(p):
        return replace_file(p, text)
    create_exclusive(p, text)
    return p


def check_outputs(directory: str | Path, files: tuple[str, ...] = (), folders: tuple[str, ...] = (), *,
                  force: bool = False) -> None:
    """Refuse, before any work, what would make a report write outside ``directory``, fail after
    the work, or replace an earlier output unasked: one of ``files`` (rewritten by
    :func:`replace_file`) that exists (allowed with ``force``, where a link is replaced, never
    followed) or is a directory or another non-file, or one of ``folders`` (written into) that
    is a symbolic link (writing into it would write wherever it points) or not a directory.
    Paths are relative to ``directory``."""
    d = Path(directory)
    for name in files:
        p = d / name
        if os.path.lexists(p) and not p.is_symlink() and not p.is_file():
            raise InputError(f"{_shown(p)} exists and is not a file; remove it or choose another output directory")
        if os.path.lexists(p) and not force:
            raise InputError(f"{_shown(p)} already exists; choose another output directory, or replace the outputs "
                             "there (force)")
    for name in folders:
        p = d / name
        if p.is_symlink():
            raise InputError(f"{_shown(p)} is a symbolic link; the suite writes only inside {_shown(d)}, so remove the "
                             "link or choose another output directory")
        if os.path.lexists(p) and not p.is_dir():
            raise InputError(f"{_shown(p)} exists and is not a directory; remove it or choose another output directory")


def replace_file(path: str | Path, text: str | bytes) -> Path:
    """Write ``path`` inside a directory of ours (reports) by a new temporary file and
    ``os.replace``: a link at ``path`` is replaced, never written through."""
    p = Path(path)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    create_exclusive(tmp, text)
    os.replace(tmp, p)
    return p
