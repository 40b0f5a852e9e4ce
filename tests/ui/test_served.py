"""What is served is what was written (issue 24): a cached timeline or a stored upload changed on
disk is never served, whatever its size and time say; a cache entry left incomplete is treated as
absent and made again (and counted by the budget); an eviction racing a viewer ends in a rebuilt
timeline or a clean error, never a traceback."""

from __future__ import annotations

import os
import threading

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO
from wmviz.store import bundles, runs, uploads
from wmviz.store.runs import RunRequest, cached_timeline, enforce_budget, run_timeline
from wmviz.store.uploads import DamagedUpload
from wmviz.timeline.cursor import InstanceCursor
from wmviz.timeline.store import TimelineError

TRACE = REPO / "sample_data" / "flink-38477-zero-output.jsonl"
INCIDENT = TRACE.read_bytes()


@pytest.fixture(autouse=True)
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path))
    monkeypatch.setenv("WMVIZ_SPARK_START", "lazy")
    return tmp_path


def _request() -> RunRequest:
    return RunRequest(TRACE, None, None, "local")


def _change_keeping_size_and_time(path, at: int | None = None) -> None:
    """Flip one byte in the middle of `path`, then set its times back: the size and mtime a
    memo keyed on them would see are the ones it saw before."""
    before = path.stat()
    data = bytearray(path.read_bytes())
    at = len(data) // 2 if at is None else at
    data[at] ^= 0xFF
    path.write_bytes(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


# --- a changed file is never served ---------------------------------------------------------------


def test_a_cached_timeline_changed_with_its_size_and_mtime_kept_is_simulated_again(root):
    first = run_timeline(_request(), None, root / "timelines")
    InstanceCursor(first, "0")  # served once: its check is now remembered
    part = next(first.path.glob("table=steps/*.parquet"))
    _change_keeping_size_and_time(part)
    seen = []
    again = run_timeline(_request(), seen.append, root / "timelines")
    assert seen, "the changed entry was served, not simulated again"
    again.verify()
    InstanceCursor(again, "0")


def test_a_read_of_a_part_file_changed_after_it_was_checked_is_refused(root):
    timeline = run_timeline(_request(), None, root / "timelines")
    InstanceCursor(timeline, "0")
    part = next(timeline.path.glob("table=steps/*.parquet"))
    _change_keeping_size_and_time(part)
    with pytest.raises(TimelineError, match="changed on disk"):
        InstanceCursor(timeline, "0")  # the same Timeline object, its check done before the change
    assert cached_timeline(timeline.path) is None  # reported damaged, removed, made again next run


def test_a_stored_upload_changed_with_its_size_and_mtime_kept_is_never_served(root):
    stored = uploads.store_upload("t.jsonl", INCIDENT, b'{"profile": "flip-38477"}', story_bytes=b"hi")
    assert uploads.find_upload(stored.digest) == stored  # checked once: remembered
    _change_keeping_size_and_time(stored.trace_path)
    with pytest.raises(DamagedUpload):
        uploads.find_upload(stored.digest)
    with pytest.raises(DamagedUpload):
        bundles.make_bundle(stored, {})  # the StoredUpload in hand does not hand out changed bytes


def test_a_stored_uploads_story_changed_after_its_check_is_not_handed_out(root):
    stored = uploads.store_upload("t.jsonl", INCIDENT, None, story_bytes=b"the story")
    assert stored.story() == "the story"
    _change_keeping_size_and_time(stored.story_path, at=0)
    with pytest.raises(DamagedUpload):
        stored.story()


# --- an incomplete entry is absent ----------------------------------------------------------------


@pytest.mark.parametrize("left", ["last-used only", "parts without meta", "empty"])
def test_a_cache_entry_without_meta_json_is_made_again(root, left):
    timelines = root / "timelines"
    target = timelines / _request().digest()
    if left == "parts without meta":
        made = run_timeline(_request(), None, timelines)
        (made.path / "meta.json").unlink()  # a removal cut short after its first file
    else:
        target.mkdir(parents=True)
        if left == "last-used only":  # a touch that raced an rmtree
            (target / runs.LAST_USED).touch()
    seen = []
    timeline = run_timeline(_request(), seen.append, timelines)
    assert seen and timeline.path == target
    timeline.verify()


def test_a_folder_wmviz_did_not_write_is_never_removed_and_said_cleanly(root):
    timelines = root / "timelines"
    target = timelines / _request().digest()
    target.mkdir(parents=True)
    (target / "notes.txt").write_text("mine")
    with pytest.raises(TimelineError, match="wmviz did not write"):
        run_timeline(_request(), None, timelines)
    assert (target / "notes.txt").read_text() == "mine"
    assert enforce_budget(timelines, keep=timelines / "none", budget_mb=0) == []
    assert (target / "notes.txt").is_file()


def test_the_budget_counts_and_evicts_incomplete_entries(root):
    timelines = root / "timelines"
    made = run_timeline(_request(), None, timelines)
    (made.path / "meta.json").unlink()
    removed = enforce_budget(timelines, keep=timelines / "none", budget_mb=0)
    assert removed == [made.path] and not made.path.exists()
    assert not list(timelines.iterdir())  # nothing set aside is left behind


def test_the_landing_page_rebuilds_an_incomplete_entry_of_the_default_incident(root):
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    app.run()
    assert not app.exception, app.exception
    (entry,) = (root / "timelines").iterdir()
    for part in entry.rglob("*"):
        if part.is_file() and part.name != runs.LAST_USED:
            part.unlink()  # what an rmtree raced by a touch of .last-used leaves
    again = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    again.run()
    assert not again.exception, again.exception
    assert not [s for s in again.get("status") if "failed" in str(s.proto)]
    assert (entry / "meta.json").is_file()


def test_the_landing_page_says_when_a_folder_wmviz_did_not_write_holds_its_run(root):
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    app.run()
    (entry,) = (root / "timelines").iterdir()
    assert runs.discard(entry)
    entry.mkdir()
    (entry / "notes.txt").write_text("mine")
    again = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    again.run()
    assert not again.exception, again.exception
    assert any("wmviz did not write" in e.value for e in again.error), [e.value for e in again.error]
    assert (entry / "notes.txt").read_text() == "mine"


# --- eviction racing a viewer ---------------------------------------------------------------------


def test_an_eviction_racing_a_viewer_ends_in_a_timeline_or_a_clean_error(root):
    timelines = root / "timelines"
    run_timeline(_request(), None, timelines)
    done = threading.Event()
    failures: list[BaseException] = []

    def evict() -> None:
        while not done.wait(0.002):  # a short breath: some rounds are served whole
            try:
                enforce_budget(timelines, keep=timelines / "none", budget_mb=0)
            except BaseException as exc:  # the evictor must not fail either
                failures.append(exc)
                return

    evictor = threading.Thread(target=evict, daemon=True)
    evictor.start()
    served = clean = 0
    try:
        for _ in range(40):
            try:
                timeline = run_timeline(_request(), None, timelines)
                cursor = InstanceCursor(timeline, "0")
                assert cursor.count > 0
                served += 1
            except TimelineError as exc:  # gone while read: said, and made again on the next run
                if "removed" in str(exc) or "gone" in str(exc):
                    clean += 1
                else:
                    failures.append(exc)
            except BaseException as exc:
                failures.append(exc)
    finally:
        done.set()
        evictor.join(30)
    assert not failures, (len(failures), [f"{type(e).__name__}: {e}" for e in failures[:5]])
    assert served + clean == 40
    assert InstanceCursor(run_timeline(_request(), None, timelines), "0").count > 0  # made again
    assert not [p for p in timelines.iterdir() if ".gone-" in p.name]  # nothing half removed left


def test_a_page_whose_entry_is_evicted_before_it_is_read_simulates_it_again(root, monkeypatch):
    from wmviz.ui import loading

    made = loading.load_timeline
    evicted = []

    def load_then_evict(request, what, plan=None):
        timeline = made(request, what, plan)
        if not evicted:  # another session's budget takes the entry right after it was served
            evicted.append(enforce_budget(runs.cache_root(), keep=root / "none", budget_mb=0))
        return timeline

    monkeypatch.setattr(loading, "load_timeline", load_then_evict)
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    app.run()
    assert evicted and evicted[0], "the entry was not evicted"
    assert not app.exception, app.exception
    assert app.title[0].value
    assert list((root / "timelines").glob("*/meta.json")), "the evicted entry was made again"
