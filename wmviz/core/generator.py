"""Per-channel watermark generation (docs/rules.md: "Generation", "Idleness", "Resuming").

Bounded out-of-orderness with Flink's `maxSeen − ooo − 1`, per-record or periodic emission, and
the idleness wrapper that only looks at activity on the periodic probes. Every channel of a
generated input gets one, including channels that never see a record: in Flink each split has
its own generator, which is exactly why a silent split holds the watermark back.
"""

from __future__ import annotations

from dataclasses import dataclass

from wmviz.core.scenario import GeneratorConfig
from wmviz.core.types import MIN_MS, Status, StatusInput, ValveInput, WatermarkInput


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """What one probe did on one channel, for the timeline and the narration."""

    channel: int
    time_ms: int
    saw_activity: bool
    countdown_start_ms: int | None
    emitted: tuple[ValveInput, ...]


class ChannelGenerator:
    """Bounded out-of-orderness generator wrapped in Flink's idleness detection, for one channel."""

    def __init__(self, channel: int, config: GeneratorConfig) -> None:
        self.channel = channel
        self.config = config
        # Starting here makes the first candidate exactly MIN and keeps the arithmetic in range.
        self.max_seen_ms = MIN_MS + config.out_of_orderness_ms + 1
        self.last_emitted_ms = MIN_MS
        self.idle = False
        self._activity = 0
        self._activity_at_last_probe = 0
        self.countdown_start_ms: int | None = None

    def candidate_watermark_ms(self) -> int:
        """`maxSeen − ooo − 1`: one below the oldest timestamp still allowed to arrive."""
        return self.max_seen_ms - self.config.out_of_orderness_ms - 1

    def before_record(self) -> list[ValveInput]:
        """`eager` resume: an idle channel announces ACTIVE before its first element.

        Under `flip27-released` nothing is announced here: the channel becomes ACTIVE only
        together with a watermark above the last one it emitted (FLINK-40504).
        """
        if not self.idle or self.config.resume != "eager":
            return []
        self.idle = False
        return [StatusInput(self.channel, Status.ACTIVE)]

    @property
    def has_seen_records(self) -> bool:
        """Whether any record reached this generator (before one, maxSeen means nothing)."""
        return self._activity > 0

    def has_unseen_activity(self) -> bool:
        """A record arrived since the last probe (the next probe will reset the countdown)."""
        return self._activity != self._activity_at_last_probe

    def see_record(self, event_ms: int) -> None:
        """The record counts as activity and moves the max timestamp (nothing is emitted)."""
        self._activity += 1
        self.max_seen_ms = max(self.max_seen_ms, event_ms)

    def after_record(self, event_ms: int) -> list[ValveInput]:
        """Track the max timestamp; in per-record mode emit the candidate if it increased."""
        self.see_record(event_ms)
        if self.config.emits_per_record:
            return self._emit_if_increased()
        return []

    def punctuated_watermark(self) -> int | None:
        """What the last record writes to its split's output at once: a per-record generator its
        candidate, even when not higher (which clears the split's idle flag); periodic: nothing."""
        return self.candidate_watermark_ms() if self.config.emits_per_record else None

    def probe(self, now_ms: int) -> ProbeResult:
        """One periodic probe: check idleness, else run the periodic emission."""
        saw_activity = self.has_unseen_activity()
        emitted: list[ValveInput] = []
        if self.is_idle_at_probe(now_ms, saw_activity):
            if not self.idle:
                self.idle = True
                emitted.append(StatusInput(self.channel, Status.IDLE))
        elif self.config.emits_periodically or (self.idle and saw_activity):
            emitted.extend(self._emit_if_increased())
        return ProbeResult(self.channel, now_ms, saw_activity, self.countdown_start_ms, tuple(emitted))

    def is_idle_at_probe(self, now_ms: int, saw_activity: bool) -> bool:
        """The idleness countdown: reset on activity, start on the first quiet probe, strict `>`."""
        timeout = self.config.idle_timeout_ms
        if saw_activity:
            self._activity_at_last_probe = self._activity
            self.countdown_start_ms = None
            return False
        if timeout is None:
            return False
        if self.countdown_start_ms is None:
            self.countdown_start_ms = now_ms
            return False
        return now_ms - self.countdown_start_ms > timeout

    def countdowns(self) -> list[tuple[int | None, bool]]:
        """The idleness countdown's start and whether there is unseen activity (one clock here; a
        split reader has one per split)."""
        return [(self.countdown_start_ms, self.has_unseen_activity())]

    def snapshot(self) -> tuple:
        """Comparable state of the generator and its idleness countdown."""
        return (
            self.max_seen_ms,
            self.last_emitted_ms,
            self.idle,
            self._activity,
            self._activity_at_last_probe,
            self.countdown_start_ms,
        )

    def _emit_if_increased(self) -> list[ValveInput]:
        candidate = self.candidate_watermark_ms()
        if candidate <= self.last_emitted_ms:
            return []
        if self.idle:
            if self.config.resume == "eager":
                return []
            # flip27-released: a strictly higher watermark is what reactivates the channel.
            self.idle = False
            self.last_emitted_ms = candidate
            return [StatusInput(self.channel, Status.ACTIVE), WatermarkInput(self.channel, candidate)]
        self.last_emitted_ms = candidate
        return [WatermarkInput(self.channel, candidate)]
