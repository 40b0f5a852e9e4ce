"""SQL's separate `WatermarkAssignerOperator`: the watermark of a table whose source cannot take
it (docs/rules.md: "SQL watermarks", SQL-A1 to SQL-A8).

When the planner cannot push a table's `WATERMARK` into its source (the filesystem connector, a
view, a watermark declared after a projection), it plans a `WatermarkAssigner` right after the
scan, chained into the source's subtask. Restated from Flink 2.3.0's
`flink-table-runtime/.../wmassigners/WatermarkAssignerOperator` (the released jar's bytecode was
read; tests/flink/test_sql_model_flink.py drives that very class):

- it is one per subtask and sees every row of the subtask, whatever partition it came from: it
  takes the maximum of the expression over all of them, where a pushed-down generator takes the
  minimum over splits (so a slow partition does not hold it back: its rows simply turn late);
- it starts at 0, not at Long.MIN_VALUE, and only ever emits above the last it emitted, so it
  never emits a watermark ≤ 0: rows before 1970 make no watermark at all;
- a row raises its candidate; if the candidate is now more than `pipeline.auto-watermark-interval`
  above the last emitted watermark it is emitted at once ("eagerly", so a busy task whose timer is
  late still moves), otherwise it waits for the processing-time timer;
- the timer runs every `timer interval` from when the operator opened (the interval itself, or a
  fifth of the smaller of interval and idle timeout when the two are within 5× of each other) and
  emits the candidate once `interval` has passed since the last periodic emission;
- idleness uses `table.exec.source.idle-timeout` only (a table's `scan.watermark.idle-timeout` is
  for sources that push down): at a timer that finds no row since the previous one, the quiet
  spell starts; at a timer `timeout` or more after its start (`≤`, not `<`), IDLE is sent; the
  next row sends ACTIVE before it goes on;
- of the upstream watermarks only Long.MAX_VALUE (the end of input) passes, once; every upstream
  status passes and becomes the assigner's own.

A wmviz trace has no open time: the assigner opens at the trace's first processing time (the
first `proc_ms`), and its timer runs every timer interval from then.
"""

from __future__ import annotations

from dataclasses import dataclass

from wmviz.core.generator import ProbeResult
from wmviz.core.scenario import GeneratorConfig
from wmviz.core.sql_expr import columns_read, evaluate, expr_text
from wmviz.core.types import MAX_MS, Status, StatusInput, ValveInput, WatermarkInput


def assigner_timer_interval_ms(watermark_interval_ms: int, idle_timeout_ms: int) -> int:
    """SQL-A8: the assigner's one timer serves both jobs: the smaller interval when it is more than
    5× smaller than the other, else a fifth of the smaller (at least 1 ms); 0 means off."""
    if watermark_interval_ms <= 0:
        return idle_timeout_ms
    if idle_timeout_ms <= 0:
        return watermark_interval_ms
    smaller, larger = sorted((watermark_interval_ms, idle_timeout_ms))
    return max(smaller if smaller * 5 < larger else smaller // 5, 1)


@dataclass(frozen=True, slots=True)
class AssignerEvent:
    """What the assigner of one channel did, for the narration."""

    channel: int
    what: str
    """`row`, `periodic`, `idle`, `active`, `upstream-dropped`, `upstream-max`, `upstream-status`."""
    expression: str
    candidate_ms: int
    last_ms: int
    """The last watermark it emitted before this event."""
    interval_ms: int
    emitted: bool
    detail_ms: int = 0
    """For `idle`: when the quiet spell started; for `upstream-*`: the upstream watermark."""

    def describe(self, t) -> str:
        name = f"WatermarkAssigner ch{self.channel}"
        cand = f"max({self.expression}) = {t(self.candidate_ms)}"
        if self.what == "row":
            rise = self.candidate_ms - self.last_ms
            if self.emitted:
                return (
                    f"{name}: {cand}, {rise} ms above its last watermark, more than the "
                    f"{self.interval_ms} ms interval → emitted at once"
                )
            if rise > 0:
                return (
                    f"{name} held the candidate: {cand} rose {rise} ms, not more than the "
                    f"{self.interval_ms} ms interval (the timer will emit it)"
                )
            return f"{name}: {cand}, not above its last watermark {t(self.last_ms)} (it starts at 0)"
        if self.what == "periodic":
            return f"{name} timer: periodic emission → W{t(self.candidate_ms)}"
        if self.what == "idle":
            return f"{name} went IDLE: no row since {t(self.detail_ms)} (table.exec.source.idle-timeout)"
        if self.what == "active":
            return f"{name}: a row after idleness sends ACTIVE first"
        if self.what == "upstream-max":
            return f"{name} forwards the upstream end-of-input watermark MAX"
        if self.what == "upstream-status":
            return f"{name} forwards the upstream status and takes it as its own"
        return f"{name} ignores the upstream watermark {t(self.detail_ms)}: only MAX passes it"


class WatermarkAssigner:
    """The separate SQL watermark assigner of one channel (an upstream subtask), SQL-A1 to SQL-A8."""

    def __init__(self, channel: int, config: GeneratorConfig, open_ms: int = 0) -> None:
        assert config.expression is not None
        self.channel = channel
        self.config = config
        self.expression = config.expression
        self.interval_ms = config.interval_ms
        """pipeline.auto-watermark-interval."""
        self.idle_timeout_ms = config.idle_timeout_ms or 0
        """table.exec.source.idle-timeout (0: idleness off)."""
        self.timer_interval_ms = assigner_timer_interval_ms(self.interval_ms, self.idle_timeout_ms)
        # SQL-A1: both start at 0, so nothing at or below 0 is ever emitted.
        self.current_ms = 0
        self.last_ms = 0
        self.last_periodic_ms = open_ms
        self.quiet_since_ms = open_ms
        self.status = Status.ACTIVE
        self.processed = 0
        self.processed_at_check = -1
        self.events: list[AssignerEvent] = []

    # ---- the interface the pipeline drives (as for ChannelGenerator) ----------------------------

    def open(self, now_ms: int) -> None:
        """SQL-A8: the operator opens; its timer and both its clocks start now."""
        self.last_periodic_ms = now_ms
        self.quiet_since_ms = now_ms

    @property
    def idleness_enabled(self) -> bool:
        return self.idle_timeout_ms > 0

    def before_record(self) -> list[ValveInput]:
        """SQL-A5: a row reaching an idle assigner sends ACTIVE before it goes on."""
        self.processed += 1
        if self.idleness_enabled and self.status is Status.IDLE:
            self.events.append(self.event("active", False))
            return self.send_status(Status.ACTIVE)
        return []

    def after_record(self, event_ms: int) -> list[ValveInput]:
        """SQL-A2: the row's expression raises the candidate, whatever partition it came from."""
        column, config = columns_read(self.expression)[0], self.config
        value = evaluate(self.expression, {column: event_ms}, {column: config.column_kind}, config.zone)
        self.current_ms = max(self.current_ms, value)
        return self.eager_emission()

    def eager_emission(self) -> list[ValveInput]:
        """SQL-A3: emitted at once if the candidate is more than the interval above the last
        watermark, else left for the timer (so a busy task whose timer is late still moves)."""
        last = self.last_ms
        out = self.advance() if self.current_ms - self.last_ms > self.interval_ms else []
        self.events.append(self.event("row", bool(out), last_ms=last))
        return out

    def probe(self, now_ms: int) -> ProbeResult:
        """The processing-time timer (SQL-A4 then SQL-A5)."""
        saw_activity = self.processed != self.processed_at_check
        out = self.periodic_emission(now_ms)
        out.extend(self.idleness_check(now_ms))
        countdown = self.quiet_since_ms if self.idleness_enabled else None
        return ProbeResult(self.channel, now_ms, saw_activity, countdown, tuple(out))

    def upstream_watermark(self, watermark_ms: int) -> list[ValveInput]:
        """SQL-A6: only the end of input (MAX) passes, once; every other upstream watermark is
        dropped (the assigner makes its own)."""
        if watermark_ms != MAX_MS or self.current_ms == MAX_MS:
            self.events.append(self.event("upstream-dropped", False, detail_ms=watermark_ms))
            return []
        out: list[ValveInput] = []
        if self.idleness_enabled and self.status is Status.IDLE:
            out = self.send_status(Status.ACTIVE)
        self.current_ms = MAX_MS
        self.events.append(self.event("upstream-max", True, detail_ms=watermark_ms))
        return [*out, WatermarkInput(self.channel, MAX_MS)]

    def upstream_status(self, status: Status) -> list[ValveInput]:
        """SQL-A7: an upstream status passes and becomes the assigner's own."""
        self.events.append(self.event("upstream-status", True))
        return self.send_status(status)

    # ---- the rules --------------------------------------------------------------------------------

    def advance(self) -> list[ValveInput]:
        """SQL-A1: emit the candidate only above the last emitted watermark."""
        if self.current_ms <= self.last_ms:
            return []
        self.last_ms = self.current_ms
        return [WatermarkInput(self.channel, self.current_ms)]

    def periodic_emission(self, now_ms: int) -> list[ValveInput]:
        """SQL-A4: at a timer at least `interval` after the last periodic emission, the candidate."""
        if self.interval_ms <= 0 or self.last_periodic_ms + self.interval_ms > now_ms:
            return []
        self.last_periodic_ms = now_ms
        out = self.advance()
        if out:
            self.events.append(self.event("periodic", True))
        return out

    def idleness_check(self, now_ms: int) -> list[ValveInput]:
        """SQL-A5: a timer that sees new rows restarts the quiet spell; IDLE once the spell has
        lasted the timeout (inclusive)."""
        if self.processed != self.processed_at_check:
            self.quiet_since_ms = now_ms
            self.processed_at_check = self.processed
        if (
            self.idleness_enabled
            and self.status is Status.ACTIVE
            and self.quiet_since_ms + self.idle_timeout_ms <= now_ms
        ):
            self.events.append(self.event("idle", False, detail_ms=self.quiet_since_ms))
            return self.send_status(Status.IDLE)
        return []

    def send_status(self, status: Status) -> list[ValveInput]:
        self.status = status
        return [StatusInput(self.channel, status)]

    # ---- what the pipeline and the timeline ask --------------------------------------------------

    def event(
        self, what: str, emitted: bool, *, last_ms: int | None = None, detail_ms: int = 0
    ) -> AssignerEvent:
        return AssignerEvent(
            self.channel,
            what,
            expr_text(self.expression),
            self.current_ms,
            self.last_ms if last_ms is None else last_ms,
            self.interval_ms,
            emitted,
            detail_ms,
        )

    def drain_events(self) -> list[AssignerEvent]:
        events, self.events = self.events, []
        return events

    def has_unseen_activity(self) -> bool:
        return self.processed != self.processed_at_check

    def countdowns(self) -> list[tuple[int | None, bool]]:
        """Nothing for the DataStream skipping rule: the assigner names its own probes
        (`relevant_probes`)."""
        return []

    def relevant_probes(self, first_ms: int, last_ms: int) -> set[int]:
        """In a long quiet clock jump (no row arrives during it), the timer times at which this
        assigner can change anything besides the first two and the last: its first periodic
        emission and the last one (which leaves `last_periodic_ms` where the full run would), and
        the idleness expiry. Times are on the timer's grid from `first_ms`."""
        step = self.timer_interval_ms

        def on_grid(at_ms: int) -> int:
            return at_ms + (-(at_ms - first_ms)) % step if at_ms > first_ms else first_ms

        times: set[int] = set()
        if self.interval_ms > 0:
            # Each periodic emission is on the grid, so the next is a whole number of timer
            # intervals later: ceil(interval / timer interval) of them.
            first_emission = on_grid(self.last_periodic_ms + self.interval_ms)
            every = -(-self.interval_ms // step) * step
            last_emission = first_emission + max(0, (last_ms - first_emission) // every) * every
            times.update((first_emission, last_emission))
        if self.idleness_enabled:
            start = first_ms if self.has_unseen_activity() else self.quiet_since_ms
            times.add(on_grid(start + self.idle_timeout_ms))
        return {t for t in times if first_ms <= t <= last_ms}

    @property
    def max_seen_ms(self) -> int:
        return self.current_ms

    def candidate_watermark_ms(self) -> int:
        return self.current_ms

    def snapshot(self) -> tuple:
        return (
            self.current_ms,
            self.last_ms,
            self.last_periodic_ms,
            self.quiet_since_ms,
            self.status,
            self.processed,
            self.processed_at_check,
        )
