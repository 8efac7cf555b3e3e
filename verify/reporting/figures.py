"""The appendix's figures, drawn with matplotlib (Agg, no display) from a theorem report.

Each function takes the report (``verification-report/2``) and returns a matplotlib figure, or
None when the report lacks the data (for instance no solver success to draw); :func:`write`
saves every available figure as PDF and PNG with fixed metadata (no creation date), so a rerun
gives identical files, and returns the file stems with their captions (seeds and settings
stated).

* ``trajectories`` -- token paths of the T1 control (d = 2), inputs (circles) to targets (crosses);
* ``singular_values`` -- singular values of the degree-scaled bracket matrix on the T1 inputs,
  columns of degree <= k, against k;
* ``discretisation`` -- T2: measured Euler error and the derived bound against h (log-log),
  with the fitted order;
* ``reach`` -- solver success rate and median work (Jacobians) of the solved instances against
  N n d, per depth, from the report's reach rows (work, not seconds: the figure must not change
  between two runs).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from verify.io.errors import InputError
from verify.io.files import replace_file


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _check(doc: dict[str, Any], theorem: str, *keys: str) -> dict[str, Any] | None:
    """The first check of ``theorem`` whose details hold every one of ``keys`` (the data the
    figure draws; a check's name is for people and may change)."""
    for t in doc["theorems"]:
        if t["name"] == theorem:
            for c in t["checks"]:
                if isinstance(c.get("details"), dict) and all(k in c["details"] for k in keys):
                    return c
    return None


def trajectories(doc: dict[str, Any]):
    c = _check(doc, "two_block", "trajectory")
    if c is None:
        return None
    T = np.asarray(c["details"]["trajectory"], dtype=float)  # (samples, N, n, 2)
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.5, 4.0))
    for s in range(T.shape[1]):
        for i in range(T.shape[2]):
            line, = ax.plot(T[:, s, i, 0], T[:, s, i, 1], lw=0.9)
            ax.plot(*T[0, s, i], "o", color=line.get_color(), ms=5)
            ax.plot(*T[-1, s, i], "x", color=line.get_color(), ms=7)
    ax.set_xlabel("$x_1$")
    ax.set_ylabel("$x_2$")
    ax.set_title("token trajectories of the constructed control")
    fig.tight_layout()
    return fig


def singular_values(doc: dict[str, Any]):
    c = _check(doc, "two_block", "sigma_by_degree", "sigma_min")  # the first: the inputs' rank check
    if c is None:
        return None
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    for k, sig in c["details"]["sigma_by_degree"].items():
        sig = np.maximum(np.asarray(sig, dtype=float), 1e-300)
        ax.semilogy([int(k)] * len(sig), sig, "_", ms=12, color="C0")
    ax.axhline(c["details"]["sigma_min"], color="C1", lw=0.8, ls="--", label="reported $\\sigma_{\\min}$")
    ax.set_xticks([int(k) for k in c["details"]["sigma_by_degree"]])
    ax.set_xlabel("largest bracket degree $k$")
    ax.set_ylabel("singular values (scaled columns)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def discretisation(doc: dict[str, Any]):
    c = _check(doc, "finite_depth", "h", "errors", "bounds", "order")
    if c is None:
        return None
    h, err, bound = (np.asarray(c["details"][k], dtype=float) for k in ("h", "errors", "bounds"))
    plt = _plt()
    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    ax.loglog(h, err, "o-", label=f"measured (fitted order {c['details']['order']:.3f})")
    ax.loglog(h, bound, "s--", label="derived bound")
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.set_xlabel("layer step $h$")
    ax.set_ylabel("max |network - flow|")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def reach(doc: dict[str, Any]):
    rows = doc.get("reach")
    if not rows:
        return None
    plt = _plt()
    fig, (a, b) = plt.subplots(1, 2, figsize=(7.5, 3.2))
    for depth, marker in (("finite", "o"), ("continuous", "s")):
        sel = sorted((r for r in rows if r["depth"] == depth), key=lambda r: r["m"])
        a.plot([r["m"] for r in sel], [100 * r["success_rate"] for r in sel], marker=marker, label=f"{depth} depth")
        won = [r for r in sel if r["median_jacobians_solved"] is not None]
        b.plot([r["m"] for r in won], [r["median_jacobians_solved"] for r in won], marker=marker, ls="")
    sizes = sorted({r["m"] for r in rows})
    for ax in (a, b):
        ax.set_xscale("log", base=2)
        ax.set_xticks(sizes, [str(m) for m in sizes])
        ax.set_xlabel("$m = N n d$")
    a.set_ylim(-5, 105)
    a.set_ylabel("solved (%)")
    b.set_ylabel("median Jacobians (solved instances)")
    a.legend(fontsize=7)
    fig.tight_layout()
    return fig


FIGURES: dict[str, tuple[Callable[..., Any], str]] = {
    "fig-trajectories": (trajectories, "Token trajectories (d = 2) of the control constructed for T1 on the "
                                       "seeded instance; circles: inputs, crosses: targets."),
    "fig-singular-values": (singular_values, "Singular values of the degree-scaled Lie-bracket matrix on the T1 "
                                             "inputs, using the Hall words of degree at most k."),
    "fig-discretisation": (discretisation, "T2: error of splitting a continuous control into layers of step h, "
                                           "against the derived bound; the fitted order is in the legend."),
    "fig-reach": (reach, "Solver reach on independent Gaussian targets (theorems.reach): share of instances "
                         "solved within the work budget, and the median number of Jacobians the solved ones "
                         "took, against m = N n d."),
}


def write(doc: dict[str, Any], directory: str | Path) -> list[tuple[str, str]]:
    """Save every figure the report has data for; returns (file stem, caption) pairs."""
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    plt = _plt()
    made = []
    for stem, (draw, caption) in FIGURES.items():
        try:
            fig = draw(doc)
        except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:  # a report edited by hand
            raise InputError(f"the report's data for {stem} is damaged ({type(exc).__name__}: {str(exc)[:80]}); "
                             "regenerate it with `verify run`") from None
        if fig is None:
            continue
        for suffix, options in ((".pdf", {"metadata": {"CreationDate": None, "ModDate": None}}),
                                (".png", {"dpi": 150, "metadata": {"Software": None}})):
            buf = io.BytesIO()  # savefig would follow a link at the path; replace_file replaces it
            fig.savefig(buf, format=suffix[1:], **options)
            replace_file(d / f"{stem}{suffix}", buf.getvalue())
        plt.close(fig)
        made.append((stem, f"{caption} Seed {doc['seed']}, {doc['profile']} profile."))
    return made
