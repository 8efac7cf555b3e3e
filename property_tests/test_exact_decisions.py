"""Every decision that lowers the invariants' rank bound is made on the blocks' numbers as written.

"Block b has V = 0", "the two blocks are equal", "uniform attention" (beta = 0 or Q^T K = 0)
each lower the bound below the generic one (:func:`verify.lie.invariants.rank_bound`).  Made on
the binary64 numbers, with Q^T K formed in floating point, they gave CERTIFIED ranks whose bound
was not an upper bound (issue 65): V written 1e-400 (rounding to 0), blocks that differ in their
25th digit, beta written 1e-330, Q and K of size 1e-163 whose Q^T K underflows.  Here blocks are
written as decimals below, at and above the float range (a Hypothesis strategy), and the bound
must be the degenerate one exactly when the written numbers are degenerate.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from property_tests.conftest import examples
from verify.io.datafiles import blocks_from
from verify.io.errors import InputError
from verify.lie.admissibility import check_blocks_move
from verify.lie.invariants import rank_bound
from verify.lie.rank import analyse
from verify.model.blocks import gaussian_blocks

KINDS = ["V0 = 0", "V1 = 0", "equal blocks", "Q0 = 0", "Q1 = 0 and Q0 = 0", "beta = 0"]


def _document(seed: int, d: int, kind: str, tiny: str | None, beta: str | float = 1.0) -> dict:
    """Gaussian blocks made degenerate by ``kind``, written as decimals; with ``tiny`` (a decimal
    such as "3e-400") one entry of the degenerate part is that number instead of its exact value."""
    b0, b1 = gaussian_blocks(seed, d)
    mats = [{m: [[repr(float(v)) for v in row] for row in getattr(b, m)] for m in "QKV"} for b in (b0, b1)]
    zero = [["0"] * d for _ in range(d)]
    if kind == "V0 = 0":
        mats[0]["V"] = zero
    elif kind == "V1 = 0":
        mats[1]["V"] = zero
    elif kind == "Q0 = 0":
        mats[0]["Q"] = zero
    elif kind == "Q1 = 0 and Q0 = 0":
        mats[0]["Q"], mats[1]["Q"] = zero, [["0"] * d for _ in range(d)]
    elif kind == "equal blocks":
        mats[1] = {m: [row[:] for row in mats[0][m]] for m in "QKV"}
    if kind == "beta = 0":
        beta = "0" if tiny is None else tiny
    elif tiny is not None:
        target = {"V0 = 0": (0, "V"), "V1 = 0": (1, "V"), "Q0 = 0": (0, "Q"), "Q1 = 0 and Q0 = 0": (1, "Q"),
                  "equal blocks": (1, "K")}[kind]
        entry = mats[target[0]][target[1]][0]
        # a zero becomes tiny; an entry of an equal block gets tiny added in its digits
        entry[0] = tiny if entry[0] == "0" else _plus(entry[0], tiny)
    return {"attention": {"beta": beta}, "blocks": mats}


def _plus(written: str, tiny: str) -> str:
    """The decimal written + tiny, exactly, as a decimal string."""
    from decimal import Decimal, getcontext

    getcontext().prec = 1000
    return str(Decimal(written) + Decimal(tiny))


def _degenerate_bound(kind: str, X: np.ndarray) -> int:
    """The bound docs/conventions.md §3.2 gives for exactly degenerate blocks (an independent
    count: one field left is 1 direction; uniform attention in both blocks is d times the rank of
    the means; one uniform block with n = 2 is 1 + d per generic sequence)."""
    N, n, d = X.shape
    if kind in ("V0 = 0", "V1 = 0", "equal blocks"):
        return 1
    if kind in ("beta = 0", "Q1 = 0 and Q0 = 0"):
        return d * np.linalg.matrix_rank(X.mean(axis=1))
    return N * (1 + d) if n == 2 else N * n * d  # one uniform block: not sharp beyond n = 2, the generic bound


@settings(max_examples=examples(60, "exact rational bounds of small blocks"), deadline=None)
@given(seed=st.integers(0, 2**16), d=st.integers(1, 3), kind=st.sampled_from(KINDS),
       tiny=st.one_of(st.none(), st.builds(lambda c, e: f"{c}e{e}", st.integers(1, 9),
                                          st.sampled_from([-20, -25, -40, -200, -308, -320, -324, -330, -400, -1000,
                                                           -9999]))))
def test_the_bound_is_degenerate_exactly_when_the_written_blocks_are(seed, d, kind, tiny):
    # an entry of an equal block plus 1e-400 takes more than the 400 characters a decimal may have
    assume(not (kind == "equal blocks" and tiny is not None and int(tiny.split("e")[1]) < -380))
    X = np.random.default_rng(seed + 1).normal(size=(2, 2, d))
    blocks, _ = blocks_from(_document(seed, d, kind, tiny))
    got = rank_bound(X, blocks=blocks).value
    generic = rank_bound(X).value
    if tiny is None:
        assert got == _degenerate_bound(kind, X)
    elif kind == "Q1 = 0 and Q0 = 0":  # Q1 made nonzero: block 0 alone is uniform
        assert got == _degenerate_bound("Q0 = 0", X), (kind, tiny, got)
    else:  # one nonzero entry, however small, breaks the degeneracy of Gaussian blocks
        assert got == generic, (kind, tiny, got, generic)


@pytest.mark.parametrize("huge", ["1e309", "-2e400", "1e99999"])
def test_decimals_above_the_float_range_are_refused_by_name(huge):
    doc = _document(0, 2, "V0 = 0", None)
    doc["blocks"][0]["V"][0][0] = huge
    with pytest.raises(InputError, match=r"blocks\[0\]\.V.*(beyond float64's range|exponent)"):
        blocks_from(doc)


def test_the_cases_of_issue_65_are_not_certified_below_their_rank():
    """The five constructed cases: each bound is now the generic one, and the analysis never
    certifies a rank below it (CERTIFIED at the generic bound or UNDECIDED)."""
    X = np.random.default_rng(1).normal(size=(1, 2, 2))
    cases = [_document(0, 2, "V0 = 0", "3e-400"), _document(0, 2, "equal blocks", "1e-25")]
    for doc in cases:
        blocks, _ = blocks_from(doc)
        assert rank_bound(X, blocks=blocks).value == 4
        r = analyse(blocks, X, max_degree=6)
        assert r.bound == 4 and r.verdict in ("CERTIFIED", "UNDECIDED"), r.verdict
    X2 = np.random.default_rng(2).normal(size=(2, 2, 2))
    blocks, _ = blocks_from(_document(0, 2, "beta = 0", "1e-330"))
    assert rank_bound(X2, blocks=blocks).value == 8  # not d rank[means] = 4
    # Q, K of size 1e-163 with beta 1e308 on tokens of size 1e9: logits of order one, Q^T K = 1e-326
    b0, b1 = gaussian_blocks(0, 2)
    small = {"attention": {"beta": 1e308}, "blocks": [
        {m: (getattr(b, m) * (1e-163 if m in "QK" else 1.0)).tolist() for m in "QKV"} for b in (b0, b1)]}
    blocks, _ = blocks_from(small)
    assert float(np.abs(blocks[0].Q.T @ blocks[0].K).max()) == 0.0  # binary64 sees uniform attention ...
    assert rank_bound(1e9 * X, blocks=blocks).value == 4  # ... the exact rationals do not
    assert analyse(blocks, 1e9 * X, max_degree=6).verdict in ("CERTIFIED", "UNDECIDED")
    one = {"attention": {"beta": 1e308}, "blocks": [small["blocks"][0],
                                                    {m: getattr(b1, m).tolist() for m in "QKV"}]}
    blocks, _ = blocks_from(one)
    assert rank_bound(1e9 * X2, blocks=blocks).value == 8  # not the one-uniform-block bound 6
    with pytest.raises(InputError, match="overflow float64"):  # block 1's logits are 1e326: one line, not a traceback
        analyse(blocks, 1e9 * X2, max_degree=6)


def test_blocks_that_are_not_zero_as_written_are_not_told_to_stand_still():
    blocks, _ = blocks_from(_document(0, 2, "V0 = 0", "1e-400") | {"blocks": [
        _document(0, 2, "V0 = 0", "1e-400")["blocks"][0], _document(0, 2, "V1 = 0", None)["blocks"][1]]})
    X = np.random.default_rng(0).normal(size=(1, 2, 2))
    check_blocks_move(blocks, X, 2 * X)  # V_0 is 1e-400, not 0: nothing refused
    zero, _ = blocks_from(_document(0, 2, "V0 = 0", None) | {"blocks": [
        _document(0, 2, "V0 = 0", None)["blocks"][0], _document(0, 2, "V1 = 0", None)["blocks"][1]]})
    with pytest.raises(InputError, match="V = 0"):
        check_blocks_move(zero, X, 2 * X)
