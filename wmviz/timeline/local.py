"""The local engine: simulate a whole trace in this process, instance after instance, and write its
timeline. Each instance's rows are taken from the validated row table and run by `run_instance`,
the same function the Spark engine's tasks run."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wmviz.core.scenario import Trace
from wmviz.core.types import Profile
from wmviz.timeline.runner import RunSpec, run_instance
from wmviz.timeline.store import TimelineWriter, timeline_meta_fields, write_meta
from wmviz.trace.config_write import config_to_dict
from wmviz.trace.rowtable import grouped_table

DEFAULT_KEYFRAME_EVERY = 1000


def instance_groups(rows: pa.Table) -> Iterator[tuple[str, pa.Table]]:
    """Each instance's rows of a table grouped by instance (`grouped_table`), as zero-copy slices."""
    if not rows.num_rows:
        return
    rows = rows.combine_chunks()
    codes = pc.dictionary_encode(rows.column("instance")).combine_chunks()
    indices = codes.indices.to_numpy(zero_copy_only=False)
    bounds = [0, *(np.flatnonzero(indices[1:] != indices[:-1]) + 1).tolist(), len(indices)]
    names = codes.dictionary.to_pylist()
    for start, end in itertools.pairwise(bounds):
        yield names[indices[start]], rows.slice(start, end - start)


def timeline_meta(
    trace: Trace, profile: Profile, keyframe_every: int, engine: str, steps: dict[str, int]
) -> dict[str, Any]:
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
) -> dict[str, Any]:
    """Simulate `trace` in-process and write its timeline to `out_dir`; returns the meta."""
    chosen = profile or trace.config.profile
    spec = RunSpec.of(trace.config, chosen, trace.valve_channels, keyframe_every, fast)
    rows = grouped_table(trace.rows)
    writer = TimelineWriter(Path(out_dir))
    steps: dict[str, int] = {}
    done, total = 0, rows.num_rows
    for instance, instance_rows in instance_groups(rows):
        writer.add(run_instance(spec, instance, instance_rows))
        steps[instance] = instance_rows.num_rows
        done += instance_rows.num_rows
        if progress is not None:
            progress(done, total)
    counts = writer.finish()
    fields = timeline_meta(trace, chosen, keyframe_every, "local", steps)
    return write_meta(Path(out_dir), counts, fields, writer.files())
