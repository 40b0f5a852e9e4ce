"""A job recording's graph at one moment, as a Plotly figure (a plain dict: no Plotly objects).

The graph is laid out in layers from the plan: each vertex's layer is its longest distance from a
source, so sources stand on the left and sinks on the right; the vertices of one layer are spread
top to bottom in the plan's order. Each vertex is coloured by how far its output watermark is
behind the job's leading watermark (`wmviz.analysis.blame.Walker.leading`, the mark blame's hops
are measured from), each edge labelled with the watermark it carries, and the blame chain drawn
over it: its vertices ringed, its edges thick, vermillion when it is a stall and sky blue when
nothing is stalled and it is only the slowest path. A legend names every colour and the ring.

Plotly draws its text (names, labels, hover text) as its own small HTML: a vertex name or a ship
strategy holding `<a href=...>` would become a link and `<span style=...>` a style. Every piece of
user text goes through `figures_common.plotly_text` (the charts' one escape), so it shows as the
text it is.

What the graph shows (`JobGraph`) is plain data, filled by `wmviz.analysis.job_moment` from a
recording; this module only draws it, so it is tested without a recording or a browser.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from wmviz.core.types import MAX_MS
from wmviz.view.figures_common import STATUS_COLORS, plotly_text
from wmviz.view.timefmt import TimeFormat, duration

CHAIN_COLOR = "#D55E00"  # vermillion, the valve page's root colour: what holds the watermark
PATH_COLOR = "#56B4E9"  # sky blue: the slowest path of a job where nothing is stalled
UNKNOWN_COLOR = "#bdbdbd"
EDGE_COLOR = "#7f7f7f"
# Behind 0 is green, far behind is red; the scale saturates at `FAR_BEHIND_MS`.
FAR_BEHIND_MS = 60_000
COLORSCALE = [[0.0, "#1a9850"], [0.5, "#fee08b"], [1.0, "#d73027"]]


@dataclass(frozen=True, slots=True)
class GraphVertex:
    """One vertex at the moment: its output watermark (the minimum over its non-idle subtasks;
    None when it reported none) and how far that is behind the leading output."""

    id: str
    name: str
    parallelism: int
    layer: int
    output_ms: int | None
    behind_ms: int | None
    idle: bool = False


@dataclass(frozen=True, slots=True)
class GraphEdge:
    """One edge and the watermark it carries (its source vertex's output) at the moment."""

    source: str
    target: str
    strategy: str
    input: int
    watermark_ms: int | None


@dataclass(frozen=True, slots=True)
class GraphHop:
    """One hop of the blame chain: the vertex (by id) and subtask held, and what holds it."""

    vertex: str
    subtask: int
    held_by: str
    watermark_ms: int
    behind_ms: int
    since_ms: int


@dataclass(frozen=True, slots=True)
class JobGraph:
    """Everything the graph shows at `at_ms`: the vertices, the edges and the chain (root last)."""

    at_ms: int
    vertices: tuple[GraphVertex, ...]
    edges: tuple[GraphEdge, ...]
    chain: tuple[GraphHop, ...]
    ending: str
    stalled: bool = True
    """Whether the chain is a stall (blame's threshold) or only the slowest path."""
    first_ms: int | None = None
    """The recording's first sample: a hop held since then may have been held before it began."""

    @property
    def chain_color(self) -> str:
        """The colour the chain is drawn in."""
        return CHAIN_COLOR if self.stalled else PATH_COLOR


def positions(graph: JobGraph) -> dict[str, tuple[float, float]]:
    """Each vertex's (x, y): x its layer, y its place within the layer, centred on 0 (top first)."""
    layers: dict[int, list[str]] = {}
    for vertex in graph.vertices:
        layers.setdefault(vertex.layer, []).append(vertex.id)
    out: dict[str, tuple[float, float]] = {}
    for layer, ids in layers.items():
        for place, vid in enumerate(ids):
            out[vid] = (float(layer), (len(ids) - 1) / 2 - place)
    return out


def chain_edges(graph: JobGraph) -> set[tuple[str, str]]:
    """The (source, target) edges the chain walks: from each hop's vertex to the next hop's."""
    hops = [h.vertex for h in graph.chain]
    return {(up, down) for down, up in pairwise(hops) if up != down}


def vertex_text(vertex: GraphVertex, t: TimeFormat) -> str:
    """A vertex's hover text: its name, subtasks, output and how far behind."""
    if vertex.output_ms is None:
        state = "no watermark reported"
    elif vertex.idle:
        state = f"idle (every subtask); last output {t(vertex.output_ms)}"
    else:
        state = f"output {t(vertex.output_ms)}, {duration(vertex.behind_ms or 0)} behind the leading vertex"
    return f"{plotly_text(vertex.name)} ({vertex.parallelism} subtasks)<br>{state}"


def vertex_color(vertex: GraphVertex) -> str | float:
    """The marker colour: the behind scale's value, or the idle / unknown colours."""
    if vertex.idle:
        return STATUS_COLORS["IDLE"]
    if vertex.output_ms is None or vertex.behind_ms is None:
        return UNKNOWN_COLOR
    if vertex.output_ms == MAX_MS:
        return STATUS_COLORS["FINISHED"]
    return min(vertex.behind_ms, FAR_BEHIND_MS) / FAR_BEHIND_MS


def _edge_annotations(graph: JobGraph, where: dict[str, tuple[float, float]], t: TimeFormat) -> list[dict]:
    """An arrow per edge and its label (the watermark it carries, the ship strategy)."""
    held = chain_edges(graph)
    out: list[dict[str, Any]] = []
    for edge in graph.edges:
        (sx, sy), (tx, ty) = where[edge.source], where[edge.target]
        on_chain = (edge.source, edge.target) in held
        color = graph.chain_color if on_chain else EDGE_COLOR
        out.append(
            {
                "x": tx - 0.12, "y": ty, "ax": sx + 0.12, "ay": sy,
                "xref": "x", "yref": "y", "axref": "x", "ayref": "y",
                "showarrow": True, "arrowhead": 3, "arrowsize": 1.2,
                "arrowwidth": 4 if on_chain else 1.5, "arrowcolor": color, "text": "",
            }
        )  # fmt: skip
        label = t(edge.watermark_ms) if edge.watermark_ms is not None else "no watermark"
        out.append(
            {
                "x": (sx + tx) / 2, "y": (sy + ty) / 2 + 0.08, "xref": "x", "yref": "y",
                "text": f"{label}<br><i>{plotly_text(edge.strategy.lower())} · input {edge.input}</i>",
                "showarrow": False, "font": {"size": 11, "color": color},
                "bgcolor": "rgba(255,255,255,0.85)",
            }
        )  # fmt: skip
    return out


def job_graph_figure(graph: JobGraph, t: TimeFormat, picked: str | None = None) -> dict[str, Any]:
    """The figure: one marker per vertex (its id in `customdata`, for a click), the edges as
    arrows with their watermark, the chain's vertices ringed and its edges thick; `picked` (a
    vertex id) is outlined."""
    where = positions(graph)
    on_chain = {h.vertex for h in graph.chain}
    vertices = list(graph.vertices)
    colors = [vertex_color(v) for v in vertices]
    scaled = all(isinstance(c, float) for c in colors)
    marker: dict[str, Any] = {
        "size": 46,
        "color": colors,
        "line": {
            "width": [6 if v.id in on_chain else 3 if v.id == picked else 1 for v in vertices],
            "color": [graph.chain_color if v.id in on_chain else "#000000" for v in vertices],
        },
    }
    if scaled:
        marker.update(colorscale=COLORSCALE, cmin=0.0, cmax=1.0)
    nodes = {
        "type": "scatter",
        "mode": "markers+text",
        "x": [where[v.id][0] for v in vertices],
        "y": [where[v.id][1] for v in vertices],
        "text": [plotly_text(v.name) for v in vertices],
        "textposition": "bottom center",
        "customdata": [v.id for v in vertices],
        "hovertext": [vertex_text(v, t) for v in vertices],
        "hoverinfo": "text",
        "marker": marker,
        "showlegend": False,
    }
    layers = max((v.layer for v in vertices), default=0)
    rows = max((sum(1 for w in vertices if w.layer == v.layer) for v in vertices), default=1)
    axis = {"visible": False, "fixedrange": True}
    return {
        "data": [nodes, *legend(graph)],
        "layout": {
            "title": {
                "text": f"The job at {t(graph.at_ms)}: colour = how far each output is behind the leading one"
            },
            "xaxis": {**axis, "range": [-0.6, layers + 0.6]},
            "yaxis": {**axis, "range": [-(rows / 2) - 0.2, rows / 2 + 0.2]},
            "annotations": _edge_annotations(graph, where, t),
            "height": 220 + 130 * rows,
            "margin": {"l": 10, "r": 10, "t": 50, "b": 10},
            "plot_bgcolor": "#ffffff",
            "showlegend": True,
            "legend": {"orientation": "h", "y": -0.02, "yanchor": "top", "font": {"size": 11}},
            "clickmode": "event+select",
            "dragmode": False,
        },
    }


def legend(graph: JobGraph) -> list[dict[str, Any]]:
    """One legend entry per colour a vertex may take and one for the ring: empty traces (no
    points, so a click never picks them)."""
    far = duration(FAR_BEHIND_MS)
    entries = [
        ("level with the leading watermark", COLORSCALE[0][1], "circle"),
        (f"{duration(FAR_BEHIND_MS // 2)} behind", COLORSCALE[1][1], "circle"),
        (f"{far} or more behind", COLORSCALE[2][1], "circle"),
        ("idle (every subtask)", STATUS_COLORS["IDLE"], "circle"),
        ("finished (MAX)", STATUS_COLORS["FINISHED"], "circle"),
        ("no watermark reported", UNKNOWN_COLOR, "circle"),
        (
            "ring, thick edges: what holds the watermark (a stall)"
            if graph.stalled
            else "ring, thick edges: the slowest path (nothing is stalled)",
            graph.chain_color,
            "circle-open",
        ),
    ]
    return [
        {
            "type": "scatter",
            "mode": "markers",
            "x": [None],
            "y": [None],
            "name": name,
            "marker": {"size": 12, "color": color, "symbol": symbol, "line": {"width": 3, "color": color}},
            "hoverinfo": "skip",
            "showlegend": True,
        }
        for name, color, symbol in entries
    ]


def chain_rows(graph: JobGraph, t: TimeFormat) -> list[dict[str, str | int]]:
    """The blame chain as table rows, root cause last."""
    names = {v.id: v.name for v in graph.vertices}
    return [
        {
            "vertex": names.get(hop.vertex, hop.vertex),
            "subtask": hop.subtask,
            "held by": hop.held_by,
            "watermark": t(hop.watermark_ms),
            "behind": duration(hop.behind_ms),
            "since": t(hop.since_ms)
            + (" or earlier (the recording's start)" if hop.since_ms == graph.first_ms else ""),
        }
        for hop in graph.chain
    ]
