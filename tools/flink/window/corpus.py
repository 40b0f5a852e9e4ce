"""Seeded random window traces for the differential test against real Flink.

Six styles, each aimed at a place where a reimplementation goes wrong: `random` (1–3 keys,
tumbling or sliding, disorder, irregular, repeated and falling watermarks), `ties` (2–5 keys
filling the same windows before one watermark passes them all: timers with equal timestamps
across keys and windows), `late` (lateness, late firings and too-late records), `gaps` (sliding
windows with slide > size, whose gap elements are late or vanish), `edges` (event times and
watermarks at the ends of Java's long, where window ends wrap and cleanup times saturate) and
`generated` (records only, watermarks from Flink's BoundedOutOfOrdernessWatermarks per record).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from tools.flink.window.harness import Input, Mark, Record, WindowTrace
from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.core.windows import AssignerError, assign_windows

STYLES = ("random", "ties", "late", "gaps", "edges", "generated")

KEY_POOL = (
    "a", "b", "c", "x", "y", "z", "k1", "k2", "k3", "user-17", "user-42",
    "Aa", "BB",  # equal String.hashCode: same key group, different keys
    "ü", "日本", "🙂", "0", "1", "-5", "12345", "key_9",
)  # fmt: skip


def _window_shape(rng: random.Random, style: str) -> tuple[int, int | None]:
    size = rng.choice((1, 2, 3, 4, 5, 7, 10))
    if style == "gaps":
        return size, size + rng.randint(1, 2 * size + 1)
    if (style in ("ties", "generated") and rng.random() < 0.5) or rng.random() < 0.45:
        return size, None
    slide = rng.choice((1, 2, 3, size, size + 1, size + 3, max(1, size // 2)))
    return size, slide


def _lateness(rng: random.Random, style: str, size: int) -> int:
    if style == "late":
        return rng.choice((1, 2, 3, size, 2 * size, 7))
    return rng.choice((0, 0, 0, 1, 2, size))


def _edge_base(rng: random.Random) -> int:
    return rng.choice((MAX_MS - 40, MAX_MS - 12, MIN_MS + 12, MIN_MS + 40, -20))


def _safe_event(ts: int, size: int, slide: int | None) -> bool:
    """Flink fails the job on this event time (MIN, or a sliding assigner that wraps): skip it."""
    try:
        assign_windows(ts, size, slide)
    except AssignerError:
        return False
    return True


def _clamp(value: int) -> int:
    return max(MIN_MS + 1, min(MAX_MS, value))


def random_window_trace(seed: int, style: str | None = None) -> WindowTrace:
    """A deterministic random trace of one of the six styles."""
    rng = random.Random(seed)
    style = style or rng.choice(STYLES)
    size, slide = _window_shape(rng, style)
    lateness = _lateness(rng, style, size)
    aggregate = "count" if rng.random() < 0.3 else "list"
    n_keys = rng.randint(2, 5) if style == "ties" else rng.randint(1, 3)
    keys = rng.sample(KEY_POOL, n_keys)
    length = rng.randint(4, 40)
    span = size + (slide or 0)
    base = _edge_base(rng) if style == "edges" else rng.randint(-3 * span, 3 * span)
    ooo = rng.choice((0, 0, 1, 2, 5, 10)) if style == "generated" else None
    shape = _Shape(style, size, slide, span, lateness, ooo)
    inputs: list[Input] = []
    wm = base - rng.randint(0, 2 * span)
    p_mark = {"ties": 0.2, "late": 0.35, "edges": 0.35}.get(style, 0.3)
    for _ in range(length):
        if ooo is None and rng.random() < p_mark:
            wm = _next_mark(rng, shape, wm)
            inputs.append(Mark(wm))
            continue
        key = rng.choice(keys)
        ts, wm = _next_event_time(rng, shape, wm)
        if _safe_event(ts, size, slide):
            inputs.append(Record(key, ts))
    if not any(isinstance(i, Record) for i in inputs):
        inputs.append(Record(keys[0], _clamp(base)))
    label = f"window seed {seed} ({style})"
    return WindowTrace(label, size, slide, lateness, aggregate, tuple(inputs), ooo)


@dataclass(frozen=True)
class _Shape:
    """What a random trace's inputs are drawn around: its style and windows, and (`generated`
    style) the generator's out-of-orderness."""

    style: str
    size: int
    slide: int | None
    span: int
    lateness: int
    ooo: int | None


def _next_mark(rng: random.Random, shape: _Shape, wm: int) -> int:
    """The next watermark after `wm`: repeated, falling, or moving on (by the style's steps)."""
    span, style = shape.span, shape.style
    r = rng.random()
    if r < 0.15:
        pass  # repeat the last watermark
    elif r < 0.25:
        wm -= rng.randint(1, span)  # a falling watermark (the valve ignores it)
    elif style == "ties" and r < 0.6:
        wm += rng.randint(span, 4 * span)  # pass several windows of every key at once
    elif style == "edges" and r < 0.4:
        wm = rng.choice((MIN_MS, MIN_MS + 1, MIN_MS + 2, -1, 0, 1, MAX_MS - 3, MAX_MS))
    else:
        wm += rng.randint(0, 2 * span)
    return _clamp(wm) if wm != MIN_MS else wm


def _next_event_time(rng: random.Random, shape: _Shape, wm: int) -> tuple[int, int]:
    """A record's event time near the watermark `wm` (late, tied, at the edges, by the style),
    and the watermark after it (the `generated` style moves it with the records)."""
    span, style, ooo = shape.span, shape.style, shape.ooo
    if style == "ties":
        ts = wm + rng.randint(1, span)
    elif ooo is not None:
        wm += rng.randint(0, 3)
        ts = wm + rng.randint(-ooo - 3, 2)
    elif style == "late" or rng.random() < 0.2:
        ts = wm - rng.randint(0, 3 * span + shape.lateness)
    else:
        ts = wm + rng.randint(-span, 2 * span)
    if style == "edges" and rng.random() < 0.3:
        ts = rng.choice((MAX_MS, MAX_MS - 1, MAX_MS - 2, MIN_MS + 1, MIN_MS + 2, MIN_MS + shape.size, 0, -1))
    return _clamp(ts), wm


def window_corpus(n: int, seed_base: int) -> list[WindowTrace]:
    """Traces for seeds seed_base … seed_base + n − 1 (every run checks the same corpus)."""
    return [random_window_trace(seed_base + i) for i in range(n)]
