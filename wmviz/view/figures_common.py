"""Helpers shared by the figure builders: colours, hover text, sentinel clipping, thinning.

Pure numpy/pandas; no Plotly objects are built here, so each helper is cheap to test.
"""

from __future__ import annotations

import re

import numpy as np

from wmviz.core.types import EPOCH_FROM_MS, EPOCH_UNTIL_MS, MAX_MS, MIN_MS
from wmviz.view.timefmt import DEFAULT, TimeFormat

# Okabe-Ito colours: distinguishable under every common colour-vision deficiency, and IDLE
# (orange) and FINISHED (blue) differ in both hue and lightness.
STATUS_COLORS: dict[str, str] = {
    "ACTIVE": "#009E73",  # bluish green
    "IDLE": "#E69F00",  # orange
    "FINISHED": "#0072B2",  # blue
}
OUTPUT_COLOR = "#000000"
OUTPUT_BAND = "rgba(60, 60, 60, 0.22)"  # the output drawn as a wide band under the channels
CHANNEL_COLORS = (
    "#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#17becf", "#8c564b", "#e377c2",
    "#7f7f7f", "#bcbd22",
)  # fmt: skip
"""Channel lines, in lane order: explicit, so the page, the HTML report and the PNGs agree (a
renderer's default colourway, or none, would otherwise decide)."""
ROOT_COLOR = "#D55E00"  # vermillion: the heap's root, the current minimum
HIGHLIGHT_COLOR = "#CC79A7"  # reddish purple: the channel that just changed
CURSOR_COLOR = "#D55E00"

MAX_TEXT = "MAX (end of time)"
MIN_TEXT = "MIN (Long.MIN_VALUE)"

_PLOTLY_ENTITIES = str.maketrans({"&": "&amp;", "<": "&lt;", ">": "&gt;", "%": "&#37;"})


def plotly_text(text: object) -> str:
    """User text (an instance, input or file name, a key, a config value) as text Plotly shows as
    it is, wherever a figure draws it: a trace or legend name, a tick label (a categorical axis's
    categories are its labels), hover text, an annotation, a title.

    Plotly.js reads every string it draws as its own pseudo-HTML: `<a href>` becomes a link,
    `<span style>` restyles, `<br>` breaks the line. Between its tags it decodes HTML entities
    (`&lt;` `&gt;` `&amp;` and numeric ones, `&#37;`), the same in every one of those places, so
    `<`, `>` and `&` written as entities are drawn as the characters. `%` is written `&#37;` too:
    a hovertemplate substitutes `%{x}` before the entities are decoded, so user text placed in a
    template can never name a field, and outside one `&#37;` reads as `%`."""
    return str(text).translate(_PLOTLY_ENTITIES)


def plotly_texts(values: np.ndarray) -> np.ndarray:
    """`plotly_text` of every item, as an object array (names, not per-point values: a few
    thousand at most)."""
    return np.array([plotly_text(v) for v in np.asarray(values, dtype=object).ravel()], dtype=object).reshape(
        np.shape(values)
    )


POINT_CAP = 20_000
"""The most points one trace may carry; longer traces are thinned (see `thin`)."""


def format_many(values: np.ndarray, t: TimeFormat = DEFAULT) -> np.ndarray:
    """`t(v)` for every int64 in `values`, as an object array, without a Python call per value in
    the common case (UTC date-times, raw ms): the chart's hover text may hold 100,000 points."""
    values = np.asarray(values, dtype=np.int64)
    out = values.astype(str).astype(object)
    if t.mode == "utc" and t.zone_label == "UTC" and not t.short:
        epoch = (values >= EPOCH_FROM_MS) & (values <= EPOCH_UNTIL_MS)
        if epoch.any():
            iso = np.datetime_as_string(values[epoch].astype("datetime64[ms]"), unit="ms").astype(str)
            out[epoch] = (np.char.replace(iso, "T", " ").astype(object)) + "Z"
    elif t.mode != "ms":
        # Other zones and relative offsets: one call per distinct value (a step line repeats many).
        unique, inverse = np.unique(values, return_inverse=True)
        out = np.array([t(int(v)) for v in unique], dtype=object)[inverse]
    out[values == MAX_MS] = "MAX"
    out[values == MIN_MS] = "MIN"
    return out


def describe_ms(values: np.ndarray, t: TimeFormat = DEFAULT) -> np.ndarray:
    """Hover text for int64 watermarks: the readable time and, when it differs, the raw number
    (`2026-11-24 10:05:15.000Z (1795514715000 ms)`); `MAX (end of time)`, `MIN (Long.MIN_VALUE)`."""
    values = np.asarray(values, dtype=np.int64)
    readable = format_many(values, t)
    number = values.astype(str).astype(object)
    out = np.where(readable == number, readable, readable + " (" + number + " ms)")
    out[values == MAX_MS] = MAX_TEXT
    out[values == MIN_MS] = MIN_TEXT
    return out


def describe_one(value: int, t: TimeFormat = DEFAULT) -> str:
    """`describe_ms` for one watermark."""
    return str(describe_ms(np.array([value]), t)[0])


SENTINEL_GAP = 0.3
"""MIN and MAX sit this fraction of the finite span outside it: far enough that "25 → MAX" reads
as a jump off the scale, not as one more unit, with a labelled band around each."""


def sentinel_levels(*arrays: np.ndarray, gap: float = SENTINEL_GAP) -> tuple[float, float]:
    """Where MIN and MAX are drawn: below / above the finite values of all `arrays`.

    A linear axis cannot show ±2^63 next to real times, so the sentinels sit `gap` of the finite
    span (at least 1 ms) outside it; with no finite value at all they sit at -1 and 1."""
    finite = [a[(a != MIN_MS) & (a != MAX_MS)] for a in (np.asarray(x, dtype=np.int64) for x in arrays)]
    finite = [a for a in finite if a.size]
    if not finite:
        return -1.0, 1.0
    lo = float(min(a.min() for a in finite))
    hi = float(max(a.max() for a in finite))
    pad = max((hi - lo) * gap, 1.0)
    return lo - pad, hi + pad


def clip_sentinels(values: np.ndarray, levels: tuple[float, float]) -> np.ndarray:
    """The values as floats for plotting, MIN and MAX replaced by their drawn levels."""
    values = np.asarray(values, dtype=np.int64)
    out = values.astype(np.float64)
    out[values == MIN_MS] = levels[0]
    out[values == MAX_MS] = levels[1]
    return out


def thin(x: np.ndarray, y: np.ndarray, cursor: float, cap: int = POINT_CAP) -> np.ndarray:
    """Indices of at most ~`cap` points of a step line worth drawing, in order.

    The quarter of the budget nearest the cursor is kept exactly (that is what a person inspects
    at full zoom); elsewhere each bucket of consecutive points keeps its first, lowest and highest
    point, so a spike or a jump to MAX never disappears when zoomed out."""
    n = len(x)
    if n <= cap:
        return np.arange(n)
    half = cap // 8
    at = int(np.searchsorted(x, cursor))
    lo, hi = max(0, at - half), min(n, at + half)
    budget = max(cap - (hi - lo) - 8, 6)  # 2 ends, and up to 2 x 3 points of rounding up below
    parts = [np.arange(lo, hi), np.array([0, n - 1])]
    outside = lo + (n - hi)
    for start, stop in ((0, lo), (hi, n)):
        if stop > start:
            buckets = max(1, budget * (stop - start) // outside // 3)
            parts.append(_bucket_extremes(y, start, stop, buckets))
    return np.unique(np.concatenate(parts))


def _bucket_extremes(y: np.ndarray, start: int, stop: int, buckets: int) -> np.ndarray:
    """First, argmin and argmax of each of `buckets` equal runs of y[start:stop]."""
    size = -(-(stop - start) // buckets)
    seg = y[start:stop]
    padded = np.pad(seg, (0, size * buckets - len(seg)), mode="edge").reshape(buckets, size)
    base = start + np.arange(buckets) * size
    picks = np.concatenate([base, base + padded.argmin(axis=1), base + padded.argmax(axis=1)])
    return np.minimum(picks, stop - 1)


def natural_key(text: str) -> tuple:
    """Sort key putting "2" before "10" and "sub-2" before "sub-10"."""
    return tuple((0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", text) if t)
