"""Flink's StatusWatermarkValve, one method per rule.

Read this side by side with docs/rules.md, which explains every rule under the id the method
carries (W1…W5, S0…S2b, FW1…FS3, EMIT-MIN, EMIT-MAX, CAND, TRY-W, TRY-S, REPLAY-MAX); the glossary
`wmviz.core.rules` maps each id to its method. The hot path (`apply`) builds no account: the rule
methods report which branch they took as an `Outcome`, and `account.py` turns an outcome plus a
before/after diff into the structured story the UI and `explain` narrate.
"""

from __future__ import annotations

from enum import Enum
from heapq import heapify, heappop, heappush

from wmviz.core.types import (
    MAX_MS,
    MIN_MS,
    ChannelOutOfRange,
    ChannelState,
    Emission,
    EmittedStatus,
    EmittedWatermark,
    HeapNode,
    Profile,
    Status,
    StatusInput,
    ValveInput,
    ValveState,
    WatermarkInput,
)

ACTIVE, IDLE, FINISHED = Status.ACTIVE, Status.IDLE, Status.FINISHED
_EMIT_ACTIVE = EmittedStatus(ACTIVE)
_EMIT_IDLE = EmittedStatus(IDLE)
_EMIT_FINISHED = EmittedStatus(FINISHED)
_EMITTED_STATUS = {ACTIVE: _EMIT_ACTIVE, IDLE: _EMIT_IDLE, FINISHED: _EMIT_FINISHED}


class Routine(Enum):
    """The emission routine a step ran (EMIT-MIN, EMIT-MAX, or TRY-W under flip-38477)."""

    EMIT_MIN = "EMIT-MIN"
    EMIT_MAX = "EMIT-MAX"
    TRY_W = "TRY-W"


class Outcome(Enum):
    """Which branch of the rules one input took. `rules` names them by their glossary ids, a
    qualifier after a space where one rule has two branches (`S1b (not the holder)`)."""

    W1_DROPPED_IDLE = ("W1",)
    W2_DROPPED_NOT_ABOVE = ("W2",)
    W3_TO_W5_ACCEPTED = ("W3", "W4", "W5")
    FW1_FINISHED_TAKES_MAX = ("FW1",)
    FW1_FINISHED_REJECTS = ("FW1 (rejected)",)
    S0_REPEATED_STATUS = ("S0",)
    S1A_LAST_ACTIVE_IDLE_FLUSH = ("S1", "S1a")
    S1A_LAST_ACTIVE_IDLE_NO_FLUSH = ("S1", "S1a (no flush)")
    S1B_MIN_HOLDER_IDLE = ("S1", "S1b")
    S1B_NON_HOLDER_IDLE = ("S1", "S1b (not the holder)")
    S2_REACTIVATED = ("S2", "S2a")
    S2_REACTIVATED_REDERIVE = ("S2", "S2a", "S2b")
    FS1_LEFT_ACTIVE_HOLDER = ("FS1",)
    FS1_LEFT_ACTIVE_NON_HOLDER = ("FS1 (not the holder)",)
    FS2_LEFT_IDLE = ("FS2",)
    FS3_FINISHED_IS_TERMINAL = ("FS3",)

    @property
    def rules(self) -> tuple[str, ...]:
        """The rule names this branch applied, in order (docs/rules.md)."""
        return self.value

    @property
    def routine(self) -> Routine | None:
        """The emission routine this branch ran, if any."""
        return _ROUTINES.get(self)


_ROUTINES = {
    Outcome.W3_TO_W5_ACCEPTED: Routine.EMIT_MIN,
    Outcome.S1A_LAST_ACTIVE_IDLE_FLUSH: Routine.EMIT_MAX,
    Outcome.S1B_MIN_HOLDER_IDLE: Routine.EMIT_MIN,
    Outcome.S2_REACTIVATED_REDERIVE: Routine.EMIT_MIN,
    Outcome.FW1_FINISHED_TAKES_MAX: Routine.TRY_W,
    Outcome.FS1_LEFT_ACTIVE_HOLDER: Routine.TRY_W,
}


class Valve:
    """Merges the watermarks and statuses of `channels` input channels into one output.

    State per channel (watermark, status, aligned) lives in parallel lists for speed; `state()` returns an
    immutable snapshot. The aligned set is kept as a lazy-deletion binary heap of
    (watermark, channel): an entry is live while its channel is aligned at that watermark.
    """

    def __init__(self, channels: int, profile: Profile = Profile.FLINK_1X_2X) -> None:
        if channels < 1:
            raise ValueError(f"a valve needs at least one channel, got {channels}")
        self.profile = profile
        self.channels = channels
        self._wm = [MIN_MS] * channels
        self._status = [ACTIVE] * channels
        self._aligned = [True] * channels
        self._heap: list[tuple[int, int]] = [(MIN_MS, c) for c in range(channels)]
        self._n_active = channels
        self._n_idle = 0
        self._last_wm = MIN_MS
        self._last_status = ACTIVE

    # ---- entry points -------------------------------------------------------------------------

    def apply(self, inp: ValveInput) -> list[Emission]:
        """Process one input; return what the valve emitted, in emission order."""
        out: list[Emission] = []
        if type(inp) is WatermarkInput:
            self.input_watermark(inp.channel, inp.watermark_ms, out)
        else:
            self.process(inp, out)
        return out

    def process(self, inp: ValveInput, out: list[Emission]) -> Outcome:
        """Process one input, appending emissions to `out`; return the branch taken.

        Raises ChannelOutOfRange (state unchanged, nothing emitted) for a bad channel index.
        """
        if type(inp) is WatermarkInput:
            return self.input_watermark(inp.channel, inp.watermark_ms, out)
        if type(inp) is StatusInput:
            return self.input_status(inp.channel, inp.status, out)
        raise TypeError(f"not a valve input: {inp!r}")

    def input_watermark(self, channel: int, watermark_ms: int, out: list[Emission]) -> Outcome:
        """W1–W5 (FW2, FW3 under flip-38477), or FW1 for a FINISHED channel under flip-38477.

        `watermark_ms` must fit a Java long; `WatermarkInput` guarantees that on construction.
        """
        if not 0 <= channel < self.channels:
            self._check(channel)
        if self._status[channel] is FINISHED:
            return self.fw1_watermark_on_finished_channel(channel, watermark_ms, out)
        if self.w1_dropped_while_idle(channel):
            return Outcome.W1_DROPPED_IDLE
        if self.w2_dropped_unless_above(channel, watermark_ms):
            return Outcome.W2_DROPPED_NOT_ABOVE
        self._wm[channel] = watermark_ms  # W3
        self.w4_realign_if_caught_up(channel, watermark_ms)
        self.emit_min(out)  # W5 (flip-38477's FW2 runs TRY-W, which is EMIT-MIN while any channel is ACTIVE)
        return Outcome.W3_TO_W5_ACCEPTED

    def input_status(self, channel: int, status: Status, out: list[Emission]) -> Outcome:
        """S0–S2b, FS1–FS3 under flip-38477 (a repeated status is S0 there too), or REPLAY-MAX."""
        self._check(channel)
        if status is FINISHED and not self.profile.finished_status:
            return self.input_watermark(channel, MAX_MS, out)  # REPLAY-MAX: exactly as WMAX@c
        current = self._status[channel]
        if self.profile.finished_status:
            if current is FINISHED:
                return Outcome.FS3_FINISHED_IS_TERMINAL
            if status is current:
                return Outcome.S0_REPEATED_STATUS
            if current is ACTIVE:
                return self.fs1_leave_active(channel, status, out)
            return self.fs2_leave_idle(channel, status, out)
        if status is current:
            return Outcome.S0_REPEATED_STATUS
        if status is IDLE:
            return self.s1_active_to_idle(channel, out)
        return self.s2_idle_to_active(channel, out)

    # ---- watermark rules (W) ------------------------------------------------------------------

    def w1_dropped_while_idle(self, channel: int) -> bool:
        """W1: a watermark on an IDLE channel, or while the valve is IDLE, is dropped unstored."""
        return self._status[channel] is IDLE or self._last_status is IDLE

    def w2_dropped_unless_above(self, channel: int, watermark_ms: int) -> bool:
        """W2: a watermark not strictly above the channel's own is dropped (equal ones too)."""
        return watermark_ms <= self._wm[channel]

    def w4_realign_if_caught_up(self, channel: int, watermark_ms: int) -> None:
        """W4: an unaligned channel rejoins the minimum once it reaches the output watermark."""
        if self._aligned[channel]:
            heappush(self._heap, (watermark_ms, channel))  # its old heap entry is now stale
        elif watermark_ms >= self._last_wm:
            self._align(channel)

    # ---- status rules (S) ---------------------------------------------------------------------

    def s1_active_to_idle(self, channel: int, out: list[Emission]) -> Outcome:
        """S1: the channel goes IDLE and leaves the aligned set."""
        held_output = self._wm[channel] == self._last_wm
        self._status[channel] = IDLE
        self._aligned[channel] = False
        self._n_active -= 1
        self._n_idle += 1
        if self._n_active == 0:
            return self.s1a_last_active_channel_idle(held_output, out)
        return self.s1b_idle_while_others_active(held_output, out)

    def s1a_last_active_channel_idle(self, held_output: bool, out: list[Emission]) -> Outcome:
        """S1a: no ACTIVE channel left: maybe flush the max (profile-dependent), then S:IDLE."""
        flush = held_output or self.profile.flush_unconditional
        if flush:
            self.emit_max(out)
        self._last_status = IDLE
        out.append(_EMIT_IDLE)
        return Outcome.S1A_LAST_ACTIVE_IDLE_FLUSH if flush else Outcome.S1A_LAST_ACTIVE_IDLE_NO_FLUSH

    def s1b_idle_while_others_active(self, held_output: bool, out: list[Emission]) -> Outcome:
        """S1b: if the departing channel held the output, the minimum may rise: EMIT-MIN."""
        if held_output:
            self.emit_min(out)
            return Outcome.S1B_MIN_HOLDER_IDLE
        return Outcome.S1B_NON_HOLDER_IDLE

    def s2_idle_to_active(self, channel: int, out: list[Emission]) -> Outcome:
        """S2: ACTIVE again; aligned only if caught up (S2a status first, S2b re-derive on master)."""
        self._status[channel] = ACTIVE
        self._n_active += 1
        self._n_idle -= 1
        if self._wm[channel] >= self._last_wm:
            self._align(channel)
        self.s2a_valve_becomes_active(out)
        if self.profile.rederive_on_reactivate:
            self.emit_min(out)  # S2b
            return Outcome.S2_REACTIVATED_REDERIVE
        return Outcome.S2_REACTIVATED

    def s2a_valve_becomes_active(self, out: list[Emission]) -> None:
        """S2a: an IDLE valve announces S:ACTIVE before any watermark."""
        if self._last_status is IDLE:
            self._last_status = ACTIVE
            out.append(_EMIT_ACTIVE)

    # ---- flip-38477 rules (F) -----------------------------------------------------------------

    def fw1_watermark_on_finished_channel(
        self, channel: int, watermark_ms: int, out: list[Emission]
    ) -> Outcome:
        """FW1: a FINISHED channel takes only MAX (then TRY-W); anything else is rejected."""
        if watermark_ms != MAX_MS:
            return Outcome.FW1_FINISHED_REJECTS
        self._wm[channel] = MAX_MS
        self.try_w(out)
        return Outcome.FW1_FINISHED_TAKES_MAX

    def fs1_leave_active(self, channel: int, status: Status, out: list[Emission]) -> Outcome:
        """FS1: ACTIVE → IDLE/FINISHED: unalign (wm kept); TRY-W if it held the output; TRY-S."""
        held_output = self._wm[channel] == self._last_wm
        self._status[channel] = status
        self._aligned[channel] = False
        self._n_active -= 1
        if status is IDLE:
            self._n_idle += 1
        if held_output:
            self.try_w(out)
        self.try_s(out)
        return Outcome.FS1_LEFT_ACTIVE_HOLDER if held_output else Outcome.FS1_LEFT_ACTIVE_NON_HOLDER

    def fs2_leave_idle(self, channel: int, status: Status, out: list[Emission]) -> Outcome:
        """FS2: IDLE → ACTIVE (align if caught up) or → FINISHED (jump to MAX); then TRY-S only."""
        self._status[channel] = status
        self._n_idle -= 1
        if status is ACTIVE:
            self._n_active += 1
            if self._wm[channel] >= self._last_wm:
                self._align(channel)
        else:
            self._wm[channel] = MAX_MS
        self.try_s(out)
        return Outcome.FS2_LEFT_IDLE

    def candidate_watermark(self) -> int | None:
        """CAND: aligned minimum if any ACTIVE; else idle max over non-FINISHED; else MAX."""
        if self._n_active:
            return self._aligned_min()
        if self._n_idle:
            return max(w for w, s in zip(self._wm, self._status) if s is not FINISHED)
        return MAX_MS if all(w == MAX_MS for w in self._wm) else None

    def try_w(self, out: list[Emission]) -> None:
        """TRY-W: emit CAND if it exists and is above the last output."""
        candidate = self.candidate_watermark()
        if candidate is not None and candidate > self._last_wm:
            self._last_wm = candidate
            out.append(EmittedWatermark(candidate))

    def try_s(self, out: list[Emission]) -> None:
        """TRY-S: ACTIVE if any channel is, else IDLE if any is, else FINISHED; emit on change."""
        status = ACTIVE if self._n_active else IDLE if self._n_idle else FINISHED
        if status is not self._last_status:
            self._last_status = status
            out.append(_EMITTED_STATUS[status])

    # ---- emission routines --------------------------------------------------------------------

    def emit_min(self, out: list[Emission]) -> None:
        """EMIT-MIN: forward the minimum over aligned channels if it is above the last output."""
        m = self._aligned_min()
        if m is not None and m > self._last_wm:
            self._last_wm = m
            out.append(EmittedWatermark(m))

    def emit_max(self, out: list[Emission]) -> None:
        """EMIT-MAX: forward the maximum over all channels (idle, unaligned, untouched too)."""
        m = max(self._wm)
        if m > self._last_wm:
            self._last_wm = m
            out.append(EmittedWatermark(m))

    # ---- the aligned set ----------------------------------------------------------------------

    def _align(self, channel: int) -> None:
        self._aligned[channel] = True
        heappush(self._heap, (self._wm[channel], channel))
        if len(self._heap) > 4 * self.channels + 64:
            self._compact_heap()

    def _aligned_min(self) -> int | None:
        heap, wm, aligned = self._heap, self._wm, self._aligned
        while heap:
            w, c = heap[0]
            if aligned[c] and wm[c] == w:
                return w
            heappop(heap)  # stale: the channel moved on or left the aligned set
        return None

    def _compact_heap(self) -> None:
        self._heap = [(w, c) for c, (w, a) in enumerate(zip(self._wm, self._aligned)) if a]
        heapify(self._heap)

    def _check(self, channel: int) -> None:
        if not 0 <= channel < self.channels:
            raise ChannelOutOfRange(
                f"channel index {channel} is out of range: the valve has {self.channels} "
                f"channel{'s' if self.channels != 1 else ''} (0..{self.channels - 1})"
            )

    # ---- read-only views ----------------------------------------------------------------------

    @property
    def last_watermark_ms(self) -> int:
        """The last emitted watermark (`lastWm`); MIN until something was emitted."""
        return self._last_wm

    @property
    def last_status(self) -> Status:
        """The last emitted status (`lastStatus`); ACTIVE initially (never emitted)."""
        return self._last_status

    @property
    def active_count(self) -> int:
        """How many channels are ACTIVE."""
        return self._n_active

    @property
    def idle_count(self) -> int:
        """How many channels are IDLE."""
        return self._n_idle

    def channel(self, channel: int) -> ChannelState:
        """Snapshot of one channel."""
        self._check(channel)
        return ChannelState(channel, self._wm[channel], self._status[channel], self._aligned[channel])

    def channel_tuple(self, channel: int) -> tuple[int, Status, bool]:
        """(watermark, status, aligned) of one channel, cheaply (for per-step diffs)."""
        return (self._wm[channel], self._status[channel], self._aligned[channel])

    def heap_nodes(self) -> tuple[HeapNode, ...]:
        """The aligned channels as a binary min-heap in array order, ties broken by channel.

        Built canonically from the aligned set, so the same state always draws the same tree.
        Flink's own array may order equal-rank siblings differently; the top is always the same.
        """
        entries = [(w, c) for c, (w, a) in enumerate(zip(self._wm, self._aligned)) if a]
        heapify(entries)
        return tuple(HeapNode(c, w) for w, c in entries)

    def state(self) -> ValveState:
        """Immutable snapshot of the whole valve."""
        channels = tuple(
            ChannelState(c, w, s, a) for c, (w, s, a) in enumerate(zip(self._wm, self._status, self._aligned))
        )
        return ValveState(channels, self._last_wm, self._last_status, self.heap_nodes())

    def considered(self, routine: Routine) -> dict[int, int]:
        """Channel -> watermark that `routine` would look at now (for narration)."""
        wm, status, aligned = self._wm, self._status, self._aligned
        if routine is Routine.EMIT_MAX:
            return dict(enumerate(wm))
        if routine is Routine.EMIT_MIN or self._n_active:
            return {c: w for c, w in enumerate(wm) if aligned[c]}
        if self._n_idle:
            return {c: w for c, w in enumerate(wm) if status[c] is not FINISHED}
        return dict(enumerate(wm))

    def invariant_violations(self) -> list[str]:
        """The valve's invariants that do not hold now (empty when all hold): the valve is IDLE
        exactly when its channels say so, aligned channels are ACTIVE and at or above the output, an
        ACTIVE unaligned channel is below it, the counters match, and on flink-master the aligned
        minimum is the output."""
        problems = []
        statuses = self._status
        if self.profile.finished_status:
            expected = ACTIVE if ACTIVE in statuses else IDLE if IDLE in statuses else FINISHED
            if self._last_status is not expected:
                problems.append(f"last status {self._last_status.value} but channels say {expected.value}")
        elif (self._last_status is IDLE) != all(s is IDLE for s in statuses):
            problems.append(f"last status {self._last_status.value} disagrees with channel statuses")
        for c in range(self.channels):
            if self._aligned[c] and statuses[c] is not ACTIVE:
                problems.append(f"ch{c} aligned but {statuses[c].value}")
            if self._aligned[c] and self._wm[c] < self._last_wm:
                problems.append(f"ch{c} aligned below the output")
            if statuses[c] is ACTIVE and not self._aligned[c] and self._wm[c] >= self._last_wm:
                problems.append(f"ch{c} active, unaligned, but caught up")
        if self._n_active != statuses.count(ACTIVE) or self._n_idle != statuses.count(IDLE):
            problems.append("status counters out of step")
        rederives = self.profile.rederive_on_reactivate
        if rederives and any(self._aligned) and self._aligned_min() != self._last_wm:
            problems.append("master: aligned minimum differs from the output")
        return problems
