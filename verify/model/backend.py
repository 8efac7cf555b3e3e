"""Array backends: which array namespace a computation runs in.

The engine's array code is written against the Python array API standard, so the same
functions run on

* ``numpy`` float64 (the default, through ``array_api_compat.numpy``),
* ``array-api-strict`` (a deliberately minimal namespace used in the tests to make sure no
  NumPy-only function slips in, which is what keeps the GPU path honest without a GPU),
* ``cupy`` (optional; imported only when asked for, never required),
* ``arb``: object arrays of python-flint ``arb`` balls (midpoint-radius intervals whose every
  operation encloses its rounding error), used for certificates only.
* ``fball``: float64 midpoint-radius balls (:mod:`verify.model.float_balls`), rigorous like
  ``arb`` but at float64's width and NumPy's speed, for the parts of a certificate that only
  bound remainders or enclose derivatives.
* ``mpmath``: arbitrary precision.  NumPy object arrays whose entries are MPFR numbers
  (``gmpy2.mpfr``, correctly rounded, about ten times faster than ``mpmath.mpf`` as array
  elements) or, as ``mpmath-pure``, ``mpmath.mpf`` numbers; the working precision is the one of
  the enclosing :func:`precision` context.  NumPy does the loops; only the functions it cannot
  apply to such objects (``exp``, ``abs``, ``isfinite``) are replaced.

>>> xp = namespace("numpy")
>>> float(xp.sum(xp.asarray([1.0, 2.0])))
3.0
>>> mp = namespace("mpmath-pure")
>>> with precision(30):
...     x = mp.exp(mp.asarray([1.0]))
>>> mpmath.nstr(x[0], 20)
'2.7182818284590452354'
"""

from __future__ import annotations

import math
import types
from collections.abc import Iterator
from contextlib import contextmanager
from fractions import Fraction
from typing import Any

import mpmath
import numpy as np

from verify.io.errors import InputError
from verify.model import float_balls

UNIT = 2.0**-52  # float64's machine epsilon: the suite's rounding unit (twice the unit roundoff 2^-53, on the safe side)
BACKENDS = ("numpy", "array-api-strict", "cupy", "mpmath", "mpmath-pure", "arb", "fball")

try:  # gmpy2's MPFR numbers are ~10x faster than mpmath.mpf as array elements
    import gmpy2
except ImportError:  # pragma: no cover - gmpy2 is a declared dependency
    gmpy2 = None


def round_up(x: Any) -> float:
    """The float above float(x): a float64 upper bound of a value already rounded to nearest
    (an Arb ball's upper end), so that a bound written as a float never understates it."""
    return float(np.nextafter(float(x), np.inf))


def round_down(x: Any) -> float:
    """The float below float(x): a float64 lower bound, as :func:`round_up` is an upper one."""
    return float(np.nextafter(float(x), -np.inf))


@contextmanager
def precision(dps: int) -> Iterator[None]:
    """Scoped working precision of ``dps`` significant digits for mpmath, gmpy2 and Arb."""
    import flint

    bits = math.ceil(dps * math.log2(10)) + 8
    with mpmath.workdps(dps), flint.ctx.workprec(bits):
        if gmpy2 is None:
            yield
        else:
            with gmpy2.context(gmpy2.get_context(), precision=bits):
                yield


def _to_mpfr(v: Any) -> Any:
    if isinstance(v, mpmath.mpf):
        return gmpy2.mpfr(mpmath.nstr(v, mpmath.mp.dps + 5))
    if isinstance(v, Fraction):  # correctly rounded, as a decimal string is
        return gmpy2.mpfr(v.numerator) / v.denominator
    return gmpy2.mpfr(v)


def _to_mpf(v: Any) -> Any:
    if gmpy2 is not None and isinstance(v, gmpy2.mpfr):
        return mpmath.mpf(v.as_integer_ratio()[0]) / v.as_integer_ratio()[1]
    if isinstance(v, Fraction):
        return mpmath.mpf(v.numerator) / v.denominator
    return mpmath.mpf(v)


def _to_arb(v: Any) -> Any:
    """A ball that contains the exact value of v: binary floats and integers exactly, rationals
    and decimal strings rounded outward at the working precision, balls as they are."""
    import flint

    if isinstance(v, flint.arb):
        return v
    if isinstance(v, (float, int, np.floating, np.integer)) and not isinstance(v, bool):
        return flint.arb(float(v)) if isinstance(v, (float, np.floating)) else flint.arb(int(v))
    if isinstance(v, Fraction):
        return flint.arb(flint.fmpq(v.numerator, v.denominator))
    return flint.arb(str(v))  # decimal strings (rounded outward by Arb)


def to_arb(v: Any) -> Any:
    """One number as an Arb ball containing its exact value (see :func:`_to_arb`)."""
    return _to_arb(v)


def _arb_exp(x: Any) -> Any:
    return x.exp()


def _arb_finite(x: Any) -> bool:
    return bool(x.is_finite())


def midpoints(x: Any) -> np.ndarray:
    """The midpoints of float64 balls, of an object array of Arb balls (rounded to nearest: floats,
    not enclosures) or of plain numbers, as a float64 array."""
    if hasattr(x, "m"):
        return x.m
    if isinstance(x, np.ndarray) and x.dtype == object:
        return np.vectorize(lambda a: float(a.mid()), otypes=[float])(x) if x.size else np.zeros(x.shape)
    return np.asarray(x, dtype=float)


def _arb_max(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    """Largest midpoint, as an exact ball.  Used only as a shift (softmax is exactly invariant
    under any shift of a row), so no enclosure depends on it being the true maximum."""
    return np.vectorize(_to_arb, otypes=[object])(np.max(midpoints(x), axis=axis, keepdims=keepdims))


def _hp_namespace(kind: str) -> types.SimpleNamespace:
    """Object arrays of gmpy2.mpfr (``mpfr``), mpmath.mpf (``mpf``) or flint.arb (``arb``)."""
    if kind == "mpfr" and gmpy2 is None:
        kind = "mpf"
    elem = np.vectorize({"mpfr": _to_mpfr, "mpf": _to_mpf, "arb": _to_arb}[kind], otypes=[object])
    exp, finite = {
        "mpfr": (getattr(gmpy2, "exp", None), getattr(gmpy2, "is_finite", None)),
        "mpf": (mpmath.exp, mpmath.isfinite),
        "arb": (_arb_exp, _arb_finite),
    }[kind]
    vec_exp = np.vectorize(exp, otypes=[object])
    vec_abs = np.vectorize(abs, otypes=[object])
    vec_finite = np.vectorize(finite, otypes=[bool])

    def asarray(x: Any, dtype: Any = None, copy: Any = None) -> np.ndarray:
        a = np.asarray(x, dtype=object)
        return elem(a) if a.size else a

    zero = elem(np.asarray(0.0, dtype=object))[()]

    def zeros(shape: Any, dtype: Any = None) -> np.ndarray:
        """One shared zero (the elements are immutable numbers), not a conversion per entry:
        the zeros of a Taylor series cost nothing per element."""
        return np.full(shape, zero, dtype=object)

    return types.SimpleNamespace(
        __name__="mpmath",
        high_precision=True,
        balls=kind == "arb",
        element=kind,
        asarray=asarray,
        zeros=zeros,
        eye=lambda n, dtype=None: asarray(np.eye(n)),
        exp=lambda x: vec_exp(x) if np.size(x) else x,
        abs=lambda x: vec_abs(x) if np.size(x) else x,
        isfinite=lambda x: vec_finite(x) if np.size(x) else np.ones(np.shape(x), bool),
        matmul=np.matmul,
        matrix_transpose=lambda x: np.swapaxes(x, -1, -2),
        permute_dims=np.transpose,
        reshape=np.reshape,
        stack=np.stack,
        sum=np.sum,
        max=_arb_max if kind == "arb" else np.max,
        where=np.where,
        expand_dims=np.expand_dims,
        broadcast_to=np.broadcast_to,
        all=np.all,
    )


_HP = {kind: _hp_namespace(kind) for kind in ("mpfr", "mpf", "arb")}


def namespace(name: str = "numpy") -> Any:
    """The array namespace called ``name`` (one of :data:`BACKENDS`)."""
    if name == "numpy":
        import array_api_compat.numpy as xp

        return xp
    if name == "array-api-strict":
        import array_api_strict as xp

        return xp
    if name == "cupy":
        try:
            import array_api_compat.cupy as xp  # optional GPU extra
        except ImportError as exc:
            raise InputError(
                "backend 'cupy' needs the optional GPU extra: pip install -e '.[gpu]'"
            ) from exc
        return xp
    if name in ("mpmath", "mpmath-pure", "arb"):
        return _HP[{"mpmath": "mpfr", "mpmath-pure": "mpf", "arb": "arb"}[name]]
    if name == "fball":
        return float_balls.namespace()
    raise InputError(f"unknown backend {name!r}; choose one of {', '.join(BACKENDS)}")


def namespace_of(x: Any) -> Any:
    """The namespace an array belongs to (object arrays mean high precision)."""
    if isinstance(x, float_balls.Balls):
        return namespace("fball")
    if isinstance(x, np.ndarray) and x.dtype == object:
        first = x.flat[0] if x.size else None
        if isinstance(first, mpmath.mpf) or gmpy2 is None:
            return _HP["mpf"]
        return _HP["arb" if type(first).__name__ == "arb" else "mpfr"]
    import array_api_compat

    return array_api_compat.array_namespace(x)


def like(x: Any, a: np.ndarray) -> Any:
    """The float64 array ``a`` in the namespace and precision of the NumPy array ``x``."""
    return namespace_of(x).asarray(a) if x.dtype == object else np.asarray(a, dtype=x.dtype)


def is_mp(xp: Any) -> bool:
    """True for the high-precision (object array) namespaces."""
    return getattr(xp, "high_precision", False)


def to_mpmath(x: Any) -> np.ndarray:
    """Object array of ``mpmath.mpf`` with the exact values of ``x`` (any backend)."""
    a = x if isinstance(x, np.ndarray) and x.dtype == object else to_numpy(x)
    return np.vectorize(_to_mpf, otypes=[object])(np.asarray(a, dtype=object)) if np.size(a) else np.asarray(a, dtype=object)


def to_numpy(x: Any) -> np.ndarray:
    """A float64 NumPy copy of an array from any backend (high-precision entries are rounded)."""
    if isinstance(x, np.ndarray):
        return x.astype(float)
    if hasattr(x, "get"):  # cupy
        return np.asarray(x.get(), dtype=float)
    return np.asarray(np.from_dlpack(x), dtype=float)
