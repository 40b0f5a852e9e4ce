"""The config of SQL's SESSION window aggregation (`operator.type` sql_session; the operator is
`wmviz.core.sql_session`).

`TABLE(SESSION(TABLE t [PARTITION BY k, ...], DESCRIPTOR(ts), INTERVAL gap))` grouped by
`window_start, window_end[, k, ...]` with aggregate calls: the plan reader
(`wmviz.sql.plan_session`) fills it from the window-aggregate node of a COMPILE PLAN, and a trace
config may name it by hand. Kept apart from the operator so the scenario model can list it
without importing the operator.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from wmviz.core.fieldrules import aggregates, millis, names
from wmviz.core.operator_kind import SqlOperatorKind

WINDOW_PROPERTIES: tuple[str, ...] = ("window_start", "window_end", "window_time")
"""The window columns a SESSION aggregate can output: its start, its end (exclusive) and its
time attribute (`end − 1`), each in epoch milliseconds."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SqlSessionConfig(SqlOperatorKind):
    """`operator.type` sql_session: SQL's SESSION window TVF with its GROUP BY aggregation, one
    merging session list per partition key (wmviz/core/sql_session.py). Output fields: the
    partition keys, the aggregates, then the window properties, in their listed order."""

    type_name: ClassVar[str] = "sql_session"

    gap_ms: int = field(
        # Flink: SessionWindowAssigner refuses a gap that is not positive.
        metadata=millis("a key's session closes after this long without rows (INTERVAL gap)", minimum=1),
    )
    partition_by: tuple[str, ...] = field(
        default=(),
        metadata=names(
            "the PARTITION BY columns, each a session of its own (none: one session for all rows)"
        ),
    )
    aggregates: tuple[Any, ...] = field(
        # `wmviz.core.sql_aggregates.AggregateCall`s, as the `aggregates` rule parses them; not
        # imported, as that module reads trace rows, which the scenario model (importing this) declares
        default=(),
        metadata=aggregates('the SELECT\'s aggregate calls, as "COUNT(*) AS n" (none: keys and window only)'),
    )
    properties: tuple[str, ...] = field(
        default=("window_start", "window_end"),
        metadata=names("the window columns output, in order: window_start, window_end, window_time"),
    )

    def output_fields(self) -> tuple[str, ...]:
        """The operator's output fields, in Flink's order: keys, aggregates, window properties."""
        return (*self.partition_by, *(call.name for call in self.aggregates), *self.properties)
