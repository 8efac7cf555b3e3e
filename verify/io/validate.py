"""Checks on everything a user hands the engine, done before any work starts.

Each check raises :class:`~verify.io.errors.InputError` with one line that names the offending
input and says what was expected; nothing is repaired silently.

>>> import numpy as np
>>> collection(np.zeros((2, 3, 2)), "inputs").shape
(2, 3, 2)
>>> try:
...     collection(np.zeros((2, 3)), "inputs")
... except InputError as e:
...     print(e)
inputs: expected an array of shape (N, n, d), got shape (2, 3)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from verify.io.errors import InputError
from verify.io.files import decimal

# The largest |entry| of a state the engine integrates (verify.model.flow refuses a flow whose state
# passes it): beyond it the logits beta <Q x_i, K x_j> of such tokens are within a few orders of
# float64's overflow, so data that start there are refused before any work.
MAX_MAGNITUDE = 1e150

# The most significant digits a user may ask a replay or a rank for.  The engine's own stages use
# at most 150 (verify.lie.rank.MAX_DIGITS); its step rules and tolerances are float64 numbers: at
# 250 digits the Taylor flow's order (about 290) overflowed the float64 norms of its
# coefficients (a 57-step control; fine at 200), at 1000 the tolerance 10^(3 - D) underflowed to
# 0, and at 100000 mpmath could not parse the decimal strings; each ended in a traceback.
MAX_DIGITS = 200


def numbers(x: Any, name: str) -> np.ndarray:
    """Nested lists of JSON numbers (int or float, not bool) or decimal strings (digits a float
    would lose) as a float64 array, or, where a decimal string is present, an object array of
    floats and those strings exactly as written; ragged lists and any other entry are refused
    by name."""
    try:
        a = np.array(x, dtype=object)
    except ValueError:
        raise InputError(f"{name}: nested lists are ragged; expected a rectangular array") from None
    if a.ndim == 0 or any(s == 0 for s in a.shape):
        return np.zeros(a.shape)  # empty: the shape check names the axis
    strings = False
    for v in a.ravel():
        if isinstance(v, list):
            raise InputError(f"{name}: nested lists are ragged; expected a rectangular array")
        if isinstance(v, str):
            decimal(v, name)
            strings = True
        elif isinstance(v, bool) or not isinstance(v, (int, float)):
            raise InputError(f"{name}: an entry {str(v)[:40]!r} is not a number; every entry must be a JSON number "
                             "or a decimal string")
    if strings:
        return np.vectorize(lambda v: v if isinstance(v, str) else float(v), otypes=[object])(a)
    return a.astype(float)


def _real_array(x: Any, name: str) -> np.ndarray:
    """x as a float64 array, refusing complex or non-numeric entries; an object array (numbers
    as written: floats, decimal strings, high-precision numbers) keeps its entries, each checked."""
    if isinstance(x, np.ndarray) and x.dtype == object:
        for idx, v in np.ndenumerate(x):
            _written(v, f"{name}: entry {idx}")
        return x
    try:
        raw = np.asarray(x)
        complex_entries = np.iscomplexobj(raw)  # float() would drop the imaginary parts with only a warning
        if not complex_entries and raw.dtype.kind not in "iuf":  # bool, strings, datetimes are not data
            raise InputError(f"{name}: entries of dtype {raw.dtype}; every entry must be a real number")
        a = None if complex_entries else raw.astype(float, copy=False)
    except (TypeError, ValueError) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{name}: not a rectangular array of real numbers ({exc})") from None
    if complex_entries:
        raise InputError(f"{name}: complex entries; every entry must be a real number")
    return a


def _written(v: Any, where: str) -> None:
    """One entry of a collection as written: a decimal string (:func:`verify.io.files.decimal`)
    or a real number (not a bool, not complex)."""
    if isinstance(v, str):
        decimal(v, where)
        return
    if isinstance(v, (bool, np.bool_, complex, np.complexfloating)):
        raise InputError(f"{where} is {str(v)[:40]}; every entry must be a real number or a decimal string")
    try:
        float(v)
    except (TypeError, ValueError, OverflowError):
        raise InputError(f"{where} is {str(v)[:40]!r}; every entry must be a real number or a decimal string") from None


def _finite(a: np.ndarray, name: str) -> None:
    ok = np.isfinite(a.astype(float)) if a.dtype == object else np.isfinite(a)
    if not np.all(ok):
        idx = tuple(int(i) for i in np.argwhere(~ok)[0])
        raise InputError(f"{name}: entry {idx} is {a[idx]}; every entry must be a finite number")


def collection(x: Any, name: str = "inputs") -> np.ndarray:
    """A collection of N sequences of n tokens in R^d: a finite (N, n, d) array."""
    a = _real_array(x, name)
    if a.ndim != 3:
        raise InputError(f"{name}: expected an array of shape (N, n, d), got shape {a.shape}")
    if 0 in a.shape:
        raise InputError(f"{name}: shape {a.shape} has an empty axis; N, n and d must be >= 1")
    _finite(a, name)
    big = float(np.max(np.abs(a.astype(float))))
    if big > MAX_MAGNITUDE:
        raise InputError(f"{name}: an entry of magnitude {big:.3g} exceeds {MAX_MAGNITUDE:g}, beyond which the engine "
                         "refuses states (their logits overflow float64); rescale the data")
    return a


def seed(value: Any, name: str = "seed") -> int:
    """A seed of ``numpy.random.default_rng``: a whole number >= 0.

    >>> seed(3)
    3
    >>> try:
    ...     seed(-1)
    ... except InputError as e:
    ...     print(e)
    seed must be a whole number >= 0, got -1
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        raise InputError(f"{name} must be a whole number >= 0, got {value!r}")
    return int(value)


def digits(value: Any, name: str = "dps") -> int:
    """A working precision in significant digits: a whole number from 1 to MAX_DIGITS.

    >>> try:
    ...     digits(1000)
    ... except InputError as e:
    ...     print(e)
    dps must be a whole number of digits from 1 to 200, got 1000
    """
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or not 1 <= value <= MAX_DIGITS:
        raise InputError(f"{name} must be a whole number of digits from 1 to {MAX_DIGITS}, got {value!r}")
    return int(value)


def matching(inputs: np.ndarray, targets: np.ndarray) -> None:
    """Inputs and targets must have the same (N, n, d)."""
    if inputs.shape != targets.shape:
        raise InputError(
            f"targets have shape {targets.shape} but inputs have shape {inputs.shape}; "
            "N, n and d must agree"
        )


def blocks(bs: Any, d: int | None = None) -> tuple[Any, Any]:
    """Exactly two attention blocks (objects with Q, K, V and beta, as
    :func:`verify.model.blocks.gaussian_blocks` returns) with finite d x d matrices (d from the
    data when given) and a finite beta."""
    try:
        pair = tuple(bs)
    except TypeError:
        raise InputError(f"blocks: expected two attention blocks (verify.gaussian_blocks), got {type(bs).__name__}") from None
    if len(pair) != 2:
        raise InputError(f"expected exactly two blocks, got {len(pair)}")
    if not all(all(hasattr(b, m) for m in ("Q", "K", "V", "beta")) for b in pair):
        raise InputError("blocks: each must have Q, K, V and beta (verify.Block, as verify.gaussian_blocks returns)")
    dd = np.shape(pair[0].Q)[0] if np.ndim(pair[0].Q) == 2 else -1
    for b, blk in enumerate(pair):
        for m in "QKV":
            matrix(getattr(blk, m), dd, f"block {b} {m}")
    if d is not None and dd != d:
        raise InputError(f"blocks are {dd} x {dd} but the tokens have dimension d = {d}")
    for b, blk in enumerate(pair):
        if not np.isfinite(float(blk.beta)):
            raise InputError(f"block {b}: beta must be a finite number, got {blk.beta}")
    return pair


def problem(bs: Any, X: Any, Y: Any = None) -> tuple[tuple[Any, Any], np.ndarray, np.ndarray | None]:
    """What the API's functions take: two blocks, inputs X (N, n, d) and, when given, targets Y
    of the same shape, every check of the command line (names as there: inputs, targets).

    >>> import numpy as np
    >>> from verify.model.blocks import gaussian_blocks
    >>> try:
    ...     problem(gaussian_blocks(0, 3), np.zeros((1, 2, 2)))
    ... except InputError as e:
    ...     print(e)
    blocks are 3 x 3 but the tokens have dimension d = 2
    """
    X = collection(X, "inputs")
    if Y is not None:
        Y = collection(Y, "targets")
        matching(X, Y)
    return blocks(bs, X.shape[2]), X, Y


def matrix(x: Any, d: int, name: str) -> np.ndarray:
    a = _real_array(x, name)
    if a.shape != (d, d):
        raise InputError(f"{name}: expected a {d} x {d} matrix, got shape {a.shape}")
    _finite(a, name)
    return a


def steps(pairs: Sequence[tuple[Any, Any]], what: str = "steps") -> list[tuple[int, Any]]:
    """A control or network: a list of (block index in {0, 1}, finite signed length)."""
    out = []
    for k, pair in enumerate(pairs):
        try:
            b, t = pair
        except (TypeError, ValueError):
            raise InputError(f"{what}[{k}]: expected a pair (block, length), got {pair!r}") from None
        if isinstance(b, bool) or b not in (0, 1):
            raise InputError(f"{what}[{k}]: unknown block index {b!r}; blocks are numbered 0 and 1")
        _written(t, f"{what}[{k}]: length")
        tv = float(t)
        if not np.isfinite(tv):
            raise InputError(f"{what}[{k}]: length {t} is not a finite number")
        out.append((int(b), t))
    return out
