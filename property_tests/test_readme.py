"""The README's quick start, run as written: the commands on a copy of ``examples/``, their
output compared line by line with the README's (wall times masked), so the README cannot drift,
under the machine's own OpenBLAS kernel and under a second one, as CI on another x86 CPU would.

What may differ between kernels (docs/numerics.md, "The same answer on every machine"): the
solver's float64 search returns durations that differ in their last bits, so the numbers of
the size of that witness's rounding (max |image - target|, enclosure widths, the distance of
the exact durations, error estimates: NOISE_LABELS) agree only within a factor of 2 (measured
across five kernels: 4.629e-13 to 4.643e-13, 1.2e-12 to 1.3e-12).  Everything else is compared
exactly: words, whole numbers (ranks, degrees, digits, steps, starts, validated steps), the
freed steps, which rules that do not depend on the kernel choose (:mod:`verify.lie.pivoting`),
the Arb bound of sigma_min (a proof on the exact inputs), the tolerance and the durations'
total."""

from __future__ import annotations

import itertools
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SECONDS = re.compile(r"\d+\.\d+ s\b")


def quick_start() -> list[tuple[str, list[str]]]:
    """(command, expected output lines) from the README's Quick start section."""
    text = ROOT.joinpath("README.md").read_text()
    section = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    runs: list[tuple[str, list[str]]] = []
    for line in section.splitlines():
        if line.startswith("    $ "):
            runs.append((line[6:], []))
        elif line.startswith("    ") and runs:
            runs[-1][1].append(line[4:])
    return runs


NUMBER = re.compile(r"(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)")
# what a number follows when it measures the witness's rounding (module docstring)
NOISE_LABELS = ("max |image - target| <= ", "max |image - target| = ", "width ", "within ", "error estimate = ")


def _agree(got: str, want: str) -> bool:
    """A printed line against the README's: the numbers after NOISE_LABELS within a factor of
    2, everything else exactly (module docstring)."""
    a, b = NUMBER.split(got), NUMBER.split(want)
    if len(a) != len(b) or a[::2] != b[::2]:
        return False
    for before, x, y in zip(a[0:-1:2], a[1::2], b[1::2], strict=True):
        if x != y and not (before.endswith(NOISE_LABELS) and 0.5 <= float(x) / float(y) <= 2.0):
            return False
    return True


def _second_kernel() -> str:
    """Sandybridge (AVX) where the CPU has AVX, else Prescott (SSE3): a kernel other than the one
    OpenBLAS picks on a current machine, with its own summation order."""
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        flags = ""
    return "Sandybridge" if re.search(r"\bavx\b", flags) else "Prescott"


def test_agreement_rule():
    line = "CERTIFIED: max |image - target| <= 4.643e-13 (width 1.9e-14, 48 steps), steps [0, 3, 11, 18], tolerance = 1.000e-10"
    assert _agree(line.replace("4.643e-13", "4.629e-13").replace("1.9e-14", "1.8e-14"), line)
    assert not _agree(line.replace("[0, 3, 11, 18]", "[1, 2, 15, 23]"), line)
    assert not _agree(line.replace("48 steps", "49 steps"), line)
    assert not _agree(line.replace("4.643e-13", "9.5e-13"), line) and not _agree(line.replace("CERTIFIED", "FAIL"), line)
    assert not _agree(line.replace("1.000e-10", "1.1e-10"), line)


@pytest.mark.parametrize("kernel", ["default", "second"])
def test_the_quick_start_prints_what_the_readme_says(tmp_path, kernel):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    runs = quick_start()
    assert [c.split()[:2] for c, _ in runs] == [["verify", "rank"], ["verify", "interpolate"], ["verify", "check"],
                                               ["verify", "check"]]
    env = {"PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"}
    if kernel == "second":
        env["OPENBLAS_CORETYPE"] = _second_kernel()
    for command, expected in runs:
        args = shlex.split(command)
        out = subprocess.run([sys.executable, "-m", "verify", *args[1:]], cwd=tmp_path, capture_output=True, text=True,
                             env=env)
        assert out.returncode == 0, (command, out.stdout, out.stderr)
        got = [SECONDS.sub("T s", line) for line in out.stdout.splitlines()]
        want = [SECONDS.sub("T s", line) for line in expected]
        assert len(got) == len(want) and all(_agree(g, w) for g, w in zip(got, want, strict=True)), (command, got, want)


def test_the_python_example_runs_as_written(tmp_path):
    text = ROOT.joinpath("README.md").read_text()
    script = text.split("## From Python", 1)[1].split("```python\n", 1)[1].split("```", 1)[0]
    rst = ROOT.joinpath("docs", "api", "index.rst").read_text().split(".. code-block:: python\n\n", 1)[1]
    block = itertools.takewhile(lambda line: line.startswith("   ") or line == "\n", rst.splitlines(True))
    shown = textwrap.dedent("".join(block)).rstrip("\n") + "\n"
    assert shown == script  # the API reference shows the same script
    out = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True,
                         env={"PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == ["CERTIFIED", "CERTIFIED"]


def test_the_api_reference_documents_every_public_name_once_and_links_the_conventions():
    import verify.api

    pages = {p.stem: p.read_text() for p in ROOT.joinpath("docs", "api").glob("*.rst")}
    targets = [m[1] for text in pages.values() for m in re.finditer(r"^\.\. auto(?:function|class):: (\S+)$", text, re.M)]
    assert len(targets) == len(set(targets)), sorted(t for t in targets if targets.count(t) > 1)
    documented = {t.rpartition(".")[2] for t in targets}
    assert set(verify.api.__all__) <= documented, set(verify.api.__all__) - documented
    toc = pages["index"].split(".. toctree::", 1)[1]
    assert all(f"   {page}\n" in toc for page in ("functions", "types", "conventions", "verdicts", "reports"))
    assert "literalinclude:: ../conventions.md" in pages["conventions"]
