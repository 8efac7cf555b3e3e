"""Fixes the code's commit into a built package, so that a copy installed by pip names it.

Everything else is in pyproject.toml.  Building from a git checkout of the suite writes
``verify/_build.json`` ({"commit", "dirty"}) into the wheel; :func:`verify.version.provenance`
reads it when the package does not run from a checkout.  An sdist or a tarball has no commit to
fix, and records none."""

import json
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def _git(*args):
    try:
        p = subprocess.run(["git", "--no-optional-locks", "-C", str(HERE), *args], capture_output=True, text=True,
                           timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout.strip() if p.returncode == 0 else None


def build_info():
    """{"commit", "dirty"} of the checkout this file is in, or None outside one (as verify.version)."""
    top = _git("rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != HERE:
        return None
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {"commit": _git("rev-parse", "HEAD"), "dirty": None if status is None else bool(status)}


class BuildWithProvenance(build_py):
    def run(self):
        super().run()
        info = build_info()
        if info is not None and not self.editable_mode:  # an editable install runs from the checkout: git says it
            (Path(self.build_lib) / "verify" / "_build.json").write_text(json.dumps(info) + "\n")


if __name__ == "__main__":  # as setuptools runs it; a test imports build_info alone
    setup(cmdclass={"build_py": BuildWithProvenance})
