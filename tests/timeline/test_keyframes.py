"""Keyframes are data, never code: a pipeline's state round-trips exactly, and a keyframe someone
else wrote can name nothing outside `wmviz.core` (a pickle in its place is refused unread)."""

from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest

from wmviz.store.incidents import built_in_incidents
from wmviz.timeline import keyframe
from wmviz.timeline.keyframe import KeyframeError
from wmviz.timeline.local import build_timeline_local
from wmviz.timeline.store import Timeline, TimelineError, row_from_record
from wmviz.trace.readers import read_trace

INCIDENTS = built_in_incidents()


def _timeline(slug: str, tmp_path: Path, every: int = 2) -> Timeline:
    incident = INCIDENTS[slug]
    out = tmp_path / "tl"
    build_timeline_local(read_trace(incident.trace_path, incident.config_path), out, keyframe_every=every)
    return Timeline(out)


@pytest.mark.parametrize("slug", sorted(INCIDENTS))
def test_a_pipeline_restored_from_its_keyframe_goes_on_exactly_as_the_original(slug, tmp_path):
    """Encode the state after every step, decode it, and run the rest of the trace on both: every
    later step's transcript is the same (the operator, its timers and caches included)."""
    timeline = _timeline(slug, tmp_path)
    for instance in timeline.meta.instances:
        steps = timeline.meta.instances[instance]
        for at in range(-1, steps - 1):
            original = timeline.state_at(instance, at).pipeline
            blob = keyframe.encode(original, timeline.meta.refs())
            restored = keyframe.decode(blob, timeline.meta.refs())
            assert keyframe.encode(restored, timeline.meta.refs()) == blob
            records = timeline.table("steps", instance, at + 1, steps - 1).to_pylist()
            for record in records:
                step, row = record["step"], row_from_record(record)
                expected = original.process(step, row, explain=False)
                got = restored.process(step, row, explain=False)
                assert repr(got) == repr(expected), (slug, instance, at, step)


def test_a_keyframe_is_plain_json_that_names_only_core_classes(tmp_path):
    timeline = _timeline("early-fire-left-join", tmp_path)
    blob = keyframe.encode(timeline.state_at("0", 5).pipeline, timeline.meta.refs())
    fmt, body = json.loads(blob)
    assert fmt == keyframe.FORMAT
    names: set[str] = set()

    def walk(value):
        if isinstance(value, dict):
            for tag in ("c", "e"):
                if tag in value:
                    names.add(value[tag])
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(body)
    assert names and names <= set(keyframe.CLASSES), names - set(keyframe.CLASSES)
    assert {"pipeline.InstancePipeline", "valve.Valve", "interval_join.IntervalJoin"} <= names


@pytest.mark.parametrize(
    "body, reason",
    [
        ({"c": "os.system", "n": 0, "a": {}}, "unknown class 'os.system'"),
        ({"c": "builtins.eval", "n": 0, "a": {}}, "unknown class"),
        ({"c": "subprocess.Popen", "n": 0, "st": ["id"]}, "unknown class"),
        ({"e": "types.Status", "v": "__class__"}, "unknown Status"),
        ({"c": "valve.Valve", "n": 0, "a": []}, "malformed Valve"),
        ({"ref": "secrets"}, "did not supply"),
        ({"o": 7}, "before defining it"),
        ({"x": 1}, "unknown class"),
        ({"t": [1], "s": [2], "d": [], "p": "x"}, "unknown shape"),
    ],
)
def test_a_keyframe_naming_anything_outside_wmviz_core_is_refused(body, reason):
    with pytest.raises(KeyframeError, match=reason):
        keyframe.decode(json.dumps([keyframe.FORMAT, body]).encode())


def _explode() -> None:
    raise AssertionError("a keyframe was unpickled")


def test_a_pickle_another_format_or_a_deep_nest_is_refused_unread():
    class Boom:
        def __reduce__(self):  # `_explode` would run on unpickling: decode must never unpickle
            return (_explode, ())

    with pytest.raises(KeyframeError, match="not a keyframe"):
        keyframe.decode(pickle.dumps(Boom()))
    with pytest.raises(KeyframeError, match="wmviz-keyframe/1"):
        keyframe.decode(json.dumps(["wmviz-keyframe/1", None]).encode())
    deep: list = []
    for _ in range(keyframe.MAX_DEPTH + 2):
        deep = [deep]
    with pytest.raises(KeyframeError, match="too deep"):
        keyframe.decode(json.dumps([keyframe.FORMAT, deep]).encode())


def test_only_core_objects_can_be_stored():
    with pytest.raises(KeyframeError, match="cannot store a pathlib"):
        keyframe.encode({"where": Path("/tmp")})


def test_a_timeline_in_another_keyframe_format_is_not_opened(tmp_path):
    timeline = _timeline("flink-38477-zero-output", tmp_path)
    meta_path = timeline.path / "meta.json"
    meta = json.loads(meta_path.read_text())
    meta["keyframe_format"] = "wmviz-keyframe/1"
    meta_path.write_text(json.dumps(meta))
    with pytest.raises(TimelineError, match="keyframes in format 'wmviz-keyframe/1'"):
        Timeline(timeline.path)
