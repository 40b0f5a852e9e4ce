"""What a dead-letter query catches, beside what the job's event-time operator did with each row.

A common way to keep late rows is a second INSERT over the same table, `WHERE ts <
CURRENT_WATERMARK(ts)` into a topic of its own. Its test is not the operator's: CURRENT_WATERMARK is
the watermark the filter's own Calc had before the row, and the operator decides by its own rule
(a window TVF drops a row only when every window of its slice has fired; an OVER aggregation drops
a row not after its watermark). So the query can catch a row the operator still counted, which a
replay of the dead-letter topic would count twice, and miss one the operator dropped. The replay
computes both sides (`wmviz.sql.rex` for the filter, the operators' `RowFate`s for the rest), and
this module lays them side by side, per dead-letter sink (docs/late-rows.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from wmviz.core.sql_rows import Fate, RowFate
from wmviz.sql.model import SqlJob
from wmviz.sql.replay import StepState
from wmviz.sql.rowflow import DropLine, SinkRow, dead_letter_sinks


@dataclass(frozen=True, slots=True)
class DeadLetterAccount:
    """One dead-letter sink's rows beside the operator's fates (rows-file lines)."""

    sink: str
    caught: tuple[int, ...]
    """Lines the dead-letter query wrote to the sink."""
    counted_anyway: tuple[int, ...]
    """Caught, yet kept or added late by the operator: in its output too."""
    missed: tuple[int, ...]
    """Dropped by the operator, and not caught."""

    def as_json(self) -> dict[str, object]:
        return {
            "dead_letter": self.sink,
            "caught": list(self.caught),
            "counted_anyway": list(self.counted_anyway),
            "missed": list(self.missed),
        }

    def sentence(self) -> str:
        """The account in words, as `wmviz sql replay` prints it."""
        said = f"dead-letter sink {self.sink}: caught {_lines(self.caught)}"
        if self.counted_anyway:
            said += (
                f"; the operator counted {_lines(self.counted_anyway)} anyway (in its output too: "
                "replaying the dead letters would count them twice)"
            )
        return said + f"; dropped by the operator and missed: {_lines(self.missed)}"


def dead_letter_accounts(
    job: SqlJob, lines: Iterable[SinkRow | DropLine | object], states: Sequence[StepState]
) -> list[DeadLetterAccount]:
    """One account per dead-letter sink of the job (none when it has no such query)."""
    sinks = dead_letter_sinks(job)
    if not sinks:
        return []
    fates: dict[int, RowFate] = {}
    for state in states:
        fates.update(state.fates)
    written = [line for line in lines if isinstance(line, SinkRow) and line.line is not None]
    dropped = {row for row, fate in fates.items() if fate.fate is Fate.DROPPED}
    out = []
    for sink in sinks:
        caught = sorted({row.line for row in written if row.sink == sink and row.line is not None})
        anyway = [row for row in caught if row in fates and fates[row].fate is not Fate.DROPPED]
        out.append(
            DeadLetterAccount(sink, tuple(caught), tuple(anyway), tuple(sorted(dropped - set(caught))))
        )
    return out


def _lines(rows: Sequence[int]) -> str:
    if not rows:
        return "none"
    return ("line " if len(rows) == 1 else "lines ") + ", ".join(map(str, rows))
