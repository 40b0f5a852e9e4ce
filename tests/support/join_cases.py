"""Adapter from interval_join_cases.json's compact form to real traces, and back to its notation."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import CONFORMANCE, load_cases
from wmviz.core.operator_log import JoinOutput, OutputWatermark
from wmviz.core.simulate import simulate
from wmviz.core.step_result import StepResult
from wmviz.trace.readers import read_trace


def join_cases() -> list[dict]:
    """tests/data/conformance/interval_join_cases.json, the 22 interval-join scenarios."""
    return load_cases(CONFORMANCE / "interval_join_cases.json")


def case_config(case: dict) -> dict:
    """The scenario config of a case, in trace-format.md names."""
    c = case["config"]
    operator = {
        "type": "interval_join",
        "join": c["join"].lower(),
        "lower_ms": c["lo"],
        "upper_ms": c["hi"],
        "min_cleanup_interval_ms": c["min_cleanup"],
        "join_time": c["join_time"],
    }
    if "delay" in c:
        operator["early_fire_delay_ms"] = c["delay"]
        operator["time_mode"] = c.get("time_mode", c["join_time"])
    return {"name": case["name"], "channels": {"L": 1, "R": 1}, "operator": operator}


def case_rows(case: dict) -> list[list[dict]]:
    """Trace rows for each case step (a `wm` step advances both inputs: two rows)."""
    steps = []
    clock = 0
    proc_rows = case["config"]["join_time"] == "proctime" or case["config"].get("time_mode") == "proctime"
    for inp in case["inputs"]:
        if "side" in inp:
            row = {"kind": "record", "input": inp["side"], "channel": 0, "key": "k", "value": inp["id"]}
            if "t" in inp:
                row["event_ms"] = inp["t"]
            if proc_rows:
                row["proc_ms"] = clock  # the case's rows arrive at the current clock
            steps.append([row])
        elif "proc" in inp:
            clock = inp["proc"]
            steps.append([{"kind": "proctime", "proc_ms": inp["proc"]}])
        else:
            sides = {"wm": ("L", "R"), "wm_l": ("L",), "wm_r": ("R",)}
            name = next(k for k in sides if k in inp)
            steps.append(
                [
                    {"kind": "watermark", "input": s, "channel": 0, "watermark_ms": inp[name]}
                    for s in sides[name]
                ]
            )
    return steps


def run_case(case: dict, tmp_path: Path) -> list[list[StepResult]]:
    """Write the case as a JSON Lines trace, read it back validated, simulate; results per case step."""
    steps = case_rows(case)
    path = tmp_path / "case.jsonl"
    lines = [json.dumps({"config": case_config(case)})] + [json.dumps(r) for rows in steps for r in rows]
    path.write_text("\n".join(lines) + "\n")
    results = list(simulate(read_trace(path), explain=True))
    grouped, i = [], 0
    for rows in steps:
        grouped.append(results[i : i + len(rows)])
        i += len(rows)
    return grouped


def row_label(row, clock_at_row: dict[int, int]) -> str:
    """`id@t`: the case's notation (a processing-time row's time is the clock at its arrival)."""
    t = row.event_ms if row.event_ms is not None else clock_at_row[row.row]
    return f"{row.value}@{t}"


def notation(results: list[StepResult], clock_at_row: dict[int, int]) -> dict:
    """One case step's outputs and timers in interval_join_cases.json's notation."""
    out, registered, fired, fired_proc = [], [], [], []
    for r in results:
        for o in r.emit:
            if isinstance(o, OutputWatermark):
                out.append({"wm": o.watermark_ms})
            elif isinstance(o, JoinOutput):
                out.append(
                    {
                        "kind": o.kind.value,
                        "left": row_label(o.left, clock_at_row) if o.left else None,
                        "right": row_label(o.right, clock_at_row) if o.right else None,
                        "cause": o.cause.value,
                    }
                )
        for reg in r.timers_registered:
            item = {
                "kind": "early" if reg.purpose == "early_fire" else reg.purpose,
                "at": reg.timer.timestamp_ms,
            }
            if reg.timer.domain.value == "processing":
                item["domain"] = "processing"
            registered.append(item)
        for f in r.timers_fired:
            (fired_proc if f.timer.domain.value == "processing" else fired).append(f.timer.timestamp_ms)
    return {
        "out": out,
        "timers_registered": registered,
        "timers_fired": fired,
        "timers_fired_processing": fired_proc,
    }
