"""A SQL job's replay as a job recording (`wmviz-job/1`), so the graph page and `wmviz blame` read it
as they read a recording of a running job (docs/sql.md, "Replay").

Each plan operator but the exchanges is a vertex of parallelism 1, named as SQL says it with its
plan id (`IntervalJoin [5]`); an exchange is what a runtime edge is, so it becomes the edge and
gives it its ship strategy. Each step of the replay is a sample at the step's processing time:
every vertex's `currentOutputWatermark`, its input watermarks (`currentInput{N}Watermark` for
each input of a two-input operator, `currentInputWatermark` otherwise), and for a source that took
the watermark, each split's `currentWatermark` and `accumulatedIdleTimeMs` (Flink's FLIP-513
split metrics), so blame can name the table and partition holding the job. The split id is
Kafka's, `<table>-<partition>`.
"""

from __future__ import annotations

from collections.abc import Iterable

from wmviz.core.types import MIN_MS
from wmviz.record.job import (
    INPUT_WATERMARK,
    OUTPUT_WATERMARK,
    SPLIT_WATERMARK,
    Edge,
    JobRecording,
    Vertex,
    input_metric,
)
from wmviz.sql.model import SqlJob
from wmviz.sql.replay import StepState

IDLE_TIME = "accumulatedIdleTimeMs"


def _is_exchange(job: SqlJob, node_id: str) -> bool:
    return job.node(node_id).is_exchange


def runtime_edges(job: SqlJob) -> list[Edge]:
    """The edges between vertices: an exchange node is folded into the edge it stands for."""
    edges = []
    for node in job.nodes:
        if _is_exchange(job, node.id):
            continue
        for edge in job.inputs_of(node.id):
            source, strategy = edge.source, "FORWARD"
            while _is_exchange(job, source):
                strategy = (
                    job.node(source).digest.partition("distribution=[")[2].split("[")[0] or "HASH"
                ).upper()
                (upstream,) = job.inputs_of(source)
                source = upstream.source
            edges.append(Edge(source, node.id, strategy, edge.input + 1))
    return edges


def vertex_name(job: SqlJob, node_id: str) -> str:
    return f"{job.node(node_id).name} [{node_id}]"


def recording_of(job: SqlJob, states: Iterable[StepState], name: str) -> JobRecording:
    """The replay's states as a job recording (pass the states before the end of input: a recording
    is of a job still running, and at the end every source sends MAX)."""
    vertices = tuple(
        Vertex(n.id, vertex_name(job, n.id), 1, (n.name,)) for n in job.nodes if not _is_exchange(job, n.id)
    )
    edges = tuple(runtime_edges(job))
    rec = JobRecording(job=name, vertices=vertices, edges=edges, source="wmviz sql replay")
    inputs: dict[str, dict[int, list[str]]] = {}
    for edge in edges:
        inputs.setdefault(edge.target, {}).setdefault(edge.input, []).append(edge.source)
    idle_ms: dict[tuple[str, str], int] = {}
    previous: StepState | None = None
    for state in states:
        for vertex in vertices:
            _sample_vertex(rec, vertex.id, state, inputs.get(vertex.id, {}))
        for (scan, split), (watermark, _) in state.splits.items():
            if previous is not None and previous.splits.get((scan, split), (0, False))[1]:
                idle_ms[(scan, split)] = idle_ms.get((scan, split), 0) + state.time_ms - previous.time_ms
            rec.add((scan, 0, SPLIT_WATERMARK, split), state.time_ms, watermark)
            rec.add((scan, 0, IDLE_TIME, split), state.time_ms, idle_ms.get((scan, split), 0))
        previous = state
    return rec


def _sample_vertex(rec: JobRecording, vertex_id: str, state: StepState, inputs: dict[int, list[str]]) -> None:
    rec.add((vertex_id, 0, OUTPUT_WATERMARK, None), state.time_ms, state.nodes[vertex_id])
    if not inputs:
        return
    per_input = {n: min(state.nodes[s] for s in sources) for n, sources in inputs.items()}
    if len(per_input) > 1:
        for number, watermark in per_input.items():
            rec.add((vertex_id, 0, input_metric(number), None), state.time_ms, watermark)
    rec.add((vertex_id, 0, INPUT_WATERMARK, None), state.time_ms, min(per_input.values(), default=MIN_MS))
