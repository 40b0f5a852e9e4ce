"""Live mode warmed once Spark is ready: the server's Spark runs one throwaway live query of one step
(`SparkService._warm_live`), so a person's first live run does not pay for loading the streaming
engine (on a quiet machine, 5.6 s to start and 6.1 s for the first step before; 0.2 s and 2.4 s
after: `bench/app_latency.py --live-only`). The page is told Spark is ready before the warm-up, and
the warm-up's own jobs never make the Spark box refresh itself."""

from __future__ import annotations

import tempfile
from types import SimpleNamespace

import pytest

from wmviz.core.simulate import simulate
from wmviz.spark import session as session_module
from wmviz.spark.live import LiveSession, demo_trace
from wmviz.spark.service import READY, SparkService
from wmviz.timeline.transcript import transcript_record


@pytest.mark.spark
def test_ready_first_then_one_live_step_and_nothing_left_behind(spark, tmp_path, monkeypatch, capfd):
    monkeypatch.setattr(session_module, "get_spark", lambda master=None: spark)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where the warm-up's folder goes
    service = SparkService("local[2]")
    seen_at_warm_up: list[tuple[str, bool]] = []
    steps: list[dict] = []
    real_warm, real_step = SparkService._warm_live, LiveSession.step

    def warm(self: SparkService) -> None:
        seen_at_warm_up.append((self.state, self._ready.is_set()))
        real_warm(self)

    def step(live, row):
        steps.append(real_step(live, row))
        return steps[-1]

    monkeypatch.setattr(SparkService, "_warm_live", warm)
    monkeypatch.setattr(LiveSession, "step", step)
    service._run()  # what the start thread runs, here in the test's own thread
    assert seen_at_warm_up == [(READY, True)], "the page must hear 'ready' before the warm-up"
    assert service.live_warmed.is_set()
    trace = demo_trace(1)
    assert steps == [transcript_record(next(iter(simulate(trace))))], "the warm-up's step went wrong"
    assert spark.streams.active == [], "the warm-up's query is still running"
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
