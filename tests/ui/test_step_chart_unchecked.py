"""The step's chart built without Plotly's validation is the same figure (issue 30, Deliver 3: a key
step's biggest share was building the watermark chart, a third to a half of it Plotly validating
every property): for every built-in incident at its first, middle and last step, the JSON the page
sends, decoded (Plotly packs number arrays as base64 typed arrays), equals the validated figure's.
"""

from __future__ import annotations

import base64
import copy
import json

import numpy as np
import pytest

from wmviz.store.incidents import built_in_incidents
from wmviz.timeline.cursor import InstanceCursor
from wmviz.timeline.local import build_timeline_local
from wmviz.timeline.store import Timeline
from wmviz.view import figures, model
from wmviz.view.step_chart import step_chart, step_chart_spec
from wmviz.view.step_view import figure_json
from wmviz.view.timefmt import TimeFormat


def decoded(value):
    """A figure's JSON as plain values: every `{"dtype", "bdata"}` typed array as its list."""
    if isinstance(value, dict):
        if {"dtype", "bdata"} <= set(value):
            array = np.frombuffer(base64.b64decode(value["bdata"]), dtype=value["dtype"])
            if "shape" in value:
                array = array.reshape([int(n) for n in str(value["shape"]).split(",")])
            return array.tolist()
        return {k: decoded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [decoded(v) for v in value]
    return value


def sent(fig) -> dict:
    return decoded(json.loads(figure_json(fig)))


@pytest.mark.parametrize("slug", sorted(built_in_incidents()))
def test_the_unchecked_chart_is_the_checked_one(tmp_path, slug):
    build_timeline_local(built_in_incidents()[slug].trace(), tmp_path / "timeline")
    timeline = Timeline(tmp_path / "timeline")
    t = TimeFormat()
    for instance in sorted(timeline.meta.instances)[:2]:
        cursor = InstanceCursor(timeline, instance)
        for step in sorted({0, cursor.count // 2, cursor.count - 1}):
            _, pipeline, _ = cursor.explain(step)
            views = model.valve_views(cursor, pipeline, step, timeline.meta.profile, t)
            spec = step_chart_spec(cursor, step, views, t)
            checked = sent(step_chart(cursor, step, views, t))
            assert sent(figures.unchecked_figure(spec)) == checked, (slug, instance, step)
            # The comparison bites: one channel value moved is another figure.
            moved = copy.deepcopy(spec)
            line = next(trace for trace in moved["data"] if len(trace.get("y", ())) > 0)
            line["y"] = np.asarray(line["y"], dtype=object).copy()
            line["y"][0] = "moved" if isinstance(line["y"][0], str) else 123_456_789
            assert sent(figures.unchecked_figure(moved)) != checked
