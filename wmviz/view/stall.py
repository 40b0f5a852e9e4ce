"""Where the output is stuck, and who holds it: the stall summary the page, the chart and the
report show ("output stuck at 10:05:15.000Z for 43 steps, held by ch2 since step 61").

A stall is a run of steps over which the output watermark (the valve's, or a two-input operator's
combined input) does not change while inputs keep arriving, at least MIN_STALL_STEPS long and at
least STALL_FACTOR times the median of the trace's other runs: a trace with five rows between
watermarks is not stalled every five rows. A run never sets its own bar: a trace whose output
never moves at all (a silent split holding it at MIN, no idleness) has no other run to compare
with, so MIN_STALL_STEPS alone decides, and its one long run is the stall. An output at MAX is
finished, not stalled; one still at MIN is stuck like any other. Pure: numpy and pandas over
the cursor's tables.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.timeline.cursor import InstanceCursor
from wmviz.view.timefmt import DEFAULT, TimeFormat

MIN_STALL_STEPS = 5
STALL_FACTOR = 3


@dataclass(frozen=True)
class Stall:
    """One run of an unchanged output: its value, its first step, the step after its last
    (`end`, the step count when it lasts to the end), and what holds it at the step asked about."""

    output_ms: int
    start: int
    end: int
    holders: tuple[str, ...] | None = None
    """The channels holding the minimum (`ch2`, `L/ch0`); None when not asked, () when none is."""
    held_since: int | None = None

    @property
    def steps(self) -> int:
        return self.end - self.start


def output_runs(cursor: InstanceCursor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every run of an unchanged output: start steps, end steps (exclusive), values."""
    wm = cursor.steps.column("output_wm").to_numpy(zero_copy_only=False).astype(np.int64)
    if not len(wm):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.flatnonzero(np.r_[True, wm[1:] != wm[:-1]])
    ends = np.r_[starts[1:], len(wm)]
    return starts, ends, wm[starts]


def stall_at(cursor: InstanceCursor, step: int, holders: list[tuple[str, int]] | None = None) -> Stall | None:
    """The stall the output is in at `step`, or None (it moved recently, or it is at MAX).

    `holders` are the (input, channel) pairs holding the minimum at `step` (from the valve views);
    the stall says since when the first of them has not moved."""
    starts, ends, values = output_runs(cursor)
    if not len(starts):
        return None
    run = int(np.searchsorted(starts, step, side="right")) - 1
    value, start, end = int(values[run]), int(starts[run]), int(ends[run])
    if value == MAX_MS or end - start < _thresholds(starts, ends)[run]:
        return None
    holders = holders or []
    several = len({i for i, _ in holders}) > 1 or any(i != "0" for i, _ in holders)
    names = tuple(f"{i}/ch{c}" if several else f"ch{c}" for i, c in holders)
    since = _last_move(cursor, holders[0], step) if holders else None
    return Stall(value, start, end, names, since)


def longest_stalls(cursor: InstanceCursor, count: int = 3) -> list[Stall]:
    """The longest stalls of the run (at most `count`), longest first."""
    starts, ends, values = output_runs(cursor)
    length = ends - starts
    keep = (length >= _thresholds(starts, ends)) & (values != MAX_MS)
    order = np.argsort(-length[keep], kind="stable")[:count]
    s, e, v = starts[keep][order], ends[keep][order], values[keep][order]
    return [Stall(int(v[i]), int(s[i]), int(e[i])) for i in range(len(s))]


def _thresholds(starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """How long each run must be to count as a stall: STALL_FACTOR times the median length of the
    other runs (the trace's routine gap between output changes), at least MIN_STALL_STEPS.

    The run itself is left out of its median: when a trace has one run or two, the stall is most of
    the median, and a trace stuck from its first step to its last (at MIN, say) could never reach
    three times its own length. Read off the sorted lengths: without the run of rank r, the k = n-1
    others' middle elements sit at (k-1)//2 and k//2, shifted one place up from rank r on."""
    lengths = (ends - starts).astype(np.float64)
    k = len(lengths) - 1
    if k < 1:
        return np.full(len(lengths), float(MIN_STALL_STEPS))
    order = np.argsort(lengths, kind="stable")
    ranked = lengths[order]
    rank = np.empty(len(lengths), np.int64)
    rank[order] = np.arange(len(lengths))
    lo, hi = (k - 1) // 2, k // 2
    low = np.where(lo < rank, ranked[lo], ranked[lo + 1])
    high = np.where(hi < rank, ranked[hi], ranked[hi + 1])
    return np.maximum(float(MIN_STALL_STEPS), STALL_FACTOR * (low + high) / 2)


def _last_move(cursor: InstanceCursor, holder: tuple[str, int], step: int) -> int | None:
    """The last step at or before `step` where the channel's watermark changed (None: never)."""
    ch = cursor.channels
    if ch.empty:
        return None
    mine = ch[
        (ch["input"].astype(str) == str(holder[0])) & (ch["channel"] == holder[1]) & (ch["step"] <= step)
    ]
    if mine.empty:
        return None
    wm = mine.sort_values("step", kind="stable")["watermark_ms"].to_numpy(np.int64)
    steps = mine.sort_values("step", kind="stable")["step"].to_numpy(np.int64)
    moved = np.flatnonzero(wm != np.r_[MIN_MS, wm[:-1]])
    return int(steps[moved[-1]]) if len(moved) else None


def stall_text(stall: Stall, count: int, t: TimeFormat = DEFAULT) -> str:
    """One line for a person: `output stuck at 10:05:15.000Z for 43 steps (steps 185–227), held by
    ch2 since step 181`."""
    value = "MIN (no watermark yet)" if stall.output_ms == MIN_MS else t(stall.output_ms)
    last = stall.end - 1
    span = f"steps {stall.start}–{last}" + (", to the end" if stall.end >= count else "")
    text = f"output stuck at {value} for {stall.steps} steps ({span})"
    if stall.holders:
        who = " and ".join(stall.holders)
        since = f" since step {stall.held_since}" if stall.held_since is not None else " from the start"
        text += f", held by {who}{since}"
    elif stall.holders is not None and stall.output_ms != MIN_MS:
        text += ", with no aligned channel to move it"
    return text
