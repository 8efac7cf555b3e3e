"""The engine of the verification suite: attention blocks, their fields, flows and networks,
witness files, backends (see DESIGN §2 for the conventions every module follows).

The engine knows nothing of theorems; ``theorems/`` composes it.
"""

from verify.io.errors import InputError, IntegrationError, VerifyError
from verify.model.blocks import Block, gaussian_blocks

__all__ = ["Block", "gaussian_blocks", "InputError", "IntegrationError", "VerifyError"]
__version__ = "0.1.0"
