"""wmviz's one error family: what wmviz tells a person, as opposed to a bug.

Every error wmviz raises on purpose is a `WmvizError`, of one of four kinds, so a face (the command
line, the page) handles the family once: a family error is one clear message (exit 2 on the command
line), and anything else that escapes is a bug (exit 1, "internal error", the traceback with
`--debug`). The older classes (`TraceValidationError`, `PlanError`, ...) keep their names and
messages and join the family through these kinds; several also keep the builtin base they had
(`ValueError`), so a caller that caught that still does, but no face catches a builtin as "bad
input": a builtin escaping a reader is a bug.

The family lives in the core, the bottom floor, so that every room can raise it. `wmviz/disk`,
the core's sibling on that floor, knows nothing of the core: its `OutputError` (an `OSError`) stays
its own, and the faces handle it beside the family.
"""

from __future__ import annotations


class WmvizError(Exception):
    """A problem wmviz explains to a person in one message; never a bug."""


class BadInputError(WmvizError):
    """An input (a file, a command-line option, a config field) that wmviz cannot take. Where it is
    known, the error carries the file, the row (or line) and the column (or field) it names."""

    def __init__(
        self, *args: object, file: str | None = None, row: int | None = None, column: str | None = None
    ) -> None:
        super().__init__(*args)
        self.file_name = file
        """The file the problem is in (its name as the person gave it), if known."""
        self.row_number = row
        """The row or line (1-based, as an editor counts), if known."""
        self.column_name = column
        """The column, field or option, if known."""


class BadValue(BadInputError, ValueError):
    """One value (a cell, an option, a duration) that cannot be read: also a `ValueError`, so a
    reader that tries a value and catches the builtin (a cell rule, an option type) still does."""


class Refused(WmvizError):
    """A well-formed request wmviz does not do: an operator or feature it does not model, a tool it
    needs that is missing (Java, a jar), a run the page will not start."""


class BudgetExceeded(WmvizError):
    """An input that would cost more than one of wmviz's limits (each a `WMVIZ_*` setting)."""


class SettingError(WmvizError):
    """A `WMVIZ_*` environment variable whose value wmviz cannot read: the message names the
    variable, the value and what is expected."""

    def __init__(self, name: str, value: str, expected: str) -> None:
        super().__init__(f"{name}={value!r}: expected {expected}")
        self.name = name
        self.value = value
        self.expected = expected
