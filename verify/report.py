"""Writing results: ``reports/verification.json`` (deterministic; timings kept apart).

The file has a versioned schema, ``verification-report/1``::

    {"schema": ..., "suite": ..., "seed": ..., "passed": bool,
     "checks": [{"name", "value", "bound", "origin", "passed", "certified", "details"}, ...],
     "versions": {package: version},
     "timings": {...}}       <- the only part that differs between two runs with one seed

>>> from verify.results import check
>>> doc = document("engine-selfcheck", 0, [check("x", 0.0, 1.0, "test")], {"total_s": 1.0})
>>> doc["passed"], sorted(doc)[:3]
(True, ['checks', 'passed', 'schema'])
"""

from __future__ import annotations

import json
import platform
from importlib import metadata
from pathlib import Path
from typing import Any

from .results import Check

SCHEMA = "verification-report/1"
PACKAGES = ("numpy", "scipy", "mpmath", "gmpy2", "python-flint", "array-api-compat")


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for p in PACKAGES:
        try:
            out[p] = metadata.version(p)
        except metadata.PackageNotFoundError:
            out[p] = "not installed"
    return out


def document(suite: str, seed: int, checks: list[Check], timings: dict[str, Any]) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "suite": suite,
        "seed": seed,
        "passed": all(c.passed for c in checks),
        "checks": [c.as_dict() for c in checks],
        "versions": versions(),
        "timings": timings,
    }


def write(doc: dict[str, Any], directory: str | Path) -> Path:
    d = Path(directory)
    d.mkdir(parents=True, exist_ok=True)
    path = d / "verification.json"
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return path
