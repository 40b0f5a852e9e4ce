"""The narration box leads with the step's headline (issue 30, item 7): on the alignment incident, the
step where the live subtask is PAUSED opens with "subtask 0 PAUSED: 20s ahead …", not five bullets
down below the box's fold; `explain` keeps the order things happened in."""

from __future__ import annotations

from tests.view.test_ui_model import timeline_of
from wmviz.core.story import explain_line, explain_parts
from wmviz.core.types import Profile
from wmviz.timeline.cursor import InstanceCursor
from wmviz.view.step_view import side_view, step_view
from wmviz.view.timefmt import TimeFormat

PAUSE = "subtask 0 PAUSED: 20s ahead of the group watermark"


def test_the_alignment_page_leads_with_the_pause_and_explain_keeps_the_causal_order(tmp_path):
    cursor = InstanceCursor(timeline_of(tmp_path, "fast-partition-paused-by-alignment"), "0")
    t = TimeFormat()
    paused = [
        s for s in range(cursor.count) if any(PAUSE in p for p in explain_parts(cursor.explain(s)[0], t))
    ]
    assert paused == [6]
    view = step_view(cursor, 6, Profile.FLINK_1X_2X, 3, t)
    assert view.narration[0].startswith(PAUSE), view.narration
    assert view.narration[1].startswith("split orders-0 of subtask 0 PAUSED"), view.narration
    assert side_view(cursor, 6, Profile.FLINK_1X_2X, t).narration[:2] == view.narration[:2]
    # Nothing said twice, nothing left out: the same parts as the causal order, the pauses first.
    causal = explain_parts(cursor.explain(6)[0], TimeFormat(short=True))
    assert sorted(view.narration) == sorted(causal) and causal.index(view.narration[0]) == 5
    assert explain_line(cursor.explain(6)[0], t).startswith("record live-4@")
    # A step with no pause reads as it happened.
    assert list(step_view(cursor, 8, Profile.FLINK_1X_2X, 3, t).narration) == explain_parts(
        cursor.explain(8)[0], TimeFormat(short=True)
    )
