"""Where each vertex of the job graph stands: layers from the plan, folded into a bounded grid.

A vertex's layer is its longest distance from a source (`JobRecording.depth`), so data flows left
to right. A job of four vertices reads well as one column per layer; a job of a hundred does not:
a chain of a hundred layers would put each vertex 8 px from the next, and a layer of forty sinks
would be forty rows tall. So the layout is folded, the way a long line of text is:

- a layer with more than `MAX_ROWS` vertices is cut into several columns side by side;
- the columns are laid left to right in bands of at most `MAX_COLUMNS`, and a job with more
  columns than that continues in the next band below, a little apart (`BAND_GAP`).

A job of up to `MAX_COLUMNS` layers of up to `MAX_ROWS` vertices keeps the plain layout (one
column per layer, each centred on 0); the grid never exceeds `MAX_COLUMNS` columns, so every vertex
keeps its width at a hundred vertices. The layout reads only ids and layers, so it is tested alone.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

MAX_ROWS = 10
"""The most vertices one column holds before its layer continues in the next column."""
MAX_COLUMNS = 12
"""The most columns one band holds before the graph continues in a band below."""
BAND_GAP = 0.6
"""The space between two bands, in rows: enough to tell a band's end from the next one's start."""


@dataclass(frozen=True, slots=True)
class Layout:
    """Each vertex's (x, y) — x its column within its band, y going down from 0 — and the grid's
    extent: how many columns wide and how many rows tall (bands and gaps included)."""

    where: dict[str, tuple[float, float]]
    columns: int
    rows: float
    bands: int


def fold(vertices: Sequence[tuple[str, int]]) -> Layout:
    """The layout of (id, layer) pairs given in plan order (see the module's rules)."""
    layers: dict[int, list[str]] = {}
    for vid, layer in vertices:
        layers.setdefault(layer, []).append(vid)
    columns = [
        ids[i : i + MAX_ROWS] for _, ids in sorted(layers.items()) for i in range(0, len(ids), MAX_ROWS)
    ]
    bands = [columns[i : i + MAX_COLUMNS] for i in range(0, len(columns), MAX_COLUMNS)]
    where: dict[str, tuple[float, float]] = {}
    edge = None  # the previous band's lower edge; each row is one unit tall
    for band in bands:
        tall = max(len(column) for column in band)
        centre = 0.0 if edge is None else edge - BAND_GAP - tall / 2
        for x, column in enumerate(band):
            for place, vid in enumerate(column):
                # Centred within the band: a one-band graph's columns are centred on 0, as before.
                where[vid] = (float(x), centre + (len(column) - 1) / 2 - place)
        edge = centre - tall / 2
    widest = max((len(band) for band in bands), default=1)
    rows = sum(max(len(c) for c in band) for band in bands) + BAND_GAP * max(len(bands) - 1, 0)
    return Layout(where, widest, float(rows or 1), len(bands))
