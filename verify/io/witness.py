"""Witness files: the self-contained JSON record of an interpolation (its replay and verdicts
are in :mod:`verify.verdicts.replay`).

Schema ``attention-interpolation-witness/1`` (field names are an interface; see README)::

    {
      "schema": "attention-interpolation-witness/1",
      "attention": {"causal": false, "beta": 1.0},
      "blocks": [{"Q": [[...]], "K": [[...]], "V": [[...]]}, {"Q": ..., "K": ..., "V": ...}],
      "inputs":  N x n x d nested lists,
      "targets": N x n x d nested lists,
      "depth": "continuous" | "finite",
      "steps":  [{"block": 0, "duration": tau}, ...]      (continuous depth)
      "layers": [{"block": 1, "step": h}, ...]            (finite depth)
      "tolerance": claimed bound on max |image - target| over all entries,
      "precision": "float64" or "N digits" (optional: the precision the tolerance holds at;
                   ``verify check`` replays at N digits unless told otherwise),
      ... any extra fields (precision, certificate, provenance) are kept as they are.
    }

A JSON number denotes the binary64 nearest to it (as every JSON reader takes it; one with more
significant digits than binary64 holds is refused), a decimal string the exact decimal it
writes (docs/conventions.md §4): a float64 replay rounds a string to the nearest binary64, a
replay at D digits to the nearest number of D digits, and a certificate encloses it exactly.

>>> import numpy as np
>>> from verify.model.blocks import gaussian_blocks
>>> blocks = gaussian_blocks(0, 2)
>>> X = np.random.default_rng(0).normal(size=(2, 3, 2))
>>> parse(dumps(make(blocks, X, X, "finite", [(0, 0.0)], 1e-12))).depth
'finite'
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field as dc_field
from fractions import Fraction
from pathlib import Path
from typing import Any

import mpmath
import numpy as np

from verify.io import validate
from verify.io.errors import InputError
from verify.io.files import DEFAULT_LIMITS, Limits, check_creatable, decimal, load_json, parse_json, write_output
from verify.lie.symmetry import exact
from verify.model.backend import namespace
from verify.model.blocks import Block
from verify.version import provenance

SCHEMA = "attention-interpolation-witness/1"
DEPTHS = {"continuous": ("steps", "duration"), "finite": ("layers", "step")}
REQUIRED = ("schema", "attention", "blocks", "inputs", "targets", "depth", "tolerance")
OPTIONAL = ("precision", "provenance", "certificate")  # any other top-level field is refused (a typo must not pass)
VACUOUS = 1e-3  # a tolerance above VACUOUS max(1, max |target|) claims nothing and is refused


@dataclass(frozen=True)
class Witness:
    """A parsed witness.  Numbers are held exactly as written (decimal strings as text, JSON
    numbers as the floats they denote); :meth:`blocks_at`, :meth:`array_at` and
    :meth:`steps_at` convert them to float64 (``dps=None``) or to high-precision numbers (inside
    :func:`precision`).  ``tolerance`` is the tolerance rounded to float64 (for messages and
    estimates); ``exact_tolerance`` the number written."""

    causal: bool
    beta: Any
    matrices: tuple[dict[str, np.ndarray], dict[str, np.ndarray]]
    inputs: np.ndarray
    targets: np.ndarray
    depth: str
    steps: tuple[tuple[int, Any], ...]
    tolerance: float
    extra: dict[str, Any] = dc_field(default_factory=dict)
    exact_tolerance: Any = None

    @property
    def digits(self) -> int | None:
        """The precision the witness says it replays at: N for ``"precision": "N digits"``,
        None for float64 (or no precision field)."""
        return parse_precision(self.extra.get("precision", "float64"))

    def blocks_at(self, dps: int | None = None) -> tuple[Block, Block]:
        """The blocks in float64 or at ``dps`` digits, each carrying the exact numbers written
        (:meth:`verify.model.blocks.Block.in_arb` encloses those)."""
        beta = float(self.beta) if dps is None else namespace("mpmath").asarray(self.beta)[()]
        return tuple(  # type: ignore[return-value]
            Block(*(_convert(m[k], dps) for k in "QKV"), beta=beta, causal=self.causal,
                  exact={**{k: m[k] for k in "QKV"}, "beta": self.beta})
            for m in self.matrices
        )

    def array_at(self, name: str, dps: int | None = None) -> np.ndarray:
        return _convert(getattr(self, name), dps)

    def steps_at(self, dps: int | None = None) -> list[tuple[int, Any]]:
        if dps is None:
            return [(b, float(t)) for b, t in self.steps]
        xp = namespace("mpmath")
        return [(b, xp.asarray(t)[()]) for b, t in self.steps]


def parse_precision(label: Any, source: str = "witness") -> int | None:
    """The digits of a ``"precision"`` field: None for ``"float64"``, N for ``"N digits"`` (N
    from 1 to :data:`verify.io.validate.MAX_DIGITS`); anything else is refused, not read as float64."""
    words = label.split() if isinstance(label, str) else []
    if label == "float64":
        return None
    if len(words) != 2 or words[1] != "digits" or not (words[0].isascii() and words[0].isdigit()):
        raise InputError(f"{source}: precision is {label!r}; expected 'float64' or 'N digits'")
    return validate.digits(int(words[0]), f"{source}: the precision")


def precision_label(dps: int | None) -> str:
    """The ``"precision"`` field for a replay in float64 (None) or at ``dps`` digits; the
    inverse of :attr:`Witness.digits`."""
    return "float64" if dps is None else f"{dps} digits"


def _convert(a: np.ndarray, dps: int | None) -> np.ndarray:
    if dps is None:
        return np.asarray(a.astype(float), dtype=float)
    return namespace("mpmath").asarray(a)


# ---------------------------------------------------------------- parsing


def _number(v: Any, where: str) -> Any:
    """A number exactly as written: a decimal string as its text, a JSON number (or a Python
    number given in memory) as the binary64 it denotes."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str)):
        raise InputError(f"{where}: expected a number or a decimal string, got {v!r}")
    if isinstance(v, str):
        f = float(decimal(str(v), where))
    else:
        try:
            f = float(v)
        except OverflowError:
            f = math.inf
    if not math.isfinite(f):
        raise InputError(f"{where}: {v!r} is not a finite number")
    return str(v) if isinstance(v, str) else float(v)


def _block_index(v: Any, where: str) -> int:
    """A step's block: the JSON number 0 or 1 (not a string, not a bool)."""
    if isinstance(v, int) and not isinstance(v, bool) and v in (0, 1):
        return v
    raise InputError(f"{where}: unknown block index {str(v)[:20]}; blocks are numbered 0 and 1 (JSON numbers)")


def _array(v: Any, where: str, ndim: int) -> np.ndarray:
    def walk(x: Any, depth: int, path: str) -> Any:
        if depth == ndim:
            return _number(x, path)
        if not isinstance(x, list):
            raise InputError(f"{where}: expected {ndim} levels of nested lists, found {type(x).__name__} at {path}")
        if not x:
            raise InputError(f"{where}: {path} is an empty list; every axis needs at least one entry (N, n, d >= 1)")
        return [walk(y, depth + 1, f"{path}[{i}]") for i, y in enumerate(x)]

    rows = walk(v, 0, where)
    try:
        a = np.array(rows, dtype=object)
    except ValueError:
        a = None
    if a is None or a.ndim != ndim:
        raise InputError(f"{where}: nested lists are ragged; expected a rectangular {ndim}-dimensional array")
    return a


def parse_attention(att: Any, source: str) -> tuple[bool, Any]:
    """(causal, beta) from an ``attention`` object; beta exactly as written."""
    if not isinstance(att, dict) or not isinstance(att.get("causal", False), bool) or set(att) - {"causal", "beta"}:
        raise InputError(f"{source}: 'attention' must be an object with a boolean 'causal' and a number 'beta'")
    return att.get("causal", False), _number(att.get("beta", 1.0), f"{source}: attention.beta")


def parse_blocks(bl: Any, source: str, d: int | None = None) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """The two blocks' Q, K, V (object arrays of numbers or decimal strings), d x d each;
    d defaults to the size of the first Q."""
    if not isinstance(bl, list) or len(bl) != 2:
        raise InputError(f"{source}: 'blocks' must be a list of exactly two objects with Q, K, V")
    mats = []
    for b, blk in enumerate(bl):
        if not isinstance(blk, dict) or set(blk) != set("QKV"):
            raise InputError(f"{source}: blocks[{b}] must be an object with exactly the fields Q, K, V")
        one = {m: _array(blk[m], f"{source}: blocks[{b}].{m}", 2) for m in "QKV"}
        if d is None:  # from the first Q, which must then be square
            if one["Q"].shape[0] != one["Q"].shape[1]:
                raise InputError(f"{source}: blocks[{b}].Q: expected a square d x d matrix, got shape {one['Q'].shape}")
            d = one["Q"].shape[0]
        for m, a in one.items():
            validate.matrix(a.astype(float), d, f"{source}: blocks[{b}].{m}")
        mats.append(one)
    return mats[0], mats[1]


def parse(text: str, source: str = "witness", limits: Limits = DEFAULT_LIMITS) -> Witness:
    """Parse and validate witness JSON text (strictly: :func:`verify.io.files.parse_json`, every
    number kept as written)."""
    return from_dict(parse_json(text, source), source, limits)


def from_dict(doc: Any, source: str = "witness", limits: Limits = DEFAULT_LIMITS) -> Witness:
    if not isinstance(doc, dict):
        raise InputError(f"{source}: expected a JSON object at the top level")
    missing = [k for k in REQUIRED if k not in doc]
    if missing:
        raise InputError(f"{source}: missing field(s) {', '.join(missing)}")
    unknown = [k for k in doc if k not in (*REQUIRED, *OPTIONAL, "steps", "layers")]
    if unknown:
        raise InputError(f"{source}: unknown field(s) {', '.join(repr(k[:40]) for k in unknown[:5])}; a witness holds "
                         f"{', '.join(REQUIRED)}, steps or layers, and optionally {', '.join(OPTIONAL)}")
    if doc["schema"] != SCHEMA:
        raise InputError(f"{source}: schema is {doc['schema']!r}; this tool reads {SCHEMA!r}")
    causal, beta = parse_attention(doc["attention"], source)
    if not isinstance(doc["depth"], str) or doc["depth"] not in DEPTHS:
        raise InputError(f"{source}: depth is {doc['depth']!r}; expected 'continuous' or 'finite'")
    depth = doc["depth"]
    key, length = DEPTHS[depth]
    if key not in doc:
        raise InputError(f"{source}: depth is {depth!r} but the field {key!r} is missing")
    inputs = _array(doc["inputs"], "inputs", 3)
    targets = _array(doc["targets"], "targets", 3)
    validate.collection(inputs.astype(float), "inputs")
    validate.collection(targets.astype(float), "targets")
    validate.matching(inputs, targets)
    d = inputs.shape[2]
    mats = parse_blocks(doc["blocks"], source, d)
    raw = doc[key]
    if not isinstance(raw, list):
        raise InputError(f"{source}: {key!r} must be a list of objects {{'block': 0|1, {length!r}: number}}")
    if len(raw) > limits.max_steps:
        raise InputError(f"{source}: {len(raw)} {key}, over the limit of {limits.max_steps}; raise the limit max_steps")
    other = "layers" if key == "steps" else "steps"
    if other in doc:
        raise InputError(f"{source}: depth is {depth!r}, which reads {key!r}, but the witness also has {other!r}")
    steps = []
    for k, s in enumerate(raw):
        if not isinstance(s, dict) or set(s) != {"block", length}:
            raise InputError(f"{source}: {key}[{k}] must be an object with exactly the fields 'block' and {length!r}")
        steps.append((_block_index(s["block"], f"{key}[{k}].block"), _number(s[length], f"{key}[{k}].{length}")))
    validate.steps(steps, key)
    exact_tol = _number(doc["tolerance"], "tolerance")
    tol = float(exact_tol)
    if tol < 0 or exact(exact_tol) < 0:
        raise InputError(f"{source}: tolerance must be non-negative, got {exact_tol}")
    vacuous(tol, targets.astype(float), source)
    extra = {k: v for k, v in doc.items() if k not in (*REQUIRED, "steps", "layers")}
    parse_precision(extra.get("precision", "float64"), source)
    return Witness(causal, beta, mats, inputs, targets, depth, tuple(steps), tol, extra, exact_tol)


def vacuous(tolerance: float, targets: np.ndarray, source: str) -> None:
    """Refuse a tolerance that is not small against the targets' scale: above VACUOUS
    max(1, max |target|) any image near the targets' size would pass, and a PASS says nothing."""
    bound = VACUOUS * max(1.0, float(np.max(np.abs(targets))))
    if not tolerance <= bound:
        raise InputError(f"{source}: tolerance {tolerance:.3g} is not small against the targets (max |target| "
                         f"{float(np.max(np.abs(targets))):.3g}): above {bound:.3g} a PASS would claim nothing")


def load(path: str | Path, limits: Limits = DEFAULT_LIMITS) -> Witness:
    """Read a witness file (a regular file within ``limits``), with a one-line error for
    missing, unreadable or malformed files."""
    return from_dict(load_json(path, limits), str(path), limits)


# ---------------------------------------------------------------- writing


def _jsonable(a: Any) -> Any:
    if isinstance(a, np.ndarray):
        return [_jsonable(x) for x in a] if a.ndim else _jsonable(a[()])
    if isinstance(a, (list, tuple)):
        return [_jsonable(x) for x in a]
    if isinstance(a, (float, np.floating)):
        return float(a)
    if isinstance(a, (int, np.integer)):
        return int(a)
    if isinstance(a, mpmath.mpf):  # all the digits its mantissa holds, whatever the current precision
        return mpmath.nstr(a, math.ceil(max(53, int(a.man).bit_length()) * math.log10(2)) + 1, strip_zeros=False)
    if isinstance(a, str):  # a decimal string as written, a JSON number where it is a binary64 exactly
        f = float(a)
        return f if math.isfinite(f) and Fraction(f) == Fraction(a) else str(a)
    return str(a)  # other high-precision numbers: decimal strings with all their digits


def make(
    blocks: Sequence[Block],
    inputs: Any,
    targets: Any,
    depth: str,
    steps: Sequence[tuple[int, Any]],
    tolerance: float,
    **extra: Any,
) -> dict[str, Any]:
    """A witness as a JSON-ready dict (floats stay JSON numbers, high-precision numbers
    become decimal strings); its ``provenance`` names the code that wrote it (``code``:
    :func:`verify.version.provenance`) besides what the caller gives."""
    if depth not in DEPTHS:
        raise InputError(f"depth must be 'continuous' or 'finite', got {depth!r}")
    key, length = DEPTHS[depth]
    doc = {
        "schema": SCHEMA,
        "attention": {"causal": bool(blocks[0].causal), "beta": _jsonable(blocks[0].exact_entries("beta"))},
        "blocks": [{m: _jsonable(b.exact_entries(m) if b.exact else getattr(b, m)) for m in "QKV"} for b in blocks],
        "inputs": _jsonable(inputs),
        "targets": _jsonable(targets),
        "depth": depth,
        key: [{"block": int(b), length: _jsonable(t)} for b, t in steps],
        "tolerance": float(tolerance),
    }
    extra["provenance"] = {"code": provenance()} | (extra.get("provenance") or {})  # which code wrote it
    return doc | {k: v for k, v in extra.items() if v is not None}


def dumps(doc: dict[str, Any]) -> str:
    return json.dumps(doc, indent=1, sort_keys=False) + "\n"


def save(doc: dict[str, Any], path: str | Path, *, force: bool = False) -> Path:
    """Write a witness; refuses to replace an existing file (or a link) unless ``force``, and
    then replaces it (a link is replaced, never written through)."""
    return write_output(check_creatable(path, force=force), dumps(doc), force=force)
