"""The plan readers of SQL's window TopN (`stream-exec-window-rank`) and window deduplication
(`stream-exec-window-deduplicate`) over a TUMBLE, HOP or CUMULATE table function, read into
`WindowRankConfig` / `WindowDedupConfig` (wmviz/core/sql_window_rank.py).

What the core does not model is refused by name (`OperatorRefused`), never approximated: processing time,
RANK/DENSE_RANK, a rank range not starting at 1 or not constant, windows attached by an earlier
window aggregate.
"""

from __future__ import annotations

from dataclasses import dataclass

from wmviz.core.sql_window_rank_config import TableFunction, WindowDedupConfig, WindowRankConfig
from wmviz.sql.model import Node, OperatorRefused, SqlJob, fields_of

_KINDS: dict[str, TableFunction] = {"TUMBLE": "tumble", "HOP": "hop", "CUMULATE": "cumulate"}


@dataclass(frozen=True, slots=True)
class _Tumble:
    """What both readers take from the node's windowing: its window and input columns."""

    where: str
    window: TableFunction
    size_ms: int
    slide_ms: int | None
    step_ms: int | None
    offset_ms: int
    zone: str
    inputs: tuple[str, ...]


def _window_fields(node: Node, job: SqlJob) -> _Tumble:
    """The node's window (TUMBLE, HOP, CUMULATE) and input columns (OperatorRefused for others)."""
    where = f"{node.name} (plan node {node.id})"
    windowing = node.spec.get("windowing")
    if not isinstance(windowing, dict) or windowing.get("strategy") != "WindowAttached":
        raise OperatorRefused(f"{where}: windows not attached by a window table function are not modelled")
    window = node.window
    if window is None or window.kind not in _KINDS:
        kind = window.kind if window is not None else "an unknown window"
        raise OperatorRefused(f"{where}: {kind} windows are not modelled (TUMBLE, HOP and CUMULATE are)")
    slide = window.slide_ms if window.kind == "HOP" else None
    step = window.step_ms if window.kind == "CUMULATE" else None
    if (window.kind == "HOP" and slide is None) or (window.kind == "CUMULATE" and step is None):
        raise OperatorRefused(f"{where}: a {window.kind} window whose step the plan does not give")
    if not window.rowtime:
        raise OperatorRefused(f"{where}: processing-time windows are not modelled (only event time)")
    assert window.size_ms is not None
    zone = (job.local_time_zone.value or "UTC") if window.time_kind == "TIMESTAMP_LTZ" else "UTC"
    edges = job.inputs_of(node.id)
    inputs = fields_of(job.node(edges[0].source)) if edges else ()
    start, end = windowing.get("windowStart"), windowing.get("windowEnd")
    if not isinstance(start, int) or not isinstance(end, int) or max(start, end) >= len(inputs):
        raise OperatorRefused(f"{where}: window columns it cannot read")
    if (inputs[start], inputs[end]) != ("window_start", "window_end"):
        raise OperatorRefused(f"{where}: renamed window columns are not modelled")
    zone = "UTC" if zone == "default" else zone
    offset = window.offset_ms or 0
    return _Tumble(where, _KINDS[window.kind], window.size_ms, slide, step, offset, zone, inputs)


def read_window_rank(node: Node, job: SqlJob) -> WindowRankConfig:
    """A `stream-exec-window-rank` node's config."""
    tumble = _window_fields(node, job)
    where, inputs = tumble.where, tumble.inputs
    spec = node.spec
    if spec.get("rankType") != "ROW_NUMBER":
        raise OperatorRefused(f"{where}: {spec.get('rankType')} is not modelled (only ROW_NUMBER)")
    rank_range = spec.get("rankRange")
    if (
        not isinstance(rank_range, dict)
        or rank_range.get("type") != "Constant"
        or rank_range.get("start") != 1
    ):
        raise OperatorRefused(f"{where}: a rank range other than rn <= N is not modelled")
    partition = spec.get("partitionSpec", {})
    keys = tuple(inputs[int(i)] for i in (partition.get("fields", []) if isinstance(partition, dict) else []))
    sort = spec.get("sortSpec", {})
    fields = [f for f in (sort.get("fields", []) if isinstance(sort, dict) else []) if isinstance(f, dict)]
    if any(not f.get("nullIsLast", True) for f in fields):
        raise OperatorRefused(f"{where}: NULLS FIRST is not modelled")
    order = tuple(inputs[int(f["index"])] for f in fields)
    descending = tuple(inputs[int(f["index"])] for f in fields if not f.get("isAscending", True))
    output = fields_of(node)
    return WindowRankConfig(
        window=tumble.window,
        size_ms=tumble.size_ms,
        slide_ms=tumble.slide_ms,
        step_ms=tumble.step_ms,
        offset_ms=tumble.offset_ms,
        zone=tumble.zone,
        columns=tumble.inputs,
        partition_by=keys,
        order_by=order,
        descending=descending,
        top=int(rank_range.get("end", 1)),
        rank_column=output[-1] if spec.get("outputRowNumber") and output else "",
    )


def read_window_deduplicate(node: Node, job: SqlJob) -> WindowDedupConfig:
    """A `stream-exec-window-deduplicate` node's config."""
    tumble = _window_fields(node, job)
    partition = node.spec.get("partitionKeys")
    keys = tuple(tumble.inputs[int(i)] for i in (partition if isinstance(partition, list) else []))
    return WindowDedupConfig(
        window=tumble.window,
        size_ms=tumble.size_ms,
        slide_ms=tumble.slide_ms,
        step_ms=tumble.step_ms,
        offset_ms=tumble.offset_ms,
        zone=tumble.zone,
        columns=tumble.inputs,
        partition_by=keys,
        keep="last" if node.spec.get("keepLastRow") else "first",
    )
