"""Which SQL operators `wmviz sql replay` runs rows through, and how each is read from its plan node.

One table, declared once: a COMPILE PLAN node type (`stream-exec-window-aggregate`) and the reader
that turns that node (its `spec`, the plan's own JSON) into the core config of the operator that
models it (a `wmviz.core.operator_kind.SqlOperatorKind`). A reader raises
`wmviz.sql.model.OperatorRefused` naming what it does not model (an aggregate function, a
computed grouping key), so a job is refused by name rather than replayed approximately. A node
type not listed here passes rows on unchanged (a projection is followed by the replay itself) or
is refused where rows must be computed.
"""

from __future__ import annotations

from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.sql.model import Node, PlanReader, SqlJob
from wmviz.sql.plan_buffer import read_deduplicate, read_over, read_temporal_sort
from wmviz.sql.plan_match import read_match
from wmviz.sql.plan_temporal import read_temporal_join
from wmviz.sql.plan_window_join import read_window_join
from wmviz.sql.plan_window_rank import read_window_deduplicate, read_window_rank
from wmviz.sql.plan_windows import window_aggregate_config

PLAN_OPERATORS: dict[str, PlanReader] = {
    "stream-exec-temporal-join": read_temporal_join,
    "stream-exec-over-aggregate": read_over,
    "stream-exec-deduplicate": read_deduplicate,
    "stream-exec-temporal-sort": read_temporal_sort,
    "stream-exec-match": read_match,
    "stream-exec-window-aggregate": window_aggregate_config,
    "stream-exec-global-window-aggregate": window_aggregate_config,
    "stream-exec-window-rank": read_window_rank,
    "stream-exec-window-deduplicate": read_window_deduplicate,
    "stream-exec-window-join": read_window_join,
}
"""COMPILE PLAN node type (without its `_N` version) -> the reader of its operator's config
(each reader lives in its operator's module `wmviz/sql/plan_<operator>.py`; one line each here)."""


def operator_of(node: Node, job: SqlJob) -> SqlOperatorKind | None:
    """The core config of the operator modelling `node`, or None when no SQL operator models it."""
    reader = PLAN_OPERATORS.get(node.flink_type)
    return reader(node, job) if reader is not None else None
