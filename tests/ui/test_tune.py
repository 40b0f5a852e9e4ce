"""The Tune view: its pure figure, and the page sweeping a built-in incident and opening a point as
a config what-if carried in the link."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.support import paths
from wmviz.analysis.whatif_edit import Configure
from wmviz.analysis.whatif_token import decode_edit
from wmviz.ui import tune_view
from wmviz.view.tune import tune_figure

REPO = paths.REPO


def _row(share, p95, **fields):
    return {**fields, "late_share": share, "firing_delay_p95_ms": p95, "firing_delay_p50_ms": p95}


def test_the_front_is_drawn_apart_from_the_other_points_and_the_chosen_one_is_ringed():
    table = [_row(0.1, 100, a=1), _row(0.0, 900, a=2), _row(0.2, 200, a=3), _row(0.0, None, a=4)]
    figure = tune_figure(table, ["a"], chosen=2)
    others, front, ring = figure["data"]
    assert others["customdata"] == [2] and others["text"] == ["a=3"]
    assert figure["layout"]["annotations"][0]["text"].startswith("1 of 4 combinations never fired")
    assert front["customdata"] == [1, 0] and front["mode"] == "lines+markers"  # by late share
    assert (front["x"], front["y"]) == ([0.0, 0.1], [900, 100])
    assert ring["customdata"] == [2]
    assert len(tune_figure(table, ["a"], chosen=3)["data"]) == 2  # a point that never fired is not drawn


def test_durations_read_as_durations_in_labels_table_axis_and_the_what_if_title():
    from wmviz.analysis.whatif_edit import describe_edit
    from wmviz.view.tune import point_label, readable_table

    row = {"generator.out_of_orderness_ms": 2000, "operator.aggregate": "count", **_row(0.0, 400_000)}
    row["firing_delay_p50_ms"] = 400
    assert point_label(row, ["generator.out_of_orderness_ms", "operator.aggregate"]) == (
        "generator.out_of_orderness_ms=2s, operator.aggregate=count"
    )
    (shown,) = readable_table([row])
    assert (shown["firing_delay_p95_ms"], shown["firing_delay_p50_ms"], shown["late_share"]) == (
        "6m 40s",
        "400ms",
        0.0,
    )
    assert readable_table([_row(0.5, None)])[0]["firing_delay_p95_ms"] == "never fired"
    axis = tune_figure(
        [row, _row(0.1, 1500, **{"generator.out_of_orderness_ms": 0})], ["generator.out_of_orderness_ms"]
    )["layout"]["yaxis"]
    assert "k" not in "".join(axis["ticktext"]) and "2m" in axis["ticktext"]
    assert describe_edit(Configure({"operator.allowed_lateness_ms": 400})) == (
        "what if the config had had operator.allowed_lateness_ms 400ms?"
    )


def test_the_default_grid_follows_the_traces_scale_and_most_combinations_fire():
    from wmviz.analysis.sweep import default_grid, parse_vary, run_sweep
    from wmviz.store.incidents import built_in_incidents

    trace = built_in_incidents()["late-data-allowed-lateness"].trace()
    lines = default_grid(trace)
    assert [line.split("=")[0] for line in lines] == [
        "generator.out_of_orderness_ms",
        "operator.allowed_lateness_ms",
    ]
    table = run_sweep(trace, [parse_vary(line) for line in lines])
    fired = [row for row in table if row["firing_delay_p95_ms"] is not None]
    assert len(table) >= 4 and len(fired) >= 0.75 * len(table), table
    assert max(row["generator.out_of_orderness_ms"] for row in table) <= 12  # a 12 ms trace: ms bounds


def _app(tmp_path, monkeypatch, scenario: str) -> AppTest:
    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path))
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    app.query_params["scenario"] = scenario
    app.query_params["engine"] = "local"
    app.run()
    assert not app.exception, app.exception
    assert not app.get("text_area")  # closed, the Tune box draws nothing but its label
    app.session_state[tune_view.TUNE_OPEN] = True
    app.run()
    assert not app.exception, app.exception
    return app


@pytest.fixture
def app(tmp_path, monkeypatch):
    return _app(tmp_path, monkeypatch, "resumed-partition-records-late")


def _sweep(app: AppTest, grid: str | None = None) -> AppTest:
    if grid is not None:
        app.text_area(key="tune_text").input(grid)
    app.button[[b.label for b in app.button].index("Sweep")].click().run()
    assert not app.exception, app.exception
    return app


def _tune_table(app: AppTest):
    return [d.value for d in app.dataframe if "late_share" in d.value.columns]


def test_the_page_starts_from_the_traces_scale_and_says_which_combinations_never_fired(tmp_path, monkeypatch):
    app = _app(tmp_path, monkeypatch, "late-data-allowed-lateness")
    assert app.text_area(key="tune_text").value.startswith("generator.out_of_orderness_ms=0ms,2ms,6ms")
    (frame,) = _tune_table(_sweep(app))
    assert (frame["firing_delay_p95_ms"] != "never fired").all()
    assert list(frame["firing_delay_p95_ms"])[:3] == ["2ms", "2ms", "4ms"]  # durations, not raw ms
    (frame,) = _tune_table(_sweep(app, "generator.out_of_orderness_ms=0,1s"))
    assert list(frame["firing_delay_p95_ms"])[1] == "never fired"
    assert any("1 of 2 combinations never fired" in c.value for c in app.caption)


def test_a_pick_outside_a_new_grid_is_reset_not_an_error(app):
    from wmviz.ui import state

    _sweep(app, "generator.out_of_orderness_ms=0,1s,2s,3s,4s,5s\noperator.allowed_lateness_ms=0,1s")
    app.session_state[state.TUNE_PICKED] = 11  # the 12th of 12, as a click on the chart leaves it
    app.run()
    assert not app.exception, app.exception
    _sweep(app, "generator.out_of_orderness_ms=0,1s")
    assert not app.exception, app.exception
    assert app.selectbox[[s.label for s in app.selectbox].index("Combination")].index in (0, 1)
    app.session_state[state.TUNE_PICKED] = 11  # a stale chart selection the same way
    app.run()
    assert not app.exception, app.exception


def test_a_sweep_over_the_pages_budget_is_refused_with_the_way_to_run_it(app, monkeypatch):
    monkeypatch.setenv("WMVIZ_MAX_PAGE_SWEEP_ROWS", str(28 * 4 - 1))  # the trace has 28 rows
    _sweep(app, "generator.out_of_orderness_ms=0,5s\noperator.allowed_lateness_ms=0,1s")
    (warning,) = [w.value for w in app.warning if "row runs" in w.value]
    assert "28 rows × 4 combinations are 112 row runs" in warning and "--engine spark" in warning
    assert not _tune_table(app)
    monkeypatch.setenv("WMVIZ_MAX_PAGE_SWEEP_ROWS", str(28 * 4))
    assert len(_tune_table(_sweep(app))[0]) == 4


def test_a_server_runs_at_most_its_sweeps_at_once_and_tells_the_next_person(app):
    from wmviz.ui import tune_view

    taken = 0
    while tune_view._slots().acquire(blocking=False):  # other sessions hold every slot
        taken += 1
    try:
        _sweep(app, "generator.out_of_orderness_ms=0,3s")
        assert any("sweeps are running on this server" in w.value for w in app.warning)
        assert not _tune_table(app)
    finally:
        for _ in range(taken):
            tune_view._slots().release()
    assert taken >= 1
    assert len(_tune_table(_sweep(app))[0]) == 2


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


def test_a_trace_larger_than_the_page_reads_is_not_read_for_tune(app, monkeypatch):
    monkeypatch.setenv("WMVIZ_SPARK_UPLOAD_MB", "0.0001")  # the 28-row trace is ~3 KB
    app.run()
    assert not app.exception, app.exception
    assert any("larger than the page reads in its own process" in c.value for c in app.caption)
    assert not app.get("text_area")
