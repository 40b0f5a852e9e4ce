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

import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from wmviz.record.samples import ALL_TO_ALL, FORWARD, Sample, Topology, long_from_metric

_FORWARD_STRATEGIES = {"FORWARD"}
_ALL_TO_ALL_STRATEGIES = {"HASH", "REBALANCE", "BROADCAST", "GLOBAL", "CUSTOM", "SHUFFLE", "KEY_GROUP"}
_FINAL_STATES = {"FINISHED", "FAILED", "CANCELED", "SUSPENDED"}
_MAX_RESPONSE = 64 << 20


class RecordError(Exception):
    """The endpoint, job or vertex cannot be recorded; the message says why."""


class RestClient:
    """GETs JSON from one Flink REST endpoint, with a timeout and a bounded response size."""

    def __init__(self, base_url: str, timeout_s: float = 10.0) -> None:
        if not re.match(r"^https?://", base_url):
            raise RecordError(f"--rest {base_url!r}: expected http://host:port")
        self.base = base_url.rstrip("/")
        self.timeout_s = timeout_s

    def get(self, path: str, params: dict[str, str] | None = None) -> Any:
        """The decoded JSON of `path`; RecordError naming the URL on any failure."""
        url = self.base + path + ("?" + urllib.parse.urlencode(params) if params else "")
        try:
            with urllib.request.urlopen(url, timeout=self.timeout_s) as response:
                body = response.read(_MAX_RESPONSE + 1)
        except urllib.error.HTTPError as err:
            raise RecordError(f"GET {url}: HTTP {err.code} {err.reason}") from None
        except (urllib.error.URLError, OSError) as err:
            raise RecordError(f"GET {url}: {getattr(err, 'reason', err)}") from None
        if len(body) > _MAX_RESPONSE:
            raise RecordError(f"GET {url}: response larger than {_MAX_RESPONSE >> 20} MB")
        try:
            return json.loads(body)
        except ValueError:
            raise RecordError(f"GET {url}: not JSON") from None


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


def edge_of(plan: dict[str, Any], vertex_id: str) -> tuple[str, str]:
    """(upstream vertex id, forward or all-to-all) of the chosen vertex's single input."""
    nodes = {n["id"]: n for n in plan["plan"]["nodes"]}
    inputs = nodes[vertex_id].get("inputs", [])
    if len(inputs) != 1:
        raise RecordError(
            f"the vertex has {len(inputs)} inputs; `wmviz record` reads operators with one input "
            "(for a source, record the vertex after it)"
        )
    strategy = str(inputs[0].get("ship_strategy", "")).upper()
    if strategy in _FORWARD_STRATEGIES:
        return inputs[0]["id"], FORWARD
    if strategy in _ALL_TO_ALL_STRATEGIES:
        return inputs[0]["id"], ALL_TO_ALL
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
        if not subtask.isdigit() or not rest.endswith("." + metric):
            continue
        operator = rest[: -len(metric) - 1]
        rank = chain.index(operator) if operator in chain else -1
        best = found.get(int(subtask))
        if best is None or rank > best[0]:
            found[int(subtask)] = (rank, mid)
    return {s: mid for s, (_, mid) in sorted(found.items())}


def resolve(client: RestClient, job: str, vertex: str, idleness_ms: int | None, interval_ms: int) -> JobView:
    """Find the vertex, its upstream, the edge and the metric ids to read."""
    details = client.get(f"/jobs/{job}")
    vertices = details.get("vertices", [])
    chosen = resolve_vertex(vertices, vertex)
    upstream_id, edge = edge_of(client.get(f"/jobs/{job}/plan"), chosen["id"])
    upstream = next(v for v in vertices if v["id"] == upstream_id)
    if edge == FORWARD and upstream["parallelism"] != chosen["parallelism"]:
        raise RecordError("a forward edge between vertices of different parallelism")
    topology = Topology(
        vertex=chosen["name"],
        upstream=upstream["name"],
        parallelism=chosen["parallelism"],
        upstream_parallelism=upstream["parallelism"],
        edge=edge,
        idleness_ms=idleness_ms,
        watermark_interval_ms=interval_ms,
    )
    view = JobView(job, chosen["id"], upstream_id, topology, {}, {}, {})
    refresh_metric_ids(client, view)
    return view


def refresh_metric_ids(client: RestClient, view: JobView) -> None:
    """Look up the metric ids to read. A job just submitted, or restarting, has not registered its
    tasks' metrics yet, so the recorder looks again until it finds them (and after a restart)."""
    job, topology = view.job, view.topology
    up_ids = [m["id"] for m in client.get(f"/jobs/{job}/vertices/{view.upstream_id}/metrics")]
    own_ids = [m["id"] for m in client.get(f"/jobs/{job}/vertices/{view.vertex_id}/metrics")]
    view.watermark_ids = tail_operator_ids(up_ids, topology.upstream, "currentOutputWatermark")
    view.idle_ids = tail_operator_ids(up_ids, topology.upstream, "sourceIdleTime")
    pattern = re.compile(r"\d+\.currentInputWatermark")
    view.reported_ids = {int(i.split(".")[0]): i for i in own_ids if pattern.fullmatch(i)}


def read_metrics(client: RestClient, job: str, vertex_id: str, ids: dict[int, str]) -> dict[int, int]:
    """The values of the given metric ids, by subtask; a metric not (yet) reported is absent."""
    if not ids:
        return {}
    by_id = {mid: subtask for subtask, mid in ids.items()}
    values = client.get(f"/jobs/{job}/vertices/{vertex_id}/metrics", {"get": ",".join(ids.values())})
    out: dict[int, int] = {}
    for item in values:
        subtask = by_id.get(item.get("id"))
        if subtask is not None and item.get("value") not in (None, ""):
            out[subtask] = long_from_metric(item["value"])
    return out


@dataclass
class Poller:
    """Takes samples of one resolved job, noticing restarts and the end of the job."""

    client: RestClient
    view: JobView
    epoch: int = 0
    state: str = "RUNNING"
    unsettled: int = 0
    _attempts: tuple | None = None

    def subtask_states(self) -> tuple[tuple, frozenset[int]]:
        """Every subtask's attempt number in both vertices (any change means a restart), and the
        upstream subtasks that have FINISHED (a finished task's metrics are gone; it sent MAX)."""
        attempts: list[int] = []
        finished: set[int] = set()
        for vid in (self.view.upstream_id, self.view.vertex_id):
            subtasks = self.client.get(f"/jobs/{self.view.job}/vertices/{vid}").get("subtasks", [])
            attempts.extend(int(s.get("attempt", 0)) for s in subtasks)
            if vid == self.view.upstream_id:
                finished |= {int(s["subtask"]) for s in subtasks if s.get("status") == "FINISHED"}
        return tuple(attempts), frozenset(finished)

    def sample(self, now_ms: Callable[[], int]) -> Sample | None:
        """One sample, or None while the job is not running (restarting, or over)."""
        details = self.client.get(f"/jobs/{self.view.job}")
        self.state = str(details.get("state", "UNKNOWN"))
        if self.state != "RUNNING":
            return None
        attempts, finished = self.subtask_states()
        view = self.view
        restarted = self._attempts is not None and attempts != self._attempts
        if restarted:
            self.epoch += 1
        self._attempts = attempts
        if restarted or not view.complete:
            refresh_metric_ids(self.client, view)
        for _ in range(3):
            before = read_metrics(self.client, view.job, view.vertex_id, view.reported_ids)
            taken = now_ms()
            watermarks = read_metrics(self.client, view.job, view.upstream_id, view.watermark_ids)
            idle = read_metrics(self.client, view.job, view.upstream_id, view.idle_ids)
            after = read_metrics(self.client, view.job, view.vertex_id, view.reported_ids)
            if before == after:
                break
        else:
            self.unsettled += 1
        return Sample(taken, self.epoch, watermarks, idle, after, finished)

    @property
    def over(self) -> bool:
        """The job reached a final state."""
        return self.state in _FINAL_STATES


def wall_clock_ms() -> int:
    """Milliseconds since the epoch (the recorder's only clock; the core has none)."""
    return time.time_ns() // 1_000_000
