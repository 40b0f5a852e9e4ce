"""A job recording's graph at one moment, as a Plotly figure (a plain dict: no Plotly objects).

The graph is laid out in layers from the plan: each vertex's layer is its longest distance from a
source, so sources stand on the left and sinks on the right; the vertices of one layer are spread
top to bottom in the plan's order, and a large job is folded into a bounded grid
(`jobgraph_layout`). Each vertex is coloured by how far its output watermark is behind the job's
leading watermark (`wmviz.analysis.blame.Walker.leading`, the mark blame's hops are measured
from), each edge says the watermark it carries (a label on a small graph; on every graph a hover
on the diamond in its middle), and the blame chain is drawn over it: its vertices ringed, its
edges thick, vermillion when it is a stall and sky blue when nothing is stalled and it is only the
slowest path. The vertex a person picked or searched for has a purple ring and its name in bold.
A legend names every colour and ring. Past `COMPACT_AT` vertices everything is drawn smaller and
the names cut (a hover has them whole), so a hundred vertices fit beside the chain's list.

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
from wmviz.view.jobgraph_layout import Layout, fold
from wmviz.view.timefmt import TimeFormat, duration

CHAIN_COLOR = "#D55E00"  # vermillion, the valve page's root colour: what holds the watermark
PATH_COLOR = "#56B4E9"  # sky blue: the slowest path of a job where nothing is stalled
PICKED_COLOR = "#7B3294"  # purple: the vertex a person picked or searched for (blue is FINISHED)
UNKNOWN_COLOR = "#bdbdbd"
EDGE_COLOR = "#7f7f7f"
# Behind 0 is green, far behind is red; the scale saturates at `FAR_BEHIND_MS`.
FAR_BEHIND_MS = 60_000
COLORSCALE = [[0.0, "#1a9850"], [0.5, "#fee08b"], [1.0, "#d73027"]]
COMPACT_AT = 16
"""A graph of more vertices than this is drawn small: markers, names cut, edges labelled by hover."""
SHORT_NAME = 14


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
    high_ms: int | None = None
    """The highest of its live subtasks' outputs below MAX (None: none live, or none below MAX)."""
    culprit: int | None = None
    """The live subtask with the lowest output: the one the vertex's output is (its group's minimum)."""
    idle_subtasks: int = 0

    @property
    def spread_ms(self) -> int | None:
        """How far apart its live subtasks are: the highest output less the lowest."""
        if self.idle or self.high_ms is None or self.output_ms is None:
            return None
        return max(0, min(self.high_ms - self.output_ms, MAX_MS))  # from MIN_MS, a Java long's span


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


def layout(graph: JobGraph) -> Layout:
    """The vertices' places: one column per layer, folded into a bounded grid (`jobgraph_layout`)."""
    return fold([(v.id, v.layer) for v in graph.vertices])


def positions(graph: JobGraph) -> dict[str, tuple[float, float]]:
    """Each vertex's (x, y): x its column (its layer in a small job), y its place, top first."""
    return layout(graph).where


def chain_edges(graph: JobGraph) -> set[tuple[str, str]]:
    """The (source, target) edges the chain walks: from each hop's vertex to the next hop's."""
    hops = [h.vertex for h in graph.chain]
    return {(up, down) for down, up in pairwise(hops) if up != down}


def vertex_text(vertex: GraphVertex, t: TimeFormat) -> str:
    """A vertex's hover text: its name, subtasks, output and how far behind, and its group (the
    lowest live subtask, the highest, their spread)."""
    if vertex.output_ms is None:
        state = "no watermark reported"
    elif vertex.idle:
        state = f"idle (every subtask); last output {t(vertex.output_ms)}"
    else:
        state = f"output {t(vertex.output_ms)}, {duration(vertex.behind_ms or 0)} behind the leading vertex"
    idle = f", {vertex.idle_subtasks:,} idle" if vertex.idle_subtasks and not vertex.idle else ""
    text = f"{plotly_text(vertex.name)} ({vertex.parallelism:,} subtasks{idle})<br>{state}"
    if vertex.culprit is not None and vertex.output_ms is not None and not vertex.idle:
        text += f"<br>lowest: subtask {vertex.culprit}"
        if vertex.high_ms is not None:
            text += f" · highest {t(vertex.high_ms)} · spread {duration(vertex.spread_ms or 0)}"
    return text


def edge_text(edge: GraphEdge, names: dict[str, str], t: TimeFormat) -> str:
    """An edge's hover text: from where to where, the watermark it carries, how it ships."""
    carried = t(edge.watermark_ms) if edge.watermark_ms is not None else "no watermark"
    source, target = (plotly_text(names.get(end, end)) for end in (edge.source, edge.target))
    route = f"{source} → {target}"
    return f"{route}<br>carries {carried}<br>{plotly_text(edge.strategy.lower())} · input {edge.input}"


def vertex_color(vertex: GraphVertex) -> str | float:
    """The marker colour: the behind scale's value, or the idle / unknown colours."""
    if vertex.idle:
        return STATUS_COLORS["IDLE"]
    if vertex.output_ms is None or vertex.behind_ms is None:
        return UNKNOWN_COLOR
    if vertex.output_ms == MAX_MS:
        return STATUS_COLORS["FINISHED"]
    return min(vertex.behind_ms, FAR_BEHIND_MS) / FAR_BEHIND_MS


def _edge_annotations(
    graph: JobGraph, where: dict[str, tuple[float, float]], t: TimeFormat, labelled: bool
) -> list[dict]:
    """An arrow per edge and, when `labelled`, its label (the watermark it carries, the ship
    strategy); a large graph has no labels (they would cover it), its edges' hover says it."""
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
                "arrowwidth": (4 if on_chain else 1.5) if labelled else (3 if on_chain else 1),
                "arrowcolor": color, "text": "",
            }
        )  # fmt: skip
        if not labelled:
            continue
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


def _edge_points(graph: JobGraph, where: dict[str, tuple[float, float]], t: TimeFormat) -> dict[str, Any]:
    """A small diamond in the middle of every edge whose hover says the watermark it carries (no
    `customdata`: a click on it picks no vertex)."""
    held = chain_edges(graph)
    names = {v.id: v.name for v in graph.vertices}
    mids = [
        ((where[e.source][0] + where[e.target][0]) / 2, (where[e.source][1] + where[e.target][1]) / 2)
        for e in graph.edges
    ]
    return {
        "type": "scatter",
        "mode": "markers",
        "x": [x for x, _ in mids],
        "y": [y for _, y in mids],
        "hovertext": [edge_text(e, names, t) for e in graph.edges],
        "hoverinfo": "text",
        "marker": {
            "size": 8,
            "symbol": "diamond",
            "color": [graph.chain_color if (e.source, e.target) in held else EDGE_COLOR for e in graph.edges],
        },
        "showlegend": False,
    }


def short_name(name: str, most: int = SHORT_NAME) -> str:
    """A vertex name cut to `most` characters for its label on a large graph (its hover has it whole)."""
    return name if len(name) <= most else name[: most - 1] + "…"


def job_graph_figure(graph: JobGraph, t: TimeFormat, picked: str | None = None) -> dict[str, Any]:
    """The figure: one marker per vertex (its id in `customdata`, for a click), the edges as
    arrows with their watermark (a label on a small graph, a hover on every graph), the chain's
    vertices ringed and its edges thick; `picked` (a vertex id) gets a ring of its own and its
    name in bold. A graph of more than `COMPACT_AT` vertices is drawn small, in the folded grid of
    `jobgraph_layout`, so a hundred vertices fit on one screen."""
    grid = layout(graph)
    where = grid.where
    compact = len(graph.vertices) > COMPACT_AT
    on_chain = {h.vertex for h in graph.chain}
    vertices = list(graph.vertices)
    colors = [vertex_color(v) for v in vertices]
    scaled = all(isinstance(c, float) for c in colors)
    size = 22 if compact else 46
    marker: dict[str, Any] = {
        "size": size,
        "color": colors,
        "line": {
            "width": [(4 if compact else 6) if v.id in on_chain else 1 for v in vertices],
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
        "text": [plotly_text(short_name(v.name) if compact else v.name) for v in vertices],
        "textposition": "bottom center",
        "textfont": {"size": 10 if compact else 12},
        "customdata": [v.id for v in vertices],
        "hovertext": [vertex_text(v, t) for v in vertices],
        "hoverinfo": "text",
        "marker": marker,
        "showlegend": False,
    }
    traces = [nodes, _edge_points(graph, where, t)]
    if picked in where:
        vertex = next(v for v in vertices if v.id == picked)
        traces.append(
            {
                "type": "scatter", "mode": "markers+text", "x": [where[picked][0]], "y": [where[picked][1]],
                "text": [f"<b>{plotly_text(vertex.name)}</b>"], "textposition": "top center",
                "textfont": {"size": 13, "color": PICKED_COLOR}, "customdata": [picked],
                "hovertext": [vertex_text(vertex, t)], "hoverinfo": "text", "showlegend": False,
                "marker": {"size": size + 16, "symbol": "circle-open", "color": PICKED_COLOR,
                           "line": {"width": 4, "color": PICKED_COLOR}},
            }
        )  # fmt: skip
    ys = [y for _, y in where.values()] or [0.0]
    axis = {"visible": False, "fixedrange": True}
    return {
        "data": [*traces, *legend(graph, picked in where)],
        "layout": {
            "title": {
                "text": f"The job at {t(graph.at_ms)}: colour = how far each output is behind the leading one"
            },
            "xaxis": {**axis, "range": [-0.6, grid.columns - 1 + 0.6]},
            "yaxis": {**axis, "range": [min(ys) - 0.7, max(ys) + 0.7]},
            "annotations": _edge_annotations(graph, where, t, labelled=not compact),
            "height": round(110 + 46 * grid.rows) if compact else round(220 + 130 * grid.rows),
            "margin": {"l": 10, "r": 10, "t": 50, "b": 10},
            "plot_bgcolor": "#ffffff",
            "showlegend": True,
            "legend": {"orientation": "h", "y": -0.02, "yanchor": "top", "font": {"size": 11}},
            "clickmode": "event+select",
            "dragmode": False,
        },
    }


def legend(graph: JobGraph, picked: bool = False) -> list[dict[str, Any]]:
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
    if picked:
        entries.append(("purple ring, bold name: the vertex you picked", PICKED_COLOR, "circle-open"))
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
