"""Simulate one instance and record its timeline: the unit of work both engines run.

The local engine calls `run_instance` for each instance in turn; the Spark engine calls it inside
each task for the instances of its partition. Either way the same pipeline processes the same
rows in the same order, so both write the same tables.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pyarrow as pa

from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import Kind, ScenarioConfig, TraceRow
from wmviz.core.simulate import instance_channels, manual_channels_of
from wmviz.core.types import Emission, Profile, Status
from wmviz.timeline.recorder import InstanceRecorder
from wmviz.timeline.valve_recorder import ValveOnlyRecorder
from wmviz.trace.rowtable import column_cells, decode_rows


@dataclass(frozen=True)
class RunSpec:
    """Everything a run needs besides the rows: small, immutable and picklable (it travels to
    Spark's workers once per task)."""

    config: ScenarioConfig
    profile: Profile
    valve_channels: tuple[tuple[str, str, int], ...]
    keyframe_every: int
    fast: bool = True
    """Valve-only instances take `process_valve_only` (tests compare it with the general path)."""

    @classmethod
    def of(
        cls,
        config: ScenarioConfig,
        profile: Profile,
        valve_channels: Mapping[tuple[str, str], int],
        keyframe_every: int,
        fast: bool = True,
    ) -> RunSpec:
        channels = tuple((i, n, c) for (i, n), c in sorted(valve_channels.items()))
        return cls(config, profile, channels, keyframe_every, fast)

    @property
    def refs(self) -> dict[str, object]:
        """What keyframes store by name rather than by value (meta.json holds it once)."""
        return {"config": self.config, "profile": self.profile}

    def channels_of(self, instance: str) -> dict[str, int]:
        counts = {(i, n): c for i, n, c in self.valve_channels if i == instance}
        return instance_channels(counts, self.config, instance)


def new_pipeline(
    spec: RunSpec,
    instance: str,
    rows: Sequence[TraceRow],
    manual: set[tuple[str, int]] | None = None,
) -> InstancePipeline:
    """A fresh pipeline for `instance`, whose whole trace is `rows` (with a generator, the channels
    carrying explicit watermarks are the ones without one). `manual`, when given, is
    `manual_channels_of(rows)` computed once by a caller that runs the same rows many times."""
    if spec.config.generator is None:
        manual = set()
    elif manual is None:
        manual = manual_channels_of(rows)
    return InstancePipeline(instance, spec.config, spec.profile, spec.channels_of(instance), manual)


def run_instance(spec: RunSpec, instance: str, rows: pa.Table) -> dict[str, pa.Table]:
    """The timeline tables of one instance, whose ROW_SCHEMA `rows` are in arrival order."""
    if spec.fast and spec.config.valve_only:
        return _run_valve_only(spec, instance, rows)
    trace_rows = decode_rows(rows)
    pipeline = new_pipeline(spec, instance, trace_rows)
    recorder = InstanceRecorder(pipeline, spec.keyframe_every, spec.refs)
    run_row, record = pipeline.run_row, recorder.record
    for step, row in enumerate(trace_rows):
        run_row(row, explain=False)
        record(pipeline, step)
    return recorder.tables(rows)


_VALUE_CELLS = ("channel", "watermark_ms", "proc_ms")


def _run_valve_only(spec: RunSpec, instance: str, rows: pa.Table) -> dict[str, pa.Table]:
    """No generator and no operator: the pipeline's valve-only entry point, fed the cells it reads
    straight from the columns (no TraceRow is built)."""
    pipeline = InstancePipeline(instance, spec.config, spec.profile, spec.channels_of(instance), set())
    recorder = ValveOnlyRecorder(pipeline, spec.keyframe_every, spec.refs)
    process, record = pipeline.process_valve_only, recorder.record
    out: list[Emission] = []
    kinds = column_cells(rows["kind"], Kind)  # an Enum called with a value gives its member
    statuses = column_cells(rows["status"], Status)
    inputs = column_cells(rows["input"])
    channels, watermarks, clocks = (rows.column(name).to_pylist() for name in _VALUE_CELLS)
    for step, (kind, input_name, channel, watermark_ms, status, proc_ms) in enumerate(
        zip(kinds, inputs, channels, watermarks, statuses, clocks, strict=True)
    ):
        out.clear()
        outcome = process(kind, input_name, channel, watermark_ms, status, proc_ms, out)
        record(pipeline, step, input_name, channel, outcome, out)
    return recorder.tables(rows)
