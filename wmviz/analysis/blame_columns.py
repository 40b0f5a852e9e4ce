"""Blame's readings at every sample time at once: a vertex's outputs and idleness, its live spread,
a subtask's choice of channel, and since when a run of samples has lasted.

`wmviz.analysis.blame.Walker` answers at one moment; what it reads is worked out here for all
sample times in one pass per vertex (numpy arrays of subtasks × samples), then looked up. So a
question that walks back in time ("since when has this channel held it?", "since when has this
vertex stood still?") reads a run's start from an array computed once (`run_starts`), instead of
asking the per-moment rules again at every earlier sample. The rules are the module docstring of
`wmviz.analysis.blame`; they are written once, here, over the sample axis.

A value is an int64 (Flink's watermarks and metrics are Java longs; the readers clamp to that
range) beside a `present` mask: a series has no value before its first point.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.record.job import (
    INPUT_WATERMARK,
    OUTPUT_WATERMARK,
    POINTWISE_STRATEGIES,
    SOURCE_IDLE_TIME,
    SPLIT_WATERMARK,
    TASK_FINISHED,
    Edge,
    JobRecording,
    SeriesKey,
    Vertex,
)
from wmviz.record.job_columnar import ColumnarSeries

# (values, present): rows of series (or subtasks) × sample times.
Matrix = tuple[np.ndarray, np.ndarray]
# A subtask's choice at every sample: watermark, input number, upstream vertex, upstream subtask,
# split (vertex and split as their place in sorted order), and whether any channel was live.
Choices = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]
# A vertex's live outputs at every sample: the lowest value, its subtask, whether any is live,
# the highest below MAX and whether there is one.
Spreads = tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]

SAFE = 2**61
"""Below this, twice a difference of two int64 values cannot overflow int64."""


def all_to_all(edge: Edge) -> bool:
    """Whether every downstream subtask reads every upstream one (not Flink's pointwise pattern)."""
    return edge.strategy.upper() not in POINTWISE_STRATEGIES


def run_starts(continues: np.ndarray) -> np.ndarray:
    """For each sample i, the first sample of the run ending at i: walking back from i, a sample
    j > 0 joins the run while `continues[j]` (it carries on from j - 1). One pass, so every later
    "since when" is a lookup."""
    index = np.arange(len(continues), dtype=np.int64)
    breaks = np.where(continues, 0, index)
    if len(breaks):
        breaks[0] = 0
    return np.maximum.accumulate(breaks)


def over_times(rec: JobRecording, keys: Sequence[SeriesKey], times: np.ndarray) -> Matrix:
    """Each key's value at every sample time (its last point at or before it, the later of two
    at one time; none before its first point, as `JobRecording.values_over`), one row per key."""
    if isinstance(rec.series, ColumnarSeries):
        rows, at, values = rec.series.flat(keys)
    else:
        each = [np.array(rec.series.get(key) or (), np.int64).reshape(-1, 2) for key in keys]
        rows = np.repeat(np.arange(len(keys), dtype=np.int64), [len(points) for points in each])
        both = np.concatenate(each) if each else np.empty((0, 2), np.int64)
        at, values = both[:, 0], both[:, 1]
    size = len(times)
    place = np.searchsorted(times, at, side="left")  # the first sample a point is read at
    cell = rows * (size + 1) + place
    last = np.ones(len(cell), bool)
    last[:-1] = cell[:-1] != cell[1:]  # of two points read first at one sample, the later
    keep = last & (place < size)
    raw = np.zeros((len(keys), size), np.int64)
    seen = np.zeros((len(keys), size), bool)
    raw[rows[keep], place[keep]] = values[keep]
    seen[rows[keep], place[keep]] = True
    gaps = np.flatnonzero(seen.any(axis=1) & ~seen.all(axis=1))  # rows not read at every sample
    if len(gaps):  # carry each row's last value forward over the samples it has no point at
        latest = np.maximum.accumulate(np.where(seen[gaps], np.arange(size), -1), axis=1)
        raw[gaps] = np.take_along_axis(raw[gaps], np.maximum(latest, 0), axis=1)
        seen[gaps] = latest >= 0
    return raw, seen


def twice_grew_at_least(values: np.ndarray, present: np.ndarray, times: np.ndarray) -> Matrix:
    """(2 × (value − the previous sample's value) ≥ the time between them, whether both samples
    have a value), per row and sample; the first sample has no previous one. Exact over the
    whole long range: values beyond `SAFE` are compared as Python ints."""
    both = np.zeros_like(present)
    both[:, 1:] = present[:, 1:] & present[:, :-1]
    grew = np.zeros_like(present)
    if values.shape[1] < 2:
        return grew, both
    now, then, step = values[:, 1:], values[:, :-1], np.diff(times)[None, :]
    # Far from MIN and MAX, the differences fit int64; the rest is Python ints. Bounds, not
    # `np.abs`: the absolute value of MIN (-2^63) wraps to MIN itself and would read as near.
    near = (times > -SAFE) & (times < SAFE)
    safe = (now > -SAFE) & (now < SAFE) & (then > -SAFE) & (then < SAFE) & (near[1:] & near[:-1])[None, :]
    grew[:, 1:] = safe & (2 * (now - then) >= step)
    for row, col in zip(*np.nonzero(both[:, 1:] & ~safe), strict=True):
        a, b = int(now[row, col]), int(then[row, col])
        grew[row, col + 1] = 2 * (a - b) >= int(times[col + 1]) - int(times[col])
    return grew, both


class Lowest:
    """The lowest of the candidates offered so far, at every sample: by watermark, then by the
    tie-breaks (input number, upstream vertex's place, upstream subtask, split's place)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.best = [np.zeros(size, np.int64) for _ in range(5)]
        self.has = np.zeros(size, bool)

    def offer(self, mark: np.ndarray, live: np.ndarray, tie: tuple[int, int, object, int]) -> None:
        """A candidate: its watermark and whether it is live at each sample, and its tie-breaks
        (the upstream subtask may differ per sample: an all-to-all edge's slowest)."""
        cand = [mark] + [np.broadcast_to(np.asarray(part, np.int64), (self.size,)) for part in tie]
        lower = np.zeros(self.size, bool)
        for got, held in zip(reversed(cand), reversed(self.best), strict=True):
            lower = (got < held) | ((got == held) & lower)  # lexicographic, last field first
        better = live & (~self.has | lower)
        for held, got in zip(self.best, cand, strict=True):
            held[better] = got[better]
        self.has = self.has | live

    def found(self) -> Choices:
        mark, number, source, up, split = self.best
        return mark, number, source, up, split, self.has


class Columns:
    """What blame reads, per vertex, at every sample time of one recording."""

    def __init__(
        self,
        rec: JobRecording,
        times: list[int],
        splits: dict[tuple[str, int], list[str]],
        idle_after: Callable[[str], int | None],
    ) -> None:
        self.rec = rec
        self.t = np.array(times, np.int64)
        self._splits = splits
        self._idle_after = idle_after
        self._by_id: dict[str, Vertex] = {}
        for v in rec.vertices:
            self._by_id.setdefault(v.id, v)
        self._inputs = {vid: rec.inputs_of(vid) for vid in self._by_id}
        self._vertex_rank = {vid: i for i, vid in enumerate(sorted(self._by_id))}
        every_split = sorted({"", *(s for found in splits.values() for s in found)})
        self.split_rank = {split: i for i, split in enumerate(every_split)}
        self.split_names = every_split
        self.vertex_ids = sorted(self._by_id)
        self._outputs: dict[str, Matrix] = {}
        self._idle: dict[str, np.ndarray] = {}
        self._split_rows: dict[str, tuple[list[tuple[int, str]], Matrix, np.ndarray]] = {}
        self._split_row: dict[tuple[str, int, str], int] = {}
        self._still: dict[str, np.ndarray] = {}
        self._spreads: dict[str, Spreads] = {}
        self._choices: dict[tuple[str, int], Choices] = {}
        self._held_from: dict[tuple[str, int], np.ndarray] = {}
        self._still_from: dict[str, np.ndarray] = {}
        self._peer_from: dict[tuple[str, int], np.ndarray] = {}
        self._same_from: dict[SeriesKey, np.ndarray] = {}
        self._leading: Matrix | None = None

    def outputs(self, vid: str) -> Matrix:
        """Every subtask's output at every sample: MAX once it has FINISHED, else its
        `currentOutputWatermark`, else its input watermark (as `JobRecording.outputs_over`)."""
        if vid not in self._outputs:
            p = self._by_id[vid].parallelism
            keys = [
                (vid, s, m, None)
                for m in (TASK_FINISHED, OUTPUT_WATERMARK, INPUT_WATERMARK)
                for s in range(p)
            ]
            values, present = over_times(self.rec, keys, self.t)
            done = present[:p] & (values[:p] == 1)
            out = np.where(present[p : 2 * p], values[p : 2 * p], values[2 * p :])
            self._outputs[vid] = (
                np.where(done, MAX_MS, out),
                done | present[p : 2 * p] | present[2 * p :],
            )
        return self._outputs[vid]

    def finished(self, vid: str) -> np.ndarray:
        """Whether each subtask had FINISHED by each sample."""
        p = self._by_id[vid].parallelism
        values, present = over_times(self.rec, [(vid, s, TASK_FINISHED, None) for s in range(p)], self.t)
        return present & (values == 1)

    def split_rows(self, vid: str) -> tuple[list[tuple[int, str]], Matrix, np.ndarray]:
        """A source's splits as rows ((subtask, split) in order): their watermarks and idleness.
        A split is idle when its `accumulatedIdleTimeMs` grew by at least half the time since the
        previous sample, or (without both samples of it) when `idleTimeMsPerSecond` is ≥ 500."""
        if vid not in self._split_rows:
            subtasks = sorted(s for v, s in self._splits if v == vid)
            rows = [(s, split) for s in subtasks for split in self._splits[(vid, s)]]
            marks = over_times(self.rec, [(vid, s, SPLIT_WATERMARK, split) for s, split in rows], self.t)
            acc = over_times(
                self.rec, [(vid, s, "accumulatedIdleTimeMs", split) for s, split in rows], self.t
            )
            rate, rated = over_times(
                self.rec, [(vid, s, "idleTimeMsPerSecond", split) for s, split in rows], self.t
            )
            grew, both = twice_grew_at_least(acc[0], acc[1], self.t)
            self._split_rows[vid] = (rows, marks, np.where(both, grew, rated & (rate >= 500)))
            self._split_row.update({(vid, s, split): row for row, (s, split) in enumerate(rows)})
        return self._split_rows[vid]

    def split_row(self, vid: str, subtask: int, split: str) -> int | None:
        """The split's row in `split_rows(vid)` (None: it reported no split metric)."""
        self.split_rows(vid)
        return self._split_row.get((vid, subtask, split))

    def idle(self, vid: str) -> np.ndarray:
        """Every subtask's idleness at every sample, upstream vertices first, walked with a stack. A
        vertex reached again while its own idleness is being worked out (a plan with a cycle) counts
        as not idle: nothing upstream says that channel is idle."""
        stack, asking = [vid], set()
        while stack:
            top = stack[-1]
            if top in self._idle:
                stack.pop()
                continue
            ups = [
                e.source
                for edges in self._inputs[top].values()
                for e in edges
                if e.source not in self._idle and e.source not in asking
            ]
            if ups and top not in asking:
                asking.add(top)
                stack.extend(ups)
                continue
            self._idle[top] = self._idle_of(top)
            asking.discard(top)
            stack.pop()
        return self._idle[vid]

    def _idle_of(self, vid: str) -> np.ndarray:
        """One vertex's idleness, its upstream vertices' known (or being worked out): idle when
        every channel it reads is; a source by its splits, else by `sourceIdleTime`; a FINISHED
        subtask sent MAX, so it is never an idle channel."""
        shape = (self._by_id[vid].parallelism, len(self.t))
        edges = [e for found in self._inputs[vid].values() for e in found]
        if edges:
            idle = np.ones(shape, bool)
            for edge in edges:
                up = self._idle.get(edge.source)
                if up is None:
                    return np.zeros(shape, bool)  # a cycle: nothing says the channel is idle
                if all_to_all(edge):
                    idle &= np.all(up, axis=0, keepdims=True)
                    continue
                for s in range(shape[0]):
                    idle[s] &= up[self.channels(edge, s)].all(axis=0)
        else:
            idle = np.zeros(shape, bool)
            rows, _, split_idle = self.split_rows(vid)
            groups: dict[int, list[int]] = {}
            for row, (s, _) in enumerate(rows):
                groups.setdefault(s, []).append(row)
            for s, found in groups.items():
                if 0 <= s < shape[0]:
                    idle[s] = split_idle[found].all(axis=0)
            after = self._idle_after(vid)
            rest = [s for s in range(shape[0]) if s not in groups]
            if after is not None and rest:
                keys = [(vid, s, SOURCE_IDLE_TIME, None) for s in rest]
                quiet, said = over_times(self.rec, keys, self.t)
                idle[rest] = said & (quiet >= after)
        return idle & ~self.finished(vid)

    def channels(self, edge: Edge, subtask: int) -> list[int]:
        """The upstream subtasks one subtask of the edge's target reads over it."""
        return edge.channels(
            subtask, self._by_id[edge.source].parallelism, self._by_id[edge.target].parallelism
        )

    def spread(self, vid: str) -> Spreads:
        """The vertex's live (reported, not idle) outputs at every sample: the lowest (value, then
        subtask), and the highest below MAX."""
        if vid not in self._spreads:
            values, present = self.outputs(vid)
            live = present & ~self.idle(vid)
            any_live = live.any(axis=0)
            lowest = np.where(live, values, MAX_MS).argmin(axis=0)
            first_live = live.argmax(axis=0)  # every live output is MAX: the lowest subtask
            low_s = np.where(live[lowest, np.arange(len(self.t))], lowest, first_live)
            low_w = values[low_s, np.arange(len(self.t))]
            below = live & (values < MAX_MS)
            high = np.where(below, values, MIN_MS).max(axis=0, initial=MIN_MS)
            self._spreads[vid] = (low_w, low_s, any_live, high, below.any(axis=0))
        return self._spreads[vid]

    def leading(self) -> Matrix:
        """The job's leading watermark at every sample: the highest below MAX of every live
        subtask's output and every live split's watermark; (values, whether any)."""
        if self._leading is None:
            best = np.full(len(self.t), MIN_MS, np.int64)
            found = np.zeros(len(self.t), bool)
            for vid in self._by_id:
                _, _, _, high, has = self.spread(vid)
                best, found = np.where(has & (~found | (high > best)), high, best), found | has
            for vid in sorted({v for v, _ in self._splits}):
                rows, (marks, said), split_idle = self.split_rows(vid)
                if rows:
                    live = said & (marks < MAX_MS) & ~split_idle
                    high = np.where(live, marks, MIN_MS).max(axis=0)
                    has = live.any(axis=0)
                    best, found = np.where(has & (~found | (high > best)), high, best), found | has
            self._leading = (best, found)
        return self._leading

    def choices(self, vid: str, subtask: int) -> Choices:
        """The channel (or split) holding the subtask at every sample: the lowest watermark, then
        the lowest input, upstream vertex id, subtask and split id (as a valve takes the minimum,
        any tie holds). An all-to-all edge offers its upstream vertex's lowest live output."""
        key = (vid, subtask)
        if key in self._choices:
            return self._choices[key]
        lowest = Lowest(len(self.t))
        rank = self._vertex_rank
        for number, edges in self._inputs[vid].items():
            for edge in edges:
                if all_to_all(edge):
                    low_w, low_s, any_live, _, _ = self.spread(edge.source)
                    lowest.offer(low_w, any_live, (number, rank[edge.source], low_s, 0))
                    continue
                (values, present), idle = self.outputs(edge.source), self.idle(edge.source)
                for up in self.channels(edge, subtask):
                    lowest.offer(values[up], present[up] & ~idle[up], (number, rank[edge.source], up, 0))
        if not self._inputs[vid]:
            rows, (marks, said), split_idle = self.split_rows(vid)
            for row, (s, split) in enumerate(rows):
                if s == subtask:
                    tie = (0, rank[vid], subtask, self.split_rank[split])
                    lowest.offer(marks[row], said[row] & ~split_idle[row], tie)
        self._choices[key] = lowest.found()
        return self._choices[key]

    def held_from(self, vid: str, subtask: int) -> np.ndarray:
        """For each sample, the first sample of the run ending there in which the same channel
        (input, upstream vertex and subtask, split) held the subtask."""
        if (vid, subtask) not in self._held_from:
            *_, number, source, up, split, has = self.choices(vid, subtask)
            same = np.zeros(len(self.t), bool)
            same[1:] = has[:-1] & (number[1:] == number[:-1]) & (source[1:] == source[:-1])
            same[1:] &= (up[1:] == up[:-1]) & (split[1:] == split[:-1])
            self._held_from[(vid, subtask)] = run_starts(same)
        return self._held_from[(vid, subtask)]

    def still_from(self, vid: str) -> np.ndarray:
        """For each sample, the first sample from which the vertex's output (its slowest live
        subtask's, the live set read at the later sample) stood still up to it."""
        if vid not in self._still_from:
            self._still_from[vid] = run_starts(self.stands_still(vid))
        return self._still_from[vid]

    def stands_still(self, vid: str) -> np.ndarray:
        """At each sample: the slowest non-idle subtask's output did not advance since the previous
        sample (each non-idle subtask reported at both; below MAX). Never at the first sample."""
        values, present = self.outputs(vid)
        live = ~self.idle(vid)
        still = np.zeros(len(self.t), bool)
        if len(self.t) < 2:
            return still
        live_now = live[:, 1:]
        reported = ~(live_now & ~(present[:, 1:] & present[:, :-1])).any(axis=0)
        now = np.where(live_now, values[:, 1:], MAX_MS).min(axis=0, initial=MAX_MS)
        then = np.where(live_now, values[:, :-1], MAX_MS).min(axis=0, initial=MAX_MS)
        still[1:] = live_now.any(axis=0) & reported & (now == then) & (now < MAX_MS)
        return still

    def peer_from(self, vid: str, subtask: int) -> np.ndarray:
        """For each sample, the first of the run back from it in which, at every earlier sample of
        the run, the subtask was its vertex's slowest live one."""
        if (vid, subtask) not in self._peer_from:
            _, low_s, any_live, _, _ = self.spread(vid)
            slowest = any_live & (low_s == subtask)
            same = np.zeros(len(self.t), bool)
            same[1:] = slowest[:-1]
            self._peer_from[(vid, subtask)] = run_starts(same)
        return self._peer_from[(vid, subtask)]

    def same_from(self, key: SeriesKey) -> np.ndarray:
        """For each sample, the first sample of the run ending there over which the series read
        the same (no value at both counts as the same)."""
        if key not in self._same_from:
            (values,), (present,) = over_times(self.rec, [key], self.t)
            same = np.zeros(len(self.t), bool)
            same[1:] = (present[1:] == present[:-1]) & (~present[1:] | (values[1:] == values[:-1]))
            self._same_from[key] = run_starts(same)
        return self._same_from[key]
