"""Random access to one instance of a timeline, for a person stepping back and forth.

`Timeline.state_at` scans the Parquet files on every call; a debugger moving one step at a time on a
million-step trace cannot afford that. `InstanceCursor` loads the instance's small tables once (step
columns as Arrow, keyframe blobs, change tables as pandas) and then rebuilds the pipeline after any
step from the nearest keyframe plus at most K−1 in-memory replays, so a step costs milliseconds.
"""

from __future__ import annotations

import bisect
import pickle
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import TraceRow
from wmviz.core.step_result import StepResult
from wmviz.core.types import MIN_MS
from wmviz.timeline.meta import TimelineSource
from wmviz.timeline.tables import STEP_COLUMNS, TABLE_COLUMNS
from wmviz.trace.rowtable import row_from_record

# What a person can jump to, and where in the timeline each one is found.
EVENT_KINDS = ("output watermark", "status change", "timer firing", "retraction", "late drop")


@dataclass(frozen=True)
class Rebuilt:
    """The pipeline after `step`, and what it cost to rebuild (for the UI's footer and the bench)."""

    step: int
    pipeline: InstancePipeline
    keyframe_step: int
    replayed: int


class InstanceCursor:
    """One instance's steps in memory, its state at any step, and where each kind of event happens."""

    def __init__(self, timeline: TimelineSource, instance: str) -> None:
        self.timeline = timeline
        self.instance = instance
        steps = timeline.table("steps", instance)
        if steps is None or steps.num_rows == 0:
            raise KeyError(f"instance {instance!r} is not in this timeline")
        self.steps = steps.select([c for c in STEP_COLUMNS if c in steps.column_names])
        self.count = self.steps.num_rows
        frames = timeline.table("keyframes", instance)
        assert frames is not None, "a timeline always has keyframes"
        self._keyframe_steps = frames.column("step").to_pylist()
        self._keyframe_blobs = frames.column("state")
        self.channels = _frame(timeline, "channels", instance)
        self.heap = _frame(timeline, "heap", instance)
        self.timers = _frame(timeline, "timers", instance)
        self.outputs = _frame(timeline, "outputs", instance)
        self._cache: Rebuilt | None = None
        self.events = self._find_events()
        self.finished_rows = self._find_finished()

    # --- state ------------------------------------------------------------------------------------

    def row(self, step: int) -> dict[str, Any]:
        """The steps record of `step` (its input and what it caused)."""
        return {name: self.steps.column(name)[step].as_py() for name in self.steps.column_names}

    def trace_row(self, step: int) -> TraceRow:
        """The trace row that arrived at `step`."""
        return row_from_record(self.row(step))

    def state_at(self, step: int) -> Rebuilt:
        """The pipeline after `step` (−1: before the first), from the nearest keyframe at or before it.

        Moving forward from the last answer replays from there instead when that is shorter, so
        playing the trace step by step costs one replayed row per step.
        """
        step = max(-1, min(step, self.count - 1))
        index = bisect.bisect_right(self._keyframe_steps, step) - 1
        keyframe_step = self._keyframe_steps[index]
        cached = self._cache
        if cached is not None and keyframe_step <= cached.step <= step:
            base, start = cached.pipeline, cached.step
            pipeline = (
                pickle.loads(pickle.dumps(base, protocol=pickle.HIGHEST_PROTOCOL)) if start < step else base
            )
        else:
            pipeline, start = (
                self.timeline.decode_keyframe(self._keyframe_blobs[index].as_py()),
                keyframe_step,
            )
        if step > start:
            # One Arrow-to-Python conversion for the whole replay: per-cell access costs 10x more.
            records = self.steps.slice(start + 1, step - start).to_pylist()
            for s, record in enumerate(records, start + 1):
                pipeline.process(s, row_from_record(record), explain=False)
        rebuilt = Rebuilt(step, pipeline, keyframe_step, step - start)
        self._cache = rebuilt
        return rebuilt

    def explain(self, step: int) -> tuple[StepResult, InstancePipeline, Rebuilt]:
        """Step `step` replayed with full accounts (narration), the pipeline after it, and how the
        state before it was rebuilt. Stepping forward keeps the cache one step behind, so each
        step replays one row."""
        before = self.state_at(step - 1)
        pipeline = pickle.loads(pickle.dumps(before.pipeline, protocol=pickle.HIGHEST_PROTOCOL))
        result = pipeline.process(step, self.trace_row(step), explain=True)
        return result, pipeline, before

    # --- navigation -------------------------------------------------------------------------------

    def _find_events(self) -> dict[str, np.ndarray]:
        """Sorted step numbers of each kind in EVENT_KINDS."""
        wm = self.steps.column("output_wm").to_numpy(zero_copy_only=False)
        status = np.asarray(self.steps.column("output_status").to_pylist(), dtype=object)
        previous_wm = np.concatenate(([MIN_MS], wm[:-1]))
        output_change = np.flatnonzero(wm != previous_wm)
        status_steps = set(np.flatnonzero(status != np.concatenate((["ACTIVE"], status[:-1]))).tolist())
        if not self.channels.empty:
            ch = self.channels.sort_values("step", kind="stable")
            changed = ch["status"] != ch.groupby(["input", "channel"])["status"].shift(fill_value="ACTIVE")
            status_steps.update(ch.loc[changed, "step"].tolist())
        fired = self.timers.loc[self.timers["event"] == "fired", "step"] if not self.timers.empty else []
        retractions = self.outputs.loc[self.outputs["kind"] == "-U", "step"] if not self.outputs.empty else []
        dropped = self.steps.column("dropped_json").is_valid().to_numpy(zero_copy_only=False)
        return {
            "output watermark": output_change,
            "status change": np.array(sorted(status_steps), dtype=np.int64),
            "timer firing": np.unique(np.asarray(fired, dtype=np.int64)),
            "retraction": np.unique(np.asarray(retractions, dtype=np.int64)),
            "late drop": np.flatnonzero(dropped),
        }

    def _find_finished(self) -> tuple[np.ndarray, list[tuple[str, int]]]:
        """Steps whose input is a FINISHED status, with their (input, channel)."""
        import pyarrow.compute as pc

        mask = pc.fill_null(pc.equal(self.steps.column("status"), "FINISHED"), False)
        steps = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
        inputs = self.steps.column("input").take(steps).to_pylist()
        channels = self.steps.column("channel").take(steps).to_pylist()
        return steps, list(zip(inputs, channels, strict=True))

    def finished_by(self, step: int) -> set[tuple[str, int]]:
        """(input, channel) pairs that received a FINISHED status at or before `step`."""
        steps, pairs = self.finished_rows
        return set(pairs[: int(np.searchsorted(steps, step, side="right"))])

    def next_event(self, kind: str, step: int) -> int | None:
        """The first step after `step` with an event of `kind`, or None."""
        steps = self.events[kind]
        i = int(np.searchsorted(steps, step, side="right"))
        return int(steps[i]) if i < len(steps) else None

    def previous_event(self, kind: str, step: int) -> int | None:
        """The last step before `step` with an event of `kind`, or None."""
        steps = self.events[kind]
        i = int(np.searchsorted(steps, step, side="left"))
        return int(steps[i - 1]) if i > 0 else None

    # --- history ------------------------------------------------------------------------------------

    def channel_history(self) -> pd.DataFrame:
        """Every channel's changes, with its initial state as step −1 (the watermark chart's input)."""
        initial = self.state_at(-1).pipeline
        rows = [
            {
                "step": -1,
                "input": name,
                "channel": c.channel,
                "watermark_ms": c.watermark_ms,
                "status": c.status.value,
                "aligned": c.aligned,
            }
            for name, valve in initial.valves.items()
            for c in valve.state().channels
        ]
        start = pd.DataFrame(rows, columns=["step", "input", "channel", "watermark_ms", "status", "aligned"])
        changes = self.channels[["step", "input", "channel", "watermark_ms", "status", "aligned"]]
        return pd.concat([start, changes], ignore_index=True) if not changes.empty else start

    def output_history(self) -> pd.DataFrame:
        """The output watermark and status after every step."""
        return pd.DataFrame(
            {
                "step": np.arange(self.count),
                "output_wm": self.steps.column("output_wm").to_numpy(zero_copy_only=False),
                "output_status": self.steps.column("output_status").to_pylist(),
            }
        )


def _frame(timeline: TimelineSource, table: str, instance: str) -> pd.DataFrame:
    arrow = timeline.table(table, instance)
    if arrow is None:
        return pd.DataFrame(columns=list(TABLE_COLUMNS[table]))
    return arrow.to_pandas()
