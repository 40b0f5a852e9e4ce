"""Row-time deduplication, `ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts ASC|DESC) = 1` with
mini-batch off, as Flink 2.3.0 runs it. The plan decides which of two functions runs:

- keep first with an insert-only output (`outputInsertOnly`, the planner's choice when nothing
  downstream needs updates; `RowTimeDeduplicateKeepFirstRowFunction`): the earliest row of a key
  waits until the watermark reaches its time, then leaves once as +I; a row before the watermark
  on arrival (`ts < W`, strictly) is dropped and counted; after the emission every row of the key
  is ignored, uncounted;
- otherwise (keep last, or keep first with updates; `RowTimeDeduplicateFunction`): nothing waits
  and nothing is late. A row replaces the key's row when it is later or as late (keep last) or
  strictly earlier (keep first), and leaves at once: +I for a key's first row, then -U of the
  old row (with `generateUpdateBefore`) and +U. Flink never emits -D here.

One method per rule (docs/rules.md, SQL-D1 … SQL-D5).
"""

from __future__ import annotations

from wmviz.core.changelog import RowKind
from wmviz.core.operator_log import Dropped, StepLog
from wmviz.core.scenario import TraceRow
from wmviz.core.sql_buffer import ForwardsWatermark, input_values, key_words, partition_key
from wmviz.core.sql_buffer_config import DeduplicateConfig
from wmviz.core.sql_rows import LATE_METRIC, Fate, RowFate, SqlOutput
from wmviz.core.timers import FiredTimer, TimeDomain, TimerService
from wmviz.core.timetext import TimedText

FIRST_ROW_AT = "deduplicate: emit the first row"


class Deduplicate(ForwardsWatermark):
    """One instance: per key the row it holds (the candidate waiting for the watermark, or the
    row last emitted) and, when buffering, the keys already emitted."""

    def __init__(self, config: DeduplicateConfig, timers: TimerService) -> None:
        self.config = config
        self.timers = timers
        self.kept: dict[str, TraceRow] = {}
        self.emitted: set[str] = set()

    @property
    def buffers(self) -> bool:
        """Whether rows wait for the watermark (keep first, insert-only output)."""
        return self.config.keep == "first" and self.config.insert_only

    # --- rules: keep first, buffered -----------------------------------------------------------

    def d1_is_late(self, ts_ms: int) -> bool:
        """SQL-D1: buffering, a row strictly before the watermark is dropped and counted; a row
        exactly at the watermark still waits (OVER's test is `≤`, this one `<`)."""
        return ts_ms < self.watermark_ms

    def d2_already_emitted(self, key: str) -> bool:
        """SQL-D2: buffering, once a key's first row has left, every later row of it is ignored
        without a count: an insert-only output cannot take it back."""
        return key in self.emitted

    def d3_replaces_candidate(self, key: str, row: TraceRow, log: StepLog) -> TraceRow | None:
        """SQL-D3: buffering, a row strictly earlier than the key's waiting row (or the first one)
        becomes the candidate: the old candidate's timer is deleted and one registered at the new
        row's time. Returns the displaced row; a row not earlier is not taken (returns `row`)."""
        assert row.event_ms is not None
        held = self.kept.get(key)
        if held is not None:
            assert held.event_ms is not None
            if not row.event_ms < held.event_ms:
                return row
            self.timers.delete(TimeDomain.EVENT, held.event_ms, key)
        log.registered.append(self.timers.register(TimeDomain.EVENT, row.event_ms, key, FIRST_ROW_AT))
        self.kept[key] = row
        return held

    def d4_emit_first(self, key: str, log: StepLog) -> None:
        """SQL-D4: buffering, the candidate's timer fires when the watermark reaches its time: it
        leaves as +I and the key is marked emitted."""
        row = self.kept.pop(key)
        self.emitted.add(key)
        log.emit.append(SqlOutput(RowKind.INSERT, input_values(row), (row.row,)))
        ts = row.event_ms
        assert ts is not None
        why = TimedText.of(
            lambda t: (
                f"the first row{key_words(key)} at {t(ts)}: emitted +I once the watermark reached it (SQL-D4)"
            )
        )
        log.notes.append(RowFate(row, Fate.KEPT, "SQL-D4", why))

    # --- rules: emitted on arrival -------------------------------------------------------------

    def d5_takes(self, key: str, row: TraceRow) -> bool:
        """SQL-D5: on arrival, a row replaces the key's row when there is none, or (keep last) when
        it is not earlier, or (keep first) when it is strictly earlier. The watermark plays no part."""
        held = self.kept.get(key)
        if held is None:
            return True
        assert held.event_ms is not None and row.event_ms is not None
        if self.config.keep == "last":
            return held.event_ms <= row.event_ms
        return row.event_ms < held.event_ms

    def d5_emit(self, key: str, row: TraceRow, log: StepLog) -> None:
        """SQL-D5's output: +I for a key's first row (+U when neither inserts nor -U are wanted),
        then for a replacement -U of the old row (with generateUpdateBefore) and +U of the new."""
        held = self.kept.get(key)
        config = self.config
        if not (config.generate_update_before or config.generate_insert):
            log.emit.append(SqlOutput(RowKind.UPDATE_AFTER, input_values(row), (row.row,)))
        elif held is None:
            log.emit.append(SqlOutput(RowKind.INSERT, input_values(row), (row.row,)))
        else:
            if config.generate_update_before:
                log.emit.append(SqlOutput(RowKind.UPDATE_BEFORE, input_values(held), (held.row,)))
            log.emit.append(SqlOutput(RowKind.UPDATE_AFTER, input_values(row), (row.row,)))
        self.kept[key] = row

    # --- the operator's contract ---------------------------------------------------------------

    def on_record(self, input_name: str, row: TraceRow, log: StepLog) -> None:
        key = partition_key(row, self.config.partition_by)
        if self.buffers:
            self._buffered(key, row, log)
        else:
            self._at_once(key, row, log)

    def on_timer(self, fired: FiredTimer, log: StepLog) -> None:
        self.d4_emit_first(fired.timer.key, log)

    def snapshot(self) -> tuple[object, ...]:
        return (self.watermark_ms, tuple(sorted(self.kept.items())), tuple(sorted(self.emitted)))

    def live_rows(self) -> set[int]:
        return {row.row for row in self.kept.values()}

    # --- helpers -------------------------------------------------------------------------------

    def _buffered(self, key: str, row: TraceRow, log: StepLog) -> None:
        ts, watermark = row.event_ms, self.watermark_ms
        assert ts is not None
        if self.d1_is_late(ts):
            why = TimedText.of(
                lambda t: (
                    f"{t(ts)} is before the watermark {t(watermark)} on arrival{key_words(key)}: "
                    f"dropped, {LATE_METRIC} (SQL-D1)"
                )
            )
            log.notes.append(RowFate(row, Fate.DROPPED, "SQL-D1", why, LATE_METRIC))
            log.dropped.append(Dropped(row, why, late=True))
            return
        if self.d2_already_emitted(key):
            why = TimedText.of(
                lambda t: (
                    f"{t(ts)}: the first row{key_words(key)} has already left: ignored, uncounted (SQL-D2)"
                )
            )
            log.notes.append(RowFate(row, Fate.DROPPED, "SQL-D2", why))
            log.dropped.append(Dropped(row, why))
            return
        displaced = self.d3_replaces_candidate(key, row, log)
        if displaced is None:
            return
        dts = displaced.event_ms
        assert dts is not None
        if displaced is row:
            why = TimedText.of(
                lambda t: (
                    f"{t(ts)} is not earlier than the waiting first row{key_words(key)}: ignored, "
                    "uncounted (SQL-D3)"
                )
            )
        else:
            why = TimedText.of(
                lambda t: (
                    f"{t(dts)} was the waiting first row{key_words(key)} until the earlier {t(ts)} "
                    "arrived: replaced, uncounted (SQL-D3)"
                )
            )
        log.notes.append(RowFate(displaced, Fate.DROPPED, "SQL-D3", why))
        log.dropped.append(Dropped(displaced, why))

    def _at_once(self, key: str, row: TraceRow, log: StepLog) -> None:
        ts = row.event_ms
        assert ts is not None
        keep = self.config.keep
        if not self.d5_takes(key, row):
            why = TimedText.of(
                lambda t: (
                    f"{t(ts)} does not replace the {keep} row{key_words(key)}: ignored, uncounted (SQL-D5)"
                )
            )
            log.notes.append(RowFate(row, Fate.DROPPED, "SQL-D5", why))
            log.dropped.append(Dropped(row, why))
            return
        self.d5_emit(key, row, log)
        why = TimedText.of(
            lambda t: (
                f"{t(ts)} is now the {keep} row{key_words(key)}: emitted at once, no watermark wait (SQL-D5)"
            )
        )
        log.notes.append(RowFate(row, Fate.KEPT, "SQL-D5", why))


def build_dedup(config: DeduplicateConfig, timers: TimerService) -> Deduplicate:
    return Deduplicate(config, timers)
