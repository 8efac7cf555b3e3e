"""The suite's own provenance: which code produced a result.

:func:`provenance` gives the package's name and version and, when the package is imported from
a git checkout of the suite, the commit and whether tracked files differed from it (``dirty``;
untracked files are ignored, as ``git describe --dirty`` does).  Reports, witnesses, the
summary and the appendix record it, so two results from different code say so.  A package
installed by pip from a checkout carries the commit it was built from (``_build.json``, written
by ``setup.py`` at build time); from an sdist, or without git, ``commit`` and ``dirty`` are None.

>>> p = provenance()
>>> p["version"] == __version__ and set(p) == {"name", "version", "commit", "dirty"}
True
>>> describe({"name": "x", "version": "1.0", "commit": "0123456789abcdef", "dirty": False})
'1.0, commit 0123456789ab'
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
from pathlib import Path
from typing import Any

__version__ = "0.1.0"  # the single source: pyproject.toml reads it (tool.setuptools.dynamic)
NAME = "attention-interpolation-verify"
# as CITATION.cff states it (a test keeps the two in step): the appendix prints it, and a wheel has no CITATION.cff
CITATION = (f"The {NAME} authors, {NAME}: a proof-companion verification suite for universal interpolation "
            f"by two frozen attention blocks, version {__version__}")
_ROOT = Path(__file__).resolve().parent.parent  # the checkout's root when run from one
_BUILD = Path(__file__).resolve().with_name("_build.json")  # fixed into a built package by setup.py


def _git(*args: str) -> str | None:
    try:
        p = subprocess.run(["git", "--no-optional-locks", "-C", str(_ROOT), *args], capture_output=True, text=True,
                           timeout=10, env={**os.environ, "GIT_TERMINAL_PROMPT": "0", "LC_ALL": "C"})
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout.strip() if p.returncode == 0 else None


@functools.cache
def provenance() -> dict[str, Any]:
    """{"name", "version", "commit", "dirty"} of the code now running (computed once per process)."""
    top = _git("rev-parse", "--show-toplevel")
    ours = top is not None and Path(top).resolve() == _ROOT and (_ROOT / "verify" / "version.py").exists()
    if not ours:  # an installed copy (or a user's repository that happens to hold the package): what its build fixed
        return {"name": NAME, "version": __version__, **_built()}
    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"name": NAME, "version": __version__, "commit": commit, "dirty": None if status is None else bool(status)}


def _built() -> dict[str, Any]:
    """{"commit", "dirty"} from the build's file; None for both where there is none or it is not one."""
    try:
        info = json.loads(_BUILD.read_text())
    except (OSError, ValueError):
        info = None
    ok = isinstance(info, dict) and isinstance(info.get("commit"), str) and info.get("dirty") in (True, False, None)
    return {"commit": info["commit"], "dirty": info["dirty"]} if ok else {"commit": None, "dirty": None}


def describe(p: dict[str, Any] | None) -> str:
    """One line: '0.1.0, commit 0123456789ab' (+ ', with uncommitted changes'), or the version
    alone outside a checkout; 'unrecorded' for a result written before provenance was kept."""
    if not isinstance(p, dict) or "version" not in p:
        return "unrecorded (written before the suite recorded its version)"
    if not p.get("commit"):
        return f"{p['version']} (built without a git checkout: no commit recorded)"
    return f"{p['version']}, commit {str(p['commit'])[:12]}" + (", with uncommitted changes" if p.get("dirty") else "")
