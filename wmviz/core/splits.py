"""A FLIP-27 source reader's per-split watermarks: the stage before the channel it feeds.

In Flink a source subtask (one channel of the operator downstream) reads several splits, Kafka
partitions for instance, and keeps one watermark generator per split. Restated from Flink 2.3.0's
ProgressiveTimestampsAndWatermarks, WatermarkOutputMultiplexer, CombinedWatermarkStatus and
WatermarkToDataOutput (checked against those classes by tests/test_flink_splits.py):

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

Flink's reader also has a main output (records emitted without a split) whose own idleness gates
the reader's: the reader goes idle only when both are idle. A split-based reader never uses it, so
its generator goes idle at the first periodic emission more than the timeout after the start, no
later than any split can: leaving it out changes nothing for a reader whose records all come
from splits, which is what this stage models. Watermark alignment, which pauses splits (and
their idleness clocks), is not modelled.
"""

from __future__ import annotations

from dataclasses import dataclass

from wmviz.core.generator import ChannelGenerator, ProbeResult
from wmviz.core.scenario import GeneratorConfig
from wmviz.core.types import MIN_MS, Status, StatusInput, ValveInput, WatermarkInput


@dataclass(frozen=True, slots=True)
class SplitEvent:
    """Something a split did that the narration tells: `record`, `idle` or `resumed`."""

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
        self.generator = ChannelGenerator(index, config)
        self.idle_now = False
        """The idleness wrapper has marked the split idle (it does so once per quiet spell)."""
        self.partial_ms = MIN_MS
        self.partial_idle = False

    def on_record(self, event_ms: int) -> None:
        """The generator sees the record; the wrapper forgets it was idle (nothing is emitted)."""
        self.generator.after_record(event_ms)
        self.idle_now = False

    def periodic(self, now_ms: int) -> bool:
        """The split's part of a periodic emission; True if it went idle or came back now."""
        generator = self.generator
        was_idle = self.partial_idle
        if generator.is_idle_at_probe(now_ms, generator.has_unseen_activity()):
            if not self.idle_now:
                self.idle_now = True
                self.partial_idle = True
        else:
            # The watermark goes to the split's partial state; it clears the idle flag even when
            # it is not higher than the partial watermark so far.
            self.partial_idle = False
            self.partial_ms = max(self.partial_ms, generator.candidate_watermark_ms())
        return was_idle != self.partial_idle

    def snapshot(self) -> tuple:
        """Comparable state."""
        return (self.split, self.generator.snapshot(), self.idle_now, self.partial_ms, self.partial_idle)


class SplitReader:
    """One source subtask (a channel) reading several splits; stands where a `ChannelGenerator`
    stands for a single-split channel."""

    def __init__(self, channel: int, splits: tuple[str, ...], config: GeneratorConfig) -> None:
        self.channel = channel
        self.config = config
        self.splits = {name: SplitState(name, i, config) for i, name in enumerate(splits)}
        self.combined_ms = MIN_MS
        self.combined_idle = False
        self.sent_ms = MIN_MS
        self.idle = False
        self.events: list[SplitEvent] = []

    # ---- the interface the pipeline drives (as for ChannelGenerator) ----------------------------

    def before_record(self) -> list[ValveInput]:
        """Nothing: a FLIP-27 reader announces ACTIVE only with a higher watermark."""
        return []

    def record(self, split: str, event_ms: int) -> None:
        """A record of `split` reached its generator."""
        state = self.splits[split]
        state.on_record(event_ms)
        generator = state.generator
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

    def probe(self, now_ms: int) -> ProbeResult:
        """One periodic emission: every split reports, then the reader combines and forwards."""
        saw_activity = any(s.generator.has_unseen_activity() for s in self.splits.values())
        changed = [s for s in self.splits.values() if s.periodic(now_ms)]
        emitted = self.combine()
        for state in changed:
            self.events.append(self.split_event(state))
        quiet = [s.generator.countdown_start_ms for s in self.splits.values()]
        countdown = max((q for q in quiet if q is not None), default=None) if self.idle else None
        return ProbeResult(self.channel, now_ms, saw_activity, countdown, tuple(emitted))

    def has_unseen_activity(self) -> bool:
        """Any split saw a record since the last periodic emission."""
        return any(s.generator.has_unseen_activity() for s in self.splits.values())

    def countdowns(self) -> list[tuple[int | None, bool]]:
        """Each split's idleness countdown start and whether it has unseen activity (for the
        pipeline's skipping of long quiet gaps)."""
        states = self.splits.values()
        return [(s.generator.countdown_start_ms, s.generator.has_unseen_activity()) for s in states]

    def drain_events(self) -> list[SplitEvent]:
        """The split events since the last call, for the step's log."""
        events, self.events = self.events, []
        return events

    def snapshot(self) -> tuple:
        """Comparable state of every split, the combination and the output."""
        return (
            tuple(s.snapshot() for s in self.splits.values()),
            self.combined_ms,
            self.combined_idle,
            self.sent_ms,
            self.idle,
        )

    # ---- the rules --------------------------------------------------------------------------------

    def combine(self) -> list[ValveInput]:
        """CombinedWatermarkStatus and the multiplexer: the minimum over the splits that are not
        idle, or, once every split is idle, the maximum over all of them (FLINK-38454's flush), sent
        when it rises; then IDLE if every split is idle."""
        if not self.splits:
            return []
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

    def send_watermark(self, watermark_ms: int) -> list[ValveInput]:
        """WatermarkToDataOutput: only above the highest sent; ACTIVE first after idleness."""
        if watermark_ms <= self.sent_ms:
            return []
        self.sent_ms = watermark_ms
        out: list[ValveInput] = []
        if self.idle:
            self.idle = False
            out.append(StatusInput(self.channel, Status.ACTIVE))
        out.append(WatermarkInput(self.channel, watermark_ms))
        return out

    def send_idle(self) -> list[ValveInput]:
        """IDLE once, when the reader was not idle already."""
        if self.idle:
            return []
        self.idle = True
        return [StatusInput(self.channel, Status.IDLE)]

    def holder(self) -> str | None:
        """The split with the lowest watermark among those not idle (the first on a tie)."""
        active = [s for s in self.splits.values() if not s.partial_idle]
        return min(active, key=lambda s: s.partial_ms).split if active else None

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
