"""The command line's own error: a usage or input problem, told in one line with exit code 2.

It lives apart from the commands so that every subcommand module can raise it without importing
the parser that dispatches to it (which would be a circle).
"""

from __future__ import annotations

from wmviz.core.errors import BadInputError


class BadInput(BadInputError):
    """A usage or input problem worth a one-line message and exit code 2."""
