"""`wmviz import prometheus`: a Prometheus `query_range` result of Flink's metrics as samples.

The file is the JSON body Prometheus' HTTP API returns for `GET /api/v1/query_range`:
`{"status": "success", "data": {"resultType": "matrix", "result": [{"metric": {labels},
"values": [[<unix seconds>, "<value>"], ...]}, ...]}}`. Flink's Prometheus reporter names the
series `flink_taskmanager_job_task_operator_<metric>` (operator scope) and
`flink_taskmanager_job_task_<metric>` (task scope), with the labels `job_id`, `job_name`,
`task_name`, `subtask_index`, `task_attempt_num` and, on operator series, `operator_name`.

Three metrics make a trace: the upstream task's operators' `currentOutputWatermark`, the upstream
sources' `sourceIdleTime` (for inferred idleness) and the operator's own `currentInputWatermark`
(the check column: the task-scope series, or else its chain head's operator-scope one). Task
names match as typed or as the reporter filters them (`wmviz.record.names`). With a plan, the
whole job is read instead (`wmviz.record.prometheus_job`). Points are grouped by their
timestamp (a range query's points share the query's step grid), each group is one `Sample`, and
the same `TraceBuilder` as the REST recorder turns them into the trace. A higher
`task_attempt_num` starts a new epoch (the job restarted: fresh valves).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wmviz.core.errors import BadInputError, BadValue
from wmviz.core.settings import MAX_CHANNELS, MAX_SPLITS
from wmviz.core.types import fits_long
from wmviz.record.job import SPLIT_METRICS, is_operator_metric
from wmviz.record.names import chain_parts, name_key, pick_name
from wmviz.record.samples import Sample, Topology, long_from_metric
from wmviz.trace.config import channel_budget_reason, split_budget_reason
from wmviz.trace.jsonline import JsonLineError, loads_strict
from wmviz.trace.quote import show
from wmviz.trace.timecells import ascii_float, ascii_int

TASK_SCOPE = "flink_taskmanager_job_task_"
OPERATOR_SCOPE = "flink_taskmanager_job_task_operator_"
# FLIP-513's split group, `<operator>.split.<id>.watermark`: the key `split` is in the name, the
# split id is the `split` label.
SPLIT_SCOPE = "flink_taskmanager_job_task_operator_split_watermark_"
OUTPUT_WATERMARK = OPERATOR_SCOPE + "currentOutputWatermark"
SOURCE_IDLE_TIME = OPERATOR_SCOPE + "sourceIdleTime"
INPUT_WATERMARK = TASK_SCOPE + "currentInputWatermark"
OPERATOR_INPUT_WATERMARK = OPERATOR_SCOPE + "currentInputWatermark"
WANTED = (OUTPUT_WATERMARK, SOURCE_IDLE_TIME, INPUT_WATERMARK, OPERATOR_INPUT_WATERMARK)
MAX_FILE_BYTES = 512 << 20


def scope_and_metric(name: str) -> tuple[str, str] | None:
    """("task" | "operator" | "split", Flink's metric name) of a series name this import reads."""
    for scope, prefix in (("split", SPLIT_SCOPE), ("operator", OPERATOR_SCOPE), ("task", TASK_SCOPE)):
        if name.startswith(prefix):
            metric = name[len(prefix) :]
            wanted = metric in SPLIT_METRICS if scope == "split" else is_operator_metric(metric)
            return (scope, metric) if wanted else None
    return None


class PrometheusError(BadInputError, ValueError):
    """The file is not a usable query_range matrix; the message names the file and the place."""


@dataclass(frozen=True, slots=True)
class Series:
    """One series of one of the three metrics."""

    metric: str
    task: str
    operator: str
    subtask: int
    attempt: int
    job: str
    points: list[tuple[int, int]]
    split: str | None = None

    @property
    def scope(self) -> str:
        """task, operator or split."""
        found = scope_and_metric(self.metric)
        return found[0] if found else ""

    @property
    def name(self) -> str:
        """Flink's metric name without the scope (currentOutputWatermark, ...)."""
        found = scope_and_metric(self.metric)
        return found[1] if found else self.metric


def load_series(path: Path) -> list[Series]:
    """The series of the watermark metrics (any scope) in a query_range response file."""
    if path.stat().st_size > MAX_FILE_BYTES:
        raise PrometheusError(f"{path.name}: larger than {MAX_FILE_BYTES >> 20} MB")
    try:
        # The readers' JSON bounds: nesting, integer digits, no NaN, no half surrogate pairs.
        body = loads_strict(path.read_text(encoding="utf-8"))
    except (JsonLineError, UnicodeDecodeError) as err:
        raise PrometheusError(f"{path.name}: not JSON ({err})") from None
    data = body.get("data") if isinstance(body, dict) else None
    result = data.get("result") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("resultType") != "matrix" or not isinstance(result, list):
        raise PrometheusError(
            f"{path.name}: expected a query_range response, "
            '{"status": "success", "data": {"resultType": "matrix", "result": [...]}}'
        )
    out = []
    for index, item in enumerate(result):
        where = f"{path.name}: data.result[{index}]"
        labels = item.get("metric", {}) if isinstance(item, dict) else None
        if not isinstance(labels, dict):
            raise PrometheusError(f'{where}: expected {{"metric": {{labels}}, "values": [...]}}')
        name = labels.get("__name__")
        if isinstance(name, str) and scope_and_metric(name) is not None:
            out.append(_series(name, labels, item, where))
    if not out:
        names = sorted({str(i.get("metric", {}).get("__name__")) for i in result if isinstance(i, dict)})
        raise PrometheusError(
            f"{path.name}: none of Flink's watermark metrics ({', '.join(WANTED)}, ...) in the result; "
            f"it has: {names[:20]}"
        )
    splits = {s.split for s in out if s.split is not None}
    if len(splits) > MAX_SPLITS.get():
        raise PrometheusError(f"{path.name}: {split_budget_reason(len(splits))}")
    return out


def _series(name: str, labels: dict[str, Any], item: dict[str, Any], where: str) -> Series:
    """One series of a wanted metric; PrometheusError naming the place if it is malformed."""
    for label in ("task_name", "operator_name", "job_name", "job_id", "split"):
        if label in labels and not isinstance(labels[label], str):
            raise PrometheusError(f"{where}: label {label} is {show(labels[label])}, not a string")
    try:
        subtask = _index(labels["subtask_index"], "subtask_index")
        attempt = _index(labels.get("task_attempt_num") or 0, "task_attempt_num")
        values = item["values"]
        if not isinstance(values, list):
            raise BadValue("values is not a list")
        points = [_point(pair) for pair in values]
    except (KeyError, ValueError) as err:
        raise PrometheusError(
            f"{where}: {err} (each series needs subtask_index and [time, value] pairs)"
        ) from None
    return Series(
        metric=name,
        task=labels.get("task_name", ""),
        operator=labels.get("operator_name", ""),
        subtask=subtask,
        attempt=attempt,
        job=labels.get("job_name", "") or labels.get("job_id", ""),
        points=points,
        split=labels.get("split"),
    )


def _index(value: Any, label: str) -> int:
    """A subtask index or attempt number: a label of ASCII digits, at most a job's parallelism."""
    number = value if isinstance(value, int) and not isinstance(value, bool) else None
    if isinstance(value, str):
        number = ascii_int(value)
    if number is None or number < 0:
        raise BadValue(f"{label} {show(value)} is not a whole number from 0")
    if number >= MAX_CHANNELS.get():
        raise BadValue(f"{label} {number:,}: {channel_budget_reason(number + 1)}")
    return number


def _point(pair: Any) -> tuple[int, int]:
    """A [unix seconds, "value"] pair as (epoch ms, a Java long)."""
    if not isinstance(pair, list) or len(pair) != 2:
        raise BadValue(f"{show(pair)} is not a [time, value] pair")
    seconds, value = pair
    if isinstance(seconds, str):
        seconds = ascii_float(seconds)
    if isinstance(seconds, bool) or not isinstance(seconds, int | float):
        raise BadValue(f"the time {show(seconds)} is not a number of seconds")
    # An int stays exact (and may be too large for a float); a float must be finite to be rounded.
    ms = seconds * 1000
    if (isinstance(ms, float) and not math.isfinite(ms)) or not fits_long(round(ms)):
        raise BadValue(f"the time {show(pair[0])} s is no epoch time of a long's milliseconds")
    return round(ms), long_from_metric(value)


def tasks_by_metric(series: list[Series]) -> str:
    """What the file holds, for an error: each metric's tasks."""
    found: dict[str, set[str]] = defaultdict(set)
    for s in series:
        found[s.metric.removeprefix("flink_taskmanager_job_")].add(s.task)
    return "; ".join(f"{metric}: {sorted(tasks)}" for metric, tasks in sorted(found.items()))


def pick_task(series: list[Series], wanted: str | None, metrics: tuple[str, ...], option: str) -> str:
    """A task name as typed or as the reporter filters it (or a unique part); with `wanted` None,
    the only one reporting one of `metrics`. The error lists what the file holds."""
    tasks = sorted({s.task for s in series if s.metric in metrics})
    try:
        if wanted is not None:
            return pick_name(tasks, wanted, option, f"tasks with {' or '.join(metrics)}")
        if len(tasks) == 1:
            return tasks[0]
        raise BadValue(f"{option} is needed: tasks with {' or '.join(metrics)}: {tasks}")
    except ValueError as err:
        raise PrometheusError(f"{err}. The file has {tasks_by_metric(series)}") from None


def chain_rank(task: str):
    """A series' operator's place in the task's chain (-1: not found in the task name)."""
    chain = [name_key(part) for part in chain_parts(task)]

    def rank(s: Series) -> int:
        key = name_key(s.operator)
        return chain.index(key) if key in chain else -1

    return rank


def samples_of(
    series: list[Series],
    vertex: str | None,
    upstream: str | None,
    edge: str,
    idleness_ms: int | None,
    interval_ms: int,
) -> tuple[Topology, list[Sample]]:
    """The topology and the samples, grouped by time, of the chosen task and its upstream."""
    own = pick_task(series, vertex, (INPUT_WATERMARK, OPERATOR_INPUT_WATERMARK), "--vertex")
    others = [s for s in series if s.task != own]
    up = pick_task(others, upstream, (OUTPUT_WATERMARK,), "--upstream")
    rank = chain_rank(up)

    # The watermark leaving the upstream task is its chain's last operator's output watermark.
    wm_series = [s for s in series if s.task == up and s.metric == OUTPUT_WATERMARK]
    tail = max(rank(s) for s in wm_series)
    wm_series = [s for s in wm_series if rank(s) == tail]
    idle_series = [s for s in series if s.task == up and s.metric == SOURCE_IDLE_TIME]
    own_series = [s for s in series if s.task == own and s.metric == INPUT_WATERMARK]
    if not own_series:
        # The task's input watermark is its chain head's: the lowest-ranked operator reporting it.
        own_rank = chain_rank(own)
        own_series = [s for s in series if s.task == own and s.metric == OPERATOR_INPUT_WATERMARK]
        head = min(own_rank(s) for s in own_series)
        own_series = [s for s in own_series if own_rank(s) == head]
    topology = Topology(
        vertex=own,
        upstream=up,
        parallelism=1 + max(s.subtask for s in own_series),
        upstream_parallelism=1 + max(s.subtask for s in wm_series),
        edge=edge,
        idleness_ms=idleness_ms,
        watermark_interval_ms=interval_ms,
    )
    grid: dict[int, dict[str, dict[int, tuple[int, int]]]] = defaultdict(lambda: defaultdict(dict))
    for group, chosen in (("wm", wm_series), ("idle", idle_series), ("own", own_series)):
        for s in chosen:
            for t, value in s.points:
                # Where two attempts of a subtask overlap, the newer attempt's point wins.
                held = grid[t][group].get(s.subtask)
                if held is None or held[0] <= s.attempt:
                    grid[t][group][s.subtask] = (s.attempt, value)
    samples, epoch, attempt = [], 0, -1
    for t in sorted(grid):
        groups = grid[t]
        newest = max((a for g in groups.values() for a, _ in g.values()), default=attempt)
        if attempt >= 0 and newest > attempt:
            epoch += 1
        attempt = max(attempt, newest)
        samples.append(
            Sample(
                time_ms=t,
                epoch=epoch,
                upstream_watermark={k: v for k, (_, v) in groups["wm"].items()},
                upstream_idle_ms={k: v for k, (_, v) in groups["idle"].items()},
                reported={k: v for k, (_, v) in groups["own"].items()},
            )
        )
    return topology, samples
