"""One operator instance end to end: generators → valves → combined input → operator, on two clocks.

Order within a trace row (docs/rules.md: "Generation", "Idleness", JW1, JW2):
1. the processing clock advances to the row's `proc_ms`: due probes and processing-time timers run
   in time order (a probe first on a tie); a probe at exactly the row's time runs after a record
   at that time (the generator's record-first rule), but before nothing on a `proctime` row;
2. the row itself: an explicit watermark/status goes to its input's valve; a record passes the
   valve (an idle generated channel first announces ACTIVE), reaches the operator, and then its
   generator may emit a watermark;
3. every strict increase of the combined watermark fires the due event-time timers in order, then
   the operator forwards its output watermark.
"""

from __future__ import annotations

from wmviz.core.account import account_step
from wmviz.core.alignment import HeldRecord
from wmviz.core.budgets import generated_channels_reason
from wmviz.core.channel_generators import (
    AnyGenerator,
    channel_generator,
    makes_generators,
    open_assigners,
    record_events,
)
from wmviz.core.combiner import InputCombiner
from wmviz.core.generator import ProbeResult
from wmviz.core.interval_join import IntervalJoin
from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.operator_log import (
    OutputWatermark,
    StepLog,
)
from wmviz.core.probe_schedule import PROBE_BURST, ProbeSchedule
from wmviz.core.scenario import (
    IntervalJoinConfig,
    Kind,
    ScenarioConfig,
    TraceRow,
    WindowConfig,
)
from wmviz.core.schedule import due_times, ends_of
from wmviz.core.sessions import SessionWindowOperator
from wmviz.core.settings import MAX_GENERATED_CHANNELS
from wmviz.core.split_alignment import align_readers, read_released
from wmviz.core.split_rows import apply_split_row, split_of
from wmviz.core.splits import SplitReader
from wmviz.core.sql_assigner import WatermarkAssigner
from wmviz.core.sql_minibatch import MiniBatchAssigner, MiniBatchHeld
from wmviz.core.sql_operators import SqlOperator, build_sql_operator
from wmviz.core.sql_rows import said_watermark
from wmviz.core.step_result import StepResult, ValveStep, ValveStepFields
from wmviz.core.timers import TimeDomain, TimerService
from wmviz.core.types import (
    Emission,
    EmittedWatermark,
    Profile,
    Status,
    StatusInput,
    ValveInput,
    WatermarkInput,
)
from wmviz.core.valve import Outcome, Valve
from wmviz.core.windows import ScenarioError, WindowOperator

PENDING_LISTED = 10_000
"""At most this many pending timers are listed on a step (`StepResult.pending_timers`)."""


class InstancePipeline:
    """The simulated state of one operator instance (subtask)."""

    def __init__(
        self,
        instance: str,
        config: ScenarioConfig,
        profile: Profile,
        channels: dict[str, int],
        manual_channels: set[tuple[str, int]],
    ) -> None:
        self.instance = instance
        self.config = config
        op = config.operator
        # The operator's own input order (L before R), whichever input the trace's first row names:
        # a keyframe rebuilds the instance in this order, and the combiner keeps its inputs by it.
        declared = [name for name in op.inputs if name in channels]
        self.inputs = declared + [name for name in channels if name not in declared]
        self.valves = {name: Valve(channels[name], profile) for name in self.inputs}
        # Only the join combines two inputs; the flush setting is the join's.
        flush = op.all_idle_flush if isinstance(op, IntervalJoinConfig) else True
        self.combiner = InputCombiner(self.inputs, flush_when_all_idle=flush)
        self.two_input = len(op.inputs) > 1
        self.timers = TimerService()
        self.operator: WindowOperator | IntervalJoin | SqlOperator | None = None
        self.sql_operator: SqlOperator | None = None
        """The operator again when it is one of SQL's (`wmviz.core.sql_operators.SqlOperator`)."""
        if isinstance(op, SqlOperatorKind):
            self.operator = self.sql_operator = build_sql_operator(op, self.timers, profile)
        elif isinstance(op, WindowConfig) and op.session_gap_ms is not None:
            self.operator = SessionWindowOperator(op, self.timers)
        elif isinstance(op, WindowConfig):
            self.operator = WindowOperator(op, self.timers)
        elif isinstance(op, IntervalJoinConfig):
            self.operator = IntervalJoin(op, self.timers)
        self.generators: dict[tuple[str, int], AnyGenerator] = {}
        self.minibatch: dict[tuple[str, int], MiniBatchAssigner] = {}
        """A SQL mini-batch assigner after each generated channel's watermarks (SQL-M1..3)."""
        self.probes = ProbeSchedule()
        """When the generated channels are probed (one schedule per generator config)."""
        for name in self.inputs:
            n = channels[name]
            generator = config.generator_of(name)
            # SOURCE_WATERMARK(): no generator; the channels carry the source's own watermark rows.
            if generator is None or not makes_generators(generator):
                continue
            self.probes.add(generator, name)
            for ch in range(n):
                if (name, ch) not in manual_channels:
                    self.generators[(name, ch)] = channel_generator(
                        generator, name, ch, own_config=name in config.generators
                    )
                    if generator.minibatch_interval_ms is not None:
                        self.minibatch[(name, ch)] = MiniBatchAssigner(generator.minibatch_interval_ms)
        self.proc_ms: int | None = None
        self._clock_start_ms: int | None = None
        self._last_alignment_ms: int | None = None
        self._explain = False
        # What the current row caused, in order: reset by `run_row`, read by `step_result` and the
        # timeline recorder. A valve input is kept as a ValveStep's fields, built only on request.
        self.step_log = StepLog()
        self.step_valve: list[ValveStepFields] = []
        self.step_out: list[Emission] = []
        self.step_probes: list[ProbeResult] = []

    def make_generator(self, input_name: str, channel: int) -> AnyGenerator:
        """A channel's generator, by its input's config's style (`channel_generators`)."""
        generator = self.config.generator_of(input_name)
        assert generator is not None
        return channel_generator(
            generator, input_name, channel, own_config=input_name in self.config.generators
        )

    def process(self, step: int, row: TraceRow, *, explain: bool) -> StepResult:
        """Run one trace row through the instance and return what it caused."""
        self.run_row(row, explain=explain)
        return self.step_result(step, row)

    def run_row(self, row: TraceRow, *, explain: bool) -> None:
        """`process` without building its result: the row's effects on the state, and what it
        caused in this step's buffers (`step_valve`, `step_out`, `step_log`, `step_probes`), which
        the next row resets. The timeline recorder reads the buffers directly."""
        if len(self.generators) > MAX_GENERATED_CHANNELS.get():
            # Every probe visits every generated channel: refused before the first one runs.
            raise ScenarioError(row, "channel", generated_channels_reason(len(self.generators)))
        self._explain = explain
        # Emptied in place (most steps leave them empty): everything that keeps a step's events
        # copies them (`step_result`, the recorder), so the next row may reuse the lists.
        for buffer in (self.step_log.timeline, self.step_valve, self.step_out, self.step_probes):
            if buffer:
                buffer.clear()
        if row.proc_ms is not None:
            self.advance_processing_time(row.proc_ms, inclusive=row.kind is Kind.PROCTIME)
        kind = row.kind
        if kind in (Kind.WATERMARK, Kind.STATUS) and self.through_assigner(row):
            return
        if kind is Kind.WATERMARK:
            assert row.channel is not None and row.watermark_ms is not None
            self.feed_valve(row.input, WatermarkInput(row.channel, row.watermark_ms), generated=False)
        elif kind is Kind.STATUS:
            assert row.channel is not None and row.status is not None
            self.feed_valve(row.input, StatusInput(row.channel, row.status), generated=False)
        elif kind is Kind.RECORD:
            self.record(row)
        elif kind is Kind.SPLIT:
            self.split_change(row)

    def through_assigner(self, row: TraceRow) -> bool:
        """An upstream watermark or status on a channel with a SQL assigner goes through it (SQL-A6,
        SQL-A7); False for any other channel. (In a trace a channel carrying watermark rows has no
        generator: those rows are the source's own, SOURCE_WATERMARK().)"""
        assigner = self.generators.get((row.input, row.channel)) if row.channel is not None else None
        if not isinstance(assigner, WatermarkAssigner):
            return False
        if row.watermark_ms is not None:
            out = assigner.upstream_watermark(row.watermark_ms)
        else:
            assert row.status is not None
            out = assigner.upstream_status(row.status)
        self.step_log.notes.extend(assigner.drain_events())
        for inp in out:
            self.feed_valve(row.input, inp, generated=True)
        return True

    def step_result(self, step: int, row: TraceRow) -> StepResult:
        """The StepResult of the row `run_row` just ran."""
        log = self.step_log
        if log.timeline:
            emit, dropped, registered, fired, notes = log.split()
            events = tuple(log.timeline)
        else:
            emit = dropped = registered = fired = notes = events = ()
        return StepResult(
            step=step,
            instance=self.instance,
            row=row,
            out=tuple(self.step_out),
            valve_steps=tuple(ValveStep(*taken) for taken in self.step_valve),
            emit=emit,
            dropped=dropped,
            timers_registered=registered,
            timers_fired=fired,
            probes=tuple(self.step_probes),
            notes=notes,
            events=events,
            pending_timers=(
                self.timers.pending()
                if self._explain and self.timers.pending_count() <= PENDING_LISTED
                else ()
            ),
        )

    @property
    def valve_only(self) -> bool:
        """No generator and no operator: every row is a plain valve input or passes by."""
        return not self.generators and self.operator is None

    def process_valve_only(
        self,
        kind: Kind,
        input_name: str,
        channel: int | None,
        watermark_ms: int | None,
        status: Status | None,
        proc_ms: int | None,
        out: list[Emission],
    ) -> Outcome | None:
        """`process` for valve-only scenarios, given a row's cells, without building a StepResult
        (or the row): the timeline's fast path.

        Same effects on every piece of state as `process` (tests compare snapshots and timelines);
        returns the valve's outcome, or None for a row that passes the valve.
        """
        if proc_ms is not None:
            self.advance_processing_time(proc_ms, inclusive=kind is Kind.PROCTIME)
        if kind is Kind.WATERMARK:
            outcome = self.valves[input_name].input_watermark(channel, watermark_ms, out)  # type: ignore[arg-type]
        elif kind is Kind.STATUS:
            outcome = self.valves[input_name].input_status(channel, status, out)  # type: ignore[arg-type]
        else:
            return None
        for emission in out:
            self.combiner.on_valve_emission(input_name, emission)
        return outcome

    def record(self, row: TraceRow) -> None:
        """A record: ACTIVE first if its generator was idle, the operator, then its watermark; held
        back instead while watermark alignment pauses its subtask or split."""
        assert row.channel is not None
        generator = self.generators.get((row.input, row.channel))
        if isinstance(generator, SplitReader) and generator.is_held(split := split_of(row, generator)):
            generator.held.append(row)
            self.step_log.notes.append(HeldRecord(row.channel, split, row.row, generator.paused))
            return
        if generator is not None:
            for inp in generator.before_record():
                self.feed_valve(row.input, inp, generated=True)
        self.to_operator(row)
        if isinstance(generator, SplitReader):
            assert row.event_ms is not None
            punctuated = generator.record(split_of(row, generator), row.event_ms)
            self.step_log.notes.extend(generator.drain_events())
            for inp in punctuated:
                self.feed_valve(row.input, inp, generated=True)
        elif generator is not None:
            assert row.event_ms is not None
            generated = generator.after_record(row.event_ms)
            self.step_log.timeline.extend(record_events(row.channel, generator, bool(generated)))
            for inp in generated:
                self.feed_valve(row.input, inp, generated=True)

    def to_operator(self, row: TraceRow) -> None:
        """A record reaches the operator, by its kind's own method."""
        if self.sql_operator is not None:
            events, watermark = self.step_log.timeline, self.output_watermark_ms
            start = len(events)
            self.sql_operator.on_record(row.input, row, self.step_log)
            said_watermark(events, start, watermark)
        elif isinstance(self.operator, WindowOperator):
            self.operator.on_record(row, self.step_log)
        elif isinstance(self.operator, IntervalJoin):
            self.operator.on_row(row.input, row, self.step_log)

    def split_change(self, row: TraceRow) -> None:
        """A `split` row: a split of a reading channel is added, finished, or marked idle/active."""
        assert row.channel is not None
        reader = self.generators.get((row.input, row.channel))
        emitted = apply_split_row(row, reader if isinstance(reader, SplitReader) else None)
        assert isinstance(reader, SplitReader)
        self.step_log.notes.extend(reader.drain_events())
        for inp in emitted:
            self.feed_valve(row.input, inp, generated=True)

    def feed_valve(self, input_name: str, inp: ValveInput, *, generated: bool) -> None:
        """One valve input; its emissions flow through the combiner to the operator. A generated
        watermark passes the channel's mini-batch assigner first, if it has one."""
        batch = self.minibatch.get((input_name, inp.channel)) if generated and self.minibatch else None
        if batch is not None and isinstance(inp, WatermarkInput):
            forwarded = batch.on_watermark(inp.watermark_ms)
            if forwarded is None:
                self.step_log.notes.append(MiniBatchHeld(inp.channel, inp.watermark_ms, batch.next_ms))
                return
            inp = WatermarkInput(inp.channel, forwarded)
        valve = self.valves[input_name]
        if self._explain:
            account = account_step(valve, inp)
            emissions, outcome = account.emissions, account.outcome
        else:
            account, out = None, []  # type: ignore[var-annotated]
            outcome = valve.process(inp, out)
            emissions = tuple(out)
        self.step_valve.append((input_name, inp, generated, emissions, account, outcome))
        for emission in emissions:
            combined = self.combiner.on_valve_emission(input_name, emission)
            self.step_out.extend(combined if self.two_input else [emission])
            for em in combined:
                if isinstance(em, EmittedWatermark):
                    self.advance_event_time(em.watermark_ms)

    def advance_event_time(self, watermark_ms: int) -> None:
        """JW2: set the operator's watermark, fire due event-time timers in order, then forward."""
        operator = self.operator
        if operator is None:
            return
        sql = self.sql_operator
        if sql is not None:
            sql.on_watermark(watermark_ms, self.step_log)
        else:
            operator.on_watermark(watermark_ms)  # type: ignore[call-arg]
        while (fired := self.timers.pop_due(TimeDomain.EVENT, watermark_ms)) is not None:
            self.step_log.fired.append(fired)
            operator.on_timer(fired, self.step_log)
        if sql is not None:
            sql.output_watermark(watermark_ms, self.step_log)
        elif isinstance(operator, IntervalJoin):
            operator.output_watermark(self.step_log)
        else:
            self.step_log.emit.append(OutputWatermark(watermark_ms))

    def advance_processing_time(self, now_ms: int, *, inclusive: bool) -> None:
        """Run the probes and processing-time timers due by `now_ms`, in time order."""
        if self._clock_start_ms is None:
            self._clock_start_ms = now_ms
            open_assigners(self.generators.values(), now_ms)
        self.proc_ms = now_ms
        if isinstance(self.operator, IntervalJoin):
            self.operator.on_processing_time(now_ms)
        probes = self._due_probes(now_ms, inclusive)
        aligns = self._due_alignments(now_ms, inclusive)
        while True:
            next_timer = self.timers.next_due_ms(TimeDomain.PROCESSING)
            timer_due = next_timer is not None and next_timer <= now_ms
            # A due timer's time, else past every probe and update.
            timer_at = next_timer if timer_due and next_timer is not None else now_ms + 1
            # Equal times: processing-time timers first (Flink fires them as the clock is set),
            # then the row's record, then probes (the generator's record-first rule, docs/rules.md),
            # then watermark alignment's reports and announcement.
            if probes and probes[0][0] < timer_at and (not aligns or probes[0][0] <= aligns[0]):
                self.run_probe(*probes.pop(0))
            elif aligns and aligns[0] < timer_at:
                self.run_alignment(aligns.pop(0))
            elif timer_due:
                fired = self.timers.pop_due(TimeDomain.PROCESSING, now_ms)
                assert fired is not None and self.operator is not None
                self.step_log.fired.append(fired)
                self.operator.on_timer(fired, self.step_log)
            else:
                return

    def run_probe(self, time_ms: int, group: int = 0) -> None:
        """One periodic probe on every generated channel of a probe group, in input and channel
        order."""
        self.probes.ran(group, time_ms)
        inputs = self.probes.inputs_of(group)
        for (input_name, _), generator in self.generators.items():
            if input_name not in inputs:
                continue
            result = generator.probe(time_ms)
            if isinstance(generator, SplitReader | WatermarkAssigner):
                self.step_log.notes.extend(generator.drain_events())
            self.step_probes.append(result)
            for inp in result.emitted:
                self.feed_valve(input_name, inp, generated=True)

    def run_alignment(self, time_ms: int) -> None:
        """Watermark alignment's update (`align_readers`); what was held back and may go on is
        read now."""
        config = self.config.generator
        assert config is not None and config.alignment is not None
        self._last_alignment_ms = time_ms
        readers = [
            g for (name, _), g in self.generators.items() if name == "0" and isinstance(g, SplitReader)
        ]
        notes, released = align_readers(readers, config.alignment, time_ms)
        self.step_log.notes.extend(notes)
        for reader in readers:
            rows = [row for row in released if row.channel == reader.channel]
            if not rows:
                continue
            # Said before what the records cause, listing only the ones read (`read_released`).
            at = len(self.step_log.timeline)
            said = read_released(reader, rows, self.record)
            if said is not None:
                self.step_log.timeline.insert(at, said)

    def _due_alignments(self, now_ms: int, inclusive: bool) -> list[int]:
        """Alignment updates due; over a jump of more than `PROBE_BURST`, its first two and last."""
        config = self.config.generator
        if config is None or config.alignment is None or self._clock_start_ms is None:
            return []
        interval = config.alignment.update_interval_ms
        due = due_times(self._clock_start_ms, self._last_alignment_ms, interval, now_ms, inclusive)
        if not due:
            return []
        return list(due) if len(due) <= PROBE_BURST else ends_of(due)

    def _due_probes(self, now_ms: int, inclusive: bool) -> list[tuple[int, int]]:
        if not self.generators or self._clock_start_ms is None:
            return []
        return self.probes.due(self.generators, self._clock_start_ms, now_ms, inclusive)

    @property
    def output_watermark_ms(self) -> int:
        """The last watermark the valve (one input) or the combined input (two) emitted."""
        if self.two_input:
            return self.combiner.watermark_ms
        return self.valves[self.inputs[0]].last_watermark_ms

    @property
    def output_status(self):
        """The last status the valve (one input) or the combined input (two) emitted."""
        if self.two_input:
            return self.combiner.status
        return self.valves[self.inputs[0]].last_status

    def snapshot(self) -> tuple:
        """Every piece of semantic state, comparable with ==: two pipelines that will behave the
        same from here on have equal snapshots (used to check keyframe reconstruction)."""
        return (
            # By input name: a trace whose first row is its second input's builds them in that order.
            tuple(sorted((name, valve.state()) for name, valve in self.valves.items())),
            self.combiner.snapshot(),
            tuple((k, g.snapshot()) for k, g in self.generators.items()),
            self.timers.pending(),
            self.operator.snapshot() if self.operator is not None else None,
            tuple((k, m.snapshot()) for k, m in self.minibatch.items()),
            (self.proc_ms, self._clock_start_ms, self.probes.snapshot(), self._last_alignment_ms),
        )

    def live_rows(self) -> set[int]:
        """Row numbers of records still held in operator state."""
        return self.operator.live_rows() if self.operator is not None else set()
