"""Write samples as a Prometheus `query_range` response with the labels of Flink's Prometheus reporter.

The shape follows Prometheus' documented HTTP API (`/api/v1/query_range`: `status`, `data.resultType`
"matrix", `data.result[]` of `{"metric": {labels}, "values": [[unix seconds, "value"], ...]}`) and
the series names and labels of Flink's PrometheusReporter (`flink_taskmanager_job_task_operator_*`
with `job_id`, `job_name`, `task_id`, `task_name`, `task_attempt_id`, `task_attempt_num`,
`subtask_index`, `operator_id`, `operator_name`, `tm_id`, `host`). Values are strings of floats, as
Prometheus writes them, so Long.MIN_VALUE arrives as "-9223372036854775808".
"""

from __future__ import annotations

import json
from pathlib import Path

from wmviz.core.types import MAX_MS, MIN_MS


def _value(ms: int) -> str:
    return "-9223372036854775808" if ms == MIN_MS else "9223372036854775807" if ms == MAX_MS else str(ms)


def write_query_range(samples: list[dict], path: Path, *, upstream: str, vertex: str, operator: str) -> None:
    """One series per (metric, subtask, attempt) of the recorder's raw samples (`--samples` lines)."""
    base = {"job_id": "9f1c2b7a0d3e4f5a6b7c8d9e0f1a2b3c", "job_name": "skewed-sources", "host": "127.0.0.1",
            "tm_id": "127_0_0_1:37145-4b8f2a"}  # fmt: skip
    series: dict[tuple, dict] = {}

    def add(name: str, labels: dict, t_ms: int, value: str) -> None:
        key = (name, *sorted(labels.items()))
        entry = series.setdefault(key, {"metric": {"__name__": name, **base, **labels}, "values": []})
        entry["values"].append([t_ms / 1000, value])

    for sample in samples:
        t, attempt = sample["time_ms"], str(sample["epoch"])
        up = {"task_name": upstream, "task_id": "bc764cd8ddf7a0cff126f51c16239658",
              "task_attempt_num": attempt, "operator_name": operator,
              "operator_id": "cbc357ccb763df2852fee8c4fc7d55f2"}  # fmt: skip
        for subtask, value in sample["upstream_watermark"].items():
            labels = {**up, "subtask_index": subtask, "task_attempt_id": f"a{attempt}s{subtask}"}
            add("flink_taskmanager_job_task_operator_currentOutputWatermark", labels, t, _value(value))
        for subtask, value in sample["upstream_idle_ms"].items():
            labels = {**up, "subtask_index": subtask, "task_attempt_id": f"a{attempt}s{subtask}"}
            add("flink_taskmanager_job_task_operator_sourceIdleTime", labels, t, str(value))
        for subtask, value in sample["reported"].items():
            labels = {"task_name": vertex, "task_id": "20ba6b65f97481d5570070de90e4e791",
                      "subtask_index": subtask, "task_attempt_num": attempt,
                      "task_attempt_id": f"d{attempt}s{subtask}"}  # fmt: skip
            add("flink_taskmanager_job_task_currentInputWatermark", labels, t, _value(value))
    body = {"status": "success", "data": {"resultType": "matrix", "result": list(series.values())}}
    path.write_text(json.dumps(body, indent=1), encoding="utf-8")
