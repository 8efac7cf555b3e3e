"""Attention blocks theta = (Q, K, V) and their Gaussian initialisation.

A block holds three d x d matrices and the attention settings that the theorems fix for both
blocks at once: the inverse temperature ``beta`` (logits l_ij = beta <Q x_i, K x_j>) and the
``causal`` flag (token i attends to j <= i only).

Gaussian initialisation draws the entries of Q_0, K_0, V_0, Q_1, K_1, V_1, in that order,
i.i.d. N(0, 1/d) from ``numpy.random.default_rng(seed)``, so the seed determines both blocks.

>>> b0, b1 = gaussian_blocks(seed=0, d=2)
>>> b0.Q.shape, b1.V.shape
((2, 2), (2, 2))
>>> bool((gaussian_blocks(0, 2)[1].K == b1.K).all())
True
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from verify.io import validate
from verify.io.errors import InputError

MAX_D = 1024  # token dimension of drawn blocks: 6 d^2 float64 numbers (48 MB at the limit)


@dataclass(frozen=True)
class Block:
    """One single-head attention block.  ``Q``, ``K``, ``V`` are (d, d) NumPy arrays, float64
    or (for high precision) object arrays of ``mpmath.mpf``."""

    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    beta: float = 1.0
    causal: bool = False
    name: str = field(default="", compare=False)
    exact: dict[str, Any] | None = field(default=None, compare=False, repr=False)

    def exact_entries(self, name: str) -> Any:
        """The exact numbers of ``Q``, ``K``, ``V`` (an object array) or ``beta``, as written where
        the block came from a file (decimal strings), else the binary64 numbers it holds; a
        written value is used only while the float field is still its rounding (a block copied
        with a matrix replaced falls back to the new one)."""
        value = getattr(self, name)
        written = (self.exact or {}).get(name)
        if written is not None:
            rounded = np.asarray(written, dtype=object).astype(float)
            if np.array_equal(rounded, np.asarray(value, dtype=float)):
                return written
        return np.asarray(value, dtype=float).astype(object) if name != "beta" else float(value)

    def in_arb(self) -> Block:
        """The block with Arb balls holding its exact entries (at the working precision of the
        enclosing :func:`verify.model.backend.precision`), for certificates."""
        return self.in_precision("arb")

    def in_precision(self, backend: str = "mpmath") -> Block:
        """The block with its entries as written in the high-precision namespace ``backend``
        ("mpmath": correctly rounded at the working precision of the enclosing
        :func:`verify.model.backend.precision`; "arb": balls that hold them), so that a decimal
        "1e-400" is not the 0.0 of the float field."""
        from verify.model.backend import namespace

        xp = namespace(backend)
        mats = {m: xp.asarray(self.exact_entries(m)) for m in "QKV"}
        beta = xp.asarray(np.array([self.exact_entries("beta")], dtype=object))[0]
        return Block(mats["Q"], mats["K"], mats["V"], beta=beta, causal=self.causal, name=self.name)

    @property
    def d(self) -> int:
        return int(self.Q.shape[0])

    def matrices(self) -> dict[str, np.ndarray]:
        return {"Q": self.Q, "K": self.K, "V": self.V}

    def with_matrices(self, **mats: Any) -> Block:
        """A copy with some of Q, K, V replaced (used for degenerate blocks)."""
        m = self.matrices() | mats
        return Block(m["Q"], m["K"], m["V"], self.beta, self.causal, self.name)


def gaussian_blocks(
    seed: int, d: int, *, beta: float = 1.0, causal: bool = False
) -> tuple[Block, Block]:
    """The two blocks of docs/conventions.md §1 drawn from ``default_rng(seed)`` with entries N(0, 1/d)."""
    if isinstance(d, bool) or not isinstance(d, (int, np.integer)) or not 1 <= d <= MAX_D:
        raise InputError(f"token dimension d must be a whole number from 1 to {MAX_D}, got {d!r}")
    if isinstance(beta, bool) or not isinstance(beta, (int, float, np.integer, np.floating)) or not np.isfinite(beta):
        raise InputError(f"beta must be a finite number, got {beta!r}")
    if not isinstance(causal, (bool, np.bool_)):
        raise InputError(f"causal must be True or False, got {causal!r}")
    rng = np.random.default_rng(validate.seed(seed, "the blocks' seed"))
    mats = rng.normal(0.0, 1.0 / np.sqrt(d), size=(2, 3, d, d))
    return tuple(  # type: ignore[return-value]
        Block(m[0], m[1], m[2], beta=beta, causal=causal, name=f"seed {seed}, block {b}")
        for b, m in enumerate(mats)
    )
