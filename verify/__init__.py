"""The verification suite: the engine in packages by job -- ``model`` (blocks, fields, flows,
networks, backends), ``lie`` (brackets, invariants, rank), ``verdicts`` (replays, enclosures
and existence proofs), ``search`` (the solver), ``io`` (witnesses, data files, validation),
``sweep`` and ``reporting`` -- and, on top of the engine and the theorem checks
(``theorems/``), the Python API (:mod:`verify.api`) and the command line (``verify.cli``).
The conventions every module follows are in docs/conventions.md.

The API's names are importable from here (``from verify import check, rank``); they are
loaded on first use, so ``import verify`` stays light, and ``dir(verify)`` and ``help(verify)``
list them all.  The engine knows nothing of theorems; only the API and the CLI do.

* ``gaussian_blocks(seed, d)`` -- the two frozen blocks; ``rank(blocks, X)`` -- the bracket rank
  proved in Arb; ``interpolate(blocks, X, Y, Settings(...))`` -- a control or network;
  ``witness``, ``save_witness``, ``load_witness`` -- the witness file; ``check(witness)`` -- its
  certified verdict; ``apply_control``; ``run_theorems`` and ``write_report`` -- the report.
"""

from typing import Any

from verify.io.errors import InputError, IntegrationError, VerifyError
from verify.model.blocks import Block, gaussian_blocks
from verify.version import __version__

_API = ("RankAnalysis", "Settings", "Solution", "SweepOptions", "Verdict", "Witness", "apply_control", "check",
        "interpolate", "load_witness", "rank", "run_theorems", "save_witness", "witness", "write_report")

__all__ = ["__version__", "Block", "gaussian_blocks", "InputError", "IntegrationError", "VerifyError", *_API]


def __getattr__(name: str) -> Any:
    if name in _API:  # PEP 562: the API (and the theorems and solver behind it) load on first use
        from verify import api

        return getattr(api, name)
    raise AttributeError(f"module 'verify' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})  # PEP 562: the lazily loaded API too, for dir() and help()
