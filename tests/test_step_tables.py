"""Tables whole after stepping (issue 23): the data grid keeps the column widths of the first step
it drew, so each column's width comes from the longest value it may hold at any step, not from
the cells on screen. Stepped on from step 0 (every watermark `MIN`), the channel table's
watermark and status columns are still wide enough for `2026-11-21 10:00:15.000Z`."""

from __future__ import annotations

import json

from streamlit.testing.v1 import AppTest

from tests.conftest import REPO
from wmviz.view.widths import text_px


def _channel_table(app: AppTest):
    return next(d for d in app.dataframe if "watermark" in d.value.columns and "aligned" in d.value.columns)


def test_the_channel_table_is_sized_for_every_step_when_stepped_on_from_step_0(tmp_path, monkeypatch):
    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path))
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    app.query_params.update({"scenario": "idle-partition-pins-watermark", "engine": "local", "step": "0"})
    app.run()
    first = json.loads(_channel_table(app).proto.columns)
    for _ in range(5):
        app.button(key="fwd").click().run()
    assert not app.exception, app.exception
    table = _channel_table(app)
    later = json.loads(table.proto.columns)
    assert later == first  # the same widths at every step: nothing for the grid to keep stale
    for column in ("watermark", "status"):
        longest = max(table.value[column].astype(str), key=len)
        assert longest.startswith("2026-") or column == "status"
        assert later[column]["width"] >= text_px(longest), (column, longest, later[column])
    assert later["raw (ms)"]["width"] >= text_px(max(table.value["raw (ms)"].astype(str), key=len))
