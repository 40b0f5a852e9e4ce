"""The rules over several fields of one config type (trace-format.md §3): what a single field's
rule cannot say, such as session windows taking no size, or a sliding window Flink would refuse.
`wmviz.trace.config` runs them after each section's fields are judged; a field one refuses keeps
its default."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from wmviz.core.budgets import windows_per_record_reason
from wmviz.core.scenario import GeneratorConfig, IntervalJoinConfig, WindowConfig
from wmviz.core.settings import MAX_WINDOWS_PER_RECORD
from wmviz.core.sql_match_config import SqlMatchConfig, match_problems
from wmviz.core.sql_session_config import WINDOW_PROPERTIES, SqlSessionConfig
from wmviz.core.sql_temporal_join_config import TemporalJoinConfig
from wmviz.core.sql_window_join_config import WindowJoinConfig, window_join_problems
from wmviz.core.sql_window_rank_config import WindowDedupConfig, WindowRankConfig, window_rank_problems
from wmviz.core.sql_windows_config import SqlWindowConfig, sql_window_problems
from wmviz.core.windows import offset_config_problem, sliding_config_problem
from wmviz.trace.sqlconfig import sql_style_problems

SectionValues = dict[str, Any]
SectionRule = Callable[[SectionValues, dict[str, Any]], Iterator[tuple[str, str]]]


def _window_rules(values: SectionValues, data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Session windows (`session_gap_ms`) or windows of `size_ms`, never both; a sliding window or an
    offset Flink would refuse; a window that puts a record in too many windows."""
    if data.get("session_gap_ms") is not None:  # a refused gap still makes these session windows
        # EventTimeSessionWindows takes a gap alone: a size, slide or offset would be ignored.
        for name in ("size_ms", "slide_ms", "offset_ms"):
            if data.get(name) is not None:
                yield name, "not used by session windows (operator.session_gap_ms)"
        return
    size, slide = values["size_ms"], values["slide_ms"]
    if size is None:
        if data.get("size_ms") is None:
            yield "size_ms", "required for operator type window (or operator.session_gap_ms)"
        return
    if problem := sliding_config_problem(size, slide):
        yield "slide_ms", problem
    elif slide is not None and -(-size // slide) > MAX_WINDOWS_PER_RECORD.get():
        yield "slide_ms", windows_per_record_reason(-(-size // slide))
    elif values["offset_ms"] and (problem := offset_config_problem(size, slide, values["offset_ms"])):
        yield "offset_ms", problem


def _interval_join_rules(values: SectionValues, data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """The EARLY_FIRE hint's rules (docs/rules.md, E0–E7)."""
    time_mode = values["time_mode"]
    if time_mode is not None and data.get("early_fire_delay_ms") is None:
        # time_mode belongs to the EARLY_FIRE hint, whose delay is required.
        yield "time_mode", "needs operator.early_fire_delay_ms (the EARLY_FIRE delay)"
    if values["join_time"] == "proctime" and time_mode == "rowtime":
        # The planner rejects a row-time hint on a processing-time join.
        yield "time_mode", "rowtime is rejected on a processing-time join (join_time proctime)"


def _temporal_join_rules(values: SectionValues, data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """A temporal join's keys pair up column by column, and each build column has one output name."""
    probe, build = values["probe_key"], values["build_key"]
    if probe and build and len(probe) != len(build):
        yield "build_key", f"has {len(build)} columns, operator.probe_key {len(probe)}: they pair up"
    columns, names = values["build_columns"], values["build_fields"]
    if columns and names and len(names) != len(columns):
        yield "build_fields", f"names {len(names)} columns, operator.build_columns has {len(columns)}"


def _generator_rules(values: SectionValues, data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Watermark alignment pauses subtasks and splits of FLIP-27 readers: it needs `splits`; each
    `style` takes its own fields (`sql_style_problems`)."""
    if values["alignment"] is not None and not values["splits"]:
        yield "alignment", "needs generator.splits: alignment pauses the splits of FLIP-27 source readers"
    yield from sql_style_problems(values, data)


def _sql_session_rules(values: SectionValues, data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """SESSION's window columns are window_start, window_end and window_time; no output field twice."""
    properties = values["properties"] or ()
    if unknown := [p for p in properties if p not in WINDOW_PROPERTIES]:
        yield "properties", f"{unknown[0]!r} is not a window column: one of {', '.join(WINDOW_PROPERTIES)}"
    calls = values["aggregates"] or ()
    named = [*(values["partition_by"] or ()), *(c.name for c in calls), *properties]
    if twice := sorted({n for n in named if named.count(n) > 1}):
        yield (
            "aggregates",
            f"the output field {twice[0]!r} is named twice (keys, aggregates and window columns)",
        )


SECTION_RULES: dict[type, SectionRule] = {
    GeneratorConfig: _generator_rules,
    WindowConfig: _window_rules,
    IntervalJoinConfig: _interval_join_rules,
    SqlSessionConfig: _sql_session_rules,
    TemporalJoinConfig: _temporal_join_rules,
    SqlWindowConfig: lambda values, data: iter(sql_window_problems(values)),
    WindowRankConfig: lambda values, data: iter(window_rank_problems(values)),
    WindowDedupConfig: lambda values, data: iter(window_rank_problems(values)),
    WindowJoinConfig: lambda values, data: window_join_problems(values),
    SqlMatchConfig: lambda values, data: iter(match_problems(values)),
}
"""The rules over several fields of one config type; a field one of them refuses keeps its default."""
