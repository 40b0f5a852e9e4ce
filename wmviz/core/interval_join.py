"""Row-time (and processing-time) interval join with FLIP-497 EARLY_FIRE.

Rule names in the method names are the ids docs/rules.md explains: A1–A6 (arrival), C1–C4 (cleanup
timer), E0–E7 and EARLY-PROC (early fire), JW3 (output watermark). Bounds follow Flink: a left row at tL and a
right row at tR join when tL − tR ∈ [lower, upper], so A = −lower is how far a right partner may
come after a left row, and B = upper how far a left partner may come after a right row.

Order: each side's cache is a `java.util.HashMap<Long, rows>` in Flink's heap state backend, and
the released TimeIntervalJoin walks it with the map's iterator, so buckets are visited in Java's
HashMap order (`JavaLongMap`), not in ascending time as a simpler model would (real Flink 2.3.0
wins), rows in arrival order, join then expire per bucket; a cleanup scans in the
same order for the earliest remaining time exactly as Flink does. Early fire left then right, then
right-cache cleanup, then left-cache cleanup. Sums are Java longs (they wrap).
"""

from __future__ import annotations

from dataclasses import dataclass

from wmviz.core.java.javamap import JavaLongMap
from wmviz.core.java.longs import wrap_long
from wmviz.core.operator_log import (
    Cached,
    Cause,
    Dropped,
    Finalized,
    JoinOutput,
    OutputWatermark,
    RowKind,
    StepLog,
    ToldFate,
)
from wmviz.core.scenario import IntervalJoinConfig, TraceRow
from wmviz.core.sql_rows import Fate
from wmviz.core.timers import FiredTimer, TimeDomain, TimerService
from wmviz.core.timetext import TimedText
from wmviz.core.types import MAX_MS, MIN_MS

# Why the join drops a row (no times in them).
_LATE_UNMATCHED = TimedText.plain("too late to be cached and matched nothing (an inner side emits nothing)")
_NEGATIVE_WINDOW = TimedText.plain("negative window (hi < lo): the planner filters the non-outer side")
_CLEANUP_QUIRK = TimedText.plain("discarded by the cleanup quirk for event times ≤ 0")
_EXPIRED_UNMATCHED = TimedText.plain("expired from the cache without a match (inner side)")
# A row's fate on arrival (the late-row ledger's narration).
_CACHED = TimedText.plain("cached: its partners may still come (it waits until its side's cache expires it)")
_PADDED = TimedText.plain(
    "too late to be cached and matched nothing: an outer side, so it is padded with nulls at once"
)
_JOINED_LATE = TimedText.plain("too late to be cached, but it joined the partners already cached")
_NEGATIVE_PADDED = TimedText.plain("negative window (hi < lo): no join runs, an outer row is padded at once")


LEFT, RIGHT = "L", "R"
EARLY = "early_fire"
CLEANUP = {LEFT: "cleanup_left_cache", RIGHT: "cleanup_right_cache"}
INFERRED_CROSS_DOMAIN = (
    "inferred: how Flink maps a wall-clock early-fire timer back to rows is not known; wmviz fires "
    "each row at its arrival clock + delay (EARLY-PROC in docs/rules.md; FLINK-40172 in review)"
)


@dataclass
class CachedRow:
    """A row waiting in a side's cache; `fired` is E1's flag, `fire_at_proc_ms` EARLY-PROC's due clock."""

    row: TraceRow
    time_ms: int
    matched: bool
    fired: bool = False
    fire_at_proc_ms: int | None = None
    joined: bool = False
    """wmviz bookkeeping only: the row took part in some output (Flink tracks `matched` on outer sides)."""


@dataclass
class KeyState:
    """Per join key: both caches (time → rows) and both cleanup-timer slots (τL, τR)."""

    caches: dict[str, JavaLongMap[list[CachedRow]]]
    slots: dict[str, int | None]

    @classmethod
    def empty(cls) -> KeyState:
        return cls({LEFT: JavaLongMap(), RIGHT: JavaLongMap()}, {LEFT: None, RIGHT: None})


class IntervalJoin:
    """One subtask of the interval join; `on_row`, `on_timer`, `on_watermark` are called by the pipeline."""

    def __init__(self, config: IntervalJoinConfig, timers: TimerService, lateness_ms: int = 0) -> None:
        self.timers = timers
        self.join = config.join.lower()
        self.relative = {LEFT: -config.lower_ms, RIGHT: config.upper_ms}  # A and B
        self.lateness_ms = lateness_ms
        self.min_cleanup_ms = max(0, config.min_cleanup_interval_ms)
        self.delay_ms = config.early_fire_delay_ms if config.early_fire_delay_ms is not None else -1
        self.outer = {LEFT: self.join in ("left", "full"), RIGHT: self.join in ("right", "full")}
        self.negative_window = config.upper_ms < config.lower_ms
        self.rowtime = config.join_time == "rowtime"
        self.time_mode = config.time_mode or ("rowtime" if self.rowtime else "proctime")
        self.cross_domain = self.rowtime and self.time_mode == "proctime"
        self.early = self.e0_early_fire_enabled()
        self.cleanup_domain = TimeDomain.EVENT if self.rowtime else TimeDomain.PROCESSING
        self.early_domain = TimeDomain.EVENT if self.time_mode == "rowtime" else TimeDomain.PROCESSING
        self.expiration = {LEFT: 0, RIGHT: 0}  # X_L, X_R: operator-wide, start at 0
        self.watermark_ms = MIN_MS
        self.proc_ms = 0
        self.keys: dict[str, KeyState] = {}

    # ---- E0, JW3 ---------------------------------------------------------------------------------

    def e0_early_fire_enabled(self) -> bool:
        """E0: a hint (d ≥ 0), an outer join, and a non-negative window (A + B ≥ 0)."""
        outer = self.outer[LEFT] or self.outer[RIGHT]
        return self.delay_ms >= 0 and outer and self.relative[LEFT] + self.relative[RIGHT] >= 0

    @property
    def hold_back_ms(self) -> int:
        """JW3: the output watermark trails the input by max(A, B) + λ."""
        return max(self.relative[LEFT], self.relative[RIGHT]) + self.lateness_ms

    def operator_time_ms(self) -> int:
        """T: max(W, 0) on row time (A1's clamp), the processing clock on a processing-time join."""
        return max(self.watermark_ms, 0) if self.rowtime else self.proc_ms

    def expiration_bound(self, side: str) -> int:
        """X = T − Rel − λ − 1, or MAX once the input has ended (T == MAX)."""
        t = self.operator_time_ms()
        return MAX_MS if t == MAX_MS else wrap_long(t - self.relative[side] - self.lateness_ms - 1)

    # ---- A1–A6 arrival -------------------------------------------------------------------------

    def on_row(self, side: str, row: TraceRow, log: StepLog) -> None:
        """A1–A6 (plus E2, E4) for a row arriving on `side`."""
        t = self.row_time_ms(row)
        if self.negative_window:
            return self.negative_window_plan(side, row, t, log)
        other = RIGHT if side == LEFT else LEFT
        state = self.keys.setdefault(row.key or "", KeyState.empty())
        matched = False
        upper = wrap_long(t + self.relative[side])
        if self.a3_probe_needed(other, upper):
            matched = self.a4_probe(side, row, t, state, log)
        if self.operator_time_ms() < upper:
            self.a5_cache(side, row, t, matched, state, log)
            log.timeline.append(self.fate(row, Fate.KEPT, "A5", _CACHED))
        elif not matched and self.outer[side]:
            self.a6_pad_not_cached(side, row, t, log)
            log.timeline.append(self.fate(row, Fate.ADDED_LATE, "A6", _PADDED))
        elif not matched:
            log.dropped.append(Dropped(row, _LATE_UNMATCHED))
            # TimeIntervalJoin (Flink 2.3.0) has no late-record metric: the drop is uncounted.
            log.timeline.append(self.fate(row, Fate.DROPPED, "A5", _LATE_UNMATCHED))
        else:
            log.timeline.append(self.fate(row, Fate.ADDED_LATE, "A4", _JOINED_LATE))
        return None

    def fate(self, row: TraceRow, fate: Fate, rule: str, why: TimedText) -> ToldFate:
        """A row's fate on arrival, with the watermark it arrived under (the late-row ledger's)."""
        return ToldFate(row, fate, rule, why, None, self.watermark_ms)

    def row_time_ms(self, row: TraceRow) -> int:
        """The join attribute: the event time, or the processing clock on a processing-time join."""
        if self.rowtime:
            assert row.event_ms is not None
            return row.event_ms
        return self.proc_ms

    def a3_probe_needed(self, other: str, upper_ms: int) -> bool:
        """A3: probe the other cache only if its last expiration bound is below t + Rel(side)."""
        if self.expiration[other] < upper_ms:
            self.expiration[other] = self.expiration_bound(other)
            return True
        return False

    def a4_probe(self, side: str, row: TraceRow, t: int, state: KeyState, log: StepLog) -> bool:
        """A4: join every bucket in [t − Rel(other), t + Rel(side)], expire buckets ≤ X(other),
        visiting the other cache in Java HashMap order."""
        other = RIGHT if side == LEFT else LEFT
        lower, upper = wrap_long(t - self.relative[other]), wrap_long(t + self.relative[side])
        cache, bound = state.caches[other], self.expiration[other]
        matched = False
        for bucket_ms in cache:
            rows = cache[bucket_ms]
            if lower <= bucket_ms <= upper:
                for cached in rows:
                    matched = True
                    self.e4_join_or_correct(side, row, other, cached, t, log)
            if bucket_ms <= bound:
                self.expire_bucket(other, rows, Cause.PAD_EAGER, t, log)
                cache.remove(bucket_ms)
        return matched

    def e4_join_or_correct(
        self, side: str, row: TraceRow, other: str, cached: CachedRow, t: int, log: StepLog
    ) -> None:
        """A4(a)/E4/E5: +I, or -U pad then +U for a fired, unmatched outer partner (once)."""
        pair = (row, cached.row) if side == LEFT else (cached.row, row)
        cached.joined = True
        if self.outer[other] and not cached.matched and cached.fired:
            log.emit.append(self._pad(other, cached.row, RowKind.UPDATE_BEFORE, Cause.RETRACT, t))
            log.emit.append(JoinOutput(RowKind.UPDATE_AFTER, pair[0], pair[1], Cause.MATCH, t))
        else:
            log.emit.append(JoinOutput(RowKind.INSERT, pair[0], pair[1], Cause.MATCH, t))
        if self.outer[other]:
            cached.matched = True

    def a5_cache(
        self, side: str, row: TraceRow, t: int, matched: bool, state: KeyState, log: StepLog
    ) -> None:
        """A5 + E2: cache the row; an unmatched outer row arms its early timer; arm the cleanup slot."""
        cached = CachedRow(row, t, matched, joined=matched)
        state.caches[side].setdefault(t, []).append(cached)
        key = row.key or ""
        log.cached.append(Cached(row, side, wrap_long(t + self.relative[side] + self.lateness_ms + 1)))
        if t <= 0:
            log.notes.append(
                f"C4 warning: {side} row at time {t} ≤ 0 is cached; Flink's cleanup uses ≤ 0 as its 'empty' "
                "sentinel, so this row (and rows cached with it) may later vanish without padding"
            )
        if self.early and self.outer[side] and not matched:
            if self.cross_domain:
                cached.fire_at_proc_ms = self.proc_ms + self.delay_ms
                log.registered.append(
                    self.timers.register(TimeDomain.PROCESSING, cached.fire_at_proc_ms, key, EARLY)
                )
            else:
                log.registered.append(self.timers.register(self.early_domain, t + self.delay_ms, key, EARLY))
        if state.slots[side] is None:
            self.arm_cleanup(side, t, key, state, log)

    def arm_cleanup(self, side: str, row_time_ms: int, key: str, state: KeyState, log: StepLog) -> None:
        """The cleanup slot of `side`: t + Rel(side) + m + λ + 1."""
        at = wrap_long(row_time_ms + self.relative[side] + self.min_cleanup_ms + self.lateness_ms + 1)
        state.slots[side] = at
        log.registered.append(self.timers.register(self.cleanup_domain, at, key, CLEANUP[side]))

    def a6_pad_not_cached(self, side: str, row: TraceRow, t: int, log: StepLog) -> None:
        """A6: an outer row too late to be cached and unmatched is padded at once."""
        log.emit.append(self._pad(side, row, RowKind.INSERT, Cause.PAD_NOT_CACHED, t))

    def negative_window_plan(self, side: str, row: TraceRow, t: int, log: StepLog) -> None:
        """With hi < lo the planner runs no join: outer rows are padded on arrival, the rest filtered."""
        if self.outer[side]:
            log.emit.append(self._pad(side, row, RowKind.INSERT, Cause.PAD_NEGATIVE_WINDOW, t))
            log.timeline.append(self.fate(row, Fate.KEPT, "A2", _NEGATIVE_PADDED))
        else:
            log.dropped.append(Dropped(row, _NEGATIVE_WINDOW))
            log.timeline.append(self.fate(row, Fate.DROPPED, "A2", _NEGATIVE_WINDOW))

    # ---- E3, C1–C4 timers -------------------------------------------------------------------------

    def on_timer(self, fired: FiredTimer, log: StepLog) -> None:
        """E3 then C2/C3: every callback fires early first, then cleans the right, then the left cache."""
        timer = fired.timer
        state = self.keys.get(timer.key)
        if state is None:
            return
        tau = timer.timestamp_ms
        if self.early and timer.domain is self.early_domain:
            self.e3_early_fire(tau, state, log)
        if timer.domain is self.cleanup_domain:
            for side in (RIGHT, LEFT):  # C2 before C3
                if state.slots[side] == tau:
                    self.expiration[side] = self.expiration_bound(side)
                    self.c4_expire(side, timer.key, state, tau, log)
        if not state.caches[LEFT] and not state.caches[RIGHT] and state.slots == {LEFT: None, RIGHT: None}:
            del self.keys[timer.key]

    def e3_early_fire(self, tau: int, state: KeyState, log: StepLog) -> None:
        """E3: pad unmatched, unfired rows of bucket τ − d (or, cross-domain, due at τ) on each outer side."""
        for side in (LEFT, RIGHT):
            if not self.outer[side]:
                continue
            if self.cross_domain:
                rows = [
                    c for bucket in state.caches[side].values() for c in bucket if c.fire_at_proc_ms == tau
                ]
            else:
                rows = state.caches[side].get(tau - self.delay_ms) or []
            for cached in rows:
                if not cached.matched and not cached.fired:
                    log.emit.append(self._pad(side, cached.row, RowKind.INSERT, Cause.EARLY_FIRE, tau))
                    cached.fired = True
                    if self.cross_domain:
                        log.notes.append(INFERRED_CROSS_DOMAIN)

    def c4_expire(self, side: str, key: str, state: KeyState, tau: int, log: StepLog) -> None:
        """C4 as Flink's `removeExpiredRows`: one pass in HashMap order drops buckets ≤ X (padding
        unmatched, unfired outer rows) and looks for the earliest remaining time; re-arm if it is
        > 0, else clear the slot and the whole cache."""
        cache, bound = state.caches[side], self.expiration[side]
        earliest = -1
        for bucket_ms in cache:
            if bucket_ms <= bound:
                self.expire_bucket(side, cache[bucket_ms], Cause.PAD_CLEANUP, tau, log)
                cache.remove(bucket_ms)
            elif bucket_ms < earliest or earliest < 0:
                # Flink's scan: -1 means "none yet", so a time ≤ 0 restarts it (order dependent).
                earliest = bucket_ms
        if earliest > 0:
            self.arm_cleanup(side, earliest, key, state, log)
            return
        state.slots[side] = None
        if cache:  # C4's quirk: the scan ended on a time ≤ 0, Flink's "empty" sentinel: every row vanishes
            for rows in cache.values():
                for cached in rows:
                    log.dropped.append(Dropped(cached.row, _CLEANUP_QUIRK))
            log.notes.append(
                f"C4 quirk: key {key!r} lost its remaining {side} rows without padding: Flink's scan "
                f"for the earliest remaining time ended at {earliest} ≤ 0, which it reads as 'empty'"
            )
        cache.clear()  # Flink drops the map (the next row starts a new one)

    def expire_bucket(self, side: str, rows: list[CachedRow], cause: Cause, at_ms: int, log: StepLog) -> None:
        """Pad the bucket's unmatched, unfired rows if `side` is outer (E7: never a double pad)."""
        for cached in rows:
            if self.outer[side] and not cached.matched and not cached.fired:
                log.emit.append(self._pad(side, cached.row, RowKind.INSERT, cause, at_ms))
            elif self.outer[side] and not cached.matched:
                log.finalized.append(Finalized(cached.row))  # E7: no second pad; the first one stands
            elif not cached.joined and not self.outer[side]:
                log.dropped.append(Dropped(cached.row, _EXPIRED_UNMATCHED))

    # ---- JW2, JW3 watermarks ------------------------------------------------------------------------

    def on_watermark(self, watermark_ms: int) -> None:
        """JW2 step 1: the new combined watermark becomes the operator's time before timers fire."""
        self.watermark_ms = watermark_ms

    def output_watermark(self, log: StepLog) -> None:
        """JW3: after the timers, forward W − (max(A, B) + λ), wrapping like Java's long."""
        if self.negative_window:
            log.notes.append(
                "watermarks of the negative-window plan are not modelled (unknown in Flink's docs)"
            )
            return
        if not self.rowtime:
            return
        out = self.watermark_ms - self.hold_back_ms
        if out < MIN_MS:
            out += 2**64
        log.emit.append(OutputWatermark(out))

    def on_processing_time(self, proc_ms: int) -> None:
        """The processing clock moved (before due processing-time timers fire)."""
        self.proc_ms = proc_ms

    def snapshot(self) -> tuple:
        """Comparable state: clocks, expiration bounds, and every key's caches and cleanup slots."""
        keys = []
        for key, state in sorted(self.keys.items()):
            caches = tuple(
                (
                    side,
                    tuple(
                        (t, tuple((c.row.row, c.matched, c.fired, c.fire_at_proc_ms) for c in rows))
                        for t, rows in sorted(state.caches[side].items())
                    ),
                )
                for side in (LEFT, RIGHT)
            )
            keys.append((key, caches, tuple(state.slots.items())))
        return (self.watermark_ms, self.proc_ms, tuple(self.expiration.items()), tuple(keys))

    def live_rows(self) -> set[int]:
        """Trace rows (by row number) still cached."""
        return {
            c.row.row
            for s in self.keys.values()
            for cache in s.caches.values()
            for rows in cache.values()
            for c in rows
        }

    def _pad(self, side: str, row: TraceRow, kind: RowKind, cause: Cause, at_ms: int) -> JoinOutput:
        left, right = (row, None) if side == LEFT else (None, row)
        return JoinOutput(kind, left, right, cause, at_ms)
