"""Named checks: the unit in which every verdict of the suite is returned and reported.

A check holds the measured ``value``, what that value is (``quantity``: "|p - 1|", "Arb upper
bound of max |image - target|"), the ``bound`` it is held against, where that bound comes from
(``origin``), the verdict, and its ``kind``: "certified" (every rounding enclosed: Arb balls or
exact rational arithmetic; ``certified`` is then true), "estimate" (a floating-point
measurement, however well tested: not a proof) or "exact" (a decision on the data's exact
values, such as a refusal).  ``passed`` is computed, never set: value <= bound, both finite
(:func:`passes`).  A yes/no check (:func:`holds`, ``boolean``) stores 0 for yes and 1 for no
against the bound 0, and is shown as yes/no.

Text fields may hold inline mathematics between dollar signs (``"$\\lVert I - RA \\rVert_F < 1$"``);
the terminal and the summary write it as plain text (:func:`verify.reporting.latex.plain`), the appendix typesets it
(:func:`verify.reporting.latex.text`).

>>> c = check("reversibility", 3e-15, 1e-12, "10 x integration error estimate", quantity="max |X - back|")
>>> c.passed, c.certified, c.kind
(True, False, 'estimate')
>>> holds("refused", False, "an invariant", kind="exact").value
1.0
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from typing import Any


@dataclass(frozen=True)
class Check:
    name: str
    value: float
    bound: float
    origin: str
    passed: bool
    certified: bool = False
    details: dict[str, Any] = field(default_factory=dict)
    kind: str = "estimate"
    quantity: str = ""
    boolean: bool = False

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


KINDS = ("certified", "estimate", "exact")


def kind_of(c: dict[str, Any]) -> str:
    """The kind of a check as a dict (reports written before kinds were recorded: certified or estimate)."""
    return str(c.get("kind") or ("certified" if c["certified"] else "estimate"))


def passes(value: Any, bound: Any) -> bool:
    """value <= bound, both finite numbers (an infinite bound would be a check that cannot fail)."""
    try:
        value, bound = float(value), float(bound)
    except (TypeError, ValueError):
        return False
    return math.isfinite(value) and math.isfinite(bound) and value <= bound


def check(name: str, value: float, bound: float, origin: str, *, quantity: str, certified: bool = False,
          kind: str | None = None, **details: Any) -> Check:
    """A check that passes when ``value <= bound`` (:func:`passes`); ``quantity`` says what the
    value is; its kind is "certified" when ``certified``, else ``kind`` (default "estimate")."""
    kind = "certified" if certified else (kind or "estimate")
    return Check(name=name, value=float(value), bound=float(bound), origin=origin, passed=passes(value, bound),
                 certified=bool(certified), details=details, kind=kind, quantity=quantity)


def holds(name: str, ok: bool, origin: str, *, certified: bool = False, kind: str | None = None, **details: Any) -> Check:
    """A yes/no check: the claim ``name`` holds (``ok``) or not; value 0 (yes) or 1 (no) against 0."""
    c = check(name, 0.0 if ok else 1.0, 0.0, origin, quantity="yes when the claim of the row holds", certified=certified,
              kind=kind, **details)
    return replace(c, boolean=True)


def yes_no(c: dict[str, Any], key: str = "value") -> str | None:
    """A yes/no check's value or bound (always "yes": the claim must hold) as a word; None for a
    number.  The value's word is its verdict's (:func:`passes`), so a hand-edited value can never
    read "no" beside a pass."""
    if not c.get("boolean"):
        return None
    return "yes" if key == "bound" or passes(c["value"], c["bound"]) else "no"


def witness_rows(checks: list[dict[str, Any]]) -> list[tuple[int, str]]:
    """(1-based row, file) of each check whose witness the report wrote to a file
    (:mod:`verify.reporting.witness_files`).

    >>> witness_rows([{"details": {}}, {"details": {"witness_file": "witnesses/T1.json"}}])
    [(2, 'witnesses/T1.json')]
    """
    return [(i, str(c["details"]["witness_file"])) for i, c in enumerate(checks, 1)
            if isinstance(c.get("details"), dict) and c["details"].get("witness_file")]


def notes(checks: list[dict[str, Any]]) -> tuple[list[tuple[str, str]], list[int]]:
    """The distinct (what the value is, where the bound comes from) pairs of ``checks`` in order
    of first appearance, and each check's 1-based number in that list (tables cite them).

    >>> notes([{"quantity": "q", "origin": "o"}, {"quantity": "q", "origin": "p"}, {"quantity": "q", "origin": "o"}])
    ([('q', 'o'), ('q', 'p')], [1, 2, 1])
    """
    distinct: dict[tuple[str, str], int] = {}
    cited = [distinct.setdefault((str(c.get("quantity") or "not recorded"), str(c["origin"])), len(distinct) + 1)
             for c in checks]
    return list(distinct), cited


def genericity_rows(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The draws of :mod:`theorems.genericity` (checks whose details hold ``genericity``)
    aggregated per (kind, shape), in order of first appearance: ``draws``, ``proved`` (passed),
    ``not_proved`` (the 1-based draws that did not pass: undecided, failed or lost), ``m`` of the
    collection checked, the rank ``bound`` (or dim gl(d)) as the set of values seen, the least
    and largest degree that reached it (``degrees``), the ``counting`` degree (the least with
    enough Hall words), and the smallest certified lower bound of sigma_min (``sigma_min_lower``).

    >>> c = {"passed": True, "details": {"genericity": {"kind": "rank", "shape": [1, 2, 2], "draw": 0},
    ...      "dimension": 4, "rank_bound": 4, "min_degree": 4, "counting_degree": 4, "sigma_min_lower": 1e-3}}
    >>> [(r["kind"], r["shape"], r["proved"], r["draws"], r["degrees"]) for r in genericity_rows([c, c])]
    [('rank', (1, 2, 2), 2, 2, (4, 4))]
    """
    rows: dict[tuple[str, tuple[int, ...]], dict[str, Any]] = {}
    for c in checks:
        d = c.get("details") if isinstance(c.get("details"), dict) else {}
        g = d.get("genericity")
        if not isinstance(g, dict):
            continue
        key = (str(g.get("kind")), tuple(g.get("shape") or ()))
        row = rows.setdefault(key, {"kind": key[0], "shape": key[1], "draws": 0, "proved": 0, "not_proved": [],
                                    "m": set(), "bound": set(), "degrees": [], "counting": set(), "sigma_min_lower": None})
        row["draws"] += 1
        ok = passes(c.get("value"), c.get("bound")) if "value" in c else bool(c.get("passed"))
        row["proved"] += ok
        if not ok:
            row["not_proved"].append(int(g.get("draw", -1)) + 1)
        for name, key_ in (("m", "dimension"), ("bound", "rank_bound"), ("counting", "counting_degree")):
            if isinstance(d.get(key_), int):
                row[name].add(d[key_])
        degree = d.get("min_degree", d.get("max_degree_used"))
        if ok and isinstance(degree, int):
            row["degrees"].append(degree)
        s = d.get("sigma_min_lower")
        if ok and isinstance(s, (int, float)) and s > 0:
            row["sigma_min_lower"] = s if row["sigma_min_lower"] is None else min(row["sigma_min_lower"], s)
    out = []
    for row in rows.values():
        degs = row.pop("degrees")
        out.append(row | {"degrees": (min(degs), max(degs)) if degs else None,
                          **{k: sorted(row[k]) for k in ("m", "bound", "counting")}})
    return out


def draws_only(checks: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """:func:`genericity_rows` of ``checks`` when every check is a draw (a result the tables show
    aggregated), else [] (a theorem's checks, shown row by row)."""
    rows = genericity_rows(checks)
    return rows if rows and len(checks) == sum(r["draws"] for r in rows) else []


def witness_table(doc: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per witness file of a report (:func:`witness_rows` over its theorems): the
    ``theorem``, the replay ``check``, its ``instance`` label, ``m`` (from the witness's shape),
    ``depth``, ``length`` (steps or layers), the ``file``, and ``exact``: the radius of the exact
    solution proved near it (the check of the same instance that records a Krawczyk radius),
    False where that proof failed or the replay has no certificate to start it from, None
    where none was tried."""
    rows = []
    for t in doc["theorems"]:
        for i, f in witness_rows(t["checks"]):
            c = t["checks"][i - 1]
            d = c["details"]
            label = c["name"][c["name"].rfind("["):] if "[" in c["name"] else ""  # no label: no instance to match
            shape = d.get("witness_shape")
            proof = next((e for e in t["checks"] if label and e is not c and e["name"].endswith(label)
                          and isinstance(e.get("details"), dict) and "radius" in e["details"]), None)
            radius = None if proof is None else proof["details"]["radius"]
            ok = proof is not None and proof["passed"] and proof["certified"] and isinstance(radius, (int, float))
            rows.append({"theorem": t["name"], "check": c, "instance": label.strip("[]") or c["name"],
                         "m": math.prod(shape) if isinstance(shape, list) and shape else "not recorded",
                         "depth": d.get("witness_depth", "not recorded"), "length": d.get("witness_length", "not recorded"),
                         "file": f, "exact": radius if ok else None if proof is None and c["passed"] and c["certified"]
                         else False})  # no certificate: no exact solution either
    return rows


_SHAPE = re.compile(r"N=(\d+),n=(\d+),d=(\d+)|\((\d+), (\d+), (\d+)\)")  # as check names write an instance


def shapes_used(checks: list[dict[str, Any]]) -> list[tuple[int, int, int]]:
    """The (N, n, d) of every instance the checks' names carry (``[N=2,n=2,d=2]``, ``[(3, 2, 2)]``),
    sorted by m = N n d and then by shape.

    >>> shapes_used([{"name": "a [N=2,n=2,d=2]"}, {"name": "b [permuted (3, 2, 2)]"}, {"name": "c"}])
    [(2, 2, 2), (3, 2, 2)]
    """
    found = {tuple(int(x) for x in m.groups() if x is not None) for c in checks for m in _SHAPE.finditer(str(c["name"]))}
    return sorted(found, key=lambda s: (math.prod(s), s))


def _span(ms: set[int], math_: Callable[[str], str]) -> str:
    """", m = 8 to 64" (", m = 32" for one size; nothing for none)."""
    return "" if not ms else f", {math_('m')} = {min(ms)}" + (f" to {max(ms)}" if max(ms) > min(ms) else "")


def scope(doc: dict[str, Any], math_: Callable[[str], str] = str) -> str:
    """What a report shows, in a few sentences: the blocks (one draw, from the seed) and the shapes
    the theorem checks used, the genericity draws, the larger instances (a theorem whose profile
    settings list ``rows``: blocks drawn per row), how many checks of each kind, and that
    this is evidence on these instances, not a proof for all N, n, d.  ``math_`` marks up a
    formula (``str`` for plain text; the appendix passes one that typesets it).

    >>> doc = {"seed": 4, "theorems": [{"checks": [{"name": "x [N=1,n=2,d=2]", "certified": True}]}]}
    >>> import textwrap; print(textwrap.fill(scope(doc), 90))
    Evidence on these instances, not a proof for all N, n, d: the theorem checks use one draw
    of the two blocks (seed 4) on the shapes (N, n, d) = (1, 2, 2). Of the 1 checks, 1 are
    certified (every rounding error enclosed), 0 are floating-point estimates and 0 exact
    decisions on the data.
    """
    own = [t for t in doc["theorems"] if (t.get("profile_settings") or {}).get("rows")]  # blocks drawn per row
    fixed = [c for t in doc["theorems"] if not draws_only(t["checks"]) and t not in own for c in t["checks"]]
    drawn = [r for t in doc["theorems"] for r in draws_only(t["checks"])]
    every = [c for t in doc["theorems"] for c in t["checks"]]
    count = {k: sum(kind_of(c) == k for c in every) for k in KINDS}
    listed = ", ".join(str(s) for s in shapes_used(fixed)) or "none recorded"
    out = [f"Evidence on these instances, not a proof for all {math_('N, n, d')}: the theorem checks use one draw of "
           f"the two blocks (seed {doc['seed']}) on the shapes {math_('(N, n, d)')} = {listed}."]
    if drawn:
        span = _span({m for r in drawn for m in r["m"] if r["kind"] != "gl"}, math_)
        out.append(f"The genericity checks draw blocks and data afresh: {sum(r['draws'] for r in drawn)} draws over "
                   f"{len(drawn)} {'kind and shape' if len(drawn) == 1 else 'kinds and shapes'}{span}.")
    if own:
        span = _span({math.prod(s) for t in own for s in shapes_used(t["checks"])}, math_)
        out.append(f"The larger instances draw their own blocks, one draw per row{span}.")
    out.append(f"Of the {len(every)} checks, {count['certified']} are certified (every rounding error enclosed), "
               f"{count['estimate']} are floating-point estimates and {count['exact']} exact decisions on the data.")
    return " ".join(out)
