"""Drive one SQL operator of the core as a real Flink SQL run fed it, and read the run's answer
in the same shape, so a differential test compares the two step by step (generic for any SQL
operator config; see tests/flink/test_sql_session_flink.py).

wmviz's side: an `InstancePipeline` whose config is the operator alone (no generator), fed per
input line a RECORD row (payload = the line's columns, event_ms = its time attribute) and, when
the real run reports the operator's input watermark changing at that step, a WATERMARK row with
the value; at the end (step = number of lines) the end-of-input watermark. The oracle's side
(`tools.flink.sql.run` events): the sink rows of each step and the `numLateRecordsDropped` deltas
of the operator's node.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.operator_log import Dropped
from wmviz.core.scenario import Kind, ScenarioConfig, Trace, TraceRow
from wmviz.core.simulate import simulate
from wmviz.core.sql_rows import RowFate, SqlOutput
from wmviz.sql.values import cell_ms

MAX_MS = 2**63 - 1


@dataclass
class StepAnswer:
    """What one step (one input line, or the end of input) produced, in comparable form."""

    outputs: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """(changelog kind, values by field), in emission order."""
    late_dropped: int = 0
    fates: list[RowFate] = field(default_factory=list)


@dataclass(frozen=True)
class Line:
    """One input line as the operator sees it: its columns and its time attribute in epoch ms."""

    columns: Mapping[str, Any]
    event_ms: int


def timestamp_ms(text: str) -> int:
    """A `TIMESTAMP(3)` cell's text (as the rows file and the sink write it) in epoch ms."""
    return cell_ms(text, "TIMESTAMP", "UTC")


def lines_of(rows: Sequence[dict[str, Any]], time_column: str) -> list[Line | None]:
    """The rows file's lines as steps: a row line as its `Line`, a partition count line (a step of
    the run too, carrying no row) as None."""
    return [Line(r["row"], timestamp_ms(r["row"][time_column])) if "row" in r else None for r in rows]


def drive(
    config: SqlOperatorKind, lines: Sequence[Line | None], watermarks: Mapping[int, int]
) -> list[StepAnswer]:
    """Run the operator on `lines`, the watermark `watermarks[step]` after the record of that step
    (a step = the line's index; `len(lines)` is the end of input). One answer per step."""
    trace_rows: list[TraceRow] = []
    step_of_row: list[int] = []
    for step in range(len(lines) + 1):
        line = lines[step] if step < len(lines) else None
        if line is not None:
            payload = tuple(line.columns.items())
            trace_rows.append(
                TraceRow(
                    row=len(trace_rows), kind=Kind.RECORD, channel=0, event_ms=line.event_ms, payload=payload
                )
            )
            step_of_row.append(step)
        if step in watermarks:
            trace_rows.append(
                TraceRow(row=len(trace_rows), kind=Kind.WATERMARK, channel=0, watermark_ms=watermarks[step])
            )
            step_of_row.append(step)
    trace = Trace("oracle-driven", tuple(trace_rows), ScenarioConfig(operator=config), {("0", "0"): 1})
    answers = [StepAnswer() for _ in range(len(lines) + 1)]
    for result in simulate(trace):
        answer = answers[step_of_row[result.row.row]]
        for event in result.events:
            if isinstance(event, SqlOutput):
                answer.outputs.append((event.kind.value, dict(event.values)))
            elif isinstance(event, Dropped) and event.late:
                answer.late_dropped += 1
            elif isinstance(event, RowFate):
                answer.fates.append(event)
    return answers


def oracle_answers(
    events: Sequence[dict[str, Any]], sink: str, node: int, steps: int, convert: Callable[[str, Any], Any]
) -> list[StepAnswer]:
    """The real run's answer per step for the operator of plan node `node` writing to `sink`
    (values through `convert(field, value)`)."""
    answers = [StepAnswer() for _ in range(steps + 1)]
    for event in events:
        if event.get("sink") == sink:
            row = {name: convert(name, value) for name, value in event["row"].items()}
            answers[event["step"]].outputs.append((event["kind"], row))
        elif event.get("metric") == "numLateRecordsDropped" and f"[{node}]" in event["operator"]:
            answers[event["step"]].late_dropped += event["delta"]
    return answers


def input_watermarks(events: Sequence[dict[str, Any]], input_node: int) -> dict[int, int]:
    """The watermark the operator's input node reported at each step it changed."""
    return {
        e["step"]: e["watermark"]
        for e in events
        if "watermark" in e and "split" not in e and e["node"] == input_node
    }


def project(answers: Sequence[StepAnswer], fields: Sequence[str]) -> list[list[tuple[str, dict[str, Any]]]]:
    """Each step's outputs cut to the sink's fields (the sink's projection, mapped by field name)."""
    return [[(kind, {f: values[f] for f in fields}) for kind, values in a.outputs] for a in answers]
