"""Simulate a trace into a timeline directory once, and reuse it (the app's only write path).

A run is named by what determines its result: the trace's and config's bytes, the profile, the
engine and the keyframe interval. The timeline lands in `<cache>/<digest>/` through a temporary
directory and a rename, so a half-written run is never read; an entry is served only after its
files match the digests its meta.json lists, and every read checks again the bytes it reads
(`wmviz.timeline.checked_parts`): a damaged entry is reported, removed and simulated again. An
entry without meta.json (a removal cut short) is absent: removed and made again. Entries leave
whole (`wmviz.store.entries`), and one removed while it is read is a TimelineError, never a
traceback. The cache is bounded (`WMVIZ_CACHE_MAX_MB`): the least recently used timelines go
first.

Engines: `auto` (the default) runs a trace in this process when it is small enough to finish in
well under a second, and on Spark when it is large; `spark` and `local` force one (the rule is
`wmviz.store.plan`'s, which the page and the command line ask too). Spark is imported only when it
is used, so the in-process engine never waits for a JVM.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wmviz.core.scenario import Trace
from wmviz.core.settings import CACHE
from wmviz.core.types import Profile
from wmviz.store.entries import (
    LAST_USED,
    discard,
    enforce_budget,
    is_timeline_entry,
)
from wmviz.store.plan import RunPlan, engine_for, is_large, read_trace
from wmviz.store.plan import spark_threshold_mb as spark_threshold_mb  # read here by the page and tests
from wmviz.timeline.engine import Engine
from wmviz.timeline.local import build_timeline_local
from wmviz.timeline.progress import Report, Sink
from wmviz.timeline.store import META, Timeline, TimelineError

KEYFRAME_EVERY = 1000


def data_root() -> Path:
    """Everything the app stores, under one folder: $WMVIZ_CACHE, else ~/.cache/wmviz. It holds
    `timelines/` and `whatifs/` (bounded together by WMVIZ_CACHE_MAX_MB, least recently used
    first out) and `uploads/` (kept: links name them)."""
    return CACHE.path() or Path.home() / ".cache" / "wmviz"


def cache_root() -> Path:
    """Where timelines are kept: `timelines/` under the data root."""
    return data_root() / "timelines"


def whatifs_root() -> Path:
    """Where edited traces (what-ifs) are kept, once each: `whatifs/` under the data root. They are
    evicted like timelines; a link carries the edit itself, so an evicted one is made again."""
    return data_root() / "whatifs"


@dataclass(frozen=True)
class RunRequest:
    """What to simulate: a trace file, its config file (if separate), a profile and an engine
    (`auto` is resolved by `plan.engine_for` before the run is named)."""

    trace_path: Path
    config_path: Path | None
    profile: Profile | None
    engine: Engine
    keyframe_every: int = KEYFRAME_EVERY

    def __post_init__(self) -> None:
        object.__setattr__(self, "engine", Engine.parse(self.engine))  # a link's or a caller's name

    @property
    def resolved_engine(self) -> Engine:
        """The engine that runs (`auto` decided by the trace's size)."""
        return engine_for(self.engine, is_large(self.trace_path))

    def digest(self) -> str:
        """The run's name: a hash of everything its result depends on."""
        h = hashlib.sha256()
        for part in (self.trace_path, self.config_path):
            h.update(file_digest(Path(part)).encode() if part is not None else b"-")
            h.update(b"\0")
        h.update(self.trace_path.suffix.encode())  # the format follows the extension
        profile = self.profile.value if self.profile else "scenario"
        h.update(f"{profile}|{self.resolved_engine.value}|{self.keyframe_every}".encode())
        return h.hexdigest()[:24]


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's bytes, computed again whenever the file may have changed (the app
    asks every step): see `identity`."""
    return _digest(str(path.resolve()), identity(path))


def identity(path: Path) -> tuple[int, ...]:
    """What changes whenever a file's bytes may have: device, inode, size, mtime and ctime. The
    kernel sets ctime on every write and every change of times (utime cannot set it back), so a
    file rewritten with its size and mtime kept still gets a new identity."""
    stat = path.stat()
    return (stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)


@functools.lru_cache(maxsize=256)
def _digest(path: str, identity: tuple[int, ...]) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ---- serving what is cached --------------------------------------------------------------------


def cached_timeline(target: Path) -> Timeline | None:
    """The timeline at `target` if it is there and intact, else None (so it is simulated again).
    A damaged one (a file changed, cut or added, or a read that found one) is reported and
    removed; one without meta.json is absent; one removed while checked is absent."""
    try:
        stamp = _stamp(target)
        timeline = _verified(str(target), stamp) if stamp is not None else None
        if timeline is not None and timeline.damage is not None:
            raise TimelineError(timeline.damage)
    except (TimelineError, OSError) as exc:
        _verified.cache_clear()
        if (target / META).is_file():  # still there: damaged, not removed by someone else
            print(f"wmviz: a cached timeline is damaged and will be simulated again: {exc}", file=sys.stderr)
            discard(target)
        return None
    if timeline is not None:
        _touch(target)
    return timeline


def _stamp(target: Path) -> tuple[tuple[str, tuple[int, ...]], ...] | None:
    """Every file's name and identity (`identity`), or None without meta.json: cheap to read at
    each step, and a changed stamp sends the entry through the digests again."""
    if not (target / META).is_file():
        return None
    files = [target / META, *sorted(target.glob("table=*/*"))]
    return tuple((str(p.relative_to(target)), identity(p)) for p in files)


@functools.lru_cache(maxsize=64)
def _verified(path: str, stamp: tuple) -> Timeline:
    """Open and verify the digests once per process for each stamp of the entry's files."""
    timeline = Timeline(Path(path))
    timeline.verify()
    return timeline


def _touch(target: Path) -> None:
    """Mark the entry as used now (least-recently-used eviction reads this)."""
    with contextlib.suppress(OSError):  # a read-only cache still serves; it only stops aging
        (target / LAST_USED).touch()


# ---- simulating --------------------------------------------------------------------------------


def run_timeline(
    request: RunRequest,
    progress: Sink | None = None,
    root: Path | None = None,
    spark: Callable[[], Any] | None = None,
    plan: RunPlan | None = None,
) -> Timeline:
    """The timeline of `request`, simulated now unless the cache holds it intact. `spark` gives the
    SparkSession when the run needs one (default: the process's session); `plan`, the run's plan
    when the caller made one (`plan.plan_run`): its trace, read and validated already, is the one
    simulated. An entry another
    session's budget removes as soon as it is made is made again, a bounded number of times."""
    root = root or cache_root()
    name = request.digest()
    target = root / name
    for _ in range(_ATTEMPTS):
        found = cached_timeline(target)
        if found is not None:
            return found
        _clear_incomplete(target)
        made = _simulate_into(request, name, target, progress, spark, plan.trace if plan else None)
        if made is not None:
            return made
    raise TimelineError(
        f"{target}: the cache removed this run as soon as it was made, {_ATTEMPTS} times (other "
        "sessions' runs need the room: WMVIZ_CACHE_MAX_MB may be too small)"
    )


_ATTEMPTS = 3


def _simulate_into(
    request: RunRequest,
    name: str,
    target: Path,
    progress: Sink | None,
    spark: Callable[[], Any] | None,
    trace: Trace | None,
) -> Timeline | None:
    """Simulate into a work folder beside `target` and rename the complete timeline in; the
    timeline then, or None when another session removed it meanwhile."""
    root = target.parent
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="run-", dir=root))
    sink = progress or (lambda report: None)
    try:
        out = work / "timeline"
        if request.resolved_engine is Engine.SPARK:
            _simulate_spark(request, out, sink, spark, trace)
        else:
            _simulate_local(request, out, sink, trace)
        if request.digest() != name:  # what was read is not what the run is named by
            raise TimelineError(f"{request.trace_path}: the trace changed on disk while it was simulated")
        _touch(out)
        _publish(out, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    enforce_budget(root, target)
    return cached_timeline(target)


def _publish(out: Path, target: Path) -> None:
    """Rename the complete timeline `out` to `target` (one rename of a whole folder, as the cache
    always did). An intact entry there already is another session's identical run: kept. An
    incomplete one is removed first; a folder wmviz did not write is a TimelineError."""
    for _ in range(_ATTEMPTS):
        try:
            out.rename(target)
            return
        except OSError as exc:
            failed = exc
            if cached_timeline(target) is not None:  # another session finished the same run first
                return
            _clear_incomplete(target)
    raise TimelineError(f"{target}: the finished run could not be put in the cache ({failed})")


def _clear_incomplete(target: Path) -> None:
    """Remove what is at `target` when it is an entry wmviz made but left incomplete (no
    meta.json: a removal cut short); a folder wmviz did not write stays, and is said."""
    if not os.path.lexists(target) or (target / META).is_file():
        return  # nothing there, or an entry cached_timeline judges (a rename in flight just landed)
    if is_timeline_entry(target):
        print(f"wmviz: a cached timeline is incomplete (no {META}); made again: {target}", file=sys.stderr)
        discard(target)
        return
    raise TimelineError(
        f"{target}: this cache folder holds files wmviz did not write, so it is left as it is; "
        "move it away to run this trace"
    )


def _simulate_local(request: RunRequest, out: Path, sink: Sink, trace: Trace | None) -> None:
    """Simulate in this process: `trace` when the plan read it already, else the file read now."""
    started = time.monotonic()

    def reading(done: int, _: int) -> None:
        sink(Report("reading and checking", done, 0, "rows", time.monotonic() - started))

    if trace is None:
        trace = read_trace(request.trace_path, request.config_path, progress=reading)
    instances = len(trace.instances)
    finished = [0]

    def simulating(done: int, total: int) -> None:
        finished[0] += 1
        sink(Report("simulating", finished[0], instances, "instances", time.monotonic() - started))

    build_timeline_local(
        trace, out, request.profile, keyframe_every=request.keyframe_every, progress=simulating
    )


def _simulate_spark(
    request: RunRequest, out: Path, sink: Sink, spark: Callable[[], Any] | None, trace: Trace | None
) -> None:
    """A small trace is read and checked here (unless the plan did: `trace`) and simulated in one
    Spark job; a large one is read, checked and simulated by Spark's tasks (two jobs)."""
    from wmviz.spark import run

    started = time.monotonic()
    if spark is None:
        from wmviz.spark.session import get_spark

        spark = get_spark
    if trace is not None or not is_large(request.trace_path):
        if trace is None:
            sink(Report("reading and checking", 0, 0, "rows", 0.0))
            trace = read_trace(request.trace_path, request.config_path)
        sink(Report("waiting for the SparkSession", 0, 0, "tasks", time.monotonic() - started))
        session = spark()
        run.spark_simulate_trace(session, trace, request.profile, out, request.keyframe_every, sink)
        return
    sink(Report("waiting for the SparkSession", 0, 0, "tasks", 0.0))
    run.spark_simulate_file(
        spark(), request.trace_path, request.config_path, request.profile, out, request.keyframe_every, sink
    )
