"""The generator a SQL `WATERMARK` becomes when the planner pushes it into the source
(docs/rules.md: "SQL watermarks", SQL-G1 to SQL-G4).

A table on a connector that supports watermark push-down (Kafka does, the filesystem source does
not) gets its `WATERMARK FOR ts AS <expr>` compiled into the source's own `WatermarkStrategy`: one
generator per split, inside the same FLIP-27 reader, idleness wrapper and alignment as a DataStream
source (wmviz/core/splits.py). Restated from Flink 2.3.0's `GeneratedWatermarkGeneratorSupplier`
(flink-table-runtime) and the planner's `WatermarkGeneratorCodeGenerator` and
`WatermarkPushDownSpec`:

- the watermark is the largest value the expression has given so far, with nothing subtracted:
  DataStream's `forBoundedOutOfOrderness` stays one below (`maxSeen − ooo − 1`), SQL does not;
- it starts at Long.MIN_VALUE, so the first periodic emission offers MIN, which the reader's
  output never forwards (it only sends a watermark above the last);
- a row whose expression is NULL leaves it unchanged (the generated code returns null and the
  wrapper skips it; a wmviz record always has its event_ms, so a trace cannot say NULL);
- `scan.watermark.emit.strategy` `on-event`: a watermark only after a row whose expression *raised*
  it (a row that does not raise it writes nothing, so it does not clear its split's idle flag the
  way DataStream's punctuated per-record generator does); `on-periodic` (the default): the
  current value at every `pipeline.auto-watermark-interval`, whether it rose or not;
- idleness is `WatermarkStrategy.withIdleness(scan.watermark.idle-timeout, else
  table.exec.source.idle-timeout)`: the same wrapper DataStream uses (`ChannelGenerator`'s).
"""

from __future__ import annotations

from dataclasses import dataclass

from wmviz.core.generator import ChannelGenerator
from wmviz.core.scenario import GeneratorConfig
from wmviz.core.sql_expr import columns_read, evaluate, expr_text
from wmviz.core.types import MIN_MS


@dataclass(frozen=True, slots=True)
class SqlGeneratorUpdate:
    """A record reached a pushed-down SQL generator: the expression's value and what it did."""

    channel: int
    split: str | None
    expression: str
    value_ms: int
    watermark_ms: int
    raised: bool
    emit: str

    def describe(self, t) -> str:
        where = f"ch{self.channel}" + (f" split {self.split}" if self.split else "")
        if self.raised:
            verdict = "→ new watermark" if self.emit == "on-event" else "(sent at the next interval)"
        else:
            verdict = "(not above the last: unchanged)"
        return (
            f"SQL source generator {where}: max({self.expression}) = {t(self.watermark_ms)} "
            f"(no −1, {self.emit}) {verdict}"
        )


class SqlSourceGenerator(ChannelGenerator):
    """A pushed-down SQL watermark on one split or one single-split channel (SQL-G1 to SQL-G4)."""

    def __init__(self, channel: int, config: GeneratorConfig) -> None:
        super().__init__(channel, config)
        assert config.expression is not None
        self.expression = config.expression
        self.max_seen_ms = MIN_MS
        """Here: the largest value of the expression so far (SQL-G1), MIN before any row (SQL-G2)."""
        self.raised_by_last = False
        """The last record's expression raised the watermark (what `on-event` emits on, SQL-G3)."""
        self.last_value_ms = MIN_MS

    def expression_value_ms(self, event_ms: int) -> int:
        """The expression over the record, its column holding the record's event_ms."""
        config = self.config
        (column,) = set(columns_read(self.expression))  # one column: checked with the config
        return evaluate(self.expression, {column: event_ms}, {column: config.column_kind}, config.zone)

    def candidate_watermark_ms(self) -> int:
        """SQL-G1: the largest expression value so far, nothing subtracted (DataStream: −1)."""
        return self.max_seen_ms

    def see_record(self, event_ms: int) -> None:
        """SQL-G1: the record counts as activity; its expression raises the watermark or not."""
        self._activity += 1
        self.last_value_ms = self.expression_value_ms(event_ms)
        self.raised_by_last = self.last_value_ms > self.max_seen_ms
        if self.raised_by_last:
            self.max_seen_ms = self.last_value_ms

    def after_record(self, event_ms: int):
        """SQL-G3: on-event emits only when the row raised the watermark."""
        self.see_record(event_ms)
        if self.config.emit == "on-event" and self.raised_by_last:
            return self._emit_if_increased()
        return []

    def punctuated_watermark(self) -> int | None:
        """SQL-G3: what the last record writes to its split's output: the new watermark if it
        rose under on-event, else nothing."""
        if self.config.emit == "on-event" and self.raised_by_last:
            return self.max_seen_ms
        return None

    def update(self, split: str | None, channel: int | None = None) -> SqlGeneratorUpdate:
        """The last record's effect, for the step's log (`channel`: the reader's, for a split, whose
        generator's own number is the split's index)."""
        return SqlGeneratorUpdate(
            self.channel if channel is None else channel,
            split,
            expr_text(self.expression),
            self.last_value_ms,
            self.max_seen_ms,
            self.raised_by_last,
            self.config.emit,
        )

    def snapshot(self) -> tuple:
        return (*super().snapshot(), self.raised_by_last, self.last_value_ms)
