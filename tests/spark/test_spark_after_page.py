"""The server's Spark starts after the first page, not beside it: a JVM starting takes both cores
for ~10 s, and started with the page it doubled the wait for a usable first page. No JVM starts
here: the session's start (`SparkService._run`) is replaced by one that only notes it was called."""

from __future__ import annotations

import threading

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO
from wmviz.spark import service as spark_service_module
from wmviz.spark.service import IDLE, SOON, STARTING, SparkService
from wmviz.ui import loading


@pytest.fixture
def started(monkeypatch):
    """An event set when a SparkService really starts its session (never a JVM here)."""
    event = threading.Event()
    monkeypatch.setattr(SparkService, "_run", lambda self: event.set())
    return event


def _cancel(service: SparkService) -> None:
    if service._timer is not None:
        service._timer.cancel()


def test_start_later_waits_then_starts_once(started):
    service = SparkService("local[1]").start_later(0.2)
    assert service.state == SOON and service._thread is None  # asked, not started
    assert not started.wait(0.05)
    assert started.wait(10), "the delayed start never came"
    assert service.state == STARTING
    thread = service._thread
    service.start_later(0.01).start()  # asked again: the one start stands
    assert service._thread is thread


def test_a_run_that_needs_spark_starts_it_at_once_without_waiting_for_the_delay(started):
    service = SparkService("local[1]").start_later(3600)
    try:
        service.start()
        assert started.wait(10) and service.state == STARTING
    finally:
        _cancel(service)


def test_the_app_asks_for_spark_only_after_its_first_script_run(started, monkeypatch, tmp_path):
    """The first page's script run leaves Spark "starting soon", and the start comes
    SPARK_AFTER_PAGE_S after the run is over; `WMVIZ_SPARK_START=lazy` never asks."""
    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path / "timelines"))
    monkeypatch.setattr(loading, "SPARK_AFTER_PAGE_S", 3600)
    loading.spark_service.clear()
    seen: list[str] = []
    real_start = SparkService.start
    monkeypatch.setattr(SparkService, "start", lambda self: seen.append(self.state) or real_start(self))
    for mode, after in (("lazy", IDLE), ("eager", SOON)):
        monkeypatch.setenv("WMVIZ_SPARK_START", mode)
        loading.spark_service.clear()
        app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
        app.query_params.update({"engine": "local"})
        app.run()
        assert not app.exception, app.exception
        service = loading.spark_service()
        try:
            assert service.state == after, mode
            assert seen == [] and not started.is_set(), "Spark started during the first page's run"
            box = app.sidebar.markdown
            assert any(f"Spark {after}" in m.value for m in box), [m.value for m in box]
        finally:
            _cancel(service)
    loading.spark_service.clear()


def test_the_status_box_words_for_a_spark_that_starts_soon():
    from wmviz.ui.panels import _busy, _spark_timing

    status = spark_service_module.SparkStatus(SOON, "local[*]", None, 1.0)
    assert _spark_timing(status) == "starts once the page is drawn"
    service = SparkService("local[1]")
    assert not _busy(service)
    service.state = SOON
    assert _busy(service)  # the box refreshes itself, so it shows the start when it comes
