"""The README's quick start, run as written: the commands on a copy of ``examples/``, their
output compared line by line with the README's (wall times masked), so the README cannot drift."""

from __future__ import annotations

import itertools
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

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


def test_the_quick_start_prints_what_the_readme_says(tmp_path):
    shutil.copytree(ROOT / "examples", tmp_path / "examples")
    runs = quick_start()
    assert [c.split()[:2] for c, _ in runs] == [["verify", "rank"], ["verify", "interpolate"], ["verify", "check"],
                                               ["verify", "check"]]
    for command, expected in runs:
        args = shlex.split(command)
        out = subprocess.run([sys.executable, "-m", "verify", *args[1:]], cwd=tmp_path, capture_output=True, text=True,
                             env={"PYTHONPATH": str(ROOT), "OPENBLAS_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
        assert out.returncode == 0, (command, out.stdout, out.stderr)
        got = [SECONDS.sub("T s", line) for line in out.stdout.splitlines()]
        assert got == [SECONDS.sub("T s", line) for line in expected], (command, out.stderr)


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
