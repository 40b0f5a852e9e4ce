"""Drive one SQL operator of the core as the window differential tests against real Flink SQL do
(kept apart from tests/support/support_sql_ops.py, which main gained meanwhile; the two can be folded
into one when merged): an
`InstancePipeline` whose config is the operator alone (no generator), fed per step the step's
input rows as RECORD rows (payload = the row's columns) and then, when it changed, the watermark
the real run reports for the operator's input node at that step.

`run_steps` returns, per step, the operator's output rows and its late-drop count (the `Dropped`
events Flink counts in `numLateRecordsDropped`), which the tests compare with the oracle's lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.operator_log import Dropped
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import Kind, ScenarioConfig, TraceRow
from wmviz.core.sql_rows import RowFate, SqlOutput
from wmviz.core.types import Profile


@dataclass
class Step:
    """One step's input: records (columns, event time in ms) and then a watermark, if any."""

    records: Sequence[tuple[Mapping[str, object], int]] = ()
    watermark_ms: int | None = None


@dataclass
class StepOutcome:
    outputs: list[SqlOutput] = field(default_factory=list)
    late_dropped: int = 0
    fates: list[RowFate] = field(default_factory=list)


def pipeline_of(config: SqlOperatorKind) -> InstancePipeline:
    scenario = ScenarioConfig(name="sql operator", channels={"0": 1}, operator=config)  # type: ignore[arg-type]
    return InstancePipeline("0", scenario, Profile.FLINK_1X_2X, {"0": 1}, set())


def run_steps(config: SqlOperatorKind, steps: Iterable[Step]) -> list[StepOutcome]:
    """Every step's outputs, late-drop count and row fates, in step order."""
    pipeline = pipeline_of(config)
    number = 0
    out: list[StepOutcome] = []
    for step in steps:
        rows: list[TraceRow] = []
        for columns, event_ms in step.records:
            number += 1
            payload = tuple(columns.items())
            rows.append(TraceRow(row=number, kind=Kind.RECORD, channel=0, event_ms=event_ms, payload=payload))
        if step.watermark_ms is not None:
            number += 1
            rows.append(TraceRow(row=number, kind=Kind.WATERMARK, channel=0, watermark_ms=step.watermark_ms))
        outcome = StepOutcome()
        for row in rows:
            pipeline.run_row(row, explain=False)
            for event in pipeline.step_log.timeline:
                if isinstance(event, SqlOutput):
                    outcome.outputs.append(event)
                elif isinstance(event, Dropped) and event.late:
                    outcome.late_dropped += 1
                elif isinstance(event, RowFate):
                    outcome.fates.append(event)
        out.append(outcome)
    return out
