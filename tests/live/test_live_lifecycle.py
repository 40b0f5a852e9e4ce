"""Live mode's lifecycle below the page (`wmviz.live`), tested without Streamlit or Spark: a run
started in a slot and its folder, a click stepped on the worker thread and taken in by the page's
thread, a stop that waits for the step in progress and leaves no thread and no folder, a start that
fails or is cut short giving back its slot, and the sweep that removes only the folders wmviz made
for servers that are gone."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest

from tests.support import paths
from wmviz.core.scenario import ScenarioConfig, Trace, TraceRow
from wmviz.live.folders import MARKER, live_base, server_root, sweep_stale
from wmviz.live.run import Click, LiveBusy, LiveRun, LiveStartFailed, new_registry, start_run
from wmviz.spark.live_limits import LiveSlots
from wmviz.timeline.memory import MemoryTimeline
from wmviz.timeline.meta import LIVE_ENGINE, TimelineMeta

CONFIG = ScenarioConfig(name="two channels", channels={"0": 2})


class FakeSession:
    """A live session's surface as the lifecycle uses it: a step lands its tables in the session's
    timeline from the worker thread, as the query's driver does."""

    def __init__(self, step_s: float = 0.0) -> None:
        self.timeline = MemoryTimeline(TimelineMeta(CONFIG, CONFIG.profile, LIVE_ENGINE, 1))
        self.history: list[object] = []
        self.events: list[str] = []
        self.step_s = step_s

    def _land(self, what: object) -> None:
        time.sleep(self.step_s)
        self.history.append(what)
        self.timeline.add({"steps": pa.table({"instance": ["0"], "step": [len(self.history) - 1]})})
        self.events.append("stepped")

    def step(self, row: TraceRow) -> None:
        self._land(row)

    def inject(self, kind: str, **cells: object) -> None:
        self._land((kind, cells))

    def close(self) -> None:
        self.events.append("closed")


def _trace(rows: int) -> Trace:
    return SimpleNamespace(rows=[f"row {i}" for i in range(rows)])  # type: ignore[return-value]


def _steps_threads(before: set[threading.Thread]) -> list[threading.Thread]:
    """The live step workers running now that were not running `before`."""
    return [
        t for t in threading.enumerate() if t.name == "wmviz-live-steps" and t.is_alive() and t not in before
    ]


@pytest.fixture
def slots(tmp_path: Path):
    registry = new_registry(tmp_path)
    yield registry
    registry.close()


def test_a_run_starts_in_a_slot_with_its_own_folder(slots: LiveSlots[LiveRun], tmp_path: Path) -> None:
    session = FakeSession()
    opened: list[Path] = []
    key = start_run(slots, tmp_path, "t", None, lambda work: opened.append(work) or session)  # type: ignore[func-returns-value]
    run = slots.get(key)
    assert run is not None and run.session is session and slots.taken == 1
    assert opened == [run.work] and run.work.is_dir()
    assert run.work.parent == tmp_path / str(os.getpid()) and (run.work.parent / MARKER).is_file()


def test_a_click_steps_on_the_worker_and_shows_once_the_page_takes_it_in(
    slots: LiveSlots[LiveRun], tmp_path: Path
) -> None:
    session = FakeSession()
    run = slots.get(start_run(slots, tmp_path, "t", _trace(2), lambda work: session))  # type: ignore[arg-type]
    assert run is not None
    run.feed_next()
    run.offer(Click("watermark", 1, {"watermark_ms": 5}))
    assert run.follow and run.clicks.wait_idle(5)
    assert session.history == ["row 0", ("watermark", {"channel": 1, "watermark_ms": 5})]
    assert run.fed == 1 and run.steps == 2
    assert run.shown == 0  # landed beside the page's timeline, not in it
    run.timeline.take_in()
    assert run.shown == 2 and run.timeline.meta.instances == {"0": 2} and run.timeline.newest_instance == "0"
    run.feed_next()
    run.feed_next()  # past the trace's end: nothing is queued
    assert run.clicks.wait_idle(5) and run.fed == 2 and run.next_row() is None
    assert run.clicks.counts().stepped == 4  # the click past the end runs and finds no row


def test_a_stop_waits_for_the_step_in_progress_and_leaves_no_thread_and_no_folder(
    slots: LiveSlots[LiveRun], tmp_path: Path
) -> None:
    session = FakeSession(step_s=0.3)
    key = start_run(slots, tmp_path, "t", None, lambda work: session)  # type: ignore[arg-type,return-value]
    run = slots.get(key)
    assert run is not None
    before = set(threading.enumerate())
    for channel in range(5):
        run.offer(Click("status", channel, {"status": "IDLE"}))
    time.sleep(0.05)  # the first step is under way
    assert _steps_threads(before)
    slots.stop(key)
    assert session.events == ["stepped", "closed"]  # the query is stopped under no step
    assert not _steps_threads(before) and not run.work.exists() and slots.get(key) is None
    assert run.clicks.counts().refused == 4  # the waiting clicks were dropped, and said
    run.offer(Click())
    assert run.clicks.counts().refused == 5 and not _steps_threads(before)


def test_the_registry_timer_thread_ends_with_the_registry(tmp_path: Path) -> None:
    before = set(threading.enumerate())
    registry = new_registry(tmp_path)
    (timer,) = [t for t in threading.enumerate() if t not in before and t.name == "wmviz-live-idle"]
    registry.close()
    timer.join(5)
    assert not timer.is_alive()


def test_a_start_past_the_limit_names_the_setting(slots: LiveSlots[LiveRun], tmp_path: Path) -> None:
    held = []
    while (key := slots.reserve()) is not None:
        held.append(key)
    with pytest.raises(LiveBusy, match="WMVIZ_MAX_LIVE"):
        start_run(slots, tmp_path, "t", None, lambda work: FakeSession())  # type: ignore[arg-type,return-value]
    for key in held:
        slots.release(key)


@pytest.mark.parametrize("failure", [RuntimeError("no Spark here"), KeyboardInterrupt()])
def test_a_start_that_fails_or_is_cut_short_gives_back_its_slot_and_folder(
    slots: LiveSlots[LiveRun], tmp_path: Path, failure: BaseException
) -> None:
    def fail(work: Path) -> FakeSession:
        raise failure

    expected = LiveStartFailed if isinstance(failure, Exception) else KeyboardInterrupt
    with pytest.raises(expected) as caught:
        start_run(slots, tmp_path, "t", None, fail)  # type: ignore[arg-type]
    if expected is LiveStartFailed:
        assert "RuntimeError: no Spark here" in str(caught.value)
    assert slots.taken == 0
    assert [p.name for p in (tmp_path / str(os.getpid())).iterdir()] == [MARKER]


def _gone_pid() -> int:
    child = subprocess.Popen(["true"])
    child.wait()
    return child.pid


def test_the_sweep_removes_only_what_wmviz_left_for_servers_that_are_gone(tmp_path: Path) -> None:
    gone = _gone_pid()
    ours_gone = tmp_path / str(gone)
    (ours_gone / "live-x").mkdir(parents=True)
    (ours_gone / MARKER).touch()
    theirs = tmp_path / str(_gone_pid())  # digits, but not wmviz's: no marker
    (theirs / "data").mkdir(parents=True)
    running = tmp_path / str(os.getppid())
    running.mkdir()
    (running / MARKER).touch()
    mine = server_root(tmp_path)
    other = tmp_path / "notes"
    other.mkdir()
    assert sweep_stale(tmp_path) == [ours_gone]
    assert not ours_gone.exists()
    assert theirs.is_dir() and running.is_dir() and mine.is_dir() and other.is_dir()


def test_the_folders_sit_in_memory_when_the_system_has_it(tmp_path: Path) -> None:
    shm = tmp_path / "shm"
    shm.mkdir()
    assert live_base(tmp_path / "cache", shm) == shm / "wmviz-live"
    assert live_base(tmp_path / "cache", tmp_path / "none") == tmp_path / "cache"


def test_the_lifecycle_loads_neither_streamlit_nor_pyspark() -> None:
    """Below the page, and cheap to import: Spark is loaded only when a run starts."""
    root = paths.REPO
    modules = sorted(p.stem for p in (root / "wmviz" / "live").glob("*.py") if p.stem != "__init__")
    assert {"run", "clicks", "folders"} <= set(modules)
    code = "".join(f"import wmviz.live.{m}\n" for m in modules) + (
        "import sys\nprint(sorted(m for m in sys.modules if m.split('.')[0] in ('streamlit', 'pyspark')))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert done.stdout.strip() == "[]"
