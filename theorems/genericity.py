"""Genericity of the bracket condition: certified ranks over shapes and Gaussian draws.

The theorems hold for *almost every* draw of the two blocks, through the bracket condition: the
Hall brackets of F_0, F_1 span what the invariants allow, at the inputs (T1, T2), and under
causal masking the causal rank, with V_0, V_1 generating gl(d) (T3).  One draw at one shape is
evidence on one instance; this measures the condition over many.  Each draw is its own check
(its name carries the kind, the draw and the shape: ``[draw 3, N=2,n=4,d=4]``), proved as in
:func:`theorems.witnesses.rank_checks` (an Arb minor, at most the bound by the invariants) or
exactly over Q (gl(d)); a draw not proved within the profile's ``seconds`` is reported as
such (the check fails), never dropped.  The summary and the appendix aggregate the draws per
(kind, shape) (:func:`verify.reporting.results.genericity_rows`).

Kinds: "rank" (inputs i.i.d. N(0, 1), blocks drawn with them), "causal" (the same, causal
blocks), "gl" (V_0, V_1 of d x d blocks), and the necessity kinds at a shape (N, n, d) whose
rank is below m by the invariants: "coincident" (a repeated token), "permuted" (a sequence
and its reversal), "negated" (a sequence and its negative), "odd" (a sequence {a, -a, b, -b, ...}, minus a permutation of itself).
Draw i of a kind and shape: ``indexed_rng(seed, i, "genericity", kind, N, n, d)`` gives the
blocks' seed and then the data.

Every draw is a sweep unit (:func:`units`), so the paper profile's grid runs on a Dask cluster
and resumes from a journal; the seconds of each go to the report's timings, not to its rows.

>>> [check] = unit("rank", (1, 2, 2), 0, seed=0, seconds=60.0)
>>> check["name"], check["passed"], check["details"]["genericity"]
("bracket rank equals the invariants' bound 4 of 4 [draw 1, N=1,n=2,d=2]", True, {'kind': 'rank', 'shape': [1, 2, 2], 'draw': 0})
"""

from __future__ import annotations

from typing import Any

import numpy as np

from verify.model.blocks import gaussian_blocks
from verify.sweep.unit import Unit

from .instances import indexed_rng
from .witnesses import gl_check, rank_checks

NAME = "genericity"
TITLE = "Genericity of the bracket condition"
STATEMENT = ("For almost every draw of the two blocks from the Gaussian initialisation and almost every collection "
             "X, the Hall brackets of F_0, F_1 at X span the dimension the invariants allow (T1, T2); under causal "
             "masking the causal rank is the formula's, and V_0, V_1 generate gl(d) (T3).")
LATEX = (r"For almost every draw of $\theta_0,\theta_1$ from the Gaussian initialisation and almost every "
         r"$X\in(\mathbb{R}^{d})^{N\times n}$, the iterated Lie brackets of $F_{\theta_0},F_{\theta_1}$ at $X$ span "
         r"the dimension allowed by the invariants; under causal masking the causal rank is attained, and "
         r"$V_0,V_1$ generate $\mathfrak{gl}(d)$.")
HYPOTHESES = [
    "blocks: Q, K, V with i.i.d. N(0, 1/d) entries, drawn afresh for every draw",
    "data: i.i.d. N(0, 1) entries, drawn with the blocks; the necessity kinds add one relation (a repeated token, a "
    "reversed or negated copy of a sequence, an odd sequence)",
]
KINDS = ("rank", "causal", "gl", "coincident", "permuted", "negated", "odd")

# (kind, shape): gl takes (1, 1, d); seconds: a draw not proved within them fails (a safety cap above the
# measured cost: 35-45 s a draw at m = 128 (4, 4, 8), 268 s at m = 256 (4, 8, 8), docs/theorems.md 2026-12-07)
PROFILES = {
    "quick": {"draws": 2, "seconds": 120.0, "grid": [("rank", (2, 2, 2)), ("causal", (2, 2, 2)), ("gl", (1, 1, 2))]},
    "standard": {"draws": 10, "seconds": 300.0, "grid": [("rank", (2, 4, 4))]},
    "paper": {"draws": 10, "seconds": 600.0, "grid": [
        ("rank", (2, 2, 2)), ("rank", (1, 4, 4)), ("rank", (2, 4, 2)), ("rank", (2, 4, 4)), ("rank", (4, 2, 4)),
        ("rank", (2, 4, 8)), ("rank", (4, 4, 4)), ("rank", (4, 4, 8)), ("rank", (4, 8, 8)),
        ("causal", (2, 2, 2)), ("causal", (3, 3, 2)), ("causal", (2, 4, 4)), ("causal", (4, 4, 4)),
        ("gl", (1, 1, 2)), ("gl", (1, 1, 4)), ("gl", (1, 1, 8)),
        ("coincident", (2, 4, 4)), ("permuted", (2, 4, 4)), ("negated", (2, 4, 4)), ("odd", (2, 4, 4))]},
}


def draw(kind: str, shape: tuple[int, int, int], index: int, seed: int) -> tuple[Any, np.ndarray]:
    """The blocks and the collection of draw ``index`` (module docstring)."""
    N, n, d = shape
    g = indexed_rng(seed, index, "genericity", kind, N, n, d)
    blocks = gaussian_blocks(int(g.integers(2**31)), d, causal=kind == "causal")
    X = g.normal(size=shape)
    if kind == "coincident":
        X[0, -1] = X[0, 0]
    elif kind == "permuted":
        X = np.concatenate([X, X[:1, ::-1]], axis=0)
    elif kind == "negated":
        X = np.concatenate([X, -X[:1]], axis=0)
    elif kind == "odd":  # {a, -a, b, -b, ...} (and 0 for odd n): minus a permutation of itself
        X[0, 1::2] = -X[0, 0:n - n % 2:2]
        if n % 2:
            X[0, -1] = 0.0
    return blocks, X


def unit(kind: str, shape: list[int] | tuple[int, int, int], index: int, seed: int, seconds: float) -> list[dict[str, Any]]:
    """Draw ``index`` of a kind and shape, proved (a sweep unit: a pure function of its arguments,
    the deadline aside): its one check as a dict, the details marked with ``genericity``."""
    shape = tuple(int(x) for x in shape)
    N, n, d = shape
    blocks, X = draw(kind, shape, index, seed)
    label = f"{'' if kind in ('rank', 'gl') else kind + ', '}draw {index + 1}, " + (
        f"d={d}" if kind == "gl" else f"N={N},n={n},d={d}")
    c = gl_check(blocks, label) if kind == "gl" else rank_checks(label, blocks, X, seconds)[0]
    c.details.pop("sigma_by_degree", None)  # the figure's, for the theorems' own instances; here it would be most of the file
    c.details["genericity"] = {"kind": kind, "shape": list(shape), "draw": index}
    return [c.as_dict()]


def units(profile: str, seed: int) -> list[Unit]:
    """The profile's draws as sweep units, (kind, shape) by (kind, shape)."""
    p = PROFILES[profile]
    return [Unit(task=f"{__name__}:unit", params={"kind": kind, "shape": list(shape), "index": i, "seed": seed,
                                                  "seconds": p["seconds"]},
                 weight=float(np.prod(shape)) ** 2 / 300)  # for the time left only: measured 0.1 s at m = 8, 40 s at 128
            for kind, shape in p["grid"] for i in range(p["draws"])]



def lost(params: dict[str, Any]) -> str:
    """The label of a draw whose unit failed in the sweep."""
    N, n, d = params["shape"]
    return f"{params['kind']}, draw {params['index'] + 1}, N={N},n={n},d={d}"


def lost_details(params: dict[str, Any]) -> dict[str, Any]:
    """The details of that draw's failing check, so that the tables count it."""
    return {"genericity": {"kind": params["kind"], "shape": list(params["shape"]), "draw": params["index"]}}
