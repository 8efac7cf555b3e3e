"""The appendix's figures, drawn with matplotlib (Agg, no display) from a theorem report.

Each function takes the report (``verification-report/2``) and returns a matplotlib figure, or
None when the report lacks the data (for instance no solver success to draw); :func:`write`
saves every available figure as PDF and PNG with fixed metadata (no creation date), so a rerun
gives identical files, and returns the file stems with their captions (seeds and settings
stated).

Figures are drawn WIDTH = 3.3 inches wide with FONT = 8 pt text, for one column of a paper at
natural size.

* ``trajectories`` -- token paths of the T1 control (d = 2), one panel per sequence, inputs
  (dots) to targets (squares), line style per token, with a legend;
* ``singular_values`` -- singular values of the degree-scaled bracket matrix on the T1 inputs,
  columns of degree <= k, against k; the m-th largest marked (m = N n d, the rank needed) and
  the float64 noise level drawn;
* ``discretisation`` -- T2: measured Euler error and the derived bound against h (log-log),
  with the fitted order;
* ``reach`` -- solver success rate and median work (Jacobians) of the solved instances against
  N n d, per depth, from the report's reach rows (work, not seconds: the figure must not change
  between two runs); drawn only when a depth has at least MIN_REACH_SIZES sizes (the standard
  profile's two say nothing the table does not);
* ``genericity`` -- over the genericity draws, the least and largest degree reaching the rank
  bound against m with the counting degree, and the smallest certified sigma_min (seconds are
  not drawn: the figure must not change between two runs).
"""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from verify.io.errors import InputError
from verify.io.files import replace_file
from verify.reporting.results import genericity_rows

WIDTH = 3.3  # inches: one column of a two-column paper; included at natural size, so fonts print at FONT pt
FONT = 8


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    plt.rcParams.update({"font.size": FONT, "axes.titlesize": FONT, "axes.labelsize": FONT, "legend.fontsize": FONT - 1,
                         "xtick.labelsize": FONT - 1, "ytick.labelsize": FONT - 1, "lines.linewidth": 1.0})
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


_STYLES = ("-", "--", ":", "-.")


def trajectories(doc: dict[str, Any]):
    """One panel per sequence (tokens by line style): a shared panel tangled 57 steps of every
    sequence together; inputs are filled dots drawn over the hollow target squares, so that an
    input near a target stays visible."""
    c = _check(doc, "two_block", "trajectory")
    if c is None:
        return None
    T = np.asarray(c["details"]["trajectory"], dtype=float)  # (samples, N, n, 2)
    plt = _plt()
    from matplotlib.lines import Line2D

    N = T.shape[1]
    fig, axes = plt.subplots(1, N, figsize=(WIDTH, 2.0 + 0.4 * (N == 1)), squeeze=False)  # each at its own scale
    for s, ax in enumerate(axes[0]):
        for i in range(T.shape[2]):
            ax.plot(T[:, s, i, 0], T[:, s, i, 1], color=f"C{s}", ls=_STYLES[i % len(_STYLES)], lw=1.0)
            ax.plot(*T[-1, s, i], "s", color=f"C{s}", ms=7, mfc="none", mew=1.0, zorder=4)
            ax.plot(*T[0, s, i], "o", color=f"C{s}", ms=4, mec="black", mew=0.5, zorder=5)
        ax.set_title(f"sequence {s + 1}")
        ax.set_xlabel("$x_1$")
    axes[0, 0].set_ylabel("$x_2$")
    handles = ([Line2D([], [], color="0.3", ls=_STYLES[i % len(_STYLES)], label=f"token {i + 1}")
                for i in range(T.shape[2])]
               + [Line2D([], [], ls="", marker="o", color="0.6", mec="black", mew=0.5, label="input"),
                  Line2D([], [], ls="", marker="s", mfc="none", color="0.3", label="target")])
    fig.legend(handles=handles, loc="lower center", ncol=len(handles), frameon=False, handlelength=1.6,
               columnspacing=0.8, handletextpad=0.4)
    fig.tight_layout(pad=0.3, w_pad=1.2, rect=(0, 0.1, 1, 1))
    return fig


def singular_values(doc: dict[str, Any]):
    c = _check(doc, "two_block", "sigma_by_degree", "sigma_min", "rank_bound")  # the first: the inputs' rank check
    if c is None:
        return None
    info = c["details"]
    m = int(info["rank_bound"])
    plt = _plt()
    fig, ax = plt.subplots(figsize=(WIDTH, 2.6))
    degrees = [int(k) for k in info["sigma_by_degree"]]
    labelled = False
    for k, sig in zip(degrees, info["sigma_by_degree"].values(), strict=True):
        sig = np.maximum(np.sort(np.asarray(sig, dtype=float))[::-1], 1e-300)
        ax.semilogy([k] * len(sig), sig, "_", ms=10, color="0.5")
        if len(sig) >= m:  # the m-th largest: it must clear the noise for the rank m = N n d
            ax.semilogy([k], [sig[m - 1]], "o", color="C0", ms=5, label=None if labelled else f"{m}th largest (rank {m} needed)")
            labelled = True
    noise = info.get("noise_level")
    if isinstance(noise, (int, float)) and noise > 0:
        ax.axhline(noise, color="C3", lw=0.8, ls="--", label="float64 noise level")
    ax.set_xticks(degrees)
    ax.set_xlabel("largest bracket degree $k$")
    ax.set_ylabel("singular values")
    ax.legend(loc="center left", frameon=False)  # the decades between the values and the noise are empty
    fig.tight_layout(pad=0.3)
    return fig


def discretisation(doc: dict[str, Any]):
    c = _check(doc, "finite_depth", "h", "errors", "bounds", "order")
    if c is None:
        return None
    h, err, bound = (np.asarray(c["details"][k], dtype=float) for k in ("h", "errors", "bounds"))
    plt = _plt()
    fig, ax = plt.subplots(figsize=(WIDTH, 2.6))
    ax.loglog(h, bound, "s--", color="C1", ms=4, label="derived bound")
    ax.loglog(h, err, "o-", color="C0", ms=4, label=f"measured (fitted order {c['details']['order']:.3f})")
    from matplotlib.ticker import FuncFormatter, LogLocator

    def sci(v: float, _: Any) -> str:  # 2 x 10^-3, every tick labelled
        e = int(np.floor(np.log10(v) + 1e-9))
        mant = round(v / 10.0**e)
        return f"$10^{{{e}}}$" if mant == 1 else f"${mant}\\times 10^{{{e}}}$"

    ax.xaxis.set_major_locator(LogLocator(subs=(1.0, 2.0, 5.0)))  # the steps span about one decade: one tick said nothing
    ax.xaxis.set_major_formatter(FuncFormatter(sci))
    ax.xaxis.set_minor_formatter(plt.NullFormatter())
    ax.set_xlabel("layer step $h$")
    ax.set_ylabel("max |network $-$ flow|")
    ax.legend(frameon=False)
    fig.tight_layout(pad=0.3)
    return fig


MIN_REACH_SIZES = 3  # fewer sizes per depth say nothing a figure adds to the table


def reach(doc: dict[str, Any]):
    rows = doc.get("reach") or []
    depths = [dep for dep in ("finite", "continuous") if len({r["m"] for r in rows if r["depth"] == dep}) >= MIN_REACH_SIZES]
    if not depths:
        return None
    plt = _plt()
    fig, (a, b) = plt.subplots(2, 1, figsize=(WIDTH, 3.8), sharex=True)
    for depth, marker in (("finite", "o"), ("continuous", "s")):
        if depth not in depths:
            continue
        sel = sorted((r for r in rows if r["depth"] == depth), key=lambda r: r["m"])
        a.plot([r["m"] for r in sel], [100 * r["success_rate"] for r in sel], marker=marker, label=f"{depth} depth")
        won = [r for r in sel if r["median_jacobians_solved"] is not None]
        b.plot([r["m"] for r in won], [r["median_jacobians_solved"] for r in won], marker=marker, label=f"{depth} depth")
    a.set_ylim(-5, 105)
    return _against_m(fig, a, b, sorted({r["m"] for r in rows}), "solved (%)", "median Jacobians\n(solved instances)")


def _against_m(fig: Any, a: Any, b: Any, sizes: list[int], top: str, bottom: str) -> Any:
    """Two panels over a shared axis of sizes m (log 2, ticked at ``sizes`` apart from those a
    label would overlap: 18 beside 16), labelled, with legends."""
    ticks: list[int] = []
    for m in sizes:
        if not ticks or np.log2(m / ticks[-1]) >= 0.3:
            ticks.append(m)
    b.set_xscale("log", base=2)
    b.set_xticks(ticks, [str(m) for m in ticks])
    b.set_xlabel("$m = N n d$")
    a.set_ylabel(top)
    b.set_ylabel(bottom)
    for ax in (a, b):
        ax.legend(frameon=False)
    fig.tight_layout(pad=0.3)
    return fig


def genericity(doc: dict[str, Any]):
    rows = [r for t in doc["theorems"] for r in genericity_rows(t["checks"])
            if r["kind"] in ("rank", "causal") and r["degrees"] and len(r["m"]) == 1]
    if len({r["m"][0] for r in rows}) < MIN_REACH_SIZES:
        return None
    plt = _plt()
    fig, (a, b) = plt.subplots(2, 1, figsize=(WIDTH, 3.8), sharex=True)
    for kind, marker, shift in (("rank", "o", 0.97), ("causal", "s", 1.03)):  # side by side where m is shared
        sel = sorted((r for r in rows if r["kind"] == kind), key=lambda r: r["m"][0])
        if not sel:
            continue
        m = np.array([r["m"][0] for r in sel], dtype=float) * shift
        lo, hi = np.array([r["degrees"] for r in sel], dtype=float).T
        a.errorbar(m, (lo + hi) / 2, yerr=(hi - lo) / 2, fmt=marker, capsize=2, label=f"{kind}: least to largest")
        low = [(x, r["sigma_min_lower"]) for x, r in zip(m, sel, strict=True) if r["sigma_min_lower"]]
        if low:
            b.plot(*zip(*low, strict=True), marker=marker, linestyle="none", label=kind)
    counting = sorted({(r["m"][0], c) for r in rows for c in r["counting"]})
    if counting:
        a.plot(*zip(*counting, strict=True), color="0.5", linestyle="--", marker="_", label="counting degree")
    b.set_yscale("log")
    return _against_m(fig, a, b, sorted({r["m"][0] for r in rows}), "degree reaching\nthe bound",
                      "smallest certified\n$\\sigma_{\\min}$ lower bound")


FIGURES: dict[str, tuple[Callable[..., Any], str]] = {
    "fig-trajectories": (trajectories, "Every token moves from its input (dot) to its target (square) under the "
                                       "control constructed for T1, one panel per sequence; line styles are tokens."),
    "fig-singular-values": (singular_values, "Singular values of the degree-scaled Lie-bracket matrix on the T1 "
                                             "inputs, using the brackets of degree at most k: the rank m = N n d "
                                             "is reached where the m-th largest (dots) clears the float64 noise "
                                             "level (dashed), and the table's certificate proves it."),
    "fig-discretisation": (discretisation, "T2: the error of splitting a continuous control into layers of step h "
                                           "stays below the derived bound at every h and falls like h (fitted "
                                           "order in the legend)."),
    "fig-reach": (reach, "Solver reach on independent Gaussian targets against the size m = N n d: the share of "
                         "instances solved within the work budget (top) and the median work the solved ones took "
                         "(bottom), per depth."),
    "fig-genericity": (genericity, "Genericity draws: the least and largest degree at which the brackets reached "
                                   "the invariants' bound (top; the counting degree dashed) and the smallest certified "
                                   "lower bound of the scaled sigma_min (bottom), per size m = N n d, over the "
                                   "draws of each shape."),
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
        made.append((stem, f"{caption} Seed {doc['seed']}."))
    return made
