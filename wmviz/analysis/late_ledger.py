"""The late-row ledger: for every record a run's operator received, the watermark it arrived under
and what became of it (docs/late-rows.md).

Pure, over a run's steps (`wmviz.core.simulate`'s `StepResult`s): every operator of the core logs
one `RowFate` per record it receives, at the step it decides the record's fate (the contract of
`wmviz.core.sql_rows`), and the ledger only reads those. A row is listed at the step it arrived
(its trace row's step), with the watermark it arrived under; when its fate was decided at a later
step (two-phase aggregation's local stage flushes it then, SQL-W5), the row says that step too.
An operator that logs `RowFate` needs nothing more to appear here; the outputs a row ended in are
found through the row numbers every output already carries (`WindowOutput.rows`,
`JoinOutput.left`/`right`, `SqlOutput.rows`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from wmviz.core.errors import BadValue
from wmviz.core.operator_log import Dropped, JoinOutput, OperatorOutput, WindowOutput
from wmviz.core.scenario import IntervalJoinConfig, ScenarioConfig, WindowConfig
from wmviz.core.sql_rows import Fate, RowFate, SqlOutput
from wmviz.core.step_result import StepResult
from wmviz.core.story import describe_sql_output
from wmviz.core.timetext import RAW, Times, duration
from wmviz.core.types import MIN_MS

FATES: dict[str, Fate] = {fate.value: fate for fate in Fate}
"""A fate by the name the CLI and the page filter with (`kept`, `added late`, `dropped`)."""


@dataclass(frozen=True, slots=True)
class Ending:
    """Where a row went after its fate was decided: an output row or firing it is part of, or a
    later drop (a cached join row that expired unmatched)."""

    step: int
    what: str
    """In words, times through the reader's format (`text`)."""
    times: tuple[int, ...] = ()

    def text(self, t: Times = RAW) -> str:
        return self.what.format(*(t(ms) for ms in self.times))


@dataclass(frozen=True, slots=True)
class LedgerRow:
    """One record's line of the ledger."""

    step: int
    """The step (within its instance) at which the operator received the record."""
    instance: str
    operator: str
    fate: RowFate
    endings: list[Ending] = field(default_factory=list)
    decided_step: int | None = None
    """The step at which the operator decided the row's fate; None: the step it arrived."""

    @property
    def decided_later(self) -> str:
        """Where the fate was decided after the row arrived, in words; empty when on arrival."""
        if self.decided_step is None or self.decided_step == self.step:
            return ""
        return f"fate decided at step {self.decided_step}"

    @property
    def row(self) -> int:
        """The trace row (its line or row number in the file)."""
        return self.fate.row.row

    @property
    def watermark_ms(self) -> int | None:
        """`CURRENT_WATERMARK(ts)` where the operator evaluates it: its watermark before the row;
        None when no watermark has arrived yet (SQL's NULL) or the operator did not say."""
        wm = self.fate.watermark_ms
        return None if wm is None or wm == MIN_MS else wm

    @property
    def watermark_known(self) -> bool:
        """Whether the operator said the watermark it had (every operator of the core does)."""
        return self.fate.watermark_ms is not None

    def watermark_text(self, t: Times = RAW) -> str:
        """The watermark as the reader sees it: a time, `NULL` (none yet), `?` (not said)."""
        if not self.watermark_known:
            return "?"
        wm = self.watermark_ms
        return t(wm) if wm is not None else "NULL"

    @property
    def event_ms(self) -> int | None:
        return self.fate.row.event_ms

    @property
    def lateness_ms(self) -> int | None:
        """How far the watermark was past the row's time (watermark − time), when it was."""
        wm, ts = self.watermark_ms, self.event_ms
        return wm - ts if wm is not None and ts is not None and wm > ts else None

    @property
    def late(self) -> bool:
        """Behind the watermark on arrival (time ≤ watermark), or not simply kept."""
        wm, ts = self.watermark_ms, self.event_ms
        return self.fate.fate is not Fate.KEPT or (wm is not None and ts is not None and ts <= wm)

    def as_json(self, t: Times = RAW) -> dict:
        """The row as one JSON object: times as numbers (`*_ms`), texts through `t`."""
        row = self.fate.row
        return {
            "step": self.step,
            "row": self.row,
            "instance": self.instance,
            "input": row.input,
            "channel": row.channel,
            "event_ms": self.event_ms,
            "watermark_ms": self.watermark_ms,
            "watermark_known": self.watermark_known,
            "lateness_ms": self.lateness_ms,
            "fate": self.fate.fate.value,
            "operator": self.operator,
            "rule": self.fate.rule,
            "metric": self.fate.metric,
            "why": self.fate.why.text(t),
            "decided_step": self.step if self.decided_step is None else self.decided_step,
            "ended_in": [{"step": e.step, "what": e.text(t)} for e in self.endings],
        }


def operator_name(config: ScenarioConfig) -> str:
    """The operator a run's rows reach, as the ledger names it."""
    op = config.operator
    if isinstance(op, WindowConfig):
        if op.session_gap_ms is not None:
            return "session window"
        return "tumbling window" if op.slide_ms is None else "sliding window"
    if isinstance(op, IntervalJoinConfig):
        return f"{op.join} interval join"
    return getattr(op, "type_name", type(op).__name__)


def build_ledger(steps: Iterable[StepResult], operator: str) -> list[LedgerRow]:
    """One ledger row per record an operator received, in the order the operators received them,
    with the outputs and later drops each ended in."""
    ledger: list[LedgerRow] = []
    by_row: dict[tuple[str, int], LedgerRow] = {}
    arrived: dict[tuple[str, int], int] = {}
    """The step each trace row was read at, by instance and row number."""
    for result in steps:
        instance, step = result.instance, result.step
        arrived.setdefault((instance, result.row.row), step)
        # The fates first: an operator may log a row's fate after the output it made (a late firing).
        for event in result.events:
            if isinstance(event, RowFate):
                came = arrived.get((instance, event.row.row), step)
                entry = LedgerRow(came, instance, operator, event, decided_step=step)
                ledger.append(entry)
                by_row[(instance, entry.row)] = entry
        for event in result.events:
            if isinstance(event, WindowOutput | JoinOutput | SqlOutput):
                for number in _rows_of(event):
                    found = by_row.get((instance, number))
                    if found is not None:
                        found.endings.append(_output_ending(step, event))
            elif type(event) is Dropped:
                found = by_row.get((instance, event.row.row))
                if found is not None and not (found.step == step and found.fate.fate is Fate.DROPPED):
                    why = event.why
                    found.endings.append(Ending(step, "dropped later: " + why.template, why.times))
    return _by_arrival(ledger)


def _by_arrival(ledger: list[LedgerRow]) -> list[LedgerRow]:
    """The ledger with each instance's rows in the order they arrived (a fate decided later was
    logged after rows that arrived after it), each instance keeping its places in the list."""
    places: dict[str, list[int]] = {}
    for index, entry in enumerate(ledger):
        places.setdefault(entry.instance, []).append(index)
    ordered = list(ledger)
    for indexes in places.values():
        arrival = sorted((ledger[i] for i in indexes), key=lambda entry: entry.step)
        for index, entry in zip(indexes, arrival, strict=True):
            ordered[index] = entry
    return ordered


def _rows_of(output: OperatorOutput) -> tuple[int, ...]:
    if isinstance(output, JoinOutput):
        return tuple(side.row for side in (output.left, output.right) if side is not None)
    return output.rows  # type: ignore[union-attr]


def _output_ending(step: int, output: WindowOutput | JoinOutput | SqlOutput) -> Ending:
    """An output the row is part of, in words."""
    if isinstance(output, WindowOutput):
        key = f" of key {_literal(output.key)}" if output.key is not None else ""
        firing = "late firing" if output.late else "firing"
        return Ending(step, f"{firing} of window [{{0}}, {{1}}){key}", (output.start_ms, output.end_ms))
    if isinstance(output, JoinOutput):
        partner = "joined" if output.left is not None and output.right is not None else "padded with nulls"
        return Ending(step, f"{output.kind.value} {partner} ({output.cause.value})")
    return Ending(step, _literal(describe_sql_output(output)))


def _literal(text: str) -> str:
    """User text inside an `Ending` template: its braces doubled, so `format` leaves them."""
    return text.replace("{", "{{").replace("}", "}}")


def select(
    ledger: Iterable[LedgerRow],
    *,
    fate: Fate | None = None,
    instance: str | None = None,
    late_only: bool = False,
) -> list[LedgerRow]:
    """The ledger rows that pass every filter given."""
    return [
        entry
        for entry in ledger
        if (fate is None or entry.fate.fate is fate)
        and (instance is None or entry.instance == instance)
        and (not late_only or entry.late)
    ]


def parse_fate(text: str) -> Fate:
    """A fate by its name (`kept`, `added late` or `added-late`, `dropped`); BadValue naming the
    choices otherwise."""
    fate = FATES.get(text.strip().lower().replace("-", " ").replace("_", " "))
    if fate is None:
        # Said as the CLI's help spells them (`added-late`, one word on a command line).
        names = ", ".join(name.replace(" ", "-") for name in FATES)
        raise BadValue(f"{text!r} is not a fate; choose one of: {names}")
    return fate


PAGE_FILTERS = ("late", "added late", "dropped", "kept", "all")
"""The page's fate filter: the late rows (the default), one fate, or every record."""


def page_selection(ledger: Iterable[LedgerRow], instance: str, choice: str) -> list[LedgerRow]:
    """The rows the page's table shows for one instance under a `PAGE_FILTERS` choice."""
    if choice == "late":
        return select(ledger, instance=instance, late_only=True)
    if choice == "all":
        return select(ledger, instance=instance)
    return select(ledger, instance=instance, fate=parse_fate(choice))


def table_rows(ledger: Iterable[LedgerRow], t: Times = RAW) -> list[dict[str, object]]:
    """The ledger as the page's table: one plain dict per row, times through `t`."""
    return [
        {
            "step": entry.step,
            "row": entry.row,
            "input": entry.fate.row.input,
            "event time": t(entry.event_ms) if entry.event_ms is not None else "",
            "CURRENT_WATERMARK": entry.watermark_text(t),
            "behind": duration(entry.lateness_ms) if entry.lateness_ms is not None else "",
            "fate": entry.fate.fate.value,
            "operator": entry.operator,
            "rule": entry.fate.rule,
            "metric": entry.fate.metric or "",
            "why": "; ".join(filter(None, (entry.fate.why.text(t), entry.decided_later))),
            "ended in": "; ".join(f"step {e.step}: {e.text(t)}" for e in entry.endings),
        }
        for entry in ledger
    ]
