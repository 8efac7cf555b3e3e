"""The registry of theorem checks: each theorem's result, and the theorems as units of a sweep.

Each theorem module defines NAME, TITLE, STATEMENT (plain text), LATEX, HYPOTHESES, PROFILES
and ``run(profile, seed, progress) -> list[Check]``.  :func:`result` is one theorem's result (a
plain dict, ready for :mod:`verify.reporting.report`); :func:`units` makes the chosen theorems
units of a sweep (``verify run`` computes them with :mod:`verify.sweep`, which also keeps the
seconds each took apart: timings are the only part of a report that differs between two runs
with the same seed).

>>> sorted(THEOREMS)
['causal', 'finite_depth', 'two_block']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from verify.reporting.results import check
from verify.sweep.unit import Unit

from . import causal, finite_depth, two_block

THEOREMS = {m.NAME: m for m in (two_block, finite_depth, causal)}
PROFILES = ("quick", "standard", "paper")


def statements() -> dict[str, str]:
    """Each theorem's LaTeX statement by name: the only LaTeX the appendix writes unescaped."""
    return {name: m.LATEX for name, m in THEOREMS.items()}


def result(name: str, profile: str, seed: int, progress: Callable[[str], None] | None = None) -> dict[str, Any]:
    """One theorem's checks on the profile's instances drawn from ``seed``: its statement and
    hypotheses, whether every check passed, and the checks (a sweep unit: a pure function of
    its arguments, ``progress`` aside)."""
    module = THEOREMS[name]
    checks = module.run(profile, seed, progress)
    return _result(module, profile, [c.as_dict() for c in checks])


def failed(name: str, profile: str, error: str) -> dict[str, Any]:
    """The result of a theorem whose unit failed in a sweep (a worker lost twice, an error): one
    failing check that says so, so that the report cannot pass without it."""
    module = THEOREMS[name]
    return _result(module, profile, [check(f"the checks of {name} ran to the end", math.inf, 0.0,
                                           f"the sweep recorded a failure: {error}").as_dict()])


def _result(module: Any, profile: str, checks: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": module.NAME,
        "title": module.TITLE,
        "statement": module.STATEMENT,
        "latex": module.LATEX,
        "hypotheses": list(module.HYPOTHESES),
        "profile_settings": dict(module.PROFILES[profile]),
        "passed": all(c["passed"] for c in checks),
        "checks": checks,
    }


def units(names: Sequence[str] | None, profile: str, seed: int) -> list[Unit]:
    """The theorems (all by default) as sweep units of :func:`result`."""
    return [Unit(task=f"{__name__}:result", params={"name": name, "profile": profile, "seed": seed})
            for name in names or list(THEOREMS)]
