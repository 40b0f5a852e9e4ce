"""SQL's event-time temporal join (`JOIN rates FOR SYSTEM_TIME AS OF o.ts`), as Flink 2.3.0's
`TemporalRowTimeJoinOperator` runs it (docs/rules.md, "SQL temporal join", SQL-T1..SQL-T7).

Per join key the operator keeps the probe rows (input L) that wait, in arrival order, and the
versions of the versioned table (input R), one per version time. It never answers a probe row at
once: a probe row waits until the combined watermark (the smaller of both inputs') reaches its
time, and then takes the version valid at that time, the newest one at or before it. Versions
that can no longer be anybody's answer are removed then, but only when the key's one event-time
timer fires, and the newest version at or below the watermark always stays.

Flink 2.3.0 has no late-row rule for the probe side: a probe row behind the watermark is buffered
like any other and answered at the next watermark advance, against whatever versions that key
still keeps, so it can find its version already cleaned (NULLs on a LEFT join, nothing on an inner
one) and nothing counts it in `numLateRecordsDropped` (SQL-T2). FLINK-39719 (apache/flink PR
28229, merged after 2.3.0) drops such a row on arrival and counts it (SQL-T8): under the
`flink-master` profile only, modelled from the change and not checked against a release, since no
released jar has it (2.3.0's `processElement1` stores every probe row: checked by javap).

Every version is an insert or an update-after: the planner puts a ChangelogNormalize without
update-before rows in front of an upsert table, and the stand-in connector reads every rows-file
line as an upsert, never a delete (a delete version would answer nobody; not modelled).
"""

from __future__ import annotations

import json
from bisect import bisect_right
from dataclasses import dataclass, field

from wmviz.core.operator_log import Dropped, OutputWatermark, StepLog
from wmviz.core.scenario import TraceRow
from wmviz.core.sql_rows import LATE_METRIC, Fate, RowFate, RowKind, SqlOutput, SqlValue, columns_of
from wmviz.core.sql_temporal_join_config import BUILD, PROBE, TemporalJoinConfig
from wmviz.core.timers import FiredTimer, TimeDomain, TimerService
from wmviz.core.timetext import TimedText, Times
from wmviz.core.types import MIN_MS, Profile
from wmviz.core.windows import ScenarioError

RELEASE = "temporal_join_release"
"""The purpose of the key's one event-time timer: release due probe rows, clean old versions."""


@dataclass
class KeyState:
    """One join key's state: the waiting probe rows (arrival order) and the versions by time."""

    probes: list[TraceRow] = field(default_factory=list)
    """Probe rows not yet released, in arrival order (Flink orders them by an arrival index)."""
    versions: dict[int, TraceRow] = field(default_factory=dict)
    """Version time -> the build row that is that version (a later row of the same time replaces it)."""
    timer_ms: int | None = None
    """The key's one registered event-time timer (Flink's `registeredTimer` state)."""

    def sorted_versions(self) -> list[tuple[int, TraceRow]]:
        return sorted(self.versions.items())


class TemporalRowTimeJoin:
    """One subtask of the event-time temporal join; the pipeline calls it as a `SqlOperator`."""

    def __init__(
        self, config: TemporalJoinConfig, timers: TimerService, profile: Profile = Profile.FLINK_1X_2X
    ) -> None:
        self.config = config
        self.timers = timers
        self.drops_late_probe = profile.drops_late_probe
        """SQL-T8 (flink-master) instead of SQL-T2 (released Flink) for a late probe row."""
        self.outer = config.join_type == "left"
        self.watermark_ms = MIN_MS
        self.keys: dict[str, KeyState] = {}

    # ---- arrival: SQL-T1, SQL-T2 (probe), SQL-T3 (build), SQL-T7 (the key's timer) -------------------

    def on_record(self, input_name: str, row: TraceRow, log: StepLog) -> None:
        """A row of either input: buffered (probe) or stored as a version (build), then the key's
        timer is moved to the row's time if that is earlier (SQL-T7)."""
        side = TemporalJoinConfig.canonical_input(input_name)
        t = self.time_of(row)
        if side == PROBE:
            key = self.key_of(row, self.config.probe_key, "operator.probe_key")
            if t <= self.watermark_ms and self.drops_late_probe:
                self.t8_late_probe_dropped(row, t, log)
                return
            state = self.keys.setdefault(key, KeyState())
            if t <= self.watermark_ms:
                self.t2_late_probe_buffered(row, t, state, log)
            else:
                self.t1_probe_waits(row, t, state, log)
        elif side == BUILD:
            key = self.key_of(row, self.config.build_key, "operator.build_key")
            state = self.keys.setdefault(key, KeyState())
            self.t3_version_stored(row, t, state, log)
        else:
            raise ScenarioError(row, "input", f"{input_name!r} is neither L (probe) nor R (build)")
        self.t7_register_smallest_timer(key, t, state, log)

    def t1_probe_waits(self, row: TraceRow, t: int, state: KeyState, log: StepLog) -> None:
        """SQL-T1: a probe row is never answered on arrival; it waits in its key's buffer until the
        combined watermark reaches its time."""
        state.probes.append(row)
        w = self.watermark_ms
        why = TimedText.of(
            lambda tt: (
                f"waits for the watermark to pass {tt(t)}; the combined watermark (the smaller"
                f" of both inputs') {self._wm(w, tt)}"
            )
        )
        log.notes.append(RowFate(row, Fate.KEPT, "SQL-T1", why))

    def t2_late_probe_buffered(self, row: TraceRow, t: int, state: KeyState, log: StepLog) -> None:
        """SQL-T2: a probe row at or behind the watermark is not dropped in Flink 2.3.0: it is
        buffered like any other and answered at the next watermark advance, against the versions
        its key still keeps (the one valid at its time may already be cleaned: SQL-T5)."""
        state.probes.append(row)
        w = self.watermark_ms
        why = TimedText.of(
            lambda tt: (
                f"behind the watermark ({tt(t)} ≤ {tt(w)}): buffered anyway (Flink 2.3.0 has"
                " no late-row rule here); it joins at the next watermark advance with the versions"
                " still kept, not counted in numLateRecordsDropped"
            )
        )
        log.notes.append(RowFate(row, Fate.ADDED_LATE, "SQL-T2", why))

    def t8_late_probe_dropped(self, row: TraceRow, t: int, log: StepLog) -> None:
        """SQL-T8, `flink-master` only (FLINK-39719, after 2.3.0): a probe row at or behind the
        combined watermark on arrival is dropped and counted in `numLateRecordsDropped`, never
        joined nor padded with NULLs on a LEFT join, since the version valid at its time may already
        be cleaned (SQL-T5). It registers no timer."""
        w = self.watermark_ms
        why = TimedText.of(
            lambda tt: (
                f"late: {tt(t)} ≤ the combined watermark {tt(w)}; dropped and counted in"
                " numLateRecordsDropped (flink-master, FLINK-39719: not in any release)"
            )
        )
        log.dropped.append(Dropped(row, why, late=True))
        log.notes.append(RowFate(row, Fate.DROPPED, "SQL-T8", why, metric=LATE_METRIC))

    def t3_version_stored(self, row: TraceRow, t: int, state: KeyState, log: StepLog) -> None:
        """SQL-T3: a build row is the key's version from its time on; a row of the same time
        replaces that version. A version behind the watermark is stored too (no late rule), but
        probe rows already released are not revised."""
        replaced = state.versions.get(t)
        state.versions[t] = row
        w, late = self.watermark_ms, t <= self.watermark_ms
        what = f"replaces row {replaced.row} as " if replaced is not None else "stored as "
        if late:
            why = TimedText.of(
                lambda tt: (
                    f"{what}the version from {tt(t)}, behind the watermark {tt(w)}: probe"
                    " rows already answered are not revised"
                )
            )
            log.notes.append(RowFate(row, Fate.ADDED_LATE, "SQL-T3", why))
        else:
            why = TimedText.of(lambda tt: f"{what}the version from {tt(t)}; valid until a newer one")
            log.notes.append(RowFate(row, Fate.KEPT, "SQL-T3", why))

    def t7_register_smallest_timer(self, key: str, t: int, state: KeyState, log: StepLog) -> None:
        """SQL-T7: one event-time timer per key, at the smallest time seen since it last fired: an
        earlier row deletes the pending timer and registers its own (even one already behind the
        watermark, which then fires at the next advance)."""
        if state.timer_ms is not None and state.timer_ms <= t:
            return
        if state.timer_ms is not None:
            self.timers.delete(TimeDomain.EVENT, state.timer_ms, key)
        self.register(key, t, state, log)

    def register(self, key: str, t: int, state: KeyState, log: StepLog) -> None:
        state.timer_ms = t
        log.registered.append(self.timers.register(TimeDomain.EVENT, t, key, RELEASE))

    # ---- the watermark: SQL-T4, SQL-T5 (at the key's timer), SQL-T6 -----------------------------------

    def on_watermark(self, watermark_ms: int, log: StepLog) -> None:
        """The combined watermark (both inputs') advances; due key timers fire next."""
        self.watermark_ms = watermark_ms

    def on_timer(self, fired: FiredTimer, log: StepLog) -> None:
        """A key's timer: release its due probe rows (SQL-T4), clean its versions (SQL-T5), and
        register the next timer at the earliest probe row still waiting (SQL-T7)."""
        key = fired.timer.key
        state = self.keys[key]
        state.timer_ms = None
        versions = state.sorted_versions()
        waiting = self.t4_release_due_probes(state, versions, log)
        self.t5_clean_versions(state, versions, log)
        if waiting:
            self.register(key, min(self.time_of(row) for row in waiting), state, log)
        if not state.probes and not state.versions:
            del self.keys[key]

    def t4_release_due_probes(
        self, state: KeyState, versions: list[tuple[int, TraceRow]], log: StepLog
    ) -> list[TraceRow]:
        """SQL-T4: every waiting probe row with time ≤ the watermark is answered, in arrival order:
        joined with the newest version at or before its time, else (LEFT) padded with NULLs or
        (inner) emitted nothing. The output row keeps the probe row's kind (+I). Returns the rows
        still waiting."""
        w = self.watermark_ms
        due = [row for row in state.probes if self.time_of(row) <= w]
        state.probes = [row for row in state.probes if self.time_of(row) > w]
        times = [t for t, _ in versions]
        for probe in due:
            t = self.time_of(probe)
            at = bisect_right(times, t)
            version = versions[at - 1][1] if at > 0 else None
            if version is not None:
                log.emit.append(self.output(probe, version))
            elif self.outer:
                log.emit.append(self.output(probe, None))
            else:
                log.dropped.append(Dropped(probe, self.no_version_reason(t, times[0] if times else None)))
        return state.probes

    @staticmethod
    def no_version_reason(t: int, first: int | None) -> TimedText:
        """Why an inner join's released probe row emits nothing (no version at or before it)."""
        if first is None:
            return TimedText.of(lambda tt: f"inner temporal join: no version of its key at or before {tt(t)}")
        return TimedText.of(
            lambda tt: (
                f"inner temporal join: no version of its key at or before {tt(t)} (the oldest"
                f" kept is from {tt(first)}, cleaned or not yet valid)"
            )
        )

    def t5_clean_versions(self, state: KeyState, versions: list[tuple[int, TraceRow]], log: StepLog) -> None:
        """SQL-T5: when the key's timer fires, every version older than the newest one at or below
        the watermark is removed (nobody can ask for it again unless late); that newest one stays,
        and so do the versions above the watermark."""
        w = self.watermark_ms
        keep = bisect_right([t for t, _ in versions], w) - 1
        for t, row in versions[: max(keep, 0)]:
            del state.versions[t]
            kept = versions[keep][0]
            log.notes.append(
                f"SQL-T5: version row {row.row} from {t} cleaned: the version from {kept} is the newest at"
                f" or below the watermark {w}"
            )

    def output_watermark(self, watermark_ms: int, log: StepLog) -> None:
        """SQL-T6: after the due timers, the combined watermark goes downstream unchanged: a quiet
        build side holds it, and every probe row with it."""
        log.emit.append(OutputWatermark(watermark_ms))

    # ---- rows and state ------------------------------------------------------------------------

    def output(self, probe: TraceRow, version: TraceRow | None) -> SqlOutput:
        """The probe row's columns, then the version's (NULLs without one), output-named."""
        values: list[tuple[str, SqlValue]] = list(columns_of(probe).items())
        build = columns_of(version) if version is not None else {}
        for column, name in zip(self.config.build_columns, self.config.build_output_names):
            if version is not None and column not in build:
                raise ScenarioError(version, column, "missing: operator.build_columns names it")
            values.append((name, build.get(column)))
        rows = (probe.row,) if version is None else (probe.row, version.row)
        return SqlOutput(RowKind.INSERT, tuple(values), rows)

    def key_of(self, row: TraceRow, columns: tuple[str, ...], field_name: str) -> str:
        """The row's join key (its key columns' values) as one text, the timer's key."""
        values = columns_of(row)
        missing = [c for c in columns if c not in values]
        if missing:
            raise ScenarioError(row, missing[0], f"missing: {field_name} names it")
        return json.dumps([values[c] for c in columns])

    @staticmethod
    def time_of(row: TraceRow) -> int:
        if row.event_ms is None:
            raise ScenarioError(row, "event_ms", "a temporal join's row needs its time attribute")
        return row.event_ms

    @staticmethod
    def _wm(w: int, tt: Times) -> str:
        return "has not started" if w == MIN_MS else f"is at {tt(w)}"

    def snapshot(self) -> tuple[object, ...]:
        """The watermark and, per key, the waiting probe rows, the versions and the timer."""
        keys = tuple(
            (
                key,
                tuple(row.row for row in s.probes),
                tuple((t, row.row) for t, row in s.sorted_versions()),
                s.timer_ms,
            )
            for key, s in sorted(self.keys.items())
        )
        return (self.watermark_ms, keys)

    def live_rows(self) -> set[int]:
        """Trace rows still held: waiting probe rows and kept versions."""
        return {row.row for s in self.keys.values() for row in (*s.probes, *s.versions.values())}
