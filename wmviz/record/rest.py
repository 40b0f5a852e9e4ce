"""`wmviz record`: poll a Flink JobManager's REST API and write a trace as the samples arrive.

Endpoints used (all read-only GETs): `/jobs/<job>` (state and vertices), `/jobs/<job>/plan` (the
edges and their ship strategy), `/jobs/<job>/vertices/<vertex>` (subtask attempts, to see a
restart), `/jobs/<job>/vertices/<vertex>/metrics` (the metric ids, then their values with
`?get=`). Flink's REST metrics come from a store the JobManager refreshes from the TaskManagers at
most every `metrics.fetcher.update-interval` (10 s by default), so a sample reads the operator,
its upstream and the operator again and keeps the sample only when the two reads of the operator
agree (they came from one refresh); a sample that never settles is kept and counted as unsettled.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from typing import Any

from wmviz.core.settings import MAX_CHANNELS
from wmviz.record.answers import (
    AnswerError,
    VertexInfo,
    metric_ids,
    metric_values,
    plan_inputs,
    vertices_of,
)
from wmviz.record.restclient import RecordError, RestClient
from wmviz.record.samples import ALL_TO_ALL, FORWARD, Topology, long_from_metric
from wmviz.trace.config import channel_budget_reason
from wmviz.trace.quote import show

__all__ = ["RecordError", "RestClient"]

_FORWARD_STRATEGIES = {"FORWARD"}
_ALL_TO_ALL_STRATEGIES = {"HASH", "REBALANCE", "BROADCAST", "GLOBAL", "CUSTOM", "SHUFFLE", "KEY_GROUP"}
_FINAL_STATES = {"FINISHED", "FAILED", "CANCELED", "SUSPENDED"}
_METRIC_NUMBER = re.compile(
    r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?|[+-]?(Infinity|NaN)", re.ASCII
)


def metric_name(operator: str) -> str:
    """An operator's name as Flink's metric ids spell it: ':' ' ' '.' become '_', cut at 80."""
    return re.sub(r"[ :.]", "_", operator)[:80]


@dataclass
class JobView:
    """What the recorder resolved once: the topology and the metric ids it reads."""

    job: str
    vertex_id: str
    upstream_id: str
    topology: Topology
    watermark_ids: dict[int, str]
    idle_ids: dict[int, str]
    reported_ids: dict[int, str]

    @property
    def complete(self) -> bool:
        """Every subtask's metrics were found: tasks register theirs as they start, one by one, so
        a look-up during deployment can see some subtasks and not others."""
        topology = self.topology
        return (
            len(self.watermark_ids) == topology.upstream_parallelism
            and len(self.reported_ids) == topology.parallelism
            and len(self.idle_ids) in (0, topology.upstream_parallelism)
        )


def resolve_vertex(vertices: list[dict[str, Any]], wanted: str) -> dict[str, Any]:
    """A vertex by id, by exact name, or by a unique part of its name."""
    for pick in (
        [v for v in vertices if v["id"] == wanted],
        [v for v in vertices if v["name"] == wanted],
        [v for v in vertices if wanted in v["name"]],
    ):
        if len(pick) == 1:
            return pick[0]
        if len(pick) > 1:
            names = ", ".join(repr(v["name"]) for v in pick)
            raise RecordError(f"--vertex {wanted!r} matches several vertices: {names}; pass its id")
    names = "; ".join(f"{v['id']} {v['name']!r}" for v in vertices)
    raise RecordError(f"--vertex {wanted!r} is not a vertex of the job; it has: {names}")


def edge_of(plan: Any, vertex_id: str, path: str = "the plan") -> tuple[str, str]:
    """(upstream vertex id, forward or all-to-all) of the chosen vertex's single input."""
    inputs = plan_inputs(plan, path, vertex_id)
    if len(inputs) != 1:
        raise RecordError(
            f"the vertex has {len(inputs)} inputs; `wmviz record` reads operators with one input "
            "(for a source, record the vertex after it)"
        )
    upstream_id, strategy = inputs[0]
    if strategy in _FORWARD_STRATEGIES:
        return upstream_id, FORWARD
    if strategy in _ALL_TO_ALL_STRATEGIES:
        return upstream_id, ALL_TO_ALL
    raise RecordError(
        f"the input edge's ship strategy {strategy!r} is not forward or all-to-all; its channel "
        "mapping (e.g. RESCALE's) is not modelled"
    )


def tail_operator_ids(ids: list[str], vertex_name: str, metric: str) -> dict[int, str]:
    """Per subtask, the id of `metric` on the chain's last operator that reports it.

    A vertex's name lists its chained operators ("Source: a -> Map -> Filter"); the watermark that
    leaves the vertex is the last operator's output watermark.
    """
    chain = [metric_name(part) for part in vertex_name.split(" -> ")]
    found: dict[int, tuple[int, str]] = {}
    for mid in ids:
        subtask, _, rest = mid.partition(".")
        if not (subtask.isascii() and subtask.isdigit()) or not rest.endswith("." + metric):
            continue
        operator = rest[: -len(metric) - 1]
        rank = chain.index(operator) if operator in chain else -1
        best = found.get(int(subtask))
        if best is None or rank > best[0]:
            found[int(subtask)] = (rank, mid)
    return {s: mid for s, (_, mid) in sorted(found.items())}


def resolve(client: RestClient, job: str, vertex: str, idleness_ms: int | None, interval_ms: int) -> JobView:
    """Find the vertex, its upstream, the edge and the metric ids to read."""
    path = f"/jobs/{job}"
    details = client.get(path)
    vertices = vertices_of(details, path)
    # The vertices as read above (checked), not the raw answer: it may have no "vertices" at all.
    chosen = resolve_vertex([{"id": v.id, "name": v.name} for v in vertices], vertex)
    upstream_id, edge = edge_of(client.get(f"{path}/plan"), chosen["id"], f"{path}/plan")
    by_id = {v.id: v for v in vertices}
    if upstream_id not in by_id:
        raise AnswerError(f"the plan names the input {upstream_id!r}, which is not a vertex of job {job}")
    topology = topology_of(by_id[chosen["id"]], by_id[upstream_id], edge, idleness_ms, interval_ms)
    view = JobView(job, chosen["id"], upstream_id, topology, {}, {}, {})
    refresh_metric_ids(client, view)
    return view


def topology_of(
    chosen: VertexInfo, upstream: VertexInfo, edge: str, idleness_ms: int | None, interval_ms: int
) -> Topology:
    try:
        topology = Topology(
            vertex=chosen.name,
            upstream=upstream.name,
            parallelism=chosen.parallelism,
            upstream_parallelism=upstream.parallelism,
            edge=edge,
            idleness_ms=idleness_ms,
            watermark_interval_ms=interval_ms,
        )
    except ValueError as err:
        raise RecordError(str(err)) from None
    if topology.channel_count > MAX_CHANNELS.get():
        raise RecordError(f"vertex {chosen.name!r}: {channel_budget_reason(topology.channel_count)}")
    return topology


def refresh_metric_ids(client: RestClient, view: JobView) -> None:
    """Look up the metric ids to read. A job just submitted, or restarting, has not registered its
    tasks' metrics yet, so the recorder looks again until it finds them (and after a restart)."""
    job, topology = view.job, view.topology
    up_path = f"/jobs/{job}/vertices/{view.upstream_id}/metrics"
    own_path = f"/jobs/{job}/vertices/{view.vertex_id}/metrics"
    up_ids = metric_ids(client.get(up_path), up_path)
    own_ids = metric_ids(client.get(own_path), own_path)
    view.watermark_ids = tail_operator_ids(up_ids, topology.upstream, "currentOutputWatermark")
    view.idle_ids = tail_operator_ids(up_ids, topology.upstream, "sourceIdleTime")
    pattern = re.compile(r"[0-9]+\.currentInputWatermark", re.ASCII)
    view.reported_ids = {int(i.split(".")[0]): i for i in own_ids if pattern.fullmatch(i)}


def read_metrics(client: RestClient, job: str, vertex_id: str, ids: dict[int, str]) -> dict[int, int]:
    """The values of the given metric ids, by subtask; a metric not (yet) reported is absent."""
    if not ids:
        return {}
    by_id = {mid: subtask for subtask, mid in ids.items()}
    path = f"/jobs/{job}/vertices/{vertex_id}/metrics"
    out: dict[int, int] = {}
    for mid, value in metric_values(client.get(path, {"get": ",".join(ids.values())}), path):
        subtask = by_id.get(mid)
        if subtask is None:
            continue
        if isinstance(value, str) and not _METRIC_NUMBER.fullmatch(value):
            raise AnswerError(
                f"the answer to {path}: metric {show(mid)} has the value {show(value)}, not a number"
            )
        try:
            out[subtask] = long_from_metric(value, clamp=False)
        except (ValueError, OverflowError) as err:
            raise AnswerError(f"the answer to {path}: metric {show(mid)}: {err}") from None
    return out


def wall_clock_ms() -> int:
    """Milliseconds since the epoch (the recorder's only clock; the core has none)."""
    return time.time_ns() // 1_000_000
