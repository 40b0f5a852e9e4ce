"""Column widths a table keeps whatever step it shows (pure, no Streamlit).

Streamlit's data grid sizes a column to the cells of the first value it draws and keeps that
width when the same table is drawn again with other cells: stepping on from step 0 (every
watermark `MIN`) cut `2026-11-24 10:05:15.000Z` to `2026-11-24 10:`. So each column is given its
width from the longest value it can hold, not from the cells of the step on screen.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import numpy as np
import pandas as pd

from wmviz.core.types import MAX_MS, MIN_MS, Status
from wmviz.timeline.cursor import InstanceCursor
from wmviz.view.timefmt import TimeFormat, raw

# The grid's 14 px font, measured on its own autosized columns: digits and capitals are wide,
# lower-case letters less so, spaces and punctuation narrow; plus the cell's padding.
WIDE_PX, LETTER_PX, NARROW_PX, PAD_PX = 7.0, 6.2, 3.8, 16
MAX_PX = 460  # a very long value (a reason, a payload) wraps the table no wider than this
FINISHED_LABEL = "ACTIVE (FINISHED, replayed as MAX)"


def _char_px(c: str) -> float:
    if c.isdigit() or c.isupper() or not c.isascii():
        return WIDE_PX
    return LETTER_PX if c.isalpha() else NARROW_PX


def text_px(text: str) -> int:
    """The width of a cell holding `text`."""
    return min(MAX_PX, PAD_PX + math.ceil(sum(_char_px(c) for c in text)))


def column_widths(table: pd.DataFrame, possible: Mapping[str, Iterable[str]] | None = None) -> dict[str, int]:
    """Each column's width in pixels: its header, its cells, and the values it may hold at another
    step (`possible`), whichever is longest."""
    widths = {}
    for name in table.columns:
        texts = [str(name), *(str(v) for v in table[name].tolist()), *(possible or {}).get(name, ())]
        widths[str(name)] = max(text_px(text) for text in texts)
    return widths


def latest_time(cursor: InstanceCursor) -> int | None:
    """The largest finite time the instance's trace holds (event times and watermarks): the
    widest a time of this run reads."""
    found = []
    for column in ("event_ms", "watermark_ms", "output_wm"):
        values = cursor.steps.column(column).drop_null().to_numpy(zero_copy_only=False)
        finite = values[(values > MIN_MS) & (values < MAX_MS)]
        if len(finite):
            found.append(int(np.max(finite)))
    return max(found) if found else None


def possible_times(t: TimeFormat, latest: int | None) -> list[str]:
    """What a time column of this run may read: MIN, MAX, and its latest time."""
    values = [MIN_MS, MAX_MS, *([latest] if latest is not None else [])]
    return [t(v) for v in values]


def channel_possible(t: TimeFormat, latest: int | None, finishes: bool) -> dict[str, list[str]]:
    """What each column of a channel table may hold at any step of the run (`finishes`: a channel
    of it finishes, so a status may read FINISHED or its released-profile label)."""
    values = [MIN_MS, MAX_MS, *([latest] if latest is not None else [])]
    statuses = [Status.ACTIVE.value, Status.IDLE.value]
    if finishes:
        statuses += [Status.FINISHED.value, FINISHED_LABEL]
    return {"watermark": possible_times(t, latest), "raw (ms)": [raw(v) for v in values], "status": statuses}
