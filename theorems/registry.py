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

from collections.abc import Callable, Sequence
from typing import Any

from verify.io.errors import InputError
from verify.reporting.results import KINDS, holds, kind_of, passes
from verify.sweep.unit import Unit

from . import causal, finite_depth, genericity, large_instances, reach, two_block

THEOREMS = {m.NAME: m for m in (two_block, finite_depth, causal)}
UNIT_MODULES = (genericity, large_instances)  # results of many units each, computed with every theorem
PROFILES = ("quick", "standard", "paper")


def statements() -> dict[str, str]:
    """Each theorem's LaTeX statement by name (and the unit modules'): the only LaTeX the appendix writes unescaped."""
    return {m.NAME: m.LATEX for m in (*THEOREMS.values(), *UNIT_MODULES)}


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
    return _result(module, profile, [holds(f"the checks of {name} ran to the end", False,
                                           f"the sweep recorded a failure: {error}").as_dict()])


def unit_result(module: Any, profile: str, seed: int, results: list[list[dict[str, Any]] | None],
                errors: list[str | None]) -> dict[str, Any]:
    """The checks of a module whose instances are units of their own (:data:`UNIT_MODULES`), as
    one result beside the theorems': ``results`` of ``module.units(profile, seed)`` in order,
    each a list of checks (None for a unit that failed, ``errors`` saying why: then a failing
    check that names it, so that nothing is dropped)."""
    out = []
    for u, r, why in zip(module.units(profile, seed), results, errors, strict=True):
        out += r if r is not None else [holds(f"the unit ran to the end [{module.lost(u.params)}]", False,
                                              f"the sweep recorded a failure: {why}",
                                              **getattr(module, "lost_details", lambda p: {})(u.params)).as_dict()]
    return _result(module, profile, out)


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


_CHECK_FIELDS = {"name": str, "origin": str, "passed": bool, "certified": bool, "details": dict}


def checked_result(params: dict[str, Any], result: Any, where: str = "the journal") -> dict[str, Any]:
    """A theorem's result read back from a journal, validated like any input: the checks' fields
    and types (one line naming the first problem, :class:`InputError`), every ``passed``
    recomputed from its value and bound, and the statement, hypotheses and settings taken from
    this registry, not from the file.  ``from_journal`` marks it."""
    name = params.get("name")
    if name not in THEOREMS or params.get("profile") not in PROFILES:
        raise InputError(f"{where}: a record names the theorem {str(name)[:40]!r}, which this suite does not have")
    checks = result.get("checks") if isinstance(result, dict) else None
    if not isinstance(checks, list) or not checks:
        raise InputError(f"{where}: the record of {name} holds no list of checks; run without --resume")
    out = [checked_check(c, f"{where}: check {j} of {name}") for j, c in enumerate(checks)]
    return _result(THEOREMS[name], params["profile"], out) | {"from_journal": True}


def checked_check(c: Any, where: str) -> dict[str, Any]:
    """One check read back from a journal: its fields and types, its kind against ``certified``,
    and ``passed`` recomputed from its value and bound (one line naming the problem, :class:`InputError`)."""
    if not isinstance(c, dict):
        raise InputError(f"{where} is not an object; run without --resume")
    for k, kind in _CHECK_FIELDS.items():
        if not isinstance(c.get(k), kind):
            raise InputError(f"{where} lacks {k!r} or has the wrong type; run without --resume")
    for k in ("value", "bound"):
        if isinstance(c.get(k), bool) or not isinstance(c.get(k), (int, float)):
            raise InputError(f"{where}: {k} is not a number; run without --resume")
    kind = kind_of(c)
    if kind not in KINDS or (kind == "certified") != c["certified"]:
        raise InputError(f"{where}: kind {str(kind)[:20]!r} does not match certified; run without --resume")
    return c | {"passed": passes(c["value"], c["bound"]), "kind": kind}


def check_resumed(unit: Unit, result: Any) -> Any:
    """The checker of every result :mod:`verify.sweep` takes from a journal for ``verify run``:
    theorem results (:func:`checked_result`), reach instances (:func:`theorems.reach.checked_unit`)
    and the units of :data:`UNIT_MODULES` (lists of checks, :func:`checked_check`)."""
    if unit.task == f"{__name__}:result":
        return checked_result(unit.params, result)
    if unit.task == f"{reach.__name__}:unit":
        return reach.checked_unit(result)
    if unit.task in {f"{m.__name__}:unit" for m in UNIT_MODULES}:
        if not isinstance(result, list) or not result:
            raise InputError(f"the journal: a record of {unit.task[:60]} holds no list of checks; run without --resume")
        return [checked_check(c, f"the journal: check {j} of {unit.task[:60]}") for j, c in enumerate(result)]
    raise InputError(f"the journal holds a result of {unit.task[:60]!r}, which verify run does not compute")


def units(names: Sequence[str] | None, profile: str, seed: int) -> list[Unit]:
    """The theorems (all by default) as sweep units of :func:`result`."""
    return [Unit(task=f"{__name__}:result", params={"name": name, "profile": profile, "seed": seed}, weight=10.0)
            for name in names or list(THEOREMS)]  # weight: 1-16 s each in the standard profile (time left only)
