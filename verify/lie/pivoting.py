"""Choosing m columns of a matrix by pivoted QR, with the same choice on every machine.

The existence proofs free the steps whose columns of the end point's derivative are the best
conditioned, and the rank certificate proves the minor whose columns (and rows) are; both
choices reach printed output.  LAPACK's pivoted QR takes, at each step, the column of largest
remaining norm, with the norms downdated in an order that depends on the BLAS kernel, so
where two columns' norms agree to their last bits (they often do: a control's steps of one
block have similar columns) another x86 kernel picked other columns (issue 65: the README's
freed steps [1, 2, 9, 19] became [0, 3, 9, 13] on an AVX2 machine and [1, 2, 15, 23] under
``OPENBLAS_CORETYPE=Sandybridge``).

Here every step recomputes the remaining norms (Gram-Schmidt, each new direction
re-orthogonalised once against those before it), and among the columns whose norm is at least
(1 - MARGIN) times the largest it takes the one of **lowest index**.  A kernel changes a norm
by a relative 1e-16 times the matrix's condition, far below MARGIN, so the choice changes only
where a ratio of norms lies within that noise of 1 - MARGIN exactly; ties, the common case,
are broken by the index.  A column within 1 % of the largest is as good a pivot: over m steps
the chosen minor's volume is at least 0.99^m of the greedy one's.

>>> import numpy as np
>>> A = np.array([[1.0, 1.0, 0.0], [0.0, 1e-17, 1.0]])   # columns 0 and 1 tie to the last bit
>>> select_columns(A, 2)
[0, 2]
"""

from __future__ import annotations

import numpy as np

MARGIN = 0.01  # columns within this share of the largest remaining norm tie; the lowest index wins


def select_columns(M: np.ndarray, m: int) -> list[int]:
    """m column indices of M (sorted), chosen by pivoted Gram-Schmidt with ties within MARGIN
    broken by the lowest index (module docstring); fewer where the rest of M vanishes.  M is
    first scaled by a power of 2 to a largest entry near 1 (exactly, and no choice changes), so
    that squared norms neither underflow (entries of 1e-200) nor overflow."""
    A = np.array(M, dtype=float, copy=True)
    big = float(np.max(np.abs(A), initial=0.0))
    if not (big > 0 and np.isfinite(big)):
        return []
    A = np.ldexp(A, -np.frexp(big)[1])
    available = np.ones(A.shape[1], dtype=bool)
    basis: list[np.ndarray] = []
    chosen: list[int] = []
    while len(chosen) < m and available.any():
        norms = np.where(available, np.sqrt(np.einsum("ij,ij->j", A, A)), -1.0)
        best = norms.max()
        if not best > 0:
            break
        j = int(np.flatnonzero(norms >= (1 - MARGIN) * best)[0])
        available[j] = False
        q = A[:, j] / norms[j]
        for b in basis:  # once more against the earlier directions: Gram-Schmidt loses orthogonality
            q -= b * (b @ q)
        size = np.linalg.norm(q)
        if not size > 0:  # in the span of those chosen, to the last bit: no new direction
            continue
        q /= size
        A -= np.outer(q, q @ A)
        basis.append(q)
        chosen.append(j)
    return sorted(chosen)
