"""A step's view is built once and shared by every session looking at it (issue 23): one entry per
(timeline, instance, step, time format), none shared between different ones (no cross-talk), the
cache's byte bound honoured, and a shared view never changed by the page that draws it."""

from __future__ import annotations

import json
import threading
import time

import plotly.graph_objects as go
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO
from tests.support.html_tables import channel_frames
from wmviz.core.errors import SettingError
from wmviz.timeline.cursor import InstanceCursor
from wmviz.timeline.local import build_timeline_local
from wmviz.timeline.store import Timeline
from wmviz.trace.readers import read_trace
from wmviz.ui import step_cache
from wmviz.view import figures
from wmviz.view.shared_cache import SharedCache
from wmviz.view.step_view import step_view
from wmviz.view.timefmt import TimeFormat

KAFKA = REPO / "tests" / "data" / "kafka-rebalance.csv"

# --- the cache ---------------------------------------------------------------------------------------


def test_a_key_is_built_once_and_then_read_by_everyone():
    cache: SharedCache[str] = SharedCache(1000, len)
    built = []

    def build(text: str):
        return lambda: built.append(text) or text

    assert cache.get(("tl", "0", 3), build("a")) == "a"
    assert cache.get(("tl", "0", 3), build("b")) == "a"  # the second viewer reads the first's
    assert cache.get(("tl", "0", 4), build("c")) == "c"  # another step is its own entry
    assert built == ["a", "c"]
    stats = cache.stats()
    assert (stats.entries, stats.bytes, stats.hits, stats.misses) == (2, 2, 1, 2)


def test_the_byte_bound_is_honoured_least_recently_used_out_first():
    cache: SharedCache[str] = SharedCache(10, len)
    cache.get("a", lambda: "x" * 4)
    cache.get("b", lambda: "y" * 4)
    cache.get("a", lambda: "never built")  # a is now the most recently used
    cache.get("c", lambda: "z" * 4)  # 12 bytes > 10: b goes
    assert cache.stats().bytes <= 10
    assert cache.get("a", lambda: "rebuilt") == "xxxx"
    assert cache.get("b", lambda: "rebuilt") == "rebuilt"
    assert cache.get("big", lambda: "w" * 11) == "w" * 11  # larger than the bound: returned, not kept
    assert cache.stats().bytes <= 10
    assert cache.get("big", lambda: "again") == "again"


def test_a_bound_of_zero_keeps_nothing():
    cache: SharedCache[str] = SharedCache(0, len)
    assert cache.get("a", lambda: "1") == "1"
    assert cache.get("a", lambda: "2") == "2"
    assert cache.stats().entries == 0


def test_two_sessions_missing_the_same_step_at_once_build_it_once():
    cache: SharedCache[str] = SharedCache(1000, len)
    calls = []

    def slow() -> str:
        calls.append(1)
        time.sleep(0.2)
        return "view"

    got: list[str] = []
    threads = [threading.Thread(target=lambda: got.append(cache.get("k", slow))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert got == ["view"] * 3 and len(calls) == 1


def test_a_failed_build_is_not_kept_and_the_next_viewer_builds_again():
    cache: SharedCache[str] = SharedCache(1000, len)

    def fail() -> str:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        cache.get("k", fail)
    assert cache.get("k", lambda: "view") == "view"


def test_the_bound_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv(step_cache.BOUND_ENV, "2")
    assert step_cache.bound_bytes() == 2 * 1024 * 1024
    monkeypatch.setenv(step_cache.BOUND_ENV, "0")
    assert step_cache.bound_bytes() == 0
    monkeypatch.delenv(step_cache.BOUND_ENV)
    assert step_cache.bound_bytes() == step_cache.DEFAULT_MB * 1024 * 1024
    for bad in ("-1", "lots"):
        monkeypatch.setenv(step_cache.BOUND_ENV, bad)
        with pytest.raises(SettingError, match=step_cache.BOUND_ENV):
            step_cache.bound_bytes()


# --- the view ----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def kafka(tmp_path_factory):
    """The Kafka rebalance (windows, drops, epoch times): a cursor on its first instance."""
    out = tmp_path_factory.mktemp("kafka") / "tl"
    build_timeline_local(read_trace(KAFKA, KAFKA.with_suffix(".json")), out)
    timeline = Timeline(out)
    return InstanceCursor(timeline, sorted(timeline.meta.instances)[0])


def test_a_view_depends_on_its_time_format_and_holds_only_immutable_parts(kafka):
    profile = kafka.timeline.meta.profile
    dated = step_view(kafka, 5, profile, 1000, TimeFormat("utc"))
    raw = step_view(kafka, 5, profile, 1000, TimeFormat("ms"))
    assert dated.channels[0].frame()["watermark"].tolist() != raw.channels[0].frame()["watermark"].tolist()
    assert dated.chart != raw.chart  # the y axis reads differently
    # A reader's copy of a table is its own: changing it leaves the shared view as it was.
    copy = dated.channels[0].frame()
    copy.loc[0, "watermark"] = "changed"
    assert dated.channels[0].frame()["watermark"][0] != "changed"
    assert isinstance(dated.chart, str) and all(isinstance(h.spec, str) for h in dated.heaps)
    assert dated.nbytes > len(dated.chart)


def test_the_built_chart_reaches_the_browser_as_the_figure_itself_would():
    """The page hands Streamlit a figure's JSON built once (`panels._Built`): the spec Streamlit
    sends is the one it sends for the figure (this fails if Streamlit stops asking a figure for
    its dict)."""

    def page() -> None:
        import plotly.graph_objects as go
        import streamlit as st

        from wmviz.ui import panels
        from wmviz.view.step_view import figure_json

        fig = go.Figure(go.Scatter(x=[1, 2, 3], y=[3, 1, 2], name="ch 0"), layout={"height": 300})
        spec = figure_json(fig)
        st.plotly_chart(fig, key="as_figure")
        panels.watermark_chart(spec, key="as_json")
        st.text(str(spec == figure_json(fig)))

    app = AppTest.from_function(page).run()
    assert not app.exception, app.exception
    specs = [json.loads(e.proto.spec) for e in app.get("plotly_chart")]
    assert len(specs) == 2 and specs[0] == specs[1]
    assert specs[0]["data"][0]["name"] == "ch 0"
    assert app.text[0].value == "True"  # drawing it changed nothing
    assert go.Figure(specs[1]).data[0].name == "ch 0"


def test_the_page_sends_the_steps_real_figures_as_it_would_send_the_figures(kafka):
    """What Streamlit makes of a figure (its dict, encoded) is the same for the figure and for its
    JSON built once, on a step's real chart and heap (typed arrays, None gaps, dates)."""
    import plotly.io as pio
    import plotly.tools

    from wmviz.ui.panels import _figure
    from wmviz.view import figures, model
    from wmviz.view.step_chart import step_chart
    from wmviz.view.step_view import figure_json

    profile = kafka.timeline.meta.profile
    _, pipeline, _ = kafka.explain(7)
    views = model.valve_views(kafka, pipeline, 7, profile, TimeFormat())
    for fig in (step_chart(kafka, 7, views, TimeFormat()), figures.heap_figure(views[0].heap, highlight=1)):

        def sent(figure_or_data):  # as st.plotly_chart does
            return pio.to_json(
                plotly.tools.return_figure_from_figure_or_data(figure_or_data, True), validate=False
            )

        assert sent(_figure(figure_json(fig))) == sent(fig)


# --- two sessions on the page ------------------------------------------------------------------------


@pytest.fixture(scope="module", autouse=True)
def timeline_cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("WMVIZ_CACHE", str(tmp_path_factory.mktemp("timelines")))
    mp.setenv("WMVIZ_SPARK_START", "lazy")
    yield
    mp.undo()


def _open(scenario: str, step: int, **query) -> AppTest:
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    app.query_params.update({"scenario": scenario, "engine": "local", "step": str(step), **query})
    app.run()
    assert not app.exception, app.exception
    return app


def _channels(app: AppTest):
    return channel_frames(app)[0]


def _keys() -> set:
    return set(step_cache.shared()._entries)


def test_two_sessions_on_one_step_share_one_entry_and_other_views_do_not(monkeypatch):
    step_cache.shared().clear()
    first = _open("late-data-allowed-lateness", 4)
    assert len(_keys()) == 1
    hits = step_cache.shared().stats().hits
    second = _open("late-data-allowed-lateness", 4)
    assert len(_keys()) == 1 and step_cache.shared().stats().hits > hits  # the second viewer read it
    assert _channels(first).equals(_channels(second))
    # Another time format, step or incident is another entry, and each page shows its own (the
    # built-in incidents' small times read the same in every format: the pure test above shows
    # the formats apart).
    _open("late-data-allowed-lateness", 4, time="ms")
    assert len(_keys()) == 2 and {key[-1].mode for key in _keys()} == {"utc", "ms"}
    other = _open("flink-38477-zero-output", 4)
    assert len(_keys()) == 3
    assert not _channels(other).equals(_channels(first))
    first.button(key="fwd").click().run()
    assert len(_keys()) == 4
    assert {key[3] for key in _keys()} == {4, 5}
    # The first session stepping on changed nothing the second one shows when it draws again.
    before = _channels(second)
    second.run()
    assert any(h.value.startswith("Step 4 ") for h in second.subheader)
    assert _channels(second).equals(before)


def test_compare_mode_shares_each_side_and_keeps_the_two_runs_apart():
    step_cache.shared().clear()
    first = _open("flink-38477-zero-output", 7, compare="flip-38477")
    sides = {key for key in _keys() if key[0] == "side"}
    assert len(sides) == 2 and len({key[1] for key in sides}) == 2  # two runs: two timelines
    hits = step_cache.shared().stats().hits
    second = _open("flink-38477-zero-output", 7, compare="flip-38477")
    assert {key for key in _keys() if key[0] == "side"} == sides
    assert step_cache.shared().stats().hits >= hits + 2
    tables = [channel_frames(app) for app in (first, second)]
    assert len(tables[0]) == 2 and all(a.equals(b) for a, b in zip(*tables, strict=True))
    assert not tables[0][0].equals(tables[0][1])  # the two profiles' valves differ at this step


def test_the_overview_heatmap_is_shared_and_follows_its_lag_mode():
    """The overview of every instance (an incident with two) is built once per (step, lag mode):
    the second viewer reads it, and the other lag mode is its own entry with its own colours."""
    step_cache.shared().clear()
    first = _open("idle-partition-pins-watermark", 3)
    overviews = {key for key in _keys() if key[0] == "overview"}
    assert len(overviews) == 1
    hits = step_cache.shared().stats().hits
    second = _open("idle-partition-pins-watermark", 3)
    assert {key for key in _keys() if key[0] == "overview"} == overviews
    assert step_cache.shared().stats().hits >= hits + 2  # the step's view and its overview
    second.radio(key="lag_mode").set_value(figures.LAG_MODES[1]).run()
    modes = {key[3] for key in _keys() if key[0] == "overview"}
    assert modes == set(figures.LAG_MODES)
    specs = [step_cache.shared()._entries[key][0].spec for key in _keys() if key[0] == "overview"]
    assert specs[0] != specs[1]
    assert not first.exception and not second.exception
