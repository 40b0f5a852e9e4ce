"""SQL's operators as the pipeline calls them: the one contract (`SqlOperator`) and which operator
each SQL operator config builds (`SQL_OPERATORS`).

Each SQL operator of the core lives in its own module, one method per rule as in `valve.py`; this
module only names them, so the pipeline knows one table rather than every operator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.operator_log import StepLog
from wmviz.core.scenario import TraceRow
from wmviz.core.sql_buffer_config import DeduplicateConfig, OverAggregateConfig, TemporalSortConfig
from wmviz.core.sql_dedup import build_dedup
from wmviz.core.sql_match import build as build_match
from wmviz.core.sql_match_config import SqlMatchConfig
from wmviz.core.sql_over import build_over
from wmviz.core.sql_session import build as build_sql_session
from wmviz.core.sql_session_config import SqlSessionConfig
from wmviz.core.sql_sort import build_sort
from wmviz.core.sql_temporal_join import TemporalJoinConfig, TemporalRowTimeJoin
from wmviz.core.sql_window_join import build as build_window_join
from wmviz.core.sql_window_join_config import WindowJoinConfig
from wmviz.core.sql_window_rank import build as build_window_rank
from wmviz.core.sql_window_rank_config import WindowDedupConfig, WindowRankConfig
from wmviz.core.sql_windows import build as build_sql_window
from wmviz.core.sql_windows_config import SqlWindowConfig
from wmviz.core.timers import FiredTimer, TimerService
from wmviz.core.types import Profile


class SqlOperator(Protocol):
    """The methods the pipeline calls on a SQL operator (`wmviz.core.sql_rows` states the contract)."""

    def on_record(self, input_name: str, row: TraceRow, log: StepLog) -> None: ...

    def on_watermark(self, watermark_ms: int, log: StepLog) -> None: ...

    def on_timer(self, fired: FiredTimer, log: StepLog) -> None: ...

    def output_watermark(self, watermark_ms: int, log: StepLog) -> None: ...

    def snapshot(self) -> tuple[object, ...]: ...

    def live_rows(self) -> set[int]: ...


Builder = Callable[[SqlOperatorKind, TimerService], SqlOperator]

SQL_OPERATORS: dict[type[SqlOperatorKind], Builder] = {
    SqlSessionConfig: build_sql_session,  # type: ignore[dict-item]
    OverAggregateConfig: build_over,  # type: ignore[dict-item]
    DeduplicateConfig: build_dedup,  # type: ignore[dict-item]
    TemporalSortConfig: build_sort,  # type: ignore[dict-item]
    SqlWindowConfig: build_sql_window,
    WindowRankConfig: build_window_rank,
    WindowDedupConfig: build_window_rank,
    WindowJoinConfig: build_window_join,
    SqlMatchConfig: build_match,  # type: ignore[dict-item]
}
"""Config type -> the operator it builds (config, the instance's timers). One line per operator."""

ProfiledBuilder = Callable[[SqlOperatorKind, TimerService, Profile], SqlOperator]

PROFILED_SQL_OPERATORS: dict[type[SqlOperatorKind], ProfiledBuilder] = {
    TemporalJoinConfig: TemporalRowTimeJoin,  # type: ignore[dict-item]  # SQL-T8 under flink-master
}
"""The operators whose rules differ by profile, built with it. One line per operator."""


def build_sql_operator(
    config: SqlOperatorKind, timers: TimerService, profile: Profile = Profile.FLINK_1X_2X
) -> SqlOperator:
    """The operator `config` configures, under `profile` where its rules depend on it."""
    profiled = PROFILED_SQL_OPERATORS.get(type(config))
    if profiled is not None:
        return profiled(config, timers, profile)
    builder = SQL_OPERATORS.get(type(config))
    if builder is None:
        raise TypeError(f"no SQL operator is declared for {type(config).__name__}")
    return builder(config, timers)
