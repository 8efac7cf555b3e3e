"""The registry of theorem checks and the runner behind ``python -m verify run``.

Each theorem module defines NAME, TITLE, STATEMENT (plain text), LATEX, HYPOTHESES, PROFILES
and ``run(profile, seed, progress) -> list[Check]``.  :func:`run` runs the chosen theorems and
returns one result per theorem (plain dicts, ready for :mod:`verify.reporting.report`) and the seconds
each took (kept apart: timings are the only part of a report that differs between two runs
with the same seed).

>>> sorted(THEOREMS)
['causal', 'finite_depth', 'two_block']
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from . import causal, finite_depth, two_block

THEOREMS = {m.NAME: m for m in (two_block, finite_depth, causal)}
PROFILES = ("quick", "standard", "paper")


def statements() -> dict[str, str]:
    """Each theorem's LaTeX statement by name: the only LaTeX the appendix writes unescaped."""
    return {name: m.LATEX for name, m in THEOREMS.items()}


def run(names: Sequence[str] | None = None, profile: str = "quick", seed: int = 0,
        progress: Callable[[str], None] | None = None) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Run the theorems (all by default) on the profile's instances drawn from ``seed``."""
    results, timings = [], {}
    for name in names or list(THEOREMS):
        module = THEOREMS[name]
        t0 = time.perf_counter()
        checks = module.run(profile, seed, progress)
        timings[name] = round(time.perf_counter() - t0, 3)
        results.append({
            "name": name,
            "title": module.TITLE,
            "statement": module.STATEMENT,
            "latex": module.LATEX,
            "hypotheses": list(module.HYPOTHESES),
            "profile_settings": dict(module.PROFILES[profile]),
            "passed": all(c.passed for c in checks),
            "checks": [c.as_dict() for c in checks],
        })
    return results, timings
