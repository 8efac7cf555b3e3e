"""The degree scales of the bracket matrix's columns, by which both the rank analysis
(:mod:`verify.lie.rank`) and its Arb certificate (:mod:`verify.lie.certify`) divide.

Rank is invariant under nonzero column scaling, but what the arithmetic can see is not: each
column of degree k is divided by

    s_k = max(largest column norm of degree k, |F| L^(k-1)),

|F| the largest field entry and L the largest spectral norm of a per-sequence Jacobian of
either block: the size a degree-k bracket has before cancellation.  Scaling each column by its
own norm instead would blow a bracket that vanishes identically (and is computed as rounding
noise) up to a unit column, and fake a rank.  The scales are binary64 numbers; the certificate
divides by them exactly as written, so their last bits change no proof.

>>> import numpy as np
>>> from verify.lie.brackets import bracket_matrix
>>> from verify.lie.hall import basis, degree
>>> from verify.model.blocks import gaussian_blocks
>>> blocks, X = gaussian_blocks(0, 2), np.random.default_rng(1).normal(size=(1, 2, 2))
>>> M = bracket_matrix(blocks, X, 3)[0]
>>> s = degree_scales(blocks, X, M, np.array([degree(w) for w in basis(3)]))
>>> bool(np.all(np.linalg.norm(M / s, axis=0) <= 1.0))
True
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from verify.model.attention import field, jacobian
from verify.model.blocks import Block


def degree_scales(blocks: Sequence[Block], X: np.ndarray, M: Any, degrees: np.ndarray) -> np.ndarray:
    """The column scale s_k of each column of M (module docstring); ``degrees``: each column's."""
    F = max(float(np.abs(field(b, X)).max()) for b in blocks)
    J = [jacobian(b, X) for b in blocks]
    # logits that overflow float64 leave NaN in a Jacobian, whose SVD fails: an infinite scale, which the caller refuses
    L = max(float(np.linalg.norm(j, 2, axis=(1, 2)).max()) if np.all(np.isfinite(j)) else np.inf for j in J)
    norms = np.linalg.norm(np.asarray(M, dtype=float), axis=0)
    out = np.empty(len(degrees))
    for k in np.unique(degrees):
        sel = degrees == k
        out[sel] = max(norms[sel].max(), F * L ** (k - 1))
    return np.where(out > 0, out, 1.0)
