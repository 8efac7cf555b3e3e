"""The packages' layering is what the code says: no import circle among the suite's modules,
counting the imports made inside functions (which hid ``lie.rank`` <-> ``lie.certify`` and
``model.backend`` <-> ``model.float_balls``, issue 65), and the engine knows nothing of the
theorems (only the API and the command line import ``theorems``)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("verify", "theorems")


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for p in (ROOT / package).rglob("*.py"):
            name = ".".join(p.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = p
    return out


def _graph() -> dict[str, set[str]]:
    """Module -> the suite's modules it imports anywhere in its text (top level or in a function)."""
    mods = _modules()
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for m, p in mods.items():
        for node in ast.walk(ast.parse(p.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module \
                    and node.module.split(".")[0] in PACKAGES:
                for a in node.names:
                    target = f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in mods else node.module
                    graph[m].add(target)
            elif isinstance(node, ast.Import):
                graph[m] |= {a.name for a in node.names if a.name in mods}
        graph[m].discard(m)
    return graph


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, children = work[-1]
            w = next(children, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_no_module_of_the_suite_imports_itself_through_others():
    assert _circles(_graph()) == []


def test_the_detector_sees_a_circle_made_inside_a_function():
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_engine_knows_nothing_of_the_theorems():
    graph = _graph()
    users = sorted(m for m, deps in graph.items() if m.startswith("verify") and any(d.startswith("theorems") for d in deps))
    assert users == ["verify.api", "verify.cli.commands"]
