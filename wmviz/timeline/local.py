"""The local engine: simulate a whole trace in this process and write its timeline."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from wmviz.core.scenario import Trace
from wmviz.core.simulate import Simulation
from wmviz.core.types import Profile
from wmviz.timeline.records import TimelineRecorder, empty_columns, input_columns
from wmviz.timeline.store import TimelineWriter
from wmviz.trace.config import config_to_dict

DEFAULT_KEYFRAME_EVERY = 1000
_FLUSH_ROWS = 250_000


def timeline_meta_fields(
    source: str,
    config: dict,
    profile: Profile,
    keyframe_every: int,
    engine: str,
    steps: dict[str, int],
    valve_channels: dict[tuple[str, str], int],
) -> dict:
    """What meta.json says about a run (both engines write the same fields)."""
    return {
        "source": source,
        "config": config,
        "profile": profile.value,
        "keyframe_every": keyframe_every,
        "engine": engine,
        "instances": dict(sorted(steps.items())),
        "valve_channels": [[inst, inp, n] for (inst, inp), n in sorted(valve_channels.items())],
    }


def timeline_meta(
    trace: Trace, profile: Profile, keyframe_every: int, engine: str, steps: dict[str, int]
) -> dict:
    """meta.json's fields for an in-memory trace."""
    return timeline_meta_fields(
        trace.source,
        config_to_dict(trace.config),
        profile,
        keyframe_every,
        engine,
        steps,
        trace.valve_channels,
    )


def build_timeline_local(
    trace: Trace,
    out_dir: Path,
    profile: Profile | None = None,
    *,
    keyframe_every: int = DEFAULT_KEYFRAME_EVERY,
    progress: Callable[[int, int], None] | None = None,
    fast: bool = True,
) -> dict:
    """Simulate `trace` in-process and write its timeline to `out_dir`; returns the meta."""
    sim = Simulation(trace, profile)
    writer = TimelineWriter(out_dir)
    columns = empty_columns()
    recorders: dict[str, TimelineRecorder] = {}
    steps: dict[str, int] = {}
    total = len(trace.rows)
    window_start = 0
    for index, row in enumerate(trace.rows):
        # Arrival order as the Spark reader defines it: seq when rows carry one, else the row number.
        order = row.seq if row.seq is not None else row.row
        pipeline = sim.pipeline(row.instance)
        recorder = recorders.get(row.instance)
        if recorder is None:
            recorder = recorders[row.instance] = TimelineRecorder(columns, keyframe_every)
            recorder.start(pipeline)
        step = steps.get(row.instance, 0)
        steps[row.instance] = step + 1
        if fast and pipeline.valve_only:
            out: list = []
            outcome = pipeline.process_valve_only(row, out)
            recorder.record_valve_only(pipeline, step, order, row, outcome, out)
        else:
            recorder.record(pipeline, pipeline.process(step, row, explain=False), order)
        if (index + 1) % _FLUSH_ROWS == 0:
            columns["steps"].update(input_columns(list(trace.rows[window_start : index + 1])))
            window_start = index + 1
            writer.write(columns)
            columns = empty_columns()
            for r in recorders.values():
                r.columns = columns
            if progress is not None:
                progress(index + 1, total)
    columns["steps"].update(input_columns(list(trace.rows[window_start:])))
    writer.write(columns)
    if progress is not None:
        progress(total, total)
    meta = timeline_meta(trace, sim.profile, keyframe_every, "local", steps)
    writer.close(meta)
    return meta
