"""Where a SQL job's watermarks meet: the groups `wmviz sql replay` runs as trace instances.

At parallelism 1 a node with one input passes on what reaches it (a Calc, an Exchange, a window
aggregate that fires and forwards), so a job's watermarks change only where they are made (a
source that took the WATERMARK, a separate WatermarkAssigner) and where several tables meet (an
interval join, which also holds its output back by its bounds). A *group* is one set of source
tables whose branches meet at one operator, or one table alone; each becomes one instance of the
trace: each table a channel (its own generator config), the meeting operator its operator.

Shapes not modelled are refused by name (`ReplayRefused`) rather than replayed approximately.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from wmviz.core.errors import Refused
from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.scenario import IntervalJoinConfig
from wmviz.sql.model import Behaviour, Node, OperatorRefused, SourceTable, SqlJob
from wmviz.sql.operators import operator_of


class ReplayRefused(Refused, ValueError):
    """The job (or its rows) has something `sql replay` does not model; the message names it."""


@dataclass(frozen=True, slots=True)
class Branch:
    """One source table's path to where it meets the others (or to its sinks, alone)."""

    table: SourceTable
    input: str
    """The trace input its channel belongs to: `L`/`R` at an interval join, else `0`."""
    channel: int
    before_assigner: tuple[str, ...]
    """Nodes between the scan and a separate assigner (the scan included): no watermark until the
    source ends."""
    made_by_source: tuple[str, ...]
    """Nodes that carry what the table's source (or its assigner) sent."""


@dataclass(frozen=True, slots=True)
class SqlStage:
    """The first SQL operator on a table's path that the core models (`PLAN_OPERATORS`), or the
    reason it does not model the one there (its sinks' rows are then not replayed)."""

    node: str
    config: SqlOperatorKind | None
    refused: str | None = None


@dataclass(frozen=True, slots=True)
class Group:
    """Tables whose watermarks meet at one operator (or one table alone): one trace instance."""

    name: str
    branches: tuple[Branch, ...]
    meeting: str | None
    downstream: tuple[str, ...]
    """The meeting node and every node after it: they carry the meeting operator's output."""
    operator: IntervalJoinConfig | SqlOperatorKind | None
    """The meeting operator: an interval join, or SQL's temporal or window join (a core SQL operator)."""
    zone: str
    sql: SqlStage | None = None
    """A one-table group's SQL operator (the interval join's groups have none)."""

    @property
    def is_join(self) -> bool:
        return self.operator is not None


_REFUSED_BEHAVIOURS = {
    Behaviour.MINI_BATCH: "a mini-batch assigner's watermarks are not replayed yet",
}


def groups_of(job: SqlJob) -> list[Group]:
    """The job's groups, each checked to be a shape the replay models."""
    zone = job.local_time_zone.value or "UTC"
    after = _successors(job)
    downstream_of = {n.id: _reachable(after, n.id) for n in job.nodes}
    for node in job.nodes:
        if node.behaviour in _REFUSED_BEHAVIOURS:
            raise ReplayRefused(f"{_said(node)}: {_REFUSED_BEHAVIOURS[node.behaviour]}")
    tables = [s for s in job.sources if _check_source(s)]
    components: dict[str, list[SourceTable]] = {}
    for source in tables:
        meeting = _meeting_node(job, source.node_id, downstream_of)
        components.setdefault(meeting or f"table:{source.table}", []).append(source)
    return [_group(job, key, members, downstream_of, zone) for key, members in components.items()]


def _check_source(source: SourceTable) -> bool:
    """Whether a table takes part (False: it has no watermark); refused where wmviz cannot model it."""
    if source.where is None:
        return False
    if "SOURCE_WATERMARK" in source.expression_text.upper():
        # Flink 2.3.0 plans it on Kafka as a pushed-down expression; the job fails at its first row.
        raise ReplayRefused(
            f"table {source.table}: SOURCE_WATERMARK() — Flink 2.3.0 pushes it into the source as an "
            "ordinary expression and the job fails at its first row (no connector here implements it)"
        )
    if source.where == "source-defined":
        raise ReplayRefused(
            f"table {source.table}: SOURCE_WATERMARK() takes the connector's own watermarks, which "
            "wmviz cannot know from the plan; record them (`wmviz record`) instead"
        )
    if source.expression is None:
        raise ReplayRefused(f"table {source.table}: {source.expression_error or 'no watermark expression'}")
    return True


def _successors(job: SqlJob) -> dict[str, list[str]]:
    """Each node's targets, in the plan's edge order (read once: a walk per node over every edge
    made a 3,000-node chain minutes of set-up)."""
    after: dict[str, list[str]] = {}
    for edge in job.edges:
        after.setdefault(edge.source, []).append(edge.target)
    return after


def _reachable(after: dict[str, list[str]], start: str) -> tuple[str, ...]:
    """`start` and every node after it, in a stable order (breadth first)."""
    order, seen, todo = [start], {start}, deque([start])
    while todo:
        for target in after.get(todo.popleft(), ()):
            if target not in seen:
                seen.add(target)
                order.append(target)
                todo.append(target)
    return tuple(order)


def _meeting_node(job: SqlJob, scan: str, downstream_of: dict[str, tuple[str, ...]]) -> str | None:
    """The first node after `scan` with more than one input edge (where tables meet), if any."""
    for node_id in downstream_of[scan]:
        if len(job.inputs_of(node_id)) > 1:
            return node_id
    return None


def _group(
    job: SqlJob,
    key: str,
    members: list[SourceTable],
    downstream_of: dict[str, tuple[str, ...]],
    zone: str,
) -> Group:
    if key.startswith("table:"):
        if len(members) != 1:  # a table scanned twice, the scans never meeting (a plan cut short)
            raise ReplayRefused(
                f"table {members[0].table} is read by {len(members)} scans whose rows never meet; "
                "a table is replayed from one scan"
            )
        (source,) = members
        branch = _branch(job, source, "0", 0, set(), downstream_of)
        stage = sql_stage(job, downstream_of[source.node_id])
        return Group(source.table, (branch,), None, (), None, zone, stage)
    meeting = job.node(key)
    after = downstream_of[key]
    for node_id in after[1:]:
        if len(job.inputs_of(node_id)) > 1 or job.node(node_id).behaviour is Behaviour.INTERVAL_JOIN:
            raise ReplayRefused(
                f"{_said(job.node(node_id))} after {_said(meeting)}: "
                "a second meeting of watermarks is not replayed yet"
            )
    join = _meeting_config(job, meeting)
    edges = job.inputs_of(key)
    sides: list[Branch] = []
    stop = set(after)
    for edge in edges:
        side = "L" if edge.input == 0 else "R"
        fed = [s for s in members if edge.source in downstream_of[s.node_id]]
        if len(fed) != 1:
            names = ", ".join(s.table for s in fed) or "no table with a watermark"
            raise ReplayRefused(
                f"{_said(meeting)}: its {side} input reads {names}; one table a side is replayed"
            )
        sides.append(_branch(job, fed[0], side, 0, stop, downstream_of))
    return Group(meeting.name + f"[{meeting.id}]", tuple(sides), key, after, join, zone)


def _meeting_config(job: SqlJob, meeting: Node) -> IntervalJoinConfig | SqlOperatorKind:
    """The operator where two tables meet: an event-time interval join, or the temporal or window
    join its plan reader reads (`wmviz.sql.operators`); anything else is refused by name."""
    if meeting.behaviour is Behaviour.INTERVAL_JOIN:
        return _join_config(meeting)
    if meeting.behaviour is Behaviour.TEMPORAL_JOIN or meeting.flink_type == "stream-exec-window-join":
        try:
            config = operator_of(meeting, job)
        except OperatorRefused as refused:
            raise ReplayRefused(str(refused)) from None
        if config is not None:
            return config
    raise ReplayRefused(
        f"{_said(meeting)}: where tables meet, an interval, temporal or window join is replayed, not this"
    )


def sql_stage(job: SqlJob, path: tuple[str, ...]) -> SqlStage | None:
    """The first node along `path` a plan reader of `wmviz.sql.operators` reads, with its config
    (or the reader's refusal)."""
    for node_id in path:
        try:
            config = operator_of(job.node(node_id), job)
        except OperatorRefused as refused:
            return SqlStage(node_id, None, str(refused))
        if config is not None:
            return SqlStage(node_id, config)
    return None


def _branch(
    job: SqlJob,
    source: SourceTable,
    input_name: str,
    channel: int,
    stop: set[str],
    downstream_of: dict[str, tuple[str, ...]],
) -> Branch:
    nodes = [n for n in downstream_of[source.node_id] if n not in stop]
    if source.where != "assigner":
        return Branch(source, input_name, channel, (), tuple(nodes))
    assigners = [n for n in nodes if job.node(n).behaviour is Behaviour.MAKES]
    if not assigners:
        raise ReplayRefused(
            f"table {source.table}: its watermark is made by an assigner the plan does not show"
        )
    cut = nodes.index(assigners[0])
    return Branch(source, input_name, channel, tuple(nodes[:cut]), tuple(nodes[cut:]))


def _join_config(node: Node) -> IntervalJoinConfig:
    bounds = node.join_bounds
    if bounds is None or not bounds.event_time:
        raise ReplayRefused(f"{_said(node)}: only an event-time interval join is replayed")
    interval = node.spec.get("intervalJoinSpec")
    spec = interval.get("joinSpec") if isinstance(interval, dict) else None
    kind = str(spec.get("joinType", "INNER") if isinstance(spec, dict) else "INNER").lower()
    if kind not in ("inner", "left", "right", "full"):
        raise ReplayRefused(f"{_said(node)}: a {kind.upper()} interval join is not replayed")
    return IntervalJoinConfig(
        join=kind,  # type: ignore[arg-type]  # checked just above
        lower_ms=bounds.left_lower_ms,
        upper_ms=bounds.left_upper_ms,
    )


def _said(node: Node) -> str:
    return f"{node.name} (plan node {node.id})"
