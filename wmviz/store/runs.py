"""Simulate a trace into a timeline directory once, and reuse it (the app's only write path).

A run is named by what determines its result: the trace's and config's bytes, the profile, the
engine and the keyframe interval. The timeline lands in `<cache>/<digest>/` through a temporary
directory and a rename, so a half-written run is never read; an entry is served only after its
files match the digests its meta.json lists (a damaged entry is reported, removed and simulated
again). The cache is bounded (`WMVIZ_CACHE_MAX_MB`): the least recently used timelines go first.

Engines: `auto` (the default) runs a trace in this process when it is small enough to finish in
well under a second, and on Spark when it is large; `spark` and `local` force one. Spark is
imported only when it is used, so the in-process engine never waits for a JVM.
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

from wmviz.core.types import Profile
from wmviz.timeline.local import build_timeline_local
from wmviz.timeline.progress import Report, Sink
from wmviz.timeline.store import META, Timeline, TimelineError
from wmviz.trace.readers import read_trace

KEYFRAME_EVERY = 1000
ENGINES = ("auto", "spark", "local")
DEFAULT_CACHE_MB = 4096
LAST_USED = ".last-used"


def data_root() -> Path:
    """Everything the app stores, under one folder: $WMVIZ_CACHE, else ~/.cache/wmviz. It holds
    `timelines/` and `whatifs/` (bounded together by WMVIZ_CACHE_MAX_MB, least recently used
    first out) and `uploads/` (kept: links name them)."""
    return Path(os.environ.get("WMVIZ_CACHE") or Path.home() / ".cache" / "wmviz")


def cache_root() -> Path:
    """Where timelines are kept: `timelines/` under the data root."""
    return data_root() / "timelines"


def whatifs_root() -> Path:
    """Where edited traces (what-ifs) are kept, once each: `whatifs/` under the data root. They are
    evicted like timelines; a link carries the edit itself, so an evicted one is made again."""
    return data_root() / "whatifs"


def spark_threshold_mb() -> float:
    """Traces larger than this go to Spark under the `auto` engine ($WMVIZ_SPARK_UPLOAD_MB, 20)."""
    try:
        return float(os.environ.get("WMVIZ_SPARK_UPLOAD_MB", "20"))
    except ValueError:
        return 20.0


def choose_engine(engine: str, trace_path: Path) -> str:
    """The engine a run uses: `spark`/`local` as asked; `auto` by the trace's size."""
    if engine in ("spark", "local"):
        return engine
    return "spark" if trace_path.stat().st_size > spark_threshold_mb() * 2**20 else "local"


@dataclass(frozen=True)
class RunRequest:
    """What to simulate: a trace file, its config file (if separate), a profile and an engine
    (`auto` is resolved by `choose_engine` before the run is named)."""

    trace_path: Path
    config_path: Path | None
    profile: Profile | None
    engine: str
    keyframe_every: int = KEYFRAME_EVERY

    @property
    def resolved_engine(self) -> str:
        return choose_engine(self.engine, self.trace_path)

    def digest(self) -> str:
        """The run's name: a hash of everything its result depends on."""
        h = hashlib.sha256()
        for part in (self.trace_path, self.config_path):
            h.update(file_digest(Path(part)).encode() if part is not None else b"-")
            h.update(b"\0")
        h.update(self.trace_path.suffix.encode())  # the format follows the extension
        profile = self.profile.value if self.profile else "scenario"
        h.update(f"{profile}|{self.resolved_engine}|{self.keyframe_every}".encode())
        return h.hexdigest()[:24]


def file_digest(path: Path) -> str:
    """The SHA-256 of a file's bytes, computed once per (path, size, mtime): the app asks every step."""
    stat = path.stat()
    return _digest(str(path.resolve()), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


# ---- serving what is cached --------------------------------------------------------------------


def cached_timeline(target: Path) -> Timeline | None:
    """The timeline at `target` if it is there and intact; a damaged one is reported and removed
    (it is an entry of wmviz's own cache) and None returned, so it is simulated again."""
    if not (target / META).is_file():
        return None
    try:
        timeline = _verified(str(target), _stamp(target))
    except TimelineError as exc:
        print(f"wmviz: a cached timeline is damaged and will be simulated again: {exc}", file=sys.stderr)
        _verified.cache_clear()
        shutil.rmtree(target, ignore_errors=True)
        return None
    _touch(target)
    return timeline


def _stamp(target: Path) -> tuple[tuple[str, int, int], ...]:
    """Every file's name, size and modification time: cheap to read at each step, and a changed
    stamp sends the entry through the digests again."""
    files = [target / META, *sorted(target.glob("table=*/*"))]
    return tuple((str(p.relative_to(target)), (s := p.stat()).st_size, s.st_mtime_ns) for p in files)


@functools.lru_cache(maxsize=64)
def _verified(path: str, stamp: tuple[tuple[str, int, int], ...]) -> Timeline:
    """Open and verify the digests once per process for each stamp of the entry's files."""
    timeline = Timeline(Path(path))
    timeline.verify()
    return timeline


def _touch(target: Path) -> None:
    """Mark the entry as used now (least-recently-used eviction reads this)."""
    with contextlib.suppress(OSError):  # a read-only cache still serves; it only stops aging
        (target / LAST_USED).touch()


def cache_budget_mb() -> float:
    """$WMVIZ_CACHE_MAX_MB, else 4 GB."""
    try:
        return float(os.environ.get("WMVIZ_CACHE_MAX_MB", DEFAULT_CACHE_MB))
    except ValueError:
        return DEFAULT_CACHE_MB


def enforce_budget(root: Path, keep: Path, budget_mb: float | None = None) -> list[Path]:
    """Remove the least recently used timelines and what-ifs until they fit the budget together;
    `keep` (the one just made or used) stays. `root` is the timelines folder; the what-ifs are
    its sibling `whatifs/`. Only entries wmviz wrote are candidates: a timeline with its
    meta.json, a what-if folder named by its digest. Returns what was removed."""
    budget = (budget_mb if budget_mb is not None else cache_budget_mb()) * 2**20
    entries = [
        *_entries(root, lambda e: (e / META).is_file()),
        *_entries(root.parent / "whatifs", _is_whatif),
    ]
    total = sum(size for _, size, _ in entries)
    removed = []
    for _, size, entry in sorted(entries):
        if total <= budget:
            break
        if entry == keep:
            continue
        shutil.rmtree(entry, ignore_errors=True)
        total -= size
        removed.append(entry)
    return removed


def _entries(folder: Path, ours: Callable[[Path], bool]) -> list[tuple[float, int, Path]]:
    """(last used, bytes, path) of each entry in `folder` that `ours` recognises."""
    found = []
    for entry in folder.iterdir() if folder.is_dir() else ():
        if entry.is_dir() and ours(entry):
            size = sum(p.stat().st_size for p in entry.rglob("*") if p.is_file())
            used = (entry / LAST_USED).stat().st_mtime if (entry / LAST_USED).exists() else 0.0
            found.append((used, size, entry))
    return found


def _is_whatif(entry: Path) -> bool:
    return len(entry.name) == 24 and all(c in "0123456789abcdef" for c in entry.name)


# ---- simulating --------------------------------------------------------------------------------


def run_timeline(
    request: RunRequest,
    progress: Sink | None = None,
    root: Path | None = None,
    spark: Callable[[], Any] | None = None,
) -> Timeline:
    """The timeline of `request`, simulated now unless the cache holds it intact. `spark` gives the
    SparkSession when the run needs one (default: the process's session)."""
    root = root or cache_root()
    target = root / request.digest()
    found = cached_timeline(target)
    if found is not None:
        return found
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="run-", dir=root))
    sink = progress or (lambda report: None)
    try:
        out = work / "timeline"
        if request.resolved_engine == "spark":
            _simulate_spark(request, out, sink, spark)
        else:
            _simulate_local(request, out, sink)
        _touch(out)
        try:
            out.rename(target)
        except OSError:
            if cached_timeline(target) is None:  # another session finished the same run first: fine
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    enforce_budget(root, target)
    timeline = cached_timeline(target)
    if timeline is None:
        raise TimelineError(f"{target}: the timeline just written does not verify")
    return timeline


def _simulate_local(request: RunRequest, out: Path, sink: Sink) -> None:
    started = time.monotonic()

    def reading(done: int, _: int) -> None:
        sink(Report("reading and checking", done, 0, "rows", time.monotonic() - started))

    trace = read_trace(request.trace_path, request.config_path, progress=reading)
    instances = len(trace.instances)
    finished = [0]

    def simulating(done: int, total: int) -> None:
        finished[0] += 1
        sink(Report("simulating", finished[0], instances, "instances", time.monotonic() - started))

    build_timeline_local(
        trace, out, request.profile, keyframe_every=request.keyframe_every, progress=simulating
    )


def _simulate_spark(request: RunRequest, out: Path, sink: Sink, spark: Callable[[], Any] | None) -> None:
    """A small trace is read and checked here and simulated in one Spark job; a large one is read,
    checked and simulated by Spark's tasks (two jobs)."""
    from wmviz.spark import run

    started = time.monotonic()
    if spark is None:
        from wmviz.spark.session import get_spark

        spark = get_spark
    if request.trace_path.stat().st_size <= spark_threshold_mb() * 2**20:
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
