"""A work unit of a sweep: a pure function named by its import path, and its parameters.

A unit is ``task(**params)`` for a top-level function ``task = "package.module:function"`` and
JSON parameters, returning a JSON value (numbers, strings, lists, dicts; NumPy scalars and
arrays are converted).  Because the result depends only on (task, params) and the code that
computes it, a unit is identified by

    key = sha256(task, params, code version)[:16],

where the code version (:func:`code_version`) hashes every source file of the project's
packages and of the package holding the task, with the versions of Python and the numerical
libraries.  A key finished once need not be computed again (:mod:`verify.sweep.journal`), on
any machine that has the same code.

>>> u = Unit(task="statistics:fmean", params={"data": [1, 2, 6], "weights": [1, 1, 2]})
>>> u.call()
3.75
>>> u.key("v1") == Unit(task="statistics:fmean", params={"weights": [1, 1, 2], "data": [1, 2, 6]}).key("v1") != u.key("v2")
True
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import json
import platform
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

LIBRARIES = ("numpy", "scipy", "mpmath", "python-flint")  # their versions enter the code version
PACKAGES = ("verify", "theorems")  # the project's packages (pyproject.toml): their .py files enter the code version


@dataclass(frozen=True)
class Unit:
    """``task`` ("module:function") called with the keyword arguments ``params`` (JSON values);
    ``weight``: its expected cost relative to other units (for the time-left estimate only: not
    part of its key or result)."""

    task: str
    params: dict[str, Any] = field(default_factory=dict)
    weight: float = field(default=1.0, compare=False)

    def function(self) -> Callable[..., Any]:
        module, _, name = self.task.partition(":")
        return getattr(importlib.import_module(module), name)

    def call(self) -> Any:
        """The unit's result as plain JSON values (the same whether computed here, on a worker,
        or read back from a journal)."""
        return json.loads(encode(self.function()(**self.params)))

    def key(self, version: str) -> str:
        text = json.dumps([self.task, self.params, version], sort_keys=True, allow_nan=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def _plain(x: Any) -> Any:
    if isinstance(x, (np.generic, np.ndarray)):
        return x.tolist()
    raise TypeError(f"a unit returned a {type(x).__name__}; units return JSON values (numbers, strings, lists, dicts)")


def encode(x: Any) -> str:
    """One line of JSON (NumPy values converted; infinities and NaN kept as JSON extensions,
    which :func:`json.loads` reads back)."""
    return json.dumps(x, default=_plain, allow_nan=True, separators=(",", ":"))


@functools.cache
def code_version(task_module: str | None = None) -> str:
    """A hash of the source files of PACKAGES and of the package holding ``task_module`` (all
    of it: a unit may import its siblings), the Python version and the versions of LIBRARIES:
    what a unit's result may depend on besides its parameters."""
    h = hashlib.sha256(platform.python_version().encode())
    for lib in LIBRARIES:
        try:
            h.update(f"{lib}={metadata.version(lib)}".encode())
        except metadata.PackageNotFoundError:
            h.update(f"{lib}=none".encode())
    packages = set(PACKAGES) | ({task_module.partition(".")[0]} if task_module else set())
    for package in sorted(packages):
        module = importlib.import_module(package)
        if hasattr(module, "__path__"):  # a package: all of its files
            files = sorted(f for root in module.__path__ for f in Path(root).rglob("*.py"))
        else:  # a single module (a standard-library one has no file of its own to hash)
            files = [Path(module.__file__)] if getattr(module, "__file__", None) else []
        for f in files:
            h.update(f.name.encode())
            h.update(f.read_bytes())
    return h.hexdigest()[:16]
