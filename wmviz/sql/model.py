"""A Flink SQL job as wmviz reads it: its operators, its edges in input order and its source tables'
watermarks, each value with where it came from (docs/sql.md).

Every reader (`plan_json` for COMPILE PLAN, `explain` for EXPLAIN text, `rest_plan` for a running
job's plan, `load` for a `.sql` script through Flink's planner) fills these same types; the lint,
the text a person reads and the `wmviz-sqljob/1` file are all made from them. What an operator
does with event time is declared once, as data, in `NODE_KINDS`: Flink's node type, the name its
digest carries in EXPLAIN and a REST plan, and its behaviour.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Generic, Literal, TypeVar

from wmviz.core.errors import Refused
from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.sql_expr import Expr, TypeKind

T = TypeVar("T")


class Origin(Enum):
    """Where a value came from, as `wmviz plan` says it."""

    HINT = "hint"
    TABLE = "table option"
    HINT_OR_TABLE = "hint or table option"
    """A COMPILE PLAN stores a table's options with its OPTIONS hints already merged in: the
    value is one of the two, and wmviz does not guess which."""
    GLOBAL = "global option"
    DEFAULT = "default"
    PLAN = "the plan"
    """The plan states the value but not whether a person set it (its options are not in it)."""
    UNKNOWN = "not in the input"
    """The input does not carry it (the environment that runs the plan decides)."""


@dataclass(frozen=True, slots=True)
class Setting(Generic[T]):
    """One configured value and where it came from; `value` None means unset / off."""

    value: T | None
    origin: Origin
    note: str = ""


class Behaviour(Enum):
    """What an operator does with event time."""

    SOURCE = "reads a table"
    MAKES = "makes watermarks"
    PASSES = "passes watermarks on"
    WINDOW = "fires windows at the watermark"
    INTERVAL_JOIN = "holds rows back by the join's bounds"
    TEMPORAL_JOIN = "joins a versioned table at the watermark"
    MINI_BATCH = "batches rows between watermarks"
    LOSES_TIME = "passes watermarks on, but its output has no time attribute"
    SINK = "writes a table"


@dataclass(frozen=True, slots=True)
class NodeKind:
    """One kind of Flink SQL operator: the name its digest starts with in EXPLAIN and a REST plan
    (`WatermarkAssigner`), which is also the name wmviz shows, and its behaviour. Its COMPILE PLAN
    type is the same name in Flink's spelling: `stream-exec-watermark-assigner` (then `_1`, the
    node's version)."""

    label: str
    behaviour: Behaviour

    @property
    def flink_type(self) -> str:
        return "stream-exec-" + re.sub(r"(?<!^)(?=[A-Z])", "-", self.label).lower()


_B = Behaviour
NODE_KINDS: tuple[NodeKind, ...] = tuple(
    NodeKind(label, behaviour)
    for label, behaviour in (
        ("TableSourceScan", _B.SOURCE),
        ("WatermarkAssigner", _B.MAKES),
        ("Calc", _B.PASSES),
        ("Exchange", _B.PASSES),
        ("Union", _B.PASSES),
        ("Correlate", _B.PASSES),
        ("ChangelogNormalize", _B.PASSES),
        ("DropUpdateBefore", _B.PASSES),
        ("WindowTableFunction", _B.PASSES),
        ("LocalWindowAggregate", _B.PASSES),
        ("LocalGroupAggregate", _B.PASSES),
        ("WindowAggregate", _B.WINDOW),
        ("GlobalWindowAggregate", _B.WINDOW),
        ("GroupWindowAggregate", _B.WINDOW),
        ("WindowJoin", _B.WINDOW),
        ("WindowRank", _B.WINDOW),
        ("WindowDeduplicate", _B.WINDOW),
        ("IntervalJoin", _B.INTERVAL_JOIN),
        ("TemporalJoin", _B.TEMPORAL_JOIN),
        ("MiniBatchAssigner", _B.MINI_BATCH),
        ("Join", _B.LOSES_TIME),
        ("GroupAggregate", _B.LOSES_TIME),
        ("GlobalGroupAggregate", _B.LOSES_TIME),
        ("Sink", _B.SINK),
    )
)
"""Every operator kind wmviz names; any other reads as itself and passes watermarks on."""
BY_TYPE: dict[str, NodeKind] = {k.flink_type: k for k in NODE_KINDS}
BY_DIGEST: dict[str, NodeKind] = {k.label: k for k in NODE_KINDS}


def kind_of_type(flink_type: str) -> NodeKind | None:
    """The kind of a COMPILE PLAN node type such as `stream-exec-watermark-assigner_1`."""
    base, _, version = flink_type.rpartition("_")
    return BY_TYPE.get(base if base and version.isdigit() else flink_type)


def plain_type(flink_type: str) -> str:
    """A COMPILE PLAN node type without its version: `stream-exec-calc_1` → `stream-exec-calc`."""
    base, _, version = flink_type.rpartition("_")
    return base if base and version.isdigit() else flink_type


@dataclass(frozen=True, slots=True)
class WindowSpec:
    """A window operator's window: `kind` TUMBLE, HOP, CUMULATE or SESSION; sizes in ms."""

    kind: str
    time_column: str | None
    time_kind: TypeKind | None
    rowtime: bool | None
    proctime: bool | None = None
    size_ms: int | None = None
    slide_ms: int | None = None
    step_ms: int | None = None
    gap_ms: int | None = None
    offset_ms: int | None = None


@dataclass(frozen=True, slots=True)
class JoinBounds:
    """An interval join's `windowBounds`: the left row's time is within [right + lower, right + upper]."""

    event_time: bool
    left_lower_ms: int
    left_upper_ms: int
    left_time_index: int | None = None
    right_time_index: int | None = None


@dataclass(frozen=True, slots=True)
class Node:
    """One operator of the plan: `id` as the input names it, `flink_type` as COMPILE PLAN spells
    it (or the digest name where the input has no type), `name` as SQL says it."""

    id: str
    flink_type: str
    name: str
    behaviour: Behaviour
    digest: str = ""
    table: str | None = None
    window: WindowSpec | None = None
    join_bounds: JoinBounds | None = None
    early_fire_delay_ms: int | None = None
    mini_batch_interval_ms: int | None = None
    mini_batch_mode: str | None = None
    """`RowTime` (batches end at watermarks) or `ProcTime` (batches end on the processing-time clock)."""
    parallelism: int | None = None
    spec: Mapping[str, object] = field(default_factory=dict, compare=False, hash=False, repr=False)
    """The node's own COMPILE PLAN object (its grouping, aggregate calls, output type, ...), which
    the SQL operators' plan readers read (`wmviz.sql.operators`); empty when the plan was not a
    COMPILE PLAN (EXPLAIN text and a REST plan do not carry it)."""

    @property
    def is_exchange(self) -> bool:
        """An exchange is how data crosses between tasks: at run time an edge, not an operator
        (it reports no watermark of its own)."""
        return plain_type(self.flink_type) in ("stream-exec-exchange", "Exchange")


@dataclass(frozen=True, slots=True)
class Edge:
    """`source` feeds input number `input` (0 = left) of `target`."""

    source: str
    target: str
    input: int
    shuffle: str = ""


Where = Literal["source", "assigner", "source-defined"]
EmitStrategy = Literal["on-event", "on-periodic"]
WHERE_SAID: dict[Where | None, str] = {
    "source": "pushed into the source: one generator per split, the source's output the min over its splits",
    "assigner": "a separate WatermarkAssigner per subtask, over all the partitions the subtask reads",
    "source-defined": "the source's own watermark (SOURCE_WATERMARK())",
    None: "no watermark",
}
"""Where a watermark is made, in words."""
ASSIGNER_EMITS = (
    "a separate assigner emits on its own timer (pipeline.auto-watermark-interval), and at once when "
    "its watermark jumps by more than that interval; scan.watermark.emit.strategy does not reach it"
)
"""When a separate WatermarkAssigner emits, in words (it has no emit strategy)."""


@dataclass(frozen=True, slots=True)
class Alignment:
    """`scan.watermark.alignment.*`: on only when the group, a positive drift and a positive
    update interval are all there (Flink's rule)."""

    group: Setting[str]
    max_drift_ms: Setting[int]
    update_interval_ms: Setting[int]

    @property
    def enabled(self) -> bool:
        return bool(self.group.value and self.group.value.strip()) and all(
            s.value is not None and s.value > 0 for s in (self.max_drift_ms, self.update_interval_ms)
        )


@dataclass(frozen=True, slots=True)
class SourceTable:
    """One source table and how its watermark is made."""

    table: str
    node_id: str
    where: Where | None
    where_note: str = ""
    """How `where` was known, when the input does not say it outright."""
    expression_text: str = ""
    expression: Expr | None = None
    expression_error: str = ""
    rowtime: str | None = None
    column_kinds: Mapping[str, TypeKind] = field(default_factory=dict)
    emit: Setting[EmitStrategy] = Setting(None, Origin.UNKNOWN)
    idle_timeout_ms: Setting[int] = Setting(None, Origin.UNKNOWN)
    alignment: Alignment | None = None
    connector: Setting[str] = Setting(None, Origin.UNKNOWN)
    watermark_options: Mapping[str, Setting[str]] = field(default_factory=dict)
    """The `scan.watermark.*` options the input shows for this table (hint-merged where it cannot tell)."""
    options_known: bool = False
    """Whether the input carries the table's options at all (so an absent option is really absent)."""
    partitions: int | None = None
    parallelism: int | None = None


InputKind = Literal["compile-plan", "explain", "rest-plan", "sql"]


@dataclass(frozen=True, slots=True)
class SqlJob:
    """A whole job: nodes, edges (each target's inputs in order where `input_order_known`), the
    source tables, the global options the input shows, and notes on what the input could not say."""

    input_kind: InputKind
    nodes: tuple[Node, ...]
    edges: tuple[Edge, ...]
    sources: tuple[SourceTable, ...]
    global_options: Mapping[str, str] = field(default_factory=dict)
    input_order_known: bool = True
    local_time_zone: Setting[str] = Setting(None, Origin.UNKNOWN)
    notes: tuple[str, ...] = ()
    planner_errors: tuple[str, ...] = ()

    def node(self, node_id: str) -> Node:
        return next(n for n in self.nodes if n.id == node_id)

    def inputs_of(self, node_id: str) -> list[Edge]:
        """The edges into a node, in input order."""
        return sorted((e for e in self.edges if e.target == node_id), key=lambda e: e.input)

    def upstream(self, node_id: str) -> set[str]:
        """Every node a node reads from, directly or not."""
        seen: set[str] = set()
        todo = [node_id]
        while todo:
            for edge in self.inputs_of(todo.pop()):
                if edge.source not in seen:
                    seen.add(edge.source)
                    todo.append(edge.source)
        return seen


def ordered_edges(pairs: list[tuple[str, str, str]]) -> tuple[Edge, ...]:
    """Edges from (source, target, shuffle) triples listed in input order: the first edge into a
    target is its input 0 (left), the next its input 1 (COMPILE PLAN's and EXPLAIN's order)."""
    seen: dict[str, int] = {}
    edges = []
    for source, target, shuffle in pairs:
        number = seen.get(target, 0)
        seen[target] = number + 1
        edges.append(Edge(source, target, number, shuffle))
    return tuple(edges)


class OperatorRefused(Refused, ValueError):
    """A plan node whose rows wmviz does not model; the message names what and where."""


PlanReader = Callable[[Node, "SqlJob"], SqlOperatorKind]
"""Reads one plan node (and, for its input fields, the job around it) into the core config of the
SQL operator that models it (`wmviz.sql.operators.PLAN_OPERATORS`)."""


def fields_of(node: Node) -> tuple[str, ...]:
    """The names of a node's output fields, in order, from its COMPILE PLAN `outputType` (a
    `{"type": "ROW", "fields": [...]}` object, or `ROW<`a` T, `b` T>` text); () without a spec."""
    output = node.spec.get("outputType")
    if isinstance(output, dict):
        return tuple(str(f.get("name")) for f in output.get("fields", ()) if isinstance(f, dict))
    if isinstance(output, str):
        return tuple(re.findall(r"`((?:[^`]|``)*)`", output))
    return ()
