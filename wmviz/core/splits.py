"""A FLIP-27 source reader's per-split watermarks: the stage before the channel it feeds.

In Flink a source subtask (one channel of the operator downstream) reads several splits, Kafka
partitions for instance, and keeps one watermark generator per split. Restated from Flink 2.3.0's
ProgressiveTimestampsAndWatermarks, WatermarkOutputMultiplexer, CombinedWatermarkStatus and
WatermarkToDataOutput (checked against those classes by tests/flink/test_flink_splits.py):

1. each split has its own generator (bounded out-of-orderness inside the idleness wrapper: the
   same rules as `ChannelGenerator`, reused here) writing to the split's *partial* watermark;
   at a periodic emission every split reports first (a watermark clears the split's idle flag;
   the idleness wrapper marks it idle once when its countdown expires), then
2. the reader combines them: the minimum over the splits that are not idle, taken only when it
   rises above the combined watermark so far; when every split is idle the combination is idle
   and (since FLINK-38454, in 2.3.0) rises to the highest split watermark first, so a reader
   whose splits all went quiet flushes its most advanced split's watermark before going idle;
3. the reader's output forwards a watermark only above the highest it ever sent, announcing
   ACTIVE first if it had gone idle, and sends IDLE once when the combination is idle.

So a split that is behind holds its whole subtask back, a split that has gone idle stops holding
it, and a split that resumes far behind holds it again at once (while the subtask's output, which
never goes backwards, waits for it to catch up). A record on an idle split does not reactivate
anything by itself: the next periodic emission does, as in released Flink (FLINK-40504).

Beside its splits, Flink's reader has a main output (records emitted without a split) with its own
generator, writing straight to the reader's output; an idleness manager sends IDLE only when both
the split side (the multiplexer) and the main side have gone idle. Its generator emits at every
periodic emission, so without an idle timeout the main side never goes idle and neither does the
reader, even when every split was marked idle. wmviz keeps that generator (it gates the reader's
IDLE); records in a trace always name a split, so it sees none.

Splits come and go (trace rows of kind `split`, docs/trace-format.md): `added` registers the
split's output with a fresh generator (its partial watermark starts at the minimum and is not
idle, so it holds the combination until it catches up); `finished` releases it (the combination
is recomputed at the next periodic emission, as the multiplexer does nothing on removal); `idle`
and `active` are the split output's markIdle / markActive, which reach the multiplexer at once.
A reader may have zero splits: with nothing to combine, the multiplexer keeps its last status.
With `emit: per-record` each split's generator is punctuated: every record writes its candidate
to the split's immediate output (clearing the split's idle flag, even when not higher) and the
combination is redone at once when the candidate passes it. Watermark alignment pauses splits
and the subtask (wmviz/core/alignment.py; its periodic update is wmviz/core/split_alignment.py,
and between updates the reader pauses by itself, `maybe_pause`): each split's partial
watermark, when it rises, and the reader's sent watermark feed the samplers that pausing compares.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from wmviz.core.alignment import Announcement, PauseClock, PauseEvent, WatermarkSampler
from wmviz.core.errors import BadInputError
from wmviz.core.generator import ChannelGenerator, ProbeResult
from wmviz.core.scenario import GeneratorConfig, TraceRow
from wmviz.core.sql_generator import SqlGeneratorUpdate, SqlSourceGenerator
from wmviz.core.types import MIN_MS, Status, StatusInput, ValveInput, WatermarkInput

SplitChange = Literal["added", "finished", "idle", "active"]
SPLIT_CHANGES: tuple[SplitChange, ...] = ("added", "finished", "idle", "active")
"""What a `split` row's `split_event` cell may say (docs/trace-format.md)."""


class SplitChangeError(BadInputError, ValueError):
    """A split row the reader cannot apply (the pipeline reports it against the row)."""


@dataclass(frozen=True, slots=True)
class SplitEvent:
    """Something a split did that the narration tells: `record`, `idle`, `resumed`, or a trace's
    `added`, `finished`, `marked idle`, `marked active`."""

    channel: int
    split: str
    what: str
    watermark_ms: int
    """The split's watermark (for a record: its candidate)."""
    reader_ms: int
    """The highest watermark the reader (the channel) has sent so far."""
    holds: bool
    """The split holds the reader's minimum (it is the lowest of the splits that are not idle)."""
    all_idle: bool = False
    max_seen_ms: int = MIN_MS


class SplitState:
    """One split: its generator and its partial watermark in the reader's combination."""

    def __init__(self, split: str, index: int, config: GeneratorConfig) -> None:
        self.split = split
        self.generator = split_generator(index, config)
        self.idle_now = False
        """The idleness wrapper has marked the split idle (it does so once per quiet spell)."""
        self.partial_ms = MIN_MS
        self.partial_idle = False
        self.paused = False
        """Watermark alignment paused the split (its watermark is ahead of the group's allowance)."""
        self.clock = PauseClock()
        """The split's idleness clock, stopped while the split is paused."""
        self.sampler = WatermarkSampler(_buffer_size(config))
        """The split's watermark as alignment samples it (fed when the partial watermark rises)."""

    def on_record(self, event_ms: int) -> None:
        """The generator sees the record; the wrapper forgets it was idle."""
        self.generator.see_record(event_ms)
        self.idle_now = False

    def set_partial(self, watermark_ms: int) -> bool:
        """A watermark reaches the split's partial state: it clears the idle flag even when it is
        not higher; True if it raised the partial watermark."""
        self.partial_idle = False
        if watermark_ms > self.partial_ms:
            self.partial_ms = watermark_ms
            self.sampler.latest_ms = watermark_ms
            return True
        return False

    def periodic(self, now_ms: int) -> bool:
        """The split's part of a periodic emission; True if it went idle or came back now."""
        generator = self.generator
        was_idle = self.partial_idle
        if generator.is_idle_at_probe(self.clock.relative_ms(now_ms), generator.has_unseen_activity()):
            if not self.idle_now:
                self.idle_now = True
                self.partial_idle = True
        elif generator.config.emits_periodically:
            self.set_partial(generator.candidate_watermark_ms())
        return was_idle != self.partial_idle

    def snapshot(self) -> tuple:
        """Comparable state."""
        return (
            self.split,
            self.generator.snapshot(),
            self.idle_now,
            self.partial_ms,
            self.partial_idle,
            self.paused,
            self.clock.snapshot(),
            self.sampler.snapshot(),
        )


class SplitReader:
    """One source subtask (a channel) reading splits; stands where a `ChannelGenerator` stands for
    a single-split channel."""

    def __init__(self, channel: int, splits: tuple[str, ...], config: GeneratorConfig) -> None:
        self.channel = channel
        self.config = config
        self.splits: dict[str, SplitState] = {}
        self.added = 0
        for name in splits:
            self.add_split(name)
        self.main = SplitState("", -1, config)
        """The reader's own (main) output's generator; its partial fields are unused."""
        self.combined_ms = MIN_MS
        self.combined_idle = False
        self.split_side_idle = True
        """The idleness manager's flags: each side starts idle and leaves it with a watermark."""
        self.main_side_idle = True
        self.sent_ms = MIN_MS
        self.idle = False
        self.paused = False
        """Watermark alignment paused the whole subtask: it reads nothing until resumed."""
        self.held: list[TraceRow] = []
        """Records that arrived while their subtask or split was paused, in arrival order."""
        self.sampled = WatermarkSampler(_buffer_size(config))
        """The subtask's sent watermark as alignment samples it."""
        self.announcement: Announcement | None = None
        """The coordinator's last announcement (none yet: nothing is paused)."""
        self.now_ms = MIN_MS
        """The processing time of the last probe or update: when a pause between them starts."""
        self.events: list[SplitEvent | PauseEvent | SqlGeneratorUpdate] = []

    # ---- the interface the pipeline drives (as for ChannelGenerator) ----------------------------

    def before_record(self) -> list[ValveInput]:
        """Nothing: a FLIP-27 reader announces ACTIVE only with a higher watermark."""
        return []

    def record(self, split: str, event_ms: int) -> list[ValveInput]:
        """A record of `split` reached its generator; what a punctuated generator caused."""
        state = self.splits[split]
        state.on_record(event_ms)
        generator = state.generator
        out: list[ValveInput] = []
        punctuated = generator.punctuated_watermark()
        if punctuated is not None and state.set_partial(punctuated) and punctuated > self.combined_ms:
            out = self.combine()
        if isinstance(generator, SqlSourceGenerator):
            self.events.append(generator.update(split, self.channel))
        self.events.append(
            SplitEvent(
                self.channel,
                split,
                "record",
                generator.candidate_watermark_ms(),
                self.sent_ms,
                self.holder() == split,
                max_seen_ms=generator.max_seen_ms,
            )
        )
        self.maybe_pause()
        return out

    def change(self, split: str, what: str) -> list[ValveInput]:
        """A trace's `split` row: the split is added, finished, or marked idle or active."""
        known = split in self.splits
        if what == "added":
            if not known:
                self.add_split(split)
            return self.told(split, "added", [])
        if not known:
            raise SplitChangeError(f"{split!r} is not a split of channel {self.channel} now")
        if what == "finished":
            del self.splits[split]  # the combination is redone at the next periodic emission
            return self.told(split, "finished", [])
        self.splits[split].partial_idle = what == "idle"
        out = self.combine()
        self.maybe_pause()
        return self.told(split, f"marked {what}", out)

    def probe(self, now_ms: int) -> ProbeResult:
        """One periodic emission: every split reports, the reader combines, then its own output."""
        self.now_ms = now_ms
        saw_activity = self.has_unseen_activity()
        changed = [s for s in self.splits.values() if s.periodic(now_ms)]
        emitted = self.combine()
        emitted.extend(self.main_periodic(now_ms))
        self.maybe_pause()
        for state in changed:
            self.events.append(self.split_event(state))
        quiet = [s.generator.countdown_start_ms for s in (*self.splits.values(), self.main)]
        countdown = max((q for q in quiet if q is not None), default=None) if self.idle else None
        return ProbeResult(self.channel, now_ms, saw_activity, countdown, tuple(emitted))

    def has_unseen_activity(self) -> bool:
        """Any split saw a record since the last periodic emission."""
        return any(s.generator.has_unseen_activity() for s in self.splits.values())

    def countdowns(self) -> list[tuple[int | None, bool]]:
        """Each split's (and the main output's) idleness countdown start on the processing clock
        and whether it has unseen activity (for the pipeline's skipping of long quiet gaps); a
        paused clock cannot expire, so it is left out."""
        out = []
        for state in (*self.splits.values(), self.main):
            start, clock = state.generator.countdown_start_ms, state.clock
            if clock.paused_at_ms is None:
                shifted = start + clock.stopped_ms if start is not None else None
                out.append((shifted, state.generator.has_unseen_activity()))
        return out

    def drain_events(self) -> list[SplitEvent | PauseEvent | SqlGeneratorUpdate]:
        """The split events since the last call, for the step's log."""
        events, self.events = self.events, []
        return events

    def snapshot(self) -> tuple:
        """Comparable state of every split, the combination and the output."""
        return (
            tuple(s.snapshot() for s in self.splits.values()),
            self.main.snapshot(),
            self.combined_ms,
            self.combined_idle,
            self.split_side_idle,
            self.main_side_idle,
            self.sent_ms,
            self.idle,
            self.paused,
            tuple(row.row for row in self.held),
            self.sampled.snapshot(),
            self.announcement,
            self.now_ms,
        )

    # ---- watermark alignment between updates (the update: wmviz/core/split_alignment.py) ----------

    def is_held(self, split: str) -> bool:
        """A record of `split` waits: its subtask or the split itself is paused."""
        state = self.splits.get(split)
        return self.paused or (state is not None and state.paused)

    def maybe_pause(self) -> None:
        """Between updates Flink only pauses: a split that is not idle, or the subtask, whose
        sampled watermark is above the last announcement (with a sampling ring this happens when a
        split turns active again; without one, as soon as a watermark passes the allowance)."""
        told, alignment = self.announcement, self.config.alignment
        if told is None or alignment is None:
            return
        allowed = told.max_allowed_ms

        def event(split: str | None, watermark_ms: int, sampled_ms: int) -> PauseEvent:
            group, drift_ms = alignment.group, alignment.max_drift_ms
            return PauseEvent(self.channel, split, True, watermark_ms, group, told, drift_ms, sampled_ms)

        if not self.paused and self.sampled.oldest_ms() > allowed:
            self.set_paused(None, True)
            self.events.append(event(None, self.sent_ms, self.sampled.oldest_ms()))
        for state in self.splits.values():
            if not state.partial_idle and not state.paused and state.sampler.oldest_ms() > allowed:
                self.set_paused(state, True)
                self.events.append(event(state.split, state.partial_ms, state.sampler.oldest_ms()))

    def set_paused(self, state: SplitState | None, paused: bool) -> None:
        """Pause or resume a split (None: the subtask) and the idleness clock it stops."""
        target = self.main if state is None else state
        if state is None:
            self.paused = paused
        else:
            state.paused = paused
        if paused:
            target.clock.pause(self.now_ms)
        else:
            target.clock.resume(self.now_ms)

    # ---- the rules --------------------------------------------------------------------------------

    def add_split(self, split: str) -> None:
        """A fresh generator and partial watermark (minimum, not idle) for a new split."""
        self.splits[split] = SplitState(split, self.added, self.config)
        self.added += 1

    def combine(self) -> list[ValveInput]:
        """CombinedWatermarkStatus and the multiplexer: the minimum over the splits that are not
        idle, or, once every split is idle, the maximum over all of them (FLINK-38454's flush), sent
        when it rises; then IDLE if every split is idle. With no split at all nothing is combined
        and the last status stands."""
        if not self.splits:
            return self.send_idle() if self.combined_idle else []
        active = [s.partial_ms for s in self.splits.values() if not s.partial_idle]
        self.combined_idle = not active
        candidate = min(active) if active else max(s.partial_ms for s in self.splits.values())
        out: list[ValveInput] = []
        if candidate > self.combined_ms:
            self.combined_ms = candidate
            out.extend(self.send_watermark(candidate))
        if self.combined_idle:
            out.extend(self.send_idle())
        return out

    def main_periodic(self, now_ms: int) -> list[ValveInput]:
        """The main output's periodic emission: marked idle once its quiet spell passes the
        timeout, else its candidate goes straight to the reader's output."""
        generator = self.main.generator
        if generator.is_idle_at_probe(self.main.clock.relative_ms(now_ms), generator.has_unseen_activity()):
            if self.main.idle_now:
                return []
            self.main.idle_now = True
            self.main_side_idle = True
            return self.idle_if_both()
        if not self.config.emits_periodically:
            return []
        self.main_side_idle = False
        return self.forward(generator.candidate_watermark_ms())

    def send_watermark(self, watermark_ms: int) -> list[ValveInput]:
        """The split side's watermark: it leaves idleness and goes to the reader's output."""
        self.split_side_idle = False
        return self.forward(watermark_ms)

    def send_idle(self) -> list[ValveInput]:
        """The split side is idle; the reader goes idle if its main side is too."""
        self.split_side_idle = True
        return self.idle_if_both()

    def forward(self, watermark_ms: int) -> list[ValveInput]:
        """WatermarkToDataOutput: only above the highest sent; ACTIVE first after idleness."""
        if watermark_ms <= self.sent_ms:
            return []
        self.sent_ms = watermark_ms
        self.sampled.latest_ms = watermark_ms
        out: list[ValveInput] = []
        if self.idle:
            self.idle = False
            out.append(StatusInput(self.channel, Status.ACTIVE))
        out.append(WatermarkInput(self.channel, watermark_ms))
        return out

    def idle_if_both(self) -> list[ValveInput]:
        """IDLE once, when both sides are idle and the reader was not idle already."""
        if self.idle or not (self.split_side_idle and self.main_side_idle):
            return []
        self.idle = True
        return [StatusInput(self.channel, Status.IDLE)]

    def holder(self) -> str | None:
        """The split with the lowest watermark among those not idle (the first on a tie)."""
        active = [s for s in self.splits.values() if not s.partial_idle]
        return min(active, key=lambda s: s.partial_ms).split if active else None

    def told(self, split: str, what: str, out: list[ValveInput]) -> list[ValveInput]:
        """Log a split row's change for the narration; pass its emissions on."""
        state = self.splits.get(split)
        watermark = state.partial_ms if state is not None else MIN_MS
        holds = self.holder() == split
        self.events.append(
            SplitEvent(self.channel, split, what, watermark, self.sent_ms, holds, all_idle=self.combined_idle)
        )
        return out

    def split_event(self, state: SplitState) -> SplitEvent:
        """A split went idle or came back, as of the end of this periodic emission."""
        return SplitEvent(
            self.channel,
            state.split,
            "idle" if state.partial_idle else "resumed",
            state.partial_ms,
            self.sent_ms,
            self.holder() == state.split,
            all_idle=self.combined_idle,
        )


def split_generator(index: int, config: GeneratorConfig) -> ChannelGenerator:
    """One split's generator: a pushed-down SQL watermark's (style sql-source), else DataStream's."""
    if config.style == "sql-source":
        return SqlSourceGenerator(index, config)
    return ChannelGenerator(index, config)


def _buffer_size(config: GeneratorConfig) -> int:
    """How many updates alignment's samplers look back (none without alignment)."""
    return config.alignment.buffer_size if config.alignment is not None else 0
