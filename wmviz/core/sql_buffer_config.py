"""The configs of SQL's operators that buffer rows until the watermark (docs/sql.md, "Operators"):
a row-time OVER aggregation (`over_aggregate`, wmviz/core/sql_over.py), a row-time deduplication
(`deduplicate`, wmviz/core/sql_dedup.py) and `ORDER BY rowtime` (`temporal_sort`,
wmviz/core/sql_sort.py). Each is what Flink 2.3.0's COMPILE PLAN node says
(`wmviz.sql.plan_buffer` reads it), and a trace config may name one by hand.

The time attribute is never a field: it is each record's `event_ms` (`wmviz.core.sql_rows`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from wmviz.core.fieldrules import aggregates, choice, count, flag, names
from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.sql_aggregates import AggregateCall

Frame = Literal["rows", "range"]
Keep = Literal["first", "last"]


@dataclass(frozen=True, slots=True, kw_only=True)
class OverAggregateConfig(SqlOperatorKind):
    """`operator.type` over_aggregate: `AGG(x) OVER (PARTITION BY k ORDER BY ts ROWS|RANGE BETWEEN
    UNBOUNDED PRECEDING AND CURRENT ROW)`, as Flink 2.3.0 runs it by default
    (`RowTimeUnboundedPrecedingOverFunctionV2`, `table.exec.unbounded-over.version` 2), or with
    `preceding` a bounded frame (`RowTimeRowsBoundedPrecedingFunction`,
    `RowTimeRangeBoundedPrecedingFunction`, wmviz/core/sql_over_bounded.py)."""

    type_name: ClassVar[str] = "over_aggregate"
    partition_by: tuple[str, ...] = field(
        default=(), metadata=names("PARTITION BY: the columns that make a key (none: one key for all rows)")
    )
    frame: Frame = field(
        default="rows",
        metadata=choice(
            Frame,
            "ROWS: each row of a timestamp adds itself in turn; RANGE: all rows of a timestamp share"
            " one value",
        ),
    )
    preceding: int | None = field(
        default=None,
        metadata=count(
            "a bounded frame: ROWS n PRECEDING (n rows) or RANGE INTERVAL … PRECEDING (milliseconds);"
            " none: UNBOUNDED PRECEDING",
            minimum=0,
        ),
    )
    aggregates: tuple[AggregateCall, ...] = field(
        default=(),
        metadata=aggregates(
            "the calls, each appended to the input row as its own output field (none: the input columns only)"
        ),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class DeduplicateConfig(SqlOperatorKind):
    """`operator.type` deduplicate: `ROW_NUMBER() OVER (PARTITION BY k ORDER BY ts ASC|DESC) = 1` on
    row time, mini-batch off. Keep first with an insert-only output buffers until the watermark
    (`RowTimeDeduplicateKeepFirstRowFunction`); otherwise rows are emitted on arrival
    (`RowTimeDeduplicateFunction`)."""

    type_name: ClassVar[str] = "deduplicate"
    partition_by: tuple[str, ...] = field(
        default=(), metadata=names("PARTITION BY: the columns whose rows are deduplicated together")
    )
    keep: Keep = field(
        default="first", metadata=choice(Keep, "ORDER BY ts ASC keeps the first row, DESC the last")
    )
    insert_only: bool = field(
        default=True,
        metadata=flag(
            "the plan's outputInsertOnly (keep first only): hold the first row until the watermark passes"
            " it and emit +I once; off: emit at once and update when an earlier row arrives"
        ),
    )
    generate_update_before: bool = field(
        default=False, metadata=flag("the plan's generateUpdateBefore: an update sends -U before +U")
    )
    generate_insert: bool = field(
        default=True,
        metadata=flag(
            "table.exec.deduplicate.insert-update-after-sensitive-enabled: the first row of a key is +I"
            " (off, with no -U: every row is +U)"
        ),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class TemporalSortConfig(SqlOperatorKind):
    """`operator.type` temporal_sort: `ORDER BY ts[, c [DESC], ...]` on a stream
    (`RowTimeSortOperator`): rows wait for the watermark, then leave in time order."""

    type_name: ClassVar[str] = "temporal_sort"
    then_by: tuple[str, ...] = field(
        default=(), metadata=names("the columns after the time attribute that order rows of one timestamp")
    )
    descending: tuple[str, ...] = field(
        default=(),
        metadata=names(
            "which of then_by sort DESC (NULLs last), the others ASC (NULLs first), as Flink's default"
        ),
    )


BufferConfig = OverAggregateConfig | DeduplicateConfig | TemporalSortConfig
