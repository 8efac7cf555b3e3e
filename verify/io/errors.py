"""The errors the engine raises for problems a user can fix.

Every error carries a one-line message that names the problem and says what to do next; the
CLI prints it and exits with status 2.  Anything else escaping the engine is a bug.
"""


class VerifyError(Exception):
    """Base class of all user-facing errors."""


class InputError(VerifyError, ValueError):
    """Input data, a file, or an argument is malformed or inadmissible."""


class IntegrationError(VerifyError, ArithmeticError):
    """A flow could not be integrated (overflow, or too many steps for the budget)."""
