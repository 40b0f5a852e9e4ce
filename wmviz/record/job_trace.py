"""One vertex of a job recording as a one-operator trace: the job graph's way into the valve page.

The vertex's subtasks are the trace's instances; each one's channels are the upstream subtasks it
reads over every input edge (in input order, then edge order), numbered across edges, so a
two-input operator or a union is read as one valve over all its channels (the minimum over the
non-idle channels of all inputs is the minimum over each input's valve, `docs/whole-job.md`). The
samples go through the recorder's own `TraceBuilder`, as the Prometheus one-operator import's do:
a channel's watermark is the upstream subtask's output, its idleness is inferred from an upstream
source's `sourceIdleTime` and the recording's idleness timeout (not for a source subtask with
split metrics: its splits' idleness is not a trace row, so its status is left ACTIVE), and the
vertex's own `currentInputWatermark` is the check column. A restart the recorder saw (`TASK_ATTEMPT`) starts
an epoch, fresh valves under instances named `<subtask>@r<k>`.
"""

from __future__ import annotations

from typing import Any

from wmviz.core.errors import BadInputError
from wmviz.record.job import INPUT_WATERMARK, SOURCE_IDLE_TIME, JobRecording
from wmviz.record.samples import Sample, Topology, TraceBuilder, instance_name, rows_of


class NoValve(BadInputError, ValueError):
    """The vertex cannot be one operator's trace (a source, or subtasks with unequal channels)."""


def channel_map(
    rec: JobRecording, vertex_id: str
) -> tuple[tuple[tuple[int, ...], ...], dict[int, tuple[str, int]]]:
    """Each subtask's channels as keys, and what each key is: (upstream vertex id, its subtask)."""
    vertex = rec.vertex(vertex_id)
    edges = [e for group in rec.inputs_of(vertex_id).values() for e in group]
    if not edges:
        raise NoValve(f"{vertex.name!r} is a source: it has no input valve to step through")
    keys: dict[int, tuple[str, int]] = {}
    per_subtask: list[list[int]] = [[] for _ in range(vertex.parallelism)]
    offset = 0
    for edge in edges:
        for subtask in range(vertex.parallelism):
            per_subtask[subtask] += [offset + up for up in rec.channels(edge, subtask)]
        for up in range(rec.vertex(edge.source).parallelism):
            keys[offset + up] = (edge.source, up)
        offset += rec.vertex(edge.source).parallelism
    counts = {len(c) for c in per_subtask}
    if len(counts) != 1:
        raise NoValve(
            f"{vertex.name!r}: its subtasks read {sorted(counts)} channels (a pointwise edge that does "
            "not divide evenly); a one-operator trace has the same channels in every instance"
        )
    return tuple(tuple(c) for c in per_subtask), keys


def vertex_trace(rec: JobRecording, vertex_id: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The vertex's trace: its config and rows (dicts of trace cells), one sample at a time."""
    vertex = rec.vertex(vertex_id)
    mapping, keys = channel_map(rec, vertex_id)
    topology = Topology(
        vertex=vertex.name,
        upstream=", ".join(dict.fromkeys(rec.vertex(v).name for v, _ in keys.values())),
        parallelism=vertex.parallelism,
        upstream_parallelism=len(keys),
        idleness_ms=rec.idleness_ms,
        watermark_interval_ms=rec.watermark_interval_ms,
        channel_map=mapping,
    )
    # Idleness is inferred from sourceIdleTime only where blame infers it: a source subtask with
    # split metrics is idle when its splits are, which a trace row cannot say; its status is left.
    inferred = {key for key, (v, s) in keys.items() if not rec.inputs_of(v) and not rec.splits_of(v, s)}
    samples = []
    for t in rec.times():
        watermarks = {k: w for k, (v, s) in keys.items() if (w := rec.output_at(v, s, t)) is not None}
        idle = {
            k: ms
            for k, (v, s) in keys.items()
            if k in inferred and (ms := rec.value_at((v, s, SOURCE_IDLE_TIME, None), t)) is not None
        }
        reported = {
            s: w
            for s in range(vertex.parallelism)
            if (w := rec.value_at((vertex_id, s, INPUT_WATERMARK, None), t)) is not None
        }
        finished = frozenset(k for k, (v, s) in keys.items() if rec.finished(v, s, t))
        samples.append(Sample(t, rec.epoch_at(t), watermarks, idle, reported, finished))
    builder = TraceBuilder(topology)
    rows = list(rows_of(builder, samples))
    description = (
        f"Vertex {vertex.name!r} of the job recording {rec.job or rec.source or ''}: "
        f"{vertex.parallelism} subtasks reading {topology.upstream} ({topology.channel_count} channels "
        "each, numbered across input edges). reported_ms is the vertex's own currentInputWatermark."
    )
    return builder.config(vertex.name, description), rows


def step_at(rows: list[dict[str, Any]], instance: str, time_ms: int) -> int:
    """The step of the instance nearest the moment: its last row at or before `time_ms` (each
    row is one step of its instance), or its first step."""
    times = [row["proc_ms"] for row in rows if row["instance"] == instance]
    return max(0, sum(1 for t in times if t <= time_ms) - 1)


def instance_at(rec: JobRecording, subtask: int, time_ms: int) -> str:
    """The trace instance of the subtask at the moment: after the job's k-th restart, its k-th
    epoch's (`1@r2`), as the one-operator recorder names them (fresh valves after a restart)."""
    return instance_name(subtask, rec.epoch_at(time_ms))
