"""Validation issues and the exception that carries them (docs/trace-format.md §8, "Mistakes").

Every problem found in a trace or scenario config becomes one `TraceIssue` naming the file, the row
(1-based, as a text editor shows it), the column or config field, and the reason. Readers collect
all issues of a file before failing, so a user can fix a whole file in one pass.
"""

from __future__ import annotations

from dataclasses import dataclass

from wmviz.core.errors import BadInputError

MAX_ISSUES: int = 1000
"""How many issues a `TraceValidationError` keeps. More are counted in `total` but not kept, so a
badly broken million-row file cannot exhaust memory or flood the UI."""


@dataclass(frozen=True, slots=True)
class TraceIssue:
    """One problem in a trace or config file.

    `str()` gives `file:row: column NAME: reason`; the `row` part is left out for file-level
    issues, and config problems name `field PATH` (e.g. `field operator.type`) instead of a column.
    """

    file: str
    row: int | None
    column: str | None
    reason: str
    field: str | None = None

    def __str__(self) -> str:
        where = self.file if self.row is None else f"{self.file}:{self.row}"
        if self.field is not None:
            return f"{where}: field {self.field}: {self.reason}"
        if self.column is not None:
            return f"{where}: column {self.column}: {self.reason}"
        return f"{where}: {self.reason}"


class TraceValidationError(BadInputError):
    """A trace or config that must not be simulated, with every issue found (up to `MAX_ISSUES`).

    `issues` holds the kept issues sorted by row (file-level issues first); `total` counts all
    issues found, including those beyond the cap.
    """

    def __init__(self, issues: tuple[TraceIssue, ...] | list[TraceIssue], total: int | None = None):
        self.issues: tuple[TraceIssue, ...] = tuple(issues)
        self.total: int = len(self.issues) if total is None else max(total, len(self.issues))
        super().__init__(self._message())

    def __reduce__(self) -> tuple[type, tuple[tuple[TraceIssue, ...], int]]:
        # Exception pickling replays `args` (the message); rebuild from the issues instead.
        return (TraceValidationError, (self.issues, self.total))

    def _message(self) -> str:
        lines = [str(issue) for issue in self.issues]
        if self.total > len(self.issues):
            lines.append(f"... and {self.total - len(self.issues)} more")
        return "\n".join(lines)

    def __str__(self) -> str:
        return self._message()


def _sort_key(entry: tuple[TraceIssue, int]) -> tuple[bool, int, int]:
    # File-level issues (no row) first, then by row, then by the check's place in the order a row
    # is judged (`phase`); `sorted` is stable, so issues of one phase keep the order they came in.
    issue, phase = entry
    return (issue.row is not None, issue.row or 0, phase)


class IssueCollector:
    """Collects issues for one read, keeping the `cap` earliest rows and counting the rest.

    Issues do not arrive in row order (whole-file checks such as `seq` ties run after the main
    pass), so the collector keeps a buffer of up to twice the cap and trims it to the earliest rows
    whenever it fills; memory stays bounded however broken the file is.
    """

    def __init__(self, source: str, cap: int = MAX_ISSUES):
        self.source = source
        self.cap = cap
        self.total = 0
        self._issues: list[tuple[TraceIssue, int]] = []

    def add(
        self,
        row: int | None,
        column: str | None,
        reason: str,
        *,
        field: str | None = None,
        file: str | None = None,
        phase: int = 0,
    ) -> None:
        """Record one issue; `file` defaults to the collector's source name. `phase` orders the
        issues of one row (the validator's order of checks); it is never shown."""
        self.total += 1
        self._issues.append((TraceIssue(file or self.source, row, column, reason, field), phase))
        if len(self._issues) >= 2 * self.cap:
            self._issues = sorted(self._issues, key=_sort_key)[: self.cap]

    def count_more(self, count: int) -> None:
        """Count issues that were found but, being past the cap in their rows, never rendered."""
        self.total += count

    def merge(self, other: IssueCollector) -> None:
        """Take in the issues another collector gathered (a batch, a chunk)."""
        self.add_entries(other._issues, other.total)

    def add_entries(self, entries: list[tuple[TraceIssue, int]], total: int) -> None:
        """Take in `entries()` and `total` of a collector elsewhere (a Spark task's)."""
        for issue, phase in entries:
            self._issues.append((issue, phase))
        self.total += total
        if len(self._issues) >= 2 * self.cap:
            self._issues = sorted(self._issues, key=_sort_key)[: self.cap]

    def entries(self) -> list[tuple[TraceIssue, int]]:
        """The kept issues with their phases (for shipping a task's issues to the driver)."""
        return list(self._issues)

    def __bool__(self) -> bool:
        return self.total > 0

    def error(self) -> TraceValidationError:
        """The exception holding everything collected so far."""
        kept = sorted(self._issues, key=_sort_key)[: self.cap]
        return TraceValidationError([issue for issue, _ in kept], self.total)

    def raise_if_any(self) -> None:
        """Raise `TraceValidationError` if any issue was collected."""
        if self.total:
            raise self.error()
