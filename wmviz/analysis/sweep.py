"""A sweep: one trace replayed under a grid of config values, counted rather than recorded.

`--vary generator.out_of_orderness_ms=0,2s,5s --vary operator.allowed_lateness_ms=0,1m` names
dotted config paths and their values; the grid is every combination, in a stable order (the first
`--vary` changes slowest). Each combination's config is made by `replace_field`, the typed config's
one validation, so a bad path or value is refused with its path named before anything runs.

Each combination runs the same pipeline a timeline run does (`InstancePipeline.run_row`), but keeps
only counters read from the step's own log: no timeline is written, so K combinations cost about
K model runs. The counters of one instance are `wmviz.analysis.sweep_count.count_instance`'s; the
Spark engine (`wmviz.spark.sweep`) runs that same function in its tasks and merges the same way.

What a row reports (docs/sweep.md says it for users):
- `late_dropped`: every record the operator dropped, exactly the transcript's `dropped` entries;
  `late_share` is that over the trace's records.
- `firings`: window firings, join rows and SQL output rows emitted (`SqlOutput` of kind +I or +U: a
  -U or -D withdraws a row already counted); `firing_delay_p50_ms`/`_p95_ms` the nearest-rank
  percentiles of (processing time at emission - the output's time): a window's end, a join row's
  time, a SQL row's `window_end` column when it has one, else the newest event time among the
  trace rows it was made from (`sql_output_time`).
- `output_stall_ms`: the longest time the output watermark stood still while records arrived: at
  each record, the time since the output watermark last rose (or since the first record).
- `delay_clock`: which clock those times are read on. A row's processing time is its `proc_ms`
  (the latest reading, as the pipeline keeps it). An instance whose rows carry no `proc_ms` has no
  processing clock, so its clock is the largest event time it has received so far: the time a
  source replaying in real time would show. `proc_ms`, `event_ms`, or `mixed` across instances.

Pure: no streamlit, pyspark or plotly.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow.compute as pc

from wmviz.analysis.sweep_count import Counts, count_combination, instance_rows
from wmviz.core.errors import BadInputError
from wmviz.core.fieldrules import setters_of
from wmviz.core.scenario import Kind, ScenarioConfig, Trace, WindowConfig
from wmviz.core.settings import MAX_SWEEP_COMBINATIONS
from wmviz.core.timetext import duration
from wmviz.timeline.local import instance_groups
from wmviz.trace.config_write import replace_field
from wmviz.trace.quote import show
from wmviz.trace.rowtable import grouped_table
from wmviz.trace.timecells import parse_duration_ms

DEFAULT_MAX_COMBINATIONS = MAX_SWEEP_COMBINATIONS.default
COUNTER_COLUMNS = (
    "records",
    "late_dropped",
    "late_share",
    "firings",
    "firing_delay_p50_ms",
    "firing_delay_p95_ms",
    "output_stall_ms",
    "delay_clock",
)
"""The columns after the varied fields, in order."""


class SweepError(BadInputError, ValueError):
    """A `--vary` that cannot be read, or a grid over the budget; the message names it."""


def max_combinations() -> int:
    """The most combinations one sweep may run ($WMVIZ_MAX_SWEEP_COMBINATIONS, 256)."""
    return MAX_SWEEP_COMBINATIONS.get()


# ---- the grid ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Vary:
    """One varied field: its dotted config path and the values it takes, in the order given."""

    path: str
    values: tuple[Any, ...]


_WORDS: dict[str, Any] = {"none": None, "null": None, "true": True, "false": False}


def parse_value(text: str) -> Any:
    """A value as typed: `none`, `true`/`false`, a whole number of milliseconds or a duration
    (`5s`, `200ms`, `1m`, `-5s`); anything else stays text (`count`, `periodic`), and the config's
    own rule judges it."""
    cleaned = text.strip()
    if cleaned.lower() in _WORDS:
        return _WORDS[cleaned.lower()]
    sign, body = (-1, cleaned[1:]) if cleaned.startswith("-") else (1, cleaned)
    try:
        return sign * parse_duration_ms(body, "value")
    except ValueError:
        return cleaned


def parse_vary(text: str) -> Vary:
    """`FIELD=V1,V2,…` as a `Vary`; a `SweepError` naming the option for a malformed one."""
    path, eq, listed = text.partition("=")
    path = path.strip()
    if not eq or not path:
        raise SweepError(
            f"--vary {text!r}: expected FIELD=V1,V2,… such as generator.out_of_orderness_ms=0,5s"
        )
    parts = [part.strip() for part in listed.split(",")]
    if not listed.strip() or any(not part for part in parts):
        raise SweepError(f"--vary {path}: an empty value in {listed!r}; expected V1,V2,…")
    values = tuple(parse_value(part) for part in parts)
    for i, value in enumerate(values):
        # Python's True == 1: a duplicate is the same value of the same type (the field's rule
        # then says what is wrong with `true` for a number).
        if any(type(other) is type(value) and other == value for other in values[:i]):
            raise SweepError(f"--vary {path}: {show(parts[i])} is listed twice")
    return Vary(path, values)


def grid(varies: Sequence[Vary]) -> list[tuple[Any, ...]]:
    """Every combination of the varied values, the first field changing slowest; over the budget
    is a `SweepError` (checked before the grid is built)."""
    paths = [v.path for v in varies]
    for i, path in enumerate(paths):
        if path in paths[:i]:
            raise SweepError(f"--vary {path} is given twice; list all its values in one --vary")
    total = grid_size(varies)
    budget = max_combinations()
    if total > budget:
        sizes = " × ".join(str(len(v.values)) for v in varies) + " = " if len(varies) > 1 else ""
        raise SweepError(
            f"{sizes}{total:,} combinations are more than a sweep may run: {budget:,} "
            "(WMVIZ_MAX_SWEEP_COMBINATIONS)"
        )
    return list(itertools.product(*(v.values for v in varies)))


def grid_size(varies: Sequence[Vary]) -> int:
    """How many combinations the varied values make (nothing built)."""
    return math.prod(len(v.values) for v in varies)


def default_grid(trace: Trace) -> list[str]:
    """The `FIELD=V1,V2,…` lines a sweep of this trace starts from, on the trace's own time scale.

    A grid in seconds says nothing on a trace whose times are milliseconds apart: every bound holds
    the watermark behind every window end, and nothing fires. The scale is how far records arrive
    behind the newest event time before them on their instance: 0, its median, its 90th percentile
    and its largest (which covers every record); in a trace in event-time order, the gaps between
    its record times instead. The out-of-orderness is varied when the config has a DataStream
    generator, the delay of a SQL WATERMARK `col - INTERVAL …` (`watermark_delay_ms`) when it has a
    SQL one (and each input's own, `generators.L.…`), the allowed lateness when its operator is a
    window. A SQL expression of another form has no delay to vary: no line for it."""
    scale = _disorder_ms(trace)
    lines = []
    generator = trace.config.generator
    if generator is not None and generator.style == "datastream":
        lines.append(_line("generator.out_of_orderness_ms", scale, (0.5, 0.9, 1.0)))
    sections = {"generator": generator, **{f"generators.{k}": g for k, g in trace.config.generators.items()}}
    for where, section in sections.items():
        if section is not None and setters_of(section)["watermark_delay_ms"].read(section) is not None:
            lines.append(_line(f"{where}.watermark_delay_ms", scale, (0.5, 0.9, 1.0)))
    if isinstance(trace.config.operator, WindowConfig):
        lines.append(_line("operator.allowed_lateness_ms", scale, (0.5, 1.0)))
    return lines


def _line(path: str, scale: np.ndarray, shares: tuple[float, ...]) -> str:
    at = [int(np.quantile(scale, q, method="inverted_cdf")) for q in shares] if scale.size else []
    picked = [0] + [_two_digits(ms) for ms in at]
    return f"{path}=" + ",".join(duration(ms) for ms in dict.fromkeys(picked))


def _two_digits(ms: int) -> int:
    """`ms` rounded down to two significant digits (1,234 → 1,200): a bound a person would type."""
    step = 10 ** max(len(str(ms)) - 2, 0)
    return ms // step * step


def _disorder_ms(trace: Trace) -> np.ndarray:
    """The positive distances of records behind the newest event time before them, per instance;
    without any, the positive gaps between consecutive distinct record times."""
    behind: list[np.ndarray] = []
    gaps: list[np.ndarray] = []
    for _, rows in instance_groups(grouped_table(trace.rows)):
        records = pc.equal(rows.column("kind"), Kind.RECORD.value)
        times = pc.filter(
            rows.column("event_ms"), pc.and_kleene(records, pc.is_valid(rows.column("event_ms")))
        )
        event = times.to_numpy(zero_copy_only=False).astype(np.int64)
        if event.size:
            delay = np.maximum.accumulate(event) - event
            behind.append(delay[delay > 0])
            steps = np.diff(np.unique(event))
            gaps.append(steps[steps > 0])
    found = np.concatenate(behind) if behind else np.zeros(0, np.int64)
    if not found.size and gaps:
        found = np.concatenate(gaps)
    return found


def combination_config(
    base: ScenarioConfig, varies: Sequence[Vary], values: Sequence[Any], source: str = "--vary"
) -> ScenarioConfig:
    """`base` with each varied field set, through `replace_field` (a `TraceValidationError` names
    the path of a field or value the config refuses)."""
    config = base
    for vary, value in zip(varies, values, strict=True):
        config = replace_field(config, vary.path, value, source)
    return config


def sweep_configs(base: ScenarioConfig, varies: Sequence[Vary]) -> list[ScenarioConfig]:
    """Every combination's config, in grid order, all validated before any runs."""
    return [combination_config(base, varies, values) for values in grid(varies)]


# ---- the table ---------------------------------------------------------------------------------


def nearest_rank(values: Sequence[int], share: float) -> int | None:
    """The nearest-rank percentile (the smallest value with at least `share` of them at or below)."""
    if not values:
        return None
    ordered = sorted(values)
    return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


def table_row(varies: Sequence[Vary], values: Sequence[Any], counts: Counts) -> dict[str, Any]:
    """One combination's row: the varied fields by path, then `COUNTER_COLUMNS`."""
    row: dict[str, Any] = {v.path: value for v, value in zip(varies, values, strict=True)}
    clocks = sorted(counts.clocks)
    row.update(
        records=counts.records,
        late_dropped=counts.dropped,
        late_share=counts.dropped / counts.records if counts.records else 0.0,
        firings=counts.firings,
        firing_delay_p50_ms=nearest_rank(counts.delays, 0.50),
        firing_delay_p95_ms=nearest_rank(counts.delays, 0.95),
        output_stall_ms=counts.stall_ms,
        delay_clock=clocks[0] if len(clocks) == 1 else ("mixed" if clocks else None),
    )
    return row


Progress = Callable[[int, int], None]


def run_sweep(trace: Trace, varies: Sequence[Vary], progress: Progress | None = None) -> list[dict[str, Any]]:
    """The sweep's table in this process: one row per combination, in grid order.

    Every combination's config is validated before the first runs; `progress(done, total)` is
    called after each combination.
    """
    combos = grid(varies)
    configs = [combination_config(trace.config, varies, values) for values in combos]
    groups = instance_rows(trace)
    table = []
    for done, (values, config) in enumerate(zip(combos, configs, strict=True), start=1):
        table.append(table_row(varies, values, count_combination(config, trace.valve_channels, groups)))
        if progress is not None:
            progress(done, len(combos))
    return table


def _latency_key(row: dict[str, Any]) -> tuple[float, float]:
    p95, p50 = row["firing_delay_p95_ms"], row["firing_delay_p50_ms"]
    return (math.inf if p95 is None else p95, math.inf if p50 is None else p50)


def recommend(table: Sequence[dict[str, Any]], target_late_share: float) -> dict[str, Any] | None:
    """The lowest-latency row (p95 firing delay, then p50, then grid order) whose late share is at
    most the target, or None when none meets it. A row that fired nothing has no latency: it is
    chosen only when no row that fired meets the target."""
    meeting = [row for row in table if row["late_share"] <= target_late_share]
    return min(meeting, key=_latency_key) if meeting else None
