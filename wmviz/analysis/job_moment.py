"""What the job graph shows at one moment of a job recording: each vertex's output, each edge's
watermark, and the blame chain, read through the blame walker's own rules (`Walker.output`,
`Walker.idle`), so the graph and `wmviz blame` never disagree.

A vertex's output at a moment is what its downstream valves take from it: the minimum over its
non-idle subtasks' output watermarks (every subtask idle: the vertex is idle, shown with the
minimum of what they last reported). How far it is behind is measured from the job's leading
watermark (`Walker.leading`), the very mark blame's hops are measured from; an edge carries its
source vertex's output. A vertex's subtasks are summed up as a group (`_group`): the lowest live
subtask (the culprit: its output is the vertex's), the highest, and how many are idle.
"""

from __future__ import annotations

from wmviz.analysis.blame import Blame, BlameError, Walker, all_to_all
from wmviz.core.types import MAX_MS
from wmviz.view.jobgraph import GraphEdge, GraphHop, GraphVertex, JobGraph


def vertex_output(walker: Walker, vid: str, t: int) -> tuple[int | None, bool]:
    """(the vertex's output watermark at t, whether every subtask is idle)."""
    low = walker.spread(vid, t)[0]
    if low is not None:
        return low[0], False
    reported = [w for w in walker.outputs(vid, t) if w is not None]
    return (min(reported) if reported else None), bool(reported)


def graph_at(walker: Walker, at_ms: int | None, vertex: str | None = None) -> JobGraph:
    """The graph at the sample at or before `at_ms` (default: the last), its chain walked from
    `vertex` (an id; default: the most downstream vertex standing still, as `wmviz blame`)."""
    rec = walker.rec
    t = walker.sample_time(at_ms)
    depth = rec.depth()
    outputs = {v.id: vertex_output(walker, v.id, t) for v in rec.vertices}
    leading = walker.leading(t)
    vertices = tuple(
        GraphVertex(
            v.id,
            v.name,
            v.parallelism,
            depth[v.id],
            outputs[v.id][0],
            _behind(leading, outputs[v.id][0]),
            outputs[v.id][1],
            *_group(walker, v.id, t),
        )
        for v in rec.vertices
    )
    edges = tuple(GraphEdge(e.source, e.target, e.strategy, e.input, outputs[e.source][0]) for e in rec.edges)
    chain, ending, stalled = _chain(walker, vertex, t)
    return JobGraph(t, vertices, edges, chain, ending, stalled, walker.times[0])


def _group(walker: Walker, vid: str, t: int) -> tuple[int | None, int | None, int]:
    """The vertex's subtasks as a group at t, by blame's own reading (`Walker.spread`, the same
    live outputs its output is the minimum of): the highest live output below MAX, the live
    subtask with the lowest (the one holding the vertex), and how many subtasks are idle."""
    (low, high), idle = walker.spread(vid, t), walker.idle_vector(vid, t)
    return high, (low[1] if low is not None else None), sum(idle)


def _behind(leading: int | None, output: int | None) -> int | None:
    if leading is None or output is None or output == MAX_MS:
        return None if output is None else 0
    return max(0, min(leading - output, MAX_MS))


def _chain(walker: Walker, vertex: str | None, t: int) -> tuple[tuple[GraphHop, ...], str, bool]:
    """The blame chain with each hop's vertex named by id (hops carry names; names are unique
    within a plan as Flink's web UI shows them, and the first vertex of a name is taken if not)."""
    ids: dict[str, str] = {}
    for v in walker.rec.vertices:
        ids.setdefault(v.name, v.id)
    try:
        blame: Blame = walker.blame(walker.vertex(vertex) if vertex else None, t)
    except (BlameError, KeyError) as err:
        return (), str(err) if isinstance(err, BlameError) else "the vertex is not in the recording", False
    hops = tuple(
        GraphHop(
            ids.get(h.vertex, h.vertex),
            h.subtask,
            h.held_by,
            h.watermark_ms,
            h.behind_ms,
            h.since_ms,
        )
        for h in blame.chain
    )
    return hops, blame.ending, blame.stalled


def valve_trace_rows(walker: Walker, vid: str) -> int:
    """About how many rows the vertex's valve trace (`wmviz.record.job_trace.vertex_trace`) would
    be: one per sample, subtask and channel it reads (measured: 20 samples of 128 subtasks reading
    128 channels each made 326,528 rows, ~320 bytes and ~15 µs each). Counted without listing an
    all-to-all edge's channels, so asking costs the subtasks, not subtasks times channels."""
    reads = 0
    for edge in (e for edges in walker.inputs_of(vid).values() for e in edges):
        if all_to_all(edge):
            reads += walker.vertex(vid).parallelism * walker.vertex(edge.source).parallelism
        else:
            reads += sum(len(walker.channels(edge, s)) for s in range(walker.vertex(vid).parallelism))
    return len(walker.times) * reads
