"""The app through Streamlit's AppTest: every control and panel, on every built-in incident.

Most tests use the local engine (`?engine=local`) so they do not wait on Spark; one test opens the
default Spark engine and checks it shows what the local engine shows. Timelines are cached per test
session in a temporary directory (WMVIZ_CACHE), as the app caches them per server.
"""

from __future__ import annotations

import json
from urllib.parse import parse_qs

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO
from tests.support.html_tables import channel_frames, read_tables
from tests.support.markdown_text import shown
from wmviz.core.rules import GLOSSARY
from wmviz.store.incidents import built_in_incidents

INCIDENTS = list(built_in_incidents())


@pytest.fixture(scope="module", autouse=True)
def timeline_cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("WMVIZ_CACHE", str(tmp_path_factory.mktemp("timelines")))
    yield
    mp.undo()


def open_app(
    scenario: str = "flink-38477-zero-output", step: int | None = 0, engine="local", **query
) -> AppTest:
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    app.query_params["scenario"] = scenario
    app.query_params["engine"] = engine
    if step is not None:
        app.query_params["step"] = str(step)
    for key, value in query.items():
        app.query_params[key] = value
    app.run()
    assert not app.exception, app.exception
    return app


def click(app: AppTest, key: str) -> AppTest:
    app.button(key=key).click().run()
    assert not app.exception, app.exception
    return app


def step_of(app: AppTest) -> int:
    return int(app.session_state["step"])


def url_step(app: AppTest) -> int:
    return int(
        app.query_params["step"][0]
        if isinstance(app.query_params["step"], list)
        else app.query_params["step"]
    )


def heading(app: AppTest) -> str:
    return next(h.value for h in app.subheader if h.value.startswith("Step "))


def narration(app: AppTest) -> str:
    return next(t.value for t in app.text if t.value.startswith("•"))


def frame(app: AppTest, *columns: str):
    """The first table holding every one of `columns` (a data grid, or one of the page's HTML tables)."""
    tables = [d.value for d in app.dataframe] + [
        t.frame for h in app.get("html") for t in read_tables(h.value)
    ]
    return next(table for table in tables if set(columns) <= set(table.columns))


def charts(app: AppTest) -> list[dict]:
    return [json.loads(e.proto.spec) for e in app.get("plotly_chart")]


def channel_table(app: AppTest, index: int = 0):
    return channel_frames(app)[index]


# --- opening and the URL -------------------------------------------------------------------------


def test_the_app_opens_on_the_flink_38477_incident_at_step_0_with_the_view_in_the_url():
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    app.query_params["engine"] = "local"
    app.run()
    assert not app.exception
    assert app.title[0].value.startswith("FLINK-38477")
    assert heading(app) == "Step 0 of 7"
    assert app.query_params["scenario"] in ("flink-38477-zero-output", ["flink-38477-zero-output"])
    assert url_step(app) == 0


def test_a_link_with_a_step_opens_on_that_step_and_an_impossible_step_is_clamped_to_the_last():
    assert heading(open_app(step=5)) == "Step 5 of 7"
    app = open_app(step=999)
    assert step_of(app) == 7 and url_step(app) == 7


def test_a_link_with_an_unknown_scenario_or_profile_falls_back_to_the_defaults_without_an_error():
    app = open_app(scenario="no-such-incident", profile="flink-9")
    assert app.title[0].value.startswith("FLINK-38477")
    assert app.sidebar.selectbox(key="profile").value == "the scenario's own"


def test_the_profile_from_a_link_is_selected_and_kept_in_the_url():
    app = open_app(step=7, profile="flip-38477")
    assert app.sidebar.selectbox(key="profile").value == "flip-38477"
    assert app.query_params["profile"] in ("flip-38477", ["flip-38477"])


# --- step controls -------------------------------------------------------------------------------


def test_forward_back_first_and_last_move_the_step_and_the_url_follows():
    app = open_app(step=0)
    assert app.button(key="back").disabled and app.button(key="first").disabled
    click(app, "fwd")
    assert step_of(app) == 1 and url_step(app) == 1 and heading(app) == "Step 1 of 7"
    click(app, "last")
    assert step_of(app) == 7 and url_step(app) == 7
    assert app.button(key="fwd").disabled and app.button(key="last").disabled
    click(app, "back")
    assert step_of(app) == 6
    click(app, "first")
    assert step_of(app) == 0


def test_the_step_buttons_carry_the_keyboard_shortcuts_the_issue_asks_for():
    app = open_app()
    shortcuts = {key: app.button(key=key).proto.shortcut for key in ("first", "back", "play", "fwd", "last")}
    assert shortcuts == {"first": "home", "back": "left", "play": "space", "fwd": "right", "last": "end"}
    click(app, "play")
    assert app.button(key="pause").proto.shortcut == "space"
    assert app.button(key="next_event").proto.shortcut.lower() == "shift+right"
    assert app.button(key="prev_event").proto.shortcut.lower() == "shift+left"


def test_the_slider_scrubs_to_any_step():
    app = open_app()
    app.slider(key="step").set_value(4).run()
    assert heading(app) == "Step 4 of 7" and url_step(app) == 4


def test_jumping_to_the_next_and_previous_output_watermark_change_skips_steps_without_one():
    app = open_app(step=0)
    assert app.selectbox(key="jump_kind").value == "output watermark"
    click(app, "next_event")
    assert step_of(app) == 3  # W10 is emitted once both finished channels hold MAX
    click(app, "next_event")
    assert step_of(app) == 4
    click(app, "prev_event")
    assert step_of(app) == 3


def test_jumping_to_the_next_status_change_lands_on_the_first_channel_going_idle():
    app = open_app(step=0)
    app.selectbox(key="jump_kind").set_value("status change").run()
    click(app, "next_event")
    assert step_of(app) == 6


def test_jumping_to_a_late_drop_and_a_timer_firing_in_the_allowed_lateness_incident():
    app = open_app("late-data-allowed-lateness", step=0)
    app.selectbox(key="jump_kind").set_value("late drop").run()
    click(app, "next_event")
    assert step_of(app) == 9
    dropped = frame(app, "step", "trace row", "reason")
    assert "too late" in dropped["reason"].iloc[0]
    app.selectbox(key="jump_kind").set_value("timer firing").run()
    click(app, "prev_event")
    assert step_of(app) < 9
    timers = frame(app, "purposes")
    assert "fired now" in set(timers["state"])


def test_play_gives_way_to_pause_and_back_and_a_play_at_the_last_step_stops_by_itself():
    """Play and Pause are two buttons, one drawn at a time: a click's callback run a second time
    (its run cut short) gets the arguments its own widget was last drawn with, so Pause's can only
    pause. One button whose arguments flipped with its label resumed the play it had paused."""
    app = open_app(step=0)
    click(app, "play")
    assert app.session_state["playing"] is True
    assert app.button(key="pause").label.startswith("⏸")
    assert "play" not in {button.key for button in app.button}
    click(app, "pause")
    assert app.session_state["playing"] is False
    assert app.button(key="play").label.startswith("▶")
    assert "pause" not in {button.key for button in app.button}
    app = open_app(step=7)
    click(app, "play")
    assert app.session_state["playing"] is False  # nothing left to play


# --- panels --------------------------------------------------------------------------------------


def test_at_the_max_step_the_output_is_max_the_heap_holds_the_finished_channels_and_the_narration_says_why():
    app = open_app(step=7)
    assert app.metric[0].value == "MAX"
    assert "emit WMAX" in narration(app)
    assert "leaves the aligned set" in narration(app)
    table = channel_table(app)
    assert list(table["status"]) == ["IDLE", "IDLE", *["ACTIVE (FINISHED, replayed as MAX)"] * 2]
    assert list(table["minimum"]) == ["", "", "◀ holds it", "◀ holds it"]
    assert not table.isna().any().any()
    heap = next(c for c in charts(app) if any(t.get("name") == "nodes" for t in c["data"]))
    labels = " ".join(str(t) for trace in heap["data"] for t in (trace.get("text") or []))
    assert "ch 2" in labels and "ch 3" in labels and "ch 0" not in labels


def test_the_rules_the_narration_cites_are_explained_beside_it_in_a_folded_legend():
    """Step 7 (the last live channel goes idle: S1b) under the released profile; step 2 under
    flip-38477 (a channel leaves ACTIVE: FS1, then TRY-S)."""
    for profile, step, cited in (("flink-1.x-2.x", 7, "S1b"), ("flip-38477", 2, "TRY-S")):
        app = open_app(step=step, profile=profile)
        assert f"({cited})" in narration(app) or f"{cited}:" in narration(app)
        legend = next(e for e in app.expander if e.label.startswith("Rules cited: "))
        ids = legend.label.removeprefix("Rules cited: ").split(" · ")
        assert cited in ids
        text = " ".join(m.value for m in legend.markdown)
        for rule_name in ids:
            assert f"**{rule_name}**" in text and GLOSSARY[rule_name].meaning in text


def test_under_flip_38477_the_finished_channels_are_finished_and_the_output_goes_idle_instead_of_max():
    app = open_app(step=7, profile="flip-38477")
    assert app.metric[0].value != "MAX"
    table = channel_table(app)
    assert list(table["status"])[2:] == ["FINISHED", "FINISHED"]
    assert "IDLE" in app.caption[1].value or "IDLE" in narration(app)


def test_the_channel_table_shows_every_watermark_as_a_utc_time_with_the_raw_number_beside_it():
    app = open_app("idle-partition-pins-watermark", step=3)
    table = channel_table(app)
    assert list(table.columns) == ["channel", "watermark", "raw (ms)", "status", "aligned", "minimum"]
    assert list(table["watermark"]) == ["2026-11-21 10:00:10.000Z", "2026-11-21 09:59:58.000Z"]
    assert list(table["raw (ms)"]) == ["1795255210000", "1795255198000"]
    assert not table.isna().any().any()
    # The output card: the clock time as the value, the date in its label, the raw number a hover away.
    assert app.metric[0].value == "09:59:58.000Z"
    assert "2026-11-21" in shown(app.metric[0].label) and "1795255198000" in app.metric[0].help


def test_the_watermark_chart_has_a_cursor_on_the_current_step():
    app = open_app(step=5)
    chart = next(c for c in charts(app) if "Watermarks" in json.dumps(c["layout"].get("title", "")))
    xs = [s.get("x0") for s in chart["layout"].get("shapes", [])]
    assert 5 in xs


def test_the_input_panel_shows_the_row_that_arrived():
    app = open_app(step=2)
    table = frame(app, "field", "value")
    rows = dict(zip(table["field"], table["value"], strict=True))
    assert rows["kind"] == "status" and rows["status"] == "FINISHED" and rows["channel"] == "2"


def test_the_join_changelog_links_the_retraction_to_the_speculative_row_it_corrects():
    app = open_app("early-fire-left-join", step=7)
    assert [t.label for t in app.tabs] == ["Timers", "Join changelog", "Dropped records"]
    log = frame(app, "now", "corrects")
    assert list(log["kind"]) == ["+I", "+I", "-U", "+U"]
    assert list(log["left"]) == ["order-2@11500", "order-1@10000", "order-1@10000", "order-1@10000"]
    assert list(log["right"]) == ["shipment-2@11000", "null", "null", "shipment-1@14000"]
    speculative = log[log["cause"] == "early_fire"]["#"].iloc[0]
    assert log[log["kind"] == "-U"]["corrects"].iloc[0] == f"#{speculative}"
    # valve L, valve R, the combined input, and what the join sends downstream (held back by 9 s)
    assert [m.value for m in app.metric] == ["13000", "13000", "13000", "4000"]


def test_the_window_panes_tab_shows_the_pane_contents_and_when_it_fires():
    app = open_app("late-data-allowed-lateness", step=4)
    panes = frame(app, "contents")
    first = panes[panes["window"] == "[0, 5)"].iloc[0]
    assert first["contents"] == "1, 3, 2, 4"
    assert first["fires when watermark ≥"] == "4"


def test_a_multi_instance_incident_has_an_instance_picker_and_an_overview_heatmap():
    app = open_app("idle-partition-pins-watermark", step=0)
    picker = app.sidebar.selectbox(key="instance")
    assert picker.options == ["0", "1"]
    assert any(c["data"][0]["type"] == "heatmap" for c in charts(app))
    picker.set_value("1").run()
    assert app.query_params["instance"] in ("1", ["1"]) and step_of(app) == 0


def test_the_story_has_what_users_saw_what_the_valve_did_and_the_fix():
    app = open_app()
    texts = [m.value for m in app.markdown]
    for section in ("What users saw", "What the valve did", "The fix"):
        assert any(section in t for t in texts)


@pytest.mark.parametrize("scenario", INCIDENTS)
def test_every_step_of_every_built_in_incident_renders_its_panels(scenario):
    app = open_app(scenario, step=0)
    count = int(app.slider(key="step").max) + 1
    for step in range(count):
        if step:
            click(app, "fwd")
        assert heading(app) == f"Step {step} of {count - 1}"
        assert narration(app).startswith("•")
        assert not channel_table(app).isna().any().any()
        assert len(charts(app)) >= 2  # the heap and the watermark chart
    assert parse_qs(f"step={url_step(app)}")["step"] == [str(count - 1)]


def test_the_spark_engine_shows_what_the_local_engine_shows():
    spark_app = open_app(step=7, engine="spark")
    local_app = open_app(step=7, engine="local")
    assert [m.value for m in spark_app.metric] == [m.value for m in local_app.metric] == ["MAX"]
    assert narration(spark_app) == narration(local_app)
    assert channel_table(spark_app).equals(channel_table(local_app))
    assert "engine spark" in spark_app.caption[0].value


# --- readable time, the moment across instances (issue 12) ---------------------------------------


def test_the_time_display_and_zone_are_in_the_sidebar_and_the_link():
    app = open_app("idle-partition-pins-watermark", step=3, time="relative")
    assert app.sidebar.radio(key="time_mode").value == "relative"
    # Relative to the trace's first event time, partition 1's 09:59:58.
    assert app.metric[0].value == "+0" and list(channel_table(app)["watermark"]) == ["+12s", "+0"]
    assert app.query_params["time"] in ("relative", ["relative"])
    app = open_app("idle-partition-pins-watermark", step=3, tz="Europe/Berlin")
    assert app.sidebar.selectbox(key="time_zone").value == "Europe/Berlin"
    assert app.metric[0].value == "10:59:58.000+01:00"
    assert channel_table(app)["watermark"].iloc[0] == "2026-11-21 11:00:10.000+01:00"
    app.sidebar.radio(key="time_mode").set_value("ms").run()
    assert app.metric[0].value == "1795255198000" and "tz" in app.query_params
    app = open_app("idle-partition-pins-watermark", step=0, tz="Nowhere/Else")
    assert app.sidebar.selectbox(key="time_zone").value == "UTC"
    assert any("unknown time zone" in t.value for t in app.toast)


def test_changing_instance_keeps_the_moment_by_arrival_order():
    app = open_app("idle-partition-pins-watermark", step=4)  # instance 0's IDLE@1, seq 11
    app.sidebar.selectbox(key="instance").set_value("1").run()
    assert not app.exception, app.exception
    record = frame(app, "field", "value")
    rows = dict(zip(record["field"], record["value"], strict=True))
    # Instance 1's step is the last of its rows that arrived before instance 0's seq 11: seq 10.
    assert rows["seq"] == "10" and step_of(app) == 5 and url_step(app) == 5
