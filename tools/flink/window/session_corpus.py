"""Seeded random session-window and window-offset traces for the differential test against real Flink.

Session styles, each aimed at a place where a reimplementation of merging goes wrong:
`sessions` (1–3 keys, records around the watermark so sessions open, grow, touch and bridge),
`session-ties` (2–5 keys whose sessions end together, merging while others wait: merged windows'
timers are deleted from the shared heap, which reorders later ties), `session-late` (allowed
lateness, late records merging into fired sessions, records past cleanup kept by a live session
or sent to the late side output), `session-edges` (event times and gaps at the ends of Java's
long: `t + gap` wraps, cleanup capped at MAX, merges into such sessions that fail the job) and
`session-generated` (watermarks from Flink's BoundedOutOfOrdernessWatermarks per record).
`offsets` are tumbling and sliding windows with an offset (negative, positive, Long.MIN_VALUE,
slide > size) over the same kinds of records.
"""

from __future__ import annotations

import random

from tools.flink.window.corpus import KEY_POOL
from tools.flink.window.harness import Input, Mark, Record, WindowTrace
from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.core.windows import AssignerError, assign_windows, assigner_offset

SESSION_STYLES = ("sessions", "session-ties", "session-late", "session-edges", "session-generated")
STYLES = (*SESSION_STYLES, "offsets")


def _clamp(value: int) -> int:
    return max(MIN_MS, min(MAX_MS, value))


def _gap(rng: random.Random, style: str) -> int:
    if style == "session-edges" and rng.random() < 0.35:
        return rng.choice((MAX_MS, MAX_MS - 1, 1 << 62, (1 << 62) + 7, 1 << 40))
    return rng.choice((1, 2, 3, 4, 5, 7, 10))


def _lateness(rng: random.Random, style: str, gap: int) -> int:
    if style == "session-late":
        return rng.choice((1, 2, 3, 5, 7, 10, 20))
    if style == "session-edges":
        return rng.choice((0, 1, 5, 10, 100, MAX_MS))
    return rng.choice((0, 0, 0, 1, 2, min(gap, 10)))


def _edge_base(rng: random.Random, gap: int) -> int:
    near_max = MAX_MS - rng.randint(0, 3 * min(gap, 40))
    return rng.choice((near_max, MAX_MS - 40, MIN_MS + 12, MIN_MS, -20, 0))


def _next_mark(rng: random.Random, style: str, wm: int, span: int) -> int:
    """The next watermark mark: repeated, falling (ignored by Flink), at a long's edge, or risen."""
    r = rng.random()
    if r < 0.1:
        return wm  # repeat the last watermark
    if r < 0.2:
        return wm - rng.randint(1, span)  # a falling watermark (ignored)
    if style == "session-edges" and r < 0.4:
        return rng.choice((MIN_MS + 1, -1, 0, MAX_MS - 3 * span, MAX_MS - 3, MAX_MS - 1, MAX_MS))
    return wm + rng.randint(0, 2 * span)


def _record_time(
    rng: random.Random, style: str, wm: int, span: int, lateness: int, ooo: int | None
) -> tuple[int, int]:
    """(the watermark, a record's event time) for the next record of a style: a generated
    watermark moves with its records, so the watermark comes back too."""
    if style == "session-ties":
        ts = wm + rng.choice((1, 1, 2, span, span + 1))  # sessions of several keys end together
    elif ooo is not None:
        wm += rng.randint(0, 3)
        ts = wm + rng.randint(-ooo - 3, 2)
    elif style == "session-late":
        ts = wm - rng.randint(-span, 3 * span + lateness)
    else:
        ts = wm + rng.randint(-2 * span, 3 * span)
    if style == "session-edges" and rng.random() < 0.3:
        ts = rng.choice((MAX_MS, MAX_MS - 1, MAX_MS - span, MIN_MS, MIN_MS + 1, 0, -1))
    return wm, ts


def random_session_trace(seed: int, style: str | None = None) -> WindowTrace:
    """A deterministic random session-window trace of one of the session styles."""
    rng = random.Random(seed)
    style = style or rng.choice(SESSION_STYLES)
    gap = _gap(rng, style)
    lateness = _lateness(rng, style, gap)
    span = min(gap, 10)
    aggregate = "count" if rng.random() < 0.3 else "list"
    keys = rng.sample(KEY_POOL, rng.randint(2, 5) if style == "session-ties" else rng.randint(1, 3))
    base = _edge_base(rng, gap) if style == "session-edges" else rng.randint(-3 * span, 3 * span)
    ooo = rng.choice((0, 0, 1, 2, 5, 10)) if style == "session-generated" else None
    wm = base - rng.randint(0, 2 * span)
    inputs: list[Input] = []
    p_mark = {"session-ties": 0.2, "session-late": 0.35}.get(style, 0.3)
    for _ in range(rng.randint(4, 40)):
        if ooo is None and rng.random() < p_mark:
            wm = _next_mark(rng, style, wm, span)
            inputs.append(Mark(_clamp(wm)))
            continue
        key = rng.choice(keys)
        wm, ts = _record_time(rng, style, wm, span, lateness, ooo)
        inputs.append(Record(key, _clamp(ts)))
    if not any(isinstance(i, Record) for i in inputs):
        inputs.append(Record(keys[0], _clamp(base)))
    label = f"session seed {seed} ({style})"
    return WindowTrace(label, 0, None, lateness, aggregate, tuple(inputs), ooo, session_gap_ms=gap)


def _offset_shape(rng: random.Random) -> tuple[int, int | None, int]:
    size = rng.choice((1, 2, 3, 4, 5, 7, 10))
    slide = None if rng.random() < 0.5 else rng.choice((1, 2, 3, size, size + 2, max(1, size // 2)))
    bound = size if slide is None else slide
    offset = MIN_MS if rng.random() < 0.08 else rng.randint(-(bound - 1), bound - 1)
    return size, slide, offset


def random_offset_trace(seed: int) -> WindowTrace:
    """A deterministic random tumbling or sliding trace with a window offset."""
    rng = random.Random(seed)
    size, slide, offset = _offset_shape(rng)
    lateness = rng.choice((0, 0, 1, 2, size))
    span = size + (slide or 0)
    keys = rng.sample(KEY_POOL, rng.randint(1, 3))
    edges = rng.random() < 0.2
    base = rng.choice((MAX_MS - 30, MIN_MS + 30)) if edges else rng.randint(-3 * span, 3 * span)
    wm = base - rng.randint(0, 2 * span)
    inputs: list[Input] = []
    for _ in range(rng.randint(4, 30)):
        if rng.random() < 0.3:
            wm += rng.randint(-1, 2 * span)
            inputs.append(Mark(_clamp(wm)))
            continue
        ts = _clamp(wm + rng.randint(-span - lateness, 2 * span))
        try:  # Flink fails the job on a MIN timestamp or a sliding assigner that wraps: skip those
            assign_windows(ts, size, slide, assigner_offset(size, slide, offset))
        except AssignerError:
            continue
        inputs.append(Record(rng.choice(keys), ts))
    if not any(isinstance(i, Record) for i in inputs):
        inputs.append(Record(keys[0], 0))
    label = f"offset seed {seed} (offsets)"
    aggregate = "count" if rng.random() < 0.3 else "list"
    return WindowTrace(label, size, slide, lateness, aggregate, tuple(inputs), None, offset_ms=offset)
