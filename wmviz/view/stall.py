"""Where the output is stuck, and who holds it: the stall summary the page, the chart and the
report show ("output stuck at 10:05:15.000Z for 43 steps, held by ch2 since step 61").

A stall is a run of steps over which the output watermark (the valve's, or a two-input operator's
combined input) does not change while inputs keep arriving, at least MIN_STALL_STEPS long and at
least STALL_FACTOR times the run's median: a trace with five rows between watermarks is not
stalled every five rows. An output at MAX is finished, not stalled. Pure: numpy and pandas over
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
    if value == MAX_MS or end - start < _threshold(starts, ends):
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
    keep = (length >= _threshold(starts, ends)) & (values != MAX_MS)
    order = np.argsort(-length[keep], kind="stable")[:count]
    s, e, v = starts[keep][order], ends[keep][order], values[keep][order]
    return [Stall(int(v[i]), int(s[i]), int(e[i])) for i in range(len(s))]


def _threshold(starts: np.ndarray, ends: np.ndarray) -> float:
    """How long a run must be to count as a stall in this trace."""
    return (
        max(MIN_STALL_STEPS, STALL_FACTOR * float(np.median(ends - starts)))
        if len(starts)
        else MIN_STALL_STEPS
    )


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
