"""What authors and referees hold: the appendix inside a paper in another directory, the
standalone file without overfull boxes, LaTeX text that only admits a small math vocabulary,
and the code's version and commit in every output."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from theorems import registry
from verify.reporting import appendix, latex, summary
from verify.reporting.appendix import PREAMBLE
from verify.reporting.results import draws_only, scope
from verify.reporting.rounding import down
from verify.version import CITATION, describe, provenance

ROOT = Path(__file__).resolve().parents[1]
TEX = pytest.mark.skipif(not shutil.which("pdflatex"), reason="pdflatex not installed (.ci/run installs it)")
OVERFULL_PT = 5.0  # the limit: a box wider than its line by more than 5 pt is a layout fault
NASTY = "a_b & 50% #1 {y} ~ ^ \\ ||I - R A||_F < 1 > 0 $\\input{/etc/passwd}$ $x^$ $\\mathbb$"


def synthetic_report(nasty: bool = False, rows: int = 0) -> dict:
    """A report with the data of every figure and every kind of row (no theorem run: seconds);
    ``nasty``: with LaTeX's special characters and smuggled commands in a title, a name, a
    quantity and an origin (long unbreakable words there may overrun a line: not a layout test);
    ``rows``: that many more checks in the first theorem (more than a page holds)."""
    def c(name, value, bound, quantity, origin, **extra):
        return {"name": name, "value": value, "bound": bound, "passed": value <= bound, "certified": True,
                "kind": "certified", "origin": origin, "quantity": quantity, "details": extra.pop("details", {}), **extra}

    rank = c("bracket rank equals the invariants' bound 8 of 8 [inputs N=2,n=2,d=2]", 2.2e-27, 1.0,
             r"$\lVert I - RA \rVert_F$, Arb upper bound", r"an Arb minor with $\lVert I - RA \rVert_F < 1$",
             details={"sigma_by_degree": {"1": [1.0, 0.1], "2": [1.0, 0.5, 0.1], "3": [1, 0.5, 0.2, 0.1, 0.05, 0.03, 0.02,
                                                                                       0.01]},
                      "sigma_min": 0.01, "rank_bound": 8, "noise_level": 1e-9,
                      "trajectory": [[[[0.0, 0.0], [1.0, 0.0]], [[0.0, 1.0], [1.0, 1.0]]],
                                     [[[0.5, 0.2], [1.2, 0.1]], [[0.1, 1.3], [0.8, 1.4]]]]})
    refused = {**c("inadmissible data refused: det G < 0 [(3, 3, 2)]", 0.0, 0.0, "yes or no", "an invariant"),
               "boolean": True, "kind": "exact", "certified": False}
    euler = c("Euler splitting error within the derived bound, h = 0.01 [N=2,n=2,d=2]", 1e-4, 1e-3,
              "max |network - flow|", r"Gronwall + rounding $4 (L+1) u \max \lvert x \rvert$",
              details={"h": [0.01, 0.005], "errors": [1e-4, 5e-5], "bounds": [1e-3, 5e-4], "order": 1.0})
    odd = c(NASTY, 1e-300, 1.0, NASTY, NASTY) if nasty else c("a check of an unknown value", 0.5, 1.0, "", "o")
    replayed = c("the witness file maps the inputs within its tolerance [N=2,n=2,d=2]", 3e-15, 1e-10, "max |image - target|",
                 "the tolerance", details={"witness_file": "witnesses/two_block-N=2-n=2-d=2.json"})
    theorems = [{"name": "two_block", "title": "Two-block universality", "statement": "S.",
                 "latex": registry.statements()["two_block"], "passed": True, "hypotheses": ["h"],
                 "profile_settings": {"shape": [2, 2, 2], "generic": [3, 3, 2]},
                 "checks": [rank, refused, odd, replayed, *({**rank, "name": f"extra check {i} of a long list [N=3,n=4,d=2]"}
                                                           for i in range(1, rows + 1))]},
                {"name": "finite_depth", "title": NASTY if nasty else "Finite depth", "statement": "S.",
                 "latex": "\\input{x}", "passed": True, "checks": [euler]},
                {"name": "genericity", "title": "Genericity", "statement": "S.", "latex": registry.statements()["genericity"],
                 "passed": False, "profile_settings": {"draws": 2, "grid": [["rank", [1, 2, 2]], ["gl", [1, 1, 2]]]},
                 "checks": [c(f"bracket rank equals the invariants' bound {m} of {m} [draw {i + 1}, N=1,n=2,d={m // 2}]",
                              1e-20 if i else float("inf"), 1.0, "q", "o",
                              details={"genericity": {"kind": "rank", "shape": [1, 2, m // 2], "draw": i}, "dimension": m,
                                       "rank_bound": m, "counting_degree": 4, "min_degree": 4 + i,
                                       "sigma_min_lower": 1e-6 * m}) for m in (4, 8, 16) for i in range(2)]}]
    reach = [{"m": m, "shape": [1, 2, m // 4] if m < 18 else [3, 3, 2], "depth": depth, "method": "lm", "instances": 10,
              "budget": "64 starts x 1000 Jacobians", "success_rate": 0.7, "median_jacobians_solved": 300.0,
              "median_depth": 40.0, "worst_replay_error": 1e-12, "high_precision_witnesses": 1, "failed_units": []}
             for m in (4, 8, 18) for depth in ("finite", "continuous")]
    return {"schema": "verification-report/2", "profile": "paper", "seed": 7, "passed": False, "theorems": theorems,
            "reach": reach, "code": provenance(),
            "selfcheck": {"passed": True, "checks": 3, "checks_passed": 3, "seed": 7, "file": "selfcheck/verification.json",
                          "code": provenance()}}


def pdflatex(directory: Path, name: str) -> str:
    for _ in range(2):  # twice: the references to the tables resolve on the second pass
        p = subprocess.run(["pdflatex", "-interaction=nonstopmode", "-halt-on-error", name], cwd=directory,
                           capture_output=True, text=True, timeout=120)
        assert p.returncode == 0, p.stdout[-3000:]
    log = (directory / name).with_suffix(".log").read_text(errors="replace")
    assert "not found" not in log and "Missing character" not in log and "There were undefined references" not in log
    return log


def overfull(log: str) -> list[float]:
    """Widths (pt) by which boxes overran their lines, from a pdflatex log."""
    return [float(w) for w in re.findall(r"Overfull \\hbox \(([0-9.]+)pt too wide\)", log)]


@TEX
def test_a_paper_in_another_directory_inputs_the_appendix_with_the_documented_preamble(tmp_path):
    (tmp_path / "reports").mkdir()
    subprocess.run([sys.executable, "-c", "import json, sys; from verify.reporting import appendix; "
                    "from theorems import registry; appendix.write(json.load(sys.stdin), 'reports/appendix', "
                    "registry.statements())"], input=json.dumps(synthetic_report()), text=True, check=True,
                   cwd=tmp_path, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    tex = (tmp_path / "reports" / "appendix" / "appendix.tex").read_text()
    assert "\\providecommand{\\VerifyAppendixDir}{reports/appendix}" in tex and PREAMBLE in tex
    papers = {tmp_path / "paper": "\\newcommand{\\VerifyAppendixDir}{../reports/appendix}\n",  # the documented line
              tmp_path: ""}  # in the directory verify ran in, the default finds the figures
    for where, macro in papers.items():
        where.mkdir(exist_ok=True)
        rel = "../reports/appendix" if macro else "reports/appendix"
        (where / "paper.tex").write_text(
            "\\documentclass{article}\n" + PREAMBLE + "\n\\usepackage{amsthm}\n" + macro
            + "\\newtheorem{theorem}{Theorem}\\begin{document}\\section{Intro}\\label{intro}Text.\n"
            + f"\\input{{{rel}/appendix}}\n\\ref{{verify-two-block}} \\ref{{verify-fig-trajectories}}\n\\end{{document}}\n")
        log = pdflatex(where, "paper.tex")
        for stem in appendix.FIGURE_STEMS:
            assert f"{rel}/{stem}.pdf" in log  # every figure was read (pdflatex logs each file it includes)
        assert max(overfull(log), default=0.0) <= OVERFULL_PT, overfull(log)


@TEX
def test_standalone_compiles_without_overfull_boxes(tmp_path):
    appendix.write(synthetic_report(), tmp_path, registry.statements())
    assert ("file \\texttt{witnesses/\\allowbreak{}two\\_block-\\allowbreak{}N=2-\\allowbreak{}n=2-\\allowbreak{}d=2.json}"
            in (tmp_path / "appendix.tex").read_text())
    log = pdflatex(tmp_path, "standalone.tex")
    assert max(overfull(log), default=0.0) <= OVERFULL_PT, overfull(log)


@TEX
def test_special_characters_and_smuggled_commands_compile_as_text(tmp_path):
    appendix.write(synthetic_report(nasty=True), tmp_path, registry.statements())
    log = pdflatex(tmp_path, "standalone.tex")
    assert "(/etc/passwd" not in log  # pdflatex logs "(FILE" for every file it reads: nothing was


def test_report_text_reaches_latex_only_as_escaped_text_or_admitted_math():
    tex = appendix.render(synthetic_report(nasty=True), statements=registry.statements())
    assert "\\input{/etc" not in tex and "\\input{x}" not in tex  # neither in a name nor as an untrusted statement
    assert "$\\lVert I - RA \\rVert_F < 1$" in tex  # the suite's own mathematics is typeset
    assert "\\label{verify-two-block}" in tex and "\\label{verify-tab-reach}" in tex
    rows = [line for line in tex.splitlines() if line.startswith("\\item ")]
    assert rows[1].endswith("[(3, 3, 2)]: yes; pass, exact, note~2.")  # a yes/no check reads yes/no, not 0 <= 0
    assert rows[0].endswith("bound $\\le 1.00\\times 10^{0}$; pass, certified, note~1.")
    assert tex.count("an Arb minor with") == 1  # origins listed once, rows cite them
    assert "[inputs $(N, n, d) = (2, 2, 2)$]" in rows[0]  # the instance typeset


@given(st.lists(st.sampled_from(list("ab1 $\\{}^_%#&~|<>") + ["\\lVert", "\\input", "\\mathbb", "^^"]),
                max_size=30).map("".join))
def test_latex_text_is_escaped_text_or_admitted_mathematics(s):
    out = latex.text(s)
    if out != latex.escape(s):
        segments = s.split("$")[1::2]
        assert segments and all(latex.safe_math(m) for m in segments)
        assert "\\input" not in out and "^^" not in "".join(segments)


def test_safe_math_refuses_what_would_run_or_break(tmp_path):
    for bad in ("\\input{x}", "x^", "x^^5c", "\\mathbb Q", "a}{", "\\def\\x{}", "x % y", "\\left("):
        assert not latex.safe_math(bad), bad
    for good in ("\\lVert I - RA \\rVert_F < 1", "Q^\\top K", "d^{2}", "\\mathfrak{gl}(d)", "V_0, V_1"):
        assert latex.safe_math(good), good


def test_every_output_names_the_code_that_made_it(tmp_path):
    code = provenance()
    doc = synthetic_report()
    md = summary.render(doc)
    assert f"Code: {code['name']} {describe(code)}." in md.splitlines()[4]
    assert describe(code) in appendix.render(doc)
    other = {**code, "commit": "0" * 40, "dirty": False}
    older = appendix.render({**doc, "code": other})
    assert f"typeset by {describe(code)}" in older and "commit 000000000000" in older  # two codes, both named
    assert "other code: " in summary.render({**doc, "selfcheck": {**doc["selfcheck"], "code": other}})
    v = subprocess.run([sys.executable, "-m", "verify", "--version"], capture_output=True, text=True, cwd=ROOT)
    assert v.returncode == 0 and v.stdout.strip() == f"verify ({code['name']}) {describe(code)}"
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode == 0:  # a checkout (CI clones one): the commit is HEAD's
        assert code["commit"] == head.stdout.strip() and isinstance(code["dirty"], bool)


def test_the_citation_printed_in_the_appendix_is_citation_cff_s():
    cff = (ROOT / "CITATION.cff").read_text()
    title = re.search(r'^title: "(.*)"$', cff, re.M)[1]
    version = re.search(r"^version: (.*)$", cff, re.M)[1]
    assert CITATION.endswith(f"{title}, version {version}") and version == provenance()["version"]
    assert CITATION in " ".join(appendix.render(synthetic_report()).split())  # as printed, lines joined


def test_a_package_built_from_a_checkout_names_the_commit_outside_it(tmp_path):
    """What ``pip install <checkout>`` fixes into the wheel (setup.py's build step) is what the
    installed copy reports, from a directory that is no checkout; a damaged file records nothing."""
    spec = importlib.util.spec_from_file_location("suite_setup", ROOT / "setup.py")
    setup_py = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(setup_py)  # defines build_info; setup() runs only as setuptools runs the file
    info = setup_py.build_info()
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True)
    if head.returncode != 0:
        pytest.skip("not a git checkout: nothing to fix into a build")
    assert info["commit"] == head.stdout.strip() and isinstance(info["dirty"], bool)
    site = tmp_path / "site"
    shutil.copytree(ROOT / "verify", site / "verify", ignore=shutil.ignore_patterns("__pycache__"))
    ask = [sys.executable, "-c", "from verify.version import provenance, describe; p = provenance(); "
           "print(p['commit'], p['dirty'], describe(p))"]
    run = {"cwd": tmp_path, "env": {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"}, "capture_output": True, "text": True}
    (site / "verify" / "_build.json").write_text(json.dumps(info))
    out = subprocess.run(ask, **run).stdout.split()
    assert out[:2] == [info["commit"], str(info["dirty"])] and f"commit {info['commit'][:12]}" in " ".join(out)
    (site / "verify" / "_build.json").write_text('{"commit": ["not", "a", "commit"]}')
    assert subprocess.run(ask, **run).stdout.split()[:2] == ["None", "None"]


def test_the_scope_says_which_blocks_each_kind_of_check_used():
    doc = synthetic_report()
    large = {"name": "large_instances", "title": "Larger instances", "statement": "S.", "passed": True,
             "profile_settings": {"rows": [["T2", [4, 4, 4], "independent"]]},
             "checks": [{**doc["theorems"][0]["checks"][3], "name": "the witness file maps ... [T2 m=64, N=4,n=4,d=4]"}]}
    said = scope({**doc, "theorems": [*doc["theorems"], large]})
    assert "one draw of the two blocks (seed 7) on the shapes (N, n, d) = (2, 2, 2), (3, 3, 2)." in said  # not (4, 4, 4)
    assert "The larger instances draw their own blocks, one draw per row, m = 64." in said
    assert "6 draws over 3 kinds and shapes, m = 4 to 16." in said and "Of the 12 checks, 11 are certified" in said


def test_a_yes_no_word_always_agrees_with_the_verdict():
    """A hand-edited yes/no check (value -1 or 0.5 instead of 0 or 1) reads as its verdict does."""
    from verify.reporting.results import passes, yes_no

    for value in (-1.0, 0.0, 0.5, 1.0, "nan"):
        c = {"boolean": True, "value": value, "bound": 0.0}
        assert (yes_no(c) == "yes") == passes(value, 0.0), value


def test_genericity_draws_are_aggregated_per_shape_and_every_unproved_draw_is_named():
    doc = synthetic_report()
    text = summary.render(doc)
    tex = appendix.render(doc, statements=registry.statements())
    for m in (4, 8, 16):  # draw 1 of each shape failed (an infinite value), draw 2 proved at degree 5
        assert f"| bracket rank | (1, 2, {m // 2}) | {m} | 1 of 2 | 1 | {m} | 5 / 4 | {down(1e-6 * m)} |" in text
        assert f"rank & (1, 2, {m // 2}) & {m} & 1 of 2 (not: 1) & {m} & 5 / 4 &" in tex
    assert "[draw 1, N=1,n=2,d=2]" not in text  # aggregated, not listed check by check
    assert "| genericity: Genericity | 2 kinds and shapes, m = 4 to 4, 2 draws each |" in text  # the grid, as the profile set it
    assert "6 draws over 3 kinds and shapes, m = 4 to 16." in text.splitlines()[2]  # the scope: the draws as made


CLASSES = {"article": "{article}", "article-twocolumn": "[twocolumn]{article}", "IEEEtran": "[conference]{IEEEtran}",
           "revtex": "[twocolumn,aps]{revtex4-2}"}  # one column, and two columns as journals set them


def class_missing(name: str) -> bool:
    cls = CLASSES[name].rpartition("{")[2].rstrip("}")
    p = subprocess.run(["kpsewhich", f"{cls}.cls"], capture_output=True, text=True) \
        if shutil.which("kpsewhich") else None
    return p is None or p.returncode != 0


def _words(s: str) -> str:
    """Text as pdftotext and a check's name can both be compared: no spaces, hyphens or line breaks."""
    return re.sub(r"[\s\-\u2212\u00ad]", "", unicodedata.normalize("NFKC", s).replace("\u2019", "'"))


def set_in_class(name: str, doc: dict, appendix_dir: Path, paper: Path) -> None:
    """Compile a paper in class ``name`` (in ``paper``, another directory) that inputs the appendix
    of ``doc`` written in ``appendix_dir`` under ``\\appendix``; fail on a float too large, a box
    overrunning by more than 5 pt, a check's name missing from the PDF's text, or a reference
    that is not the letter A."""
    paper.mkdir()
    rel = Path(os.path.relpath(appendix_dir, paper)).as_posix()
    (paper / "paper.tex").write_text(
        f"\\documentclass{CLASSES[name]}\n" + PREAMBLE + f"\n\\newcommand{{\\VerifyAppendixDir}}{{{rel}}}\n"
        "\\begin{document}\n\\section{Introduction}\\label{intro}See Appendix~\\ref{verify-evidence}.\n\\appendix\n"
        f"\\input{{{rel}/appendix}}\n\\end{{document}}\n")
    log = pdflatex(paper, "paper.tex")
    assert "Float too large" not in log and max(overfull(log), default=0.0) <= OVERFULL_PT, overfull(log)
    aux = (paper / "paper.aux").read_text()
    assert "\\newlabel{verify-evidence}{{A}" in aux and "\\newlabel{intro}{{A}" not in aux  # the paper's own: 1 or I
    if shutil.which("pdftotext"):  # every row is on the page: each name's plain words, as often as the checks hold it
        shown = _words(subprocess.run(["pdftotext", str(paper / "paper.pdf"), "-"], capture_output=True, text=True,
                                      check=True).stdout)
        names = [_words(re.split(r"[\[$]", c["name"])[0]) for t in doc["theorems"] if not draws_only(t["checks"])
                 for c in t["checks"]]  # a genericity table aggregates its draws: no names
        missing = {n: names.count(n) for n in names if shown.count(n) < names.count(n)}
        assert not missing, missing


@TEX
@pytest.mark.parametrize("name", list(CLASSES))
def test_the_appendix_fits_one_and_two_column_classes_with_every_row_and_a_letter_under_appendix(tmp_path, name):
    if class_missing(name):
        pytest.skip(f"{CLASSES[name]} is not installed (make setup-tex installs the publishers' classes where it can)")
    doc = synthetic_report(rows=60)  # more checks than a page holds: they must break across columns and pages
    cwd = tmp_path / "elsewhere"
    cwd.mkdir()
    subprocess.run([sys.executable, "-c", "import json, sys; from verify.reporting import appendix; "
                    "from theorems import registry; appendix.write(json.load(sys.stdin), sys.argv[1], registry.statements())",
                    str(tmp_path / "appendix")], input=json.dumps(doc), text=True, check=True, cwd=cwd,
                   env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    tex = (tmp_path / "appendix" / "appendix.tex").read_text()
    assert str(tmp_path) not in tex and "\\providecommand{\\VerifyAppendixDir}{.}" in tex  # no path of the machine
    set_in_class(name, doc, tmp_path / "appendix", tmp_path / "paper")
    if shutil.which("pdftotext"):
        shown = subprocess.run(["pdftotext", str(tmp_path / "paper" / "paper.pdf"), "-"], capture_output=True, text=True)
        assert "extracheck60ofalonglist" in _words(shown.stdout)  # the last of 64 rows, past a page
