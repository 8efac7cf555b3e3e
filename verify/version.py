"""The suite's own provenance: which code produced a result.

:func:`provenance` gives the package's name and version and, when the package is imported from
a git checkout of the suite, the commit and whether tracked files differed from it (``dirty``;
untracked files are ignored, as ``git describe --dirty`` does).  Reports, witnesses, the
summary and the appendix record it, so two results from different code say so.  Outside a
checkout (an installed wheel) or without git, ``commit`` and ``dirty`` are None.

>>> p = provenance()
>>> p["version"] == __version__ and set(p) == {"name", "version", "commit", "dirty"}
True
>>> describe({"name": "x", "version": "1.0", "commit": "0123456789abcdef", "dirty": False})
'1.0, commit 0123456789ab'
"""

from __future__ import annotations

import functools
import os
import subprocess
from pathlib import Path
from typing import Any

__version__ = "0.1.0"  # the single source: pyproject.toml reads it (tool.setuptools.dynamic)
NAME = "attention-interpolation-verify"
_ROOT = Path(__file__).resolve().parent.parent  # the checkout's root when run from one


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
    commit = _git("rev-parse", "HEAD") if ours else None  # not a user's repository that happens to hold the package
    status = _git("status", "--porcelain", "--untracked-files=no") if commit else None
    return {"name": NAME, "version": __version__, "commit": commit, "dirty": None if status is None else bool(status)}


def describe(p: dict[str, Any] | None) -> str:
    """One line: '0.1.0, commit 0123456789ab' (+ ', with uncommitted changes'), or the version
    alone outside a checkout; 'unrecorded' for a result written before provenance was kept."""
    if not isinstance(p, dict) or "version" not in p:
        return "unrecorded (written before the suite recorded its version)"
    if not p.get("commit"):
        return f"{p['version']} (not run from a git checkout: no commit recorded)"
    return f"{p['version']}, commit {str(p['commit'])[:12]}" + (", with uncommitted changes" if p.get("dirty") else "")
