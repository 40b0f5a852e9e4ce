"""Live mode warmed once Spark is ready: the server's Spark runs one throwaway live query of one step
(`SparkService._warm_live`), so a person's first live run does not pay for loading the streaming
engine (in one process on a quiet machine, a first query took 5.6 s to start and 6.1 s for its first
step, a second 0.2 s and 2.4 s: docs/benchmarks.md, "The first live step"). The page is told Spark
is ready before the warm-up, and the warm-up's jobs never make the Spark box refresh itself."""

from __future__ import annotations

import tempfile
import threading
import time
from types import SimpleNamespace

import pytest

from wmviz.core.simulate import simulate
from wmviz.spark import session as session_module
from wmviz.spark.live import LiveSession, demo_trace
from wmviz.spark.live_query import LiveStream, _Streams
from wmviz.spark.service import READY, SparkService
from wmviz.timeline.transcript import transcript_record


@pytest.mark.spark
def test_ready_first_then_one_live_step_and_nothing_left_behind(spark, tmp_path, monkeypatch, capfd):
    monkeypatch.setenv("WMVIZ_LIVE_WARM_UP", "on")  # what a user's server does (the suite's: off)
    monkeypatch.setattr(session_module, "get_spark", lambda master=None: spark)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the warm-up's folder goes
    service = SparkService("local[2]")
    seen_at_warm_up: list[tuple[str, bool, bool]] = []
    steps: list[dict] = []
    queries: list = []
    real_warm, real_step, real_start = SparkService._warm_live, LiveSession.step, LiveStream.start

    def warm(self: SparkService) -> None:
        seen_at_warm_up.append((self.state, self._ready.is_set(), self.status().live_warming))
        real_warm(self)

    def start(spark, spec, work_dir):
        stream = real_start(spark, spec, work_dir)
        queries.append(stream.query)
        return stream

    def step(live, row):
        steps.append(real_step(live, row))
        return steps[-1]

    monkeypatch.setattr(SparkService, "_warm_live", warm)
    monkeypatch.setattr(LiveSession, "step", step)
    monkeypatch.setattr(LiveStream, "start", start)
    service._run()  # what the start thread runs, here in the test's own thread
    assert seen_at_warm_up == [(READY, True, True)], "'ready' (and 'warming live mode') before the warm-up"
    assert service.live_warmed.is_set()
    trace = demo_trace(1)
    assert steps == [transcript_record(next(iter(simulate(trace))))], "the warm-up's step went wrong"
    assert len(queries) == 1 and not queries[0].isActive, "the warm-up's query is still running"
    assert list(tmp_path.iterdir()) == [], "the warm-up left its folder behind"
    assert "Traceback" not in capfd.readouterr().err
    assert not service.status().live_warming


class _Tracker:
    def getActiveStageIds(self):
        return [3]

    def getStageInfo(self, stage_id):
        return SimpleNamespace(numCompletedTasks=0, numTasks=1)

    def getActiveJobsIds(self):
        return [7]


def test_the_warm_up_jobs_are_not_shown_so_the_box_does_not_refresh_for_them():
    from wmviz.ui.panels import _busy

    service = SparkService("local[1]")
    service.state = READY
    service._session = SimpleNamespace(sparkContext=SimpleNamespace(statusTracker=_Tracker))
    assert service.status().job == "job 7: stage 3, 0 of 1 tasks" and _busy(service)
    service._live_warming = True
    assert service.status().job is None and service.status().live_warming
    assert not _busy(service)


def test_stopping_every_stream_waits_for_a_start_under_way_then_stops_it_too():
    """A server stopped while a live query starts (its start took 5.6 s the first time) stops that
    query too: stopped under its thread, it printed a Java stack trace."""
    streams = _Streams()
    stopped: list[object] = []

    class Stream:
        def stop(self) -> None:
            stopped.append(self)

    class Failed:
        def stop(self) -> None:
            raise RuntimeError("its query failed already")

    failed, late = Failed(), Stream()
    streams.add(failed)
    inside, go_on = threading.Event(), threading.Event()

    def start() -> None:
        with streams.starting():
            inside.set()
            go_on.wait(10)
            streams.add(late)

    starter = threading.Thread(target=start)
    starter.start()
    assert inside.wait(10)
    stopper = threading.Thread(target=streams.stop_all, args=(30,))
    stopper.start()
    time.sleep(0.2)
    assert stopped == [], "stopped before the start under way was over"
    go_on.set()
    starter.join(10)
    stopper.join(10)
    assert stopped == [late]


@pytest.mark.spark
def test_with_the_warm_up_off_no_live_query_runs_and_live_mode_does_not_wait(spark, monkeypatch):
    monkeypatch.setenv("WMVIZ_LIVE_WARM_UP", "off")
    monkeypatch.setattr(session_module, "get_spark", lambda master=None: spark)
    started: list[object] = []
    monkeypatch.setattr(LiveStream, "start", lambda *args: started.append(args))
    service = SparkService("local[2]")
    service._run()
    assert service.state == READY and service.live_warmed.is_set()
    assert started == [] and not service.status().live_warming


def test_a_persons_live_query_waits_for_the_warm_up_to_end():
    """Two first live queries starting at once on a busy machine failed (a Python worker did not
    connect back within Spark's 10 s): a person's waits for the warm-up's to end."""
    service = SparkService("local[1]")
    service._session = session = object()
    service._ready.set()
    # As if started: `session` starts the service, and a real start found the suite's session at
    # once, warmed nothing (the suite turns the warm-up off) and said so within the 0.2 s (CI).
    service.start = lambda: service  # type: ignore[method-assign]
    got: list[object] = []
    asking = threading.Thread(target=lambda: got.append(service.session_for_live(timeout=30)))
    asking.start()
    time.sleep(0.2)
    assert got == [], "a person's live query did not wait for the warm-up"
    service.live_warmed.set()
    asking.join(10)
    assert got == [session]
