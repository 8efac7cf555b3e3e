"""The engine of the verification suite: attention blocks, their fields, flows and networks,
witness files, backends (see DESIGN §2 for the conventions every module follows).

The engine knows nothing of theorems; ``theorems/`` composes it.
"""

from .blocks import Block, gaussian_blocks
from .errors import InputError, IntegrationError, VerifyError

__all__ = ["Block", "gaussian_blocks", "InputError", "IntegrationError", "VerifyError"]
__version__ = "0.1.0"
