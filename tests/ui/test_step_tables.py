"""Tables whole after stepping (issue 23): the data grid kept the column widths of the first step
it drew, so each column's width comes from the longest value it may hold at any step, not from
the cells on screen (the channel table, now HTML, keeps them too: its layout does not jump).
Stepped on from step 0 (every watermark `MIN`), the channel table's watermark and status columns are
still wide enough for `2026-11-21 10:00:15.000Z`."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.conftest import REPO
from tests.support.html_tables import channel_tables
from wmviz.view.widths import text_px


def test_the_channel_table_is_sized_for_every_step_when_stepped_on_from_step_0(tmp_path, monkeypatch):
    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path))
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    app.query_params.update({"scenario": "idle-partition-pins-watermark", "engine": "local", "step": "0"})
    app.run()
    first = channel_tables(app)[0].width_of
    for _ in range(5):
        app.button(key="fwd").click().run()
    assert not app.exception, app.exception
    table = channel_tables(app)[0]
    later = table.width_of
    assert later == first  # the same widths at every step: the table keeps its layout
    for column in ("watermark", "status", "raw (ms)"):
        longest = max(table.frame[column], key=len)
        assert longest.startswith("2026-") or column != "watermark"
        assert later[column] >= text_px(longest), (column, longest, later[column])
