"""The Tune view: its pure figure, and the page sweeping a built-in incident and opening a point as
a config what-if carried in the link."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from wmviz.analysis.whatif_edit import Configure
from wmviz.analysis.whatif_token import decode_edit
from wmviz.view.tune import tune_figure

REPO = Path(__file__).resolve().parent.parent


def _row(share, p95, **fields):
    return {**fields, "late_share": share, "firing_delay_p95_ms": p95, "firing_delay_p50_ms": p95}


def test_the_front_is_drawn_apart_from_the_other_points_and_the_chosen_one_is_ringed():
    table = [_row(0.1, 100, a=1), _row(0.0, 900, a=2), _row(0.2, 200, a=3), _row(0.0, None, a=4)]
    figure = tune_figure(table, ["a"], chosen=2)
    others, front, ring = figure["data"]
    assert others["customdata"] == [2] and others["text"] == ["a=3"]
    assert front["customdata"] == [1, 0] and front["mode"] == "lines+markers"  # by late share
    assert (front["x"], front["y"]) == ([0.0, 0.1], [900, 100])
    assert ring["customdata"] == [2]
    assert len(tune_figure(table, ["a"], chosen=3)["data"]) == 2  # a point that never fired is not drawn


@pytest.fixture
def app(tmp_path, monkeypatch):
    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path))
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    app.query_params["scenario"] = "resumed-partition-records-late"
    app.query_params["engine"] = "local"
    app.run()
    assert not app.exception, app.exception
    return app


def test_the_page_sweeps_the_trace_and_opens_a_point_as_a_what_if(app):
    app.text_area(key="tune_text").input(
        "generator.out_of_orderness_ms=0,5s\noperator.allowed_lateness_ms=0,1s"
    )
    app.number_input(key="tune_target").set_value(0.0)
    app.button[[b.label for b in app.button].index("Sweep")].click().run()
    assert not app.exception, app.exception
    assert any("lowest latency with late share ≤ 0" in c.value for c in app.caption)
    # The sweep's table: the one whose columns are the varied paths (the step's tables come first).
    (frame,) = [d.value for d in app.dataframe if "late_share" in d.value.columns]
    assert len(frame) == 4 and list(frame.columns)[:3] == [
        "generator.out_of_orderness_ms", "operator.allowed_lateness_ms", "records",
    ]  # fmt: skip
    app.selectbox[[s.label for s in app.selectbox].index("Combination")].set_value(2).run()
    app.button(key="tune_open").click().run()
    assert not app.exception, app.exception
    target = app.session_state["compare"]
    assert target.startswith("whatif:")
    assert decode_edit(target.removeprefix("whatif:")) == Configure(
        {"generator.out_of_orderness_ms": 5000, "operator.allowed_lateness_ms": 0}
    )
    compare = app.query_params["compare"]
    assert (compare[0] if isinstance(compare, list) else compare) == target
