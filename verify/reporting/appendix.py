"""The LaTeX appendix rendered from a theorem report (``verification-report/2``).

``appendix.tex`` is meant to be ``\\input`` into a paper whose preamble has the line of
:data:`PREAMBLE`, one-column or two-column (tested in ``article``, ``article`` with
``twocolumn``, IEEEtran and revtex).  Figures are found through the macro
``\\VerifyAppendixDir``, which defaults to the directory the appendix was written to, relative
to where the writing command ran (``.`` when that is not below it: no path of the machine
reaches the paper); a paper elsewhere defines it first (``\\newcommand{\\VerifyAppendixDir}
{../reports/appendix}``), and ``\\VerifyCodeURL`` for the code's address.  Labels start with
``verify-`` so that they cannot clash with the paper's.  One numbered section (a letter under
``\\appendix``): a scope paragraph (:func:`verify.reporting.results.scope`), how to read the
checks, a reproducibility paragraph (command, seed, version, commit, address, citation); then
one numbered subsection per theorem with its statement (the report's LaTeX, when it is the
suite's own) and its checks as a numbered list (value rounded up, bound rounded down, verdict,
kind, and the note that says what the value is and where the bound comes from; each distinct
note once, right below), which breaks across columns and pages as a float cannot; the
genericity draws and the solver's reach as tables scaled down only where a column is narrower
than they are; the witnesses as a list naming their files; and the figures
(:mod:`verify.reporting.figures`, drawn 3.3 inches wide, set at most a column wide).
``standalone.tex`` wraps it in a minimal article that compiles on its own with pdflatex.
Rendering reads only the report, never recomputes, and ignores its ``timings``, so a rerun with
the same seed gives the same files.  Text from the report reaches LaTeX only through
:mod:`verify.reporting.latex`.

>>> doc = {"profile": "quick", "seed": 3, "passed": True, "theorems": [{"name": "two_block",
...        "title": "T_1 & more", "latex": "$x$", "passed": True, "checks": [{"name": "rank [N=1,n=2,d=2]",
...        "value": 0.0, "bound": 0.0, "passed": True, "certified": True, "origin": "exact", "quantity": "q"}]}]}
>>> tex = render(doc)
>>> "T\\\\_1 \\\\& more" in tex and "\\\\label{verify-two-block}" in tex
True
>>> print(next(line for line in tex.splitlines() if "rank [" in line))
\\item rank [$(N, n, d) = (1, 2, 2)$]: value $0$, bound $\\le 0$; pass, certified, note~1.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

from verify.io.files import replace_file
from verify.reporting.latex import escape, text
from verify.reporting.results import draws_only, kind_of, notes, scope, witness_table, yes_no
from verify.reporting.rounding import down, strict_below, up
from verify.reporting.summary import journal_line, selfcheck_line, shapes
from verify.version import CITATION, NAME, describe, provenance

FIGURE_STEMS = ("fig-trajectories", "fig-singular-values", "fig-discretisation", "fig-reach", "fig-genericity")  # figures.FIGURES
OUTPUTS = ("appendix.tex", "standalone.tex", *(f"{stem}{suffix}" for stem in FIGURE_STEMS for suffix in (".pdf", ".png")))
PREAMBLE = r"\usepackage{amsmath,amssymb,booktabs,graphicx,tabularx}"
_PATH = re.compile(r"[A-Za-z0-9._/+-]{1,300}")  # a directory LaTeX reads as a file name, unescaped

_NON_FINITE = {"inf": r"$\infty$", "-inf": r"$-\infty$", "nan": "NaN"}  # as report.plain writes them


def _number(x: Any, rounding: Callable[[float], str] | None = None) -> str:
    """A number as $m \\times 10^{e}$ to three digits (``rounding``: up or down, else nearest)."""
    if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x):
        if x == 0:
            return "$0$"
        mant, _, exp = (rounding(x) if rounding else f"{x:.2e}").partition("e")
        return f"${mant}\\times 10^{{{int(exp)}}}$"
    return _NON_FINITE.get(str(x), escape(x))


def _shown(c: dict[str, Any], key: str) -> str:
    """A value rounded up, a bound as $<1$ or $\\le$ rounded down, yes/no for a yes/no check."""
    word = yes_no(c, key)
    if word or key == "value":
        return word or _number(c[key], up)
    k = strict_below(c[key]) if isinstance(c[key], (int, float)) else None
    if k is not None:
        return f"$<{k}$"
    shown = _number(c[key], down)
    return f"$\\le {shown[1:]}" if shown.startswith("$") else shown


def _label(name: Any) -> str:
    return "verify-" + re.sub(r"[^A-Za-z0-9]+", "-", str(name)).strip("-").lower()


_FIT = [  # LaTeX helpers, defined once however often the appendix is input
    "\\ifdefined\\VerifyFitBox\\else\\newsavebox{\\VerifyFitBox}\\newlength{\\VerifyFigureWidth}\\fi",
    # a table wider than the column (a two-column class) is scaled to fit it, else set at its natural size
    "\\providecommand{\\VerifyFit}[1]{\\sbox{\\VerifyFitBox}{#1}\\ifdim\\wd\\VerifyFitBox>\\linewidth"
    "\\resizebox{\\linewidth}{!}{\\usebox{\\VerifyFitBox}}\\else\\usebox{\\VerifyFitBox}\\fi}",
]
_TIGHT = "\\setlength{\\itemsep}{1pt}\\setlength{\\parskip}{0pt}"  # list items as compact as table rows
_INSTANCE = re.compile(r"N=(\d+),n=(\d+),d=(\d+)(,?)")


def _name(name: Any) -> str:
    """A check's name with its instance typeset: ``N=2,n=2,d=2,causal`` as $(N, n, d) = (2, 2, 2)$, causal."""
    return text(_INSTANCE.sub(lambda m: f"$(N, n, d) = ({m[1]}, {m[2]}, {m[3]})${m[4] and ', '}", str(name)))


def _breakable(path: str) -> str:
    """A file name in typewriter type that may break after a slash or a hyphen (a column is narrow)."""
    return "\\texttt{" + re.sub(r"([/-])", r"\1\\allowbreak{}", escape(path)) + "}"


def _item(c: dict[str, Any], note: int) -> str:
    """One check as a list item: name; value and bound (or yes/no); verdict, kind and its note."""
    verdict = "pass" if c["passed"] else "\\textbf{FAIL}"
    word = yes_no(c)
    value = word or f"value {_shown(c, 'value')}, bound {_shown(c, 'bound')}"
    return f"\\item {_name(c['name'])}: {value}; {verdict}, {escape(kind_of(c))}, note~{note}."


def render(doc: dict[str, Any], figures: list[tuple[str, str]] = (), statements: dict[str, str] | None = None,
           directory: str = ".") -> str:
    """The body of appendix.tex; ``figures`` are (file stem, caption) pairs in ``directory``.

    Every string from the report goes through :func:`verify.reporting.latex.text`, except a
    theorem's LaTeX statement, which is written as LaTeX only when it is the one ``statements``
    (name -> LaTeX: the suite's own theorems) holds for that name; any other is escaped as text,
    so a report cannot smuggle commands such as ``\\input`` into the paper."""
    statements = statements or {}
    seed, profile = escape(doc["seed"]), escape(doc["profile"])
    here = directory if _PATH.fullmatch(directory) else "."
    code = describe(doc.get("code"))
    now = provenance()
    typeset = "" if not doc.get("code") or doc["code"] == now else f"; typeset by {describe(now)}"
    out = [
        "% Generated by `verify` from verification.json; do not edit by hand.",
        f"% Code: {NAME} {code}{typeset}.",
        f"% Profile {profile}, seed {seed}; verdict {'PASS' if doc['passed'] else 'FAIL'}.",
        f"% The paper's preamble needs: {PREAMBLE}",
        "% A paper in another directory than the one `verify` ran in first sets where the figures are,",
        "% and where the code can be found (printed in the reproducibility paragraph):",
        "%   \\newcommand{\\VerifyAppendixDir}{path/to/this/directory}",
        "%   \\newcommand{\\VerifyCodeURL}{https://...}   (or \\url{...} where the paper loads url or hyperref)",
        *([] if here == directory else ["% (the directory written to has characters LaTeX cannot take in a file "
                                        "name; set \\VerifyAppendixDir)"]),
        f"\\providecommand{{\\VerifyAppendixDir}}{{{here}}}",
        "\\providecommand{\\VerifyCodeURL}{\\textit{(the code's address: define \\texttt{\\textbackslash VerifyCodeURL})}}",
        *_FIT,
        "\\begingroup\\sloppy",  # names, commands and file names break lines loosely rather than overrun them
        "\\section{Machine-checked evidence}\\label{verify-evidence}",  # numbered: a letter under \\appendix
        f"\\paragraph{{Scope.}} {text(scope(doc, lambda s: f'${s}$'))}",
        "",
        "\\paragraph{How to read the checks.} A check passes when its value is at most its bound; values are rounded "
        "up and bounds down. Its kind is \\emph{certified} when every rounding error is enclosed (ball arithmetic or "
        "exact rational arithmetic): a proof; \\emph{estimate} for a floating-point measurement (not a proof); "
        "\\emph{exact} for a decision on the exact data. A yes/no check shows yes or no. Each check cites a note "
        "saying what its value is and where its bound comes from.",
        "",
        f"\\paragraph{{Reproducibility.}} Every number below was computed by {escape(NAME)} {escape(code)}"
        f"{escape(typeset)}, available at \\VerifyCodeURL{{}} (cite it as: {escape(CITATION)}), with the command "
        f"\\texttt{{verify run --profile {profile} --seed {seed}}}; the blocks and instances are drawn from the seed, "
        "and a rerun gives the same numbers. Each witness is a file that \\texttt{verify check} re-checks and "
        "\\texttt{verify-replay} replays independently of the suite. "
        f"Engine self-check: {text(selfcheck_line(doc, file=False).replace('`', ''))} "
        f"{text(journal_line(doc).replace('`', ''))}",  # Markdown's code quotes would print as quotation marks
    ]
    for t in doc["theorems"]:
        latex = t.get("latex", "")
        latex = latex if statements.get(t.get("name")) == latex else escape(latex)
        out += ["", f"\\subsection{{{text(t['title'])}}}\\label{{{_label(t['name'])}}}", latex, ""]
        if rows := draws_only(t["checks"]):
            out += _genericity_table(rows, _label(f"tab {t['name']}"), seed)
            continue
        distinct, cited = notes(t["checks"])
        out += [f"Checks on the instances $(N, n, d)$ = {escape(shapes(t))} (seed {seed}):",
                "\\begin{enumerate}\\footnotesize" + _TIGHT,
                *(_item(c, k) for c, k in zip(t["checks"], cited, strict=True)),
                "\\end{enumerate}", "Notes:", "\\begin{enumerate}\\footnotesize" + _TIGHT,
                *(f"\\item value: {text(q)}; bound: {text(o)}" for q, o in distinct), "\\end{enumerate}"]
    out += _witness_list(doc)
    if doc.get("reach"):
        out += _reach_table(doc["reach"], seed)
    for stem, caption in figures:
        out += ["", "\\begin{figure}[ht]", "\\centering",  # drawn for one column: natural size, or the column's width
                "\\setlength{\\VerifyFigureWidth}{3.3in}\\ifdim\\VerifyFigureWidth>\\linewidth"
                "\\setlength{\\VerifyFigureWidth}{\\linewidth}\\fi",
                f"\\includegraphics[width=\\VerifyFigureWidth]{{\\VerifyAppendixDir/{stem}.pdf}}",
                f"\\caption{{{text(caption)}}}", f"\\label{{{_label(stem)}}}", "\\end{figure}"]
    return "\n".join([*out, "\\endgroup"]) + "\n"


def _witness_list(doc: dict[str, Any]) -> list[str]:
    """One item per witness file (:func:`verify.reporting.results.witness_table`): instance, size,
    depth, length, the bound on its image, the exact solution near it, and the file."""
    rows = witness_table(doc)
    if not rows:
        return []
    out = ["", "\\subsection{Witnesses}\\label{verify-witnesses}",
           "Each witness is a file, named relative to the report's folder, that \\texttt{verify check} re-checks: "
           "the bound on $\\max\\lvert\\text{image} - \\text{target}\\rvert$, and the radius of the exact solution "
           "proved near it where one was proved.",
           "\\begin{enumerate}\\footnotesize" + _TIGHT]
    for r in rows:
        exact = ("exact solution not tried" if r["exact"] is None else "exact solution not proved" if r["exact"] is False
                 else f"exact solution within radius {_number(r['exact'], up)}")
        out.append(f"\\item {_name(r['instance'])}, $m = {escape(r['m'])}$, {escape(r['depth'])} depth, "
                   f"length {escape(r['length'])}: bound {_shown(r['check'], 'value')}; {exact}; "
                   f"file {_breakable(str(r['file']))}.")
    return out + ["\\end{enumerate}"]


def _reach_table(reach: list[dict[str, Any]], seed: str) -> list[str]:
    """The solver's reach measured in the run: one row per size and depth."""
    def head(*words: str) -> str:  # a header of two lines keeps a column narrow
        return "\\begin{tabular}[b]{@{}c@{}}" + "\\\\".join(words) + "\\end{tabular}"

    out = ["", "\\subsection{Solver reach on independent Gaussian targets}\\label{verify-reach}",
           "Not a theorem check: inputs and targets i.i.d.\\ $N(0, 1)$, blocks drawn with them; the share of "
           "instances for which the solver found a control (continuous depth) or network (finite depth) within "
           "a work budget counted in Jacobians (starts $\\times$ Jacobians per start). Median depth counts steps or "
           "layers of the solved instances; the worst replay error is a float64 estimate, or a high-precision replay "
           "for the witnesses counted in the last column (HP).", "",
           "\\begin{table}[ht]", "\\centering\\footnotesize\\setlength{\\tabcolsep}{3pt}",
           f"\\caption{{Solver reach (seed {seed}).}}\\label{{verify-tab-reach}}",
           "\\VerifyFit{\\begin{tabular}{@{}rllrlrlr@{}}", "\\toprule",
           f"$m$ & $(N, n, d)$ & depth & solved & budget & {head('median', 'depth')} & {head('worst replay', 'error')} & "
           "HP \\\\", "\\midrule"]
    for r in reach:
        depth = "--" if r["median_depth"] is None else f"{r['median_depth']:g}"
        err = "--" if r["worst_replay_error"] is None else _number(r["worst_replay_error"], up)
        solved = f"{round(r['success_rate'] * r['instances'])} of {r['instances']}"
        budget = re.fullmatch(r"(\d+) starts x (\d+) Jacobians", str(r.get("budget", "")))
        budget = f"${budget[1]} \\times {budget[2]}$" if budget else escape(r.get("budget", ""))
        out.append(f"{escape(r['m'])} & {escape(tuple(r['shape']))} & {escape(r['depth'])} & {solved} & {budget} & "
                   f"{depth} & {err} & {escape(r.get('high_precision_witnesses', 0))} \\\\")
    return out + ["\\bottomrule", "\\end{tabular}}", "\\end{table}"]


_KINDS = {"rank": "rank", "causal": "causal rank", r"gl": r"$\mathfrak{gl}(d)$", "coincident": "repeated token",
          "permuted": "reversed copy", "negated": "negated copy", "odd": r"odd sequence"}


def _genericity_table(rows: list[dict[str, Any]], label: str, seed: str) -> list[str]:
    """The genericity draws aggregated per (kind, shape) (:func:`verify.reporting.results.genericity_rows`)."""
    out = ["Each draw takes fresh blocks and data; a draw is proved when its rank is certified equal to the "
           "invariants' bound (an Arb minor; at most the bound by the invariants) or $\\mathfrak{gl}(d)$ is generated "
           "by $V_0, V_1$ (exactly over $\\mathbb{Q}$). Kinds: the bracket rank, the causal bracket rank, and the rank "
           "on data with a repeated token, a reversed or a negated copy of a sequence, or an odd sequence "
           "$\\{a, -a, \\ldots\\}$. Draws not proved are listed by number. Degree: least and largest degree "
           "whose brackets reached the bound, and the counting degree (the least with as many Hall words as the bound); "
           "$\\sigma$: the smallest certified lower bound of $\\sigma_{\\min}$ over the draws.", "",
           "\\begin{table}[ht]", "\\centering\\footnotesize\\setlength{\\tabcolsep}{3pt}",
           f"\\caption{{Genericity draws per kind and shape (seed {seed}).}}\\label{{{label}}}",
           "\\VerifyFit{\\begin{tabular}{@{}lllllll@{}}", "\\toprule",
           "kind & $(N, n, d)$ & $m$ & proved & bound & degree & $\\sigma$ \\\\", "\\midrule"]
    for r in rows:
        gl = r["kind"] == "gl"
        shape = f"$d = {escape(r['shape'][-1])}$" if gl and r["shape"] else escape(tuple(r["shape"]))
        degs = "--" if r["degrees"] is None else "--".join(dict.fromkeys(map(str, r["degrees"])))
        counting = " / " + ", ".join(map(str, r["counting"])) if r["counting"] else ""
        bound_ = f"$d^2 = {escape(', '.join(map(str, r['m'])))}$" if gl else escape(", ".join(map(str, r["bound"])))
        missed = f" (not: {escape(', '.join(map(str, r['not_proved'])))})" if r["not_proved"] else ""
        sigma = "--" if r["sigma_min_lower"] is None else _number(r["sigma_min_lower"], down)
        out.append(f"{_KINDS.get(r['kind'], escape(r['kind']))} & {shape} & {'--' if gl else escape(', '.join(map(str, r['m'])))}"
                   f" & {r['proved']} of {r['draws']}{missed} & {bound_} & {degs}{escape(counting)} & {sigma} \\\\")
    return out + ["\\bottomrule", "\\end{tabular}}", "\\end{table}"]


STANDALONE = rf"""\documentclass[11pt]{{article}}
\usepackage[margin=2cm]{{geometry}}
{PREAMBLE}
\newcommand{{\VerifyAppendixDir}}{{.}}
\begin{{document}}
\input{{appendix}}
\end{{document}}
"""


def _relative(d: Path) -> str:
    """``d`` as the default of ``\\VerifyAppendixDir``: relative to the working directory when it is
    below it, else "." -- never an absolute path, which would carry the machine's layout into the paper."""
    if not d.is_absolute():
        return d.as_posix()
    try:
        return d.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return "."


def write(doc: dict[str, Any], directory: str | Path, statements: dict[str, str] | None = None) -> list[Path]:
    """Write the figures, appendix.tex and standalone.tex into ``directory`` (replacing earlier
    ones, never through a link; an earlier figure this report has no data for is removed, so
    that the directory holds what the appendix shows); returns the .tex paths."""
    from verify.reporting import figures  # here: it imports matplotlib, which only the appendix needs

    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    made = figures.write(doc, d)
    for stem in set(FIGURE_STEMS) - {s for s, _ in made}:
        for old in (d / f"{stem}.pdf", d / f"{stem}.png"):
            if old.is_symlink() or old.is_file():
                old.unlink()
    return [replace_file(d / "appendix.tex", render(doc, made, statements, _relative(d))),
            replace_file(d / "standalone.tex", STANDALONE)]
