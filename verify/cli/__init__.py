"""Command-line interface: ``python -m verify`` or the ``verify`` console script.

Exit status: 0 when everything asked for holds, 1 when a check fails (for example a witness
that does not replay within its tolerance), 2 for bad input (one line on stderr naming the
problem, never a traceback).

The package: :mod:`verify.cli.parser` (the flags, and how engine messages name them) and
:mod:`verify.cli.commands` (one function per command); here, :func:`main`.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from verify.cli import commands
from verify.cli.parser import EXIT_INPUT, THEOREM_NAMES, flags, parser
from verify.io.errors import VerifyError

__all__ = ["COMMANDS", "THEOREM_NAMES", "flags", "main", "parser", "run_console"]

COMMANDS = commands.COMMANDS


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except VerifyError as exc:
        print(f"verify {args.command}: error: {flags(str(exc))}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print(f"verify {args.command}: interrupted", file=sys.stderr)
        return 130


def run_console() -> Any:
    sys.exit(main())
