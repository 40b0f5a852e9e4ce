"""The timeline's typed edge: meta.json read once into a `TimelineMeta`, a bad field named."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import paths
from wmviz.core.types import Profile
from wmviz.timeline.local import build_timeline_local
from wmviz.timeline.memory import MemoryTimeline
from wmviz.timeline.meta import TimelineError, TimelineMeta, TimelineSource
from wmviz.timeline.store import META, Timeline
from wmviz.trace.readers import read_trace

DATA = paths.DATA


def _timeline(tmp_path: Path) -> Path:
    trace = read_trace(DATA / "kafka-rebalance.csv", DATA / "kafka-rebalance.json")
    build_timeline_local(trace, tmp_path / "tl", Profile.FLINK_1X_2X)
    return tmp_path / "tl"


def test_meta_is_read_once_and_typed(tmp_path: Path) -> None:
    timeline = Timeline(_timeline(tmp_path))
    meta = timeline.meta
    assert isinstance(meta, TimelineMeta)
    assert meta.profile is Profile.FLINK_1X_2X and meta.engine == "local"
    assert meta.steps == sum(meta.instances.values()) > 0
    assert all(isinstance(k, tuple) and len(k) == 2 for k in meta.valve_channels)
    assert meta.refs()["config"] is meta.config
    with pytest.raises(TypeError):
        meta.instances["0"] = 1  # type: ignore[index]
    source: TimelineSource = timeline  # both kinds satisfy the protocol
    assert source.path == timeline.path


@pytest.mark.parametrize(
    ("field", "value", "said"),
    [
        ("profile", "flink-0", "field profile"),
        ("profile", None, "field profile: missing"),
        ("instances", {"0": "ten"}, "field instances"),
        ("keyframe_every", True, "field keyframe_every: bool, not int"),
        ("keyframe_every", 0, "field keyframe_every: 0"),
        ("valve_channels", [["0", "0"]], "field valve_channels"),
        ("config", {"generator": {"emit": "sometimes"}}, "field config"),
    ],
)
def test_a_bad_field_is_named_with_its_file(tmp_path: Path, field: str, value: object, said: str) -> None:
    folder = _timeline(tmp_path)
    raw = json.loads((folder / META).read_text())
    if value is None:
        del raw[field]
    else:
        raw[field] = value
    (folder / META).write_text(json.dumps(raw))
    with pytest.raises(TimelineError) as caught:
        Timeline(folder)
    assert str(folder / META) in str(caught.value) and said in str(caught.value)


def test_a_memory_timeline_swaps_in_a_new_meta_as_steps_land(tmp_path: Path) -> None:
    disk = Timeline(_timeline(tmp_path))
    memory = MemoryTimeline(disk.meta.with_steps({}))
    first = memory.meta
    steps = disk.table("steps")
    memory.add({"steps": steps.slice(0, 2)})
    assert first.instances == {} and memory.meta.steps == 2 and memory.path is None
    source: TimelineSource = memory
    assert source.meta is memory.meta
