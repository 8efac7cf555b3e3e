"""Fixes the code's commit into a built package, so that a copy installed by pip names it.

Everything else is in pyproject.toml.  Building from a git checkout of the suite writes
``verify/_build.json`` ({"commit", "dirty"}) into the wheel; :func:`verify.version.provenance`
reads it when the package does not run from a checkout.  An sdist or a tarball has no commit to
fix, and records none."""

import importlib.util
import json
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent


def build_info():
    """{"commit", "dirty"} of the checkout this file is in, or None outside one: what
    verify.version.provenance says there (its file alone is loaded: the build has no NumPy)."""
    spec = importlib.util.spec_from_file_location("_suite_version", HERE / "verify" / "version.py")
    version = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(version)
    p = version.provenance()
    return {"commit": p["commit"], "dirty": p["dirty"]} if p["commit"] else None


class BuildWithProvenance(build_py):
    def run(self):
        super().run()
        info = build_info()
        if info is not None and not self.editable_mode:  # an editable install runs from the checkout: git says it
            (Path(self.build_lib) / "verify" / "_build.json").write_text(json.dumps(info) + "\n")


if __name__ == "__main__":  # as setuptools runs it; a test imports build_info alone
    setup(cmdclass={"build_py": BuildWithProvenance})
