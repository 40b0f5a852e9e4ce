"""Live mode holds its limits (issue 24), tested without Spark: at most WMVIZ_MAX_LIVE queries
counting the starts in progress, a run nobody looks at stopped by a timer, every click a step or
said to wait or be refused, and the inject panel's value read as a trace cell (any long, MIN/MAX),
never a number field that breaks past 2^53. The page's live run steps through the very worker
function the streaming query runs (`live_group`), fed by a stand-in for the stream."""

from __future__ import annotations

import json
import threading
import time
from types import SimpleNamespace

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO
from wmviz.core.scenario import ScenarioConfig
from wmviz.core.types import MAX_MS
from wmviz.live.run import LiveRun
from wmviz.spark.live import LiveSession
from wmviz.spark.live_limits import LiveSlots, StepQueue
from wmviz.spark.live_query import LiveSpec
from wmviz.spark.live_worker import live_group
from wmviz.timeline.runner import RunSpec
from wmviz.trace.rowtable import ROW_COLUMNS
from wmviz.ui import live_view, state

# --- slots ---------------------------------------------------------------------------------------------


def test_seven_starts_at_once_get_four_slots_counting_those_in_progress():
    slots = LiveSlots(4, 900, stop_run=lambda run: None)
    gate, got = threading.Barrier(7), []

    def start(i):
        gate.wait()
        key = slots.reserve()
        got.append(key)
        if key is not None:
            time.sleep(0.2)  # the query starting: its slot is already taken
            slots.fill(key, f"run{i}")

    threads = [threading.Thread(target=start, args=(i,)) for i in range(7)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    keys = [k for k in got if k is not None]
    assert len(keys) == 4 and got.count(None) == 3 and slots.taken == 4
    assert slots.reserve() is None


def test_a_failed_start_frees_its_slot():
    slots = LiveSlots(1, 900, stop_run=lambda run: None)
    key = slots.reserve()
    assert key is not None and slots.reserve() is None
    slots.release(key)
    again = slots.reserve()
    assert again is not None
    with pytest.raises(KeyError):
        slots.fill(key, "released: not a slot any more")


def test_a_run_left_alone_is_stopped_by_the_timer_without_any_other_call():
    stopped = []
    slots = LiveSlots(4, 0.2, stop_run=stopped.append)
    key = slots.reserve()
    slots.fill(key, "alone")
    slots.start_timer(0.05)
    deadline = time.monotonic() + 5
    while not stopped and time.monotonic() < deadline:
        time.sleep(0.05)
    slots.close()
    assert stopped == ["alone"] and slots.get(key) is None and slots.taken == 0


def test_a_run_looked_at_or_stepping_is_not_idle():
    now = [0.0]
    stopped = []
    busy = {"stepping": True, "looked at": False, "left": False}
    slots = LiveSlots(4, 10, stop_run=stopped.append, busy=busy.get, clock=lambda: now[0])
    keys = {}
    for name in busy:
        keys[name] = slots.reserve()
        slots.fill(keys[name], name)
    now[0] = 8
    slots.get(keys["looked at"])  # a page run of that session
    now[0] = 15
    assert slots.reap() == [keys["left"]] and stopped == ["left"]


# --- clicks --------------------------------------------------------------------------------------------


def test_150_quick_clicks_are_each_a_step_or_counted_as_refused():
    done = []
    queue = StepQueue(lambda item: (time.sleep(0.002), done.append(item)), limit=64)
    accepted = [queue.offer(i) for i in range(150)]  # faster than the steps run
    assert queue.wait_idle(30)
    counts = queue.counts()
    assert counts.clicks == 150 and counts.waiting == 0
    assert counts.stepped + counts.refused == 150 and counts.stepped == sum(accepted) >= 64
    assert done == [i for i, ok in enumerate(accepted) if ok]  # in click order
    assert f"150 click(s): {counts.stepped} stepped" in counts.text()
    if counts.refused:
        assert f"{counts.refused} refused" in counts.text()


def test_a_click_whose_step_fails_is_counted_and_the_next_ones_still_run():
    def step(item):
        if item == 1:
            raise ValueError("rejected")

    queue = StepQueue(step, limit=8)
    for i in range(3):
        queue.offer(i)
    assert queue.wait_idle(5)
    assert queue.counts().stepped == 2 and queue.counts().failed == 1


# --- the page -----------------------------------------------------------------------------------------


class _Stream:
    """The streaming query's part, without Spark: each step runs through `live_group`, the very
    function the query applies per instance, with its state kept in a dict."""

    startup_ms = 0.0

    def __init__(self, spec: LiveSpec) -> None:
        job = RunSpec.of(spec.config, spec.profile, spec.valve_channels, keyframe_every=1)
        self.group = live_group(job, spec.manual_channels, with_input=spec.with_input, operator=spec.operator)
        self.states: dict[str, object] = {}
        self.out: dict[tuple[str, int], tuple] = {}
        self.query = SimpleNamespace(stop=lambda: None)

    def stop(self) -> None:
        """`LiveSession.close` stops the stream (the real one stops its query for good)."""
        self.query.stop()

    def send(self, record: dict, order: int) -> None:
        cells = {k: v for k, v in record.items() if k in ROW_COLUMNS and v is not None}
        instance = record["instance"]
        held = self.states.get(instance)
        group_state = SimpleNamespace(exists=held is not None, get=held)
        group_state.update = lambda value: self.states.__setitem__(instance, value)
        frame = pd.DataFrame({"order": [order], "record": [json.dumps(cells)]})
        for out in self.group((instance,), [frame], group_state):
            for row in out.itertuples(index=False):
                self.out[(row.instance, row.step)] = (row.order, row.line, row.state, row.tables, order)

    def receive(self, key, timeout_s):
        return self.out.pop(key)


@pytest.fixture
def live_app(tmp_path, monkeypatch):
    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path))
    monkeypatch.setenv("WMVIZ_SPARK_START", "lazy")
    config = ScenarioConfig(name="an empty valve of 2 channels", channels={"0": 2})
    spec = LiveSpec(config, config.profile, {("0", "0"): 2})
    run = LiveRun(LiveSession(spec, _Stream(spec)), tmp_path / "work", "An empty valve", None)
    (tmp_path / "work").mkdir()
    slots = live_view.registry()
    key = slots.reserve()
    assert key is not None
    slots.fill(key, run)
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    app.session_state[state.LIVE] = key
    yield app, run
    slots.stop(key)


def _button(run, button: str) -> tuple[str, str, bool]:
    """A live input button as drawn: its panel's key, its id in the panel, whether disabled."""
    ((panel, log),) = run.click_logs.items()
    return panel, *log.drawn[button]


def _click(app, run, button: str) -> None:
    """A click as the browser's input panel sends it: the newest click, numbered after the last."""
    panel, action, disabled = _button(run, button)
    assert not disabled
    seq = run.click_logs[panel].seen + 1
    app.session_state[panel] = {"clicks": {"seq": seq, "log": [[seq, action]]}}
    app.run()


def _send(app, run, value: str, button: str = "live_w_0_0") -> None:
    app.text_input(key=f"live_value_{run.steps}").input(value).run()
    assert not app.exception, app.exception
    _click(app, run, button)
    assert not app.exception, app.exception
    assert run.clicks.wait_idle(30)
    app.run()
    assert not app.exception, app.exception


def test_a_watermark_past_2_53_typed_in_the_page_is_sent_and_the_panel_stays(live_app):
    app, run = live_app
    app.run()
    assert not app.exception, app.exception
    _send(app, run, "9007199254740000")
    _send(app, run, "9007199254740000", "live_w_0_1")  # both channels: the output moves there
    assert [r.watermark_ms for r in run.session.history] == [9_007_199_254_740_000] * 2
    # The next suggested value is past 2^53: a text field shows it (a number field raised here).
    assert app.text_input(key=f"live_value_{run.steps}").value == "9007199254741000"
    _send(app, run, "MAX")
    assert run.session.history[-1].watermark_ms == MAX_MS
    assert any("3 click(s): 3 stepped" in c.value for c in app.caption)
    assert app.session_state[state.STEP] == 2  # the page follows the newest step


def test_a_value_that_is_not_a_time_disables_the_send_and_says_why(live_app):
    app, run = live_app
    app.run()
    assert not _button(run, "live_w_0_0")[2]
    app.text_input(key="live_value_0").input("9223372036854775808").run()  # past Long.MAX
    assert not app.exception, app.exception
    assert _button(run, "live_w_0_0")[2]
    assert any("Not a time" in e.value for e in app.error)


# --- starting from the page ------------------------------------------------------------------------------


@pytest.fixture
def page(tmp_path, monkeypatch):
    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path))
    monkeypatch.setenv("WMVIZ_SPARK_START", "lazy")
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=120)
    app.query_params.update({"engine": "local"})
    app.run()
    assert not app.exception, app.exception
    return app


def test_a_start_that_fails_frees_its_slot_and_says_why(page, monkeypatch):
    from wmviz.ui import loading

    def no_spark(timeout):
        raise RuntimeError("no Spark here")

    monkeypatch.setattr(loading.spark_service(), "session", no_spark)
    taken = live_view.registry().taken
    page.button(key="live_empty").click().run()
    assert not page.exception, page.exception
    assert any("Live mode could not start" in e.value and "no Spark here" in e.value for e in page.error)
    assert live_view.registry().taken == taken


def test_a_start_past_the_limit_is_refused_with_the_limit_named(page):
    slots = live_view.registry()
    held = []
    while (key := slots.reserve()) is not None:  # every slot taken by starts in progress
        held.append(key)
    try:
        page.button(key="live_empty").click().run()
        assert not page.exception, page.exception
        assert any(
            "already run or are starting" in e.value and "WMVIZ_MAX_LIVE" in e.value for e in page.error
        )
    finally:
        for key in held:
            slots.release(key)


# --- clicks counted in the browser --------------------------------------------------------------------


def test_every_click_in_a_merged_log_is_taken_once_and_in_order():
    from wmviz.live.clicks import ClickLog

    log = ClickLog(actions={"0.0": "w", "0.1": "idle"})
    # Streamlit kept only the newest of three messages: it still names all three clicks.
    assert log.take({"seq": 3, "log": [[1, "0.0"], [2, "0.1"], [3, "0.0"]]}) == ["w", "idle", "w"]
    assert log.take({"seq": 3, "log": [[1, "0.0"], [2, "0.1"], [3, "0.0"]]}) == []  # sent again
    assert log.take({"seq": 5, "log": [[3, "0.0"], [4, "0.1"], [5, "0.0"]]}) == ["idle", "w"]
    # What a forged message holds is not taken: unknown ids, odd entries, no log at all.
    for forged in (None, "x", {"log": "x"}, {"log": [[6, "9.9"], ["7", "0.0"], [True, "0.0"], [8]]}):
        assert log.take(forged) == []
    assert log.seen == 5
    # A number no browser's counter reaches (past 2**53 - 1) is not taken, and the clicks after
    # it still are: taken, 10**100 had made every later click "seen".
    assert log.take({"log": [[10**100, "0.0"], [2**53, "0.1"]]}) == []
    assert log.take({"log": [[6, "0.1"]]}) == ["idle"]


# --- a query that dies while the driver looks ----------------------------------------------------------


class _DyingQuery:
    """A stand-in for Spark's StreamingQuery that fails as Spark does, exception first and
    inactive after, with the failure landing between the driver's two reads of it: the first
    `exception()` answers None and the query is dead by the next read."""

    def __init__(self, cause: str, *, dies_while_read: bool) -> None:
        self.cause = cause
        self.dead = not dies_while_read

    @property
    def isActive(self) -> bool:  # Spark's name for it
        return not self.dead

    def exception(self) -> str | None:
        if self.dead:
            return self.cause
        self.dead = True  # it fails now: recorded after this read, inactive from the next
        return None

    def stop(self) -> None:
        pass


def test_a_query_that_dies_while_the_driver_reads_it_is_restarted_not_taken_for_stopped_on_purpose(
    monkeypatch, tmp_path
):
    """CI beside a CPU hog read "the live query stopped: None" (a stop on purpose, no restart) for
    a query that had failed: its exception was read just before it failed, its activity just
    after. Both reads must describe one moment, so the driver restarts it from its checkpoint."""
    from wmviz.spark import live_query

    restarted: list[_DyingQuery] = []

    def resume(*_args):
        restarted.append(_DyingQuery("the resumed query failed too", dies_while_read=False))
        return restarted[-1]

    monkeypatch.setattr(live_query, "_start_query", resume)
    stream = live_query.LiveStream(
        tmp_path,
        _DyingQuery("a sink failure", dies_while_read=True),
        live_query._Inbox(),
        0.0,
        None,
        None,
        tmp_path,
    )
    with pytest.raises(live_query.LiveError, match="the live query stopped: the resumed query failed too"):
        stream.receive(("0", 0), timeout_s=30)
    assert len(restarted) == 1
