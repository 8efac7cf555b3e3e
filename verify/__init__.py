"""The engine of the verification suite, in packages by job: ``model`` (blocks, fields, flows,
networks, backends), ``lie`` (brackets, invariants, rank), ``verdicts`` (replays, enclosures
and existence proofs), ``search`` (the solver), ``io`` (witnesses, data files, validation) and
``reporting``; the conventions every module follows are in docs/conventions.md.

The engine knows nothing of theorems; ``theorems/`` composes it, and the command line
(``verify.cli``) sits on top of both.
"""

from verify.io.errors import InputError, IntegrationError, VerifyError
from verify.model.blocks import Block, gaussian_blocks
from verify.version import __version__

__all__ = ["__version__", "Block", "gaussian_blocks", "InputError", "IntegrationError", "VerifyError"]
