"""Simulate a trace into a timeline directory once, and reuse it (the app's only write path).

A run is named by what determines its result: the trace's and config's bytes, the profile, the
engine and the keyframe interval. The timeline lands in `<cache>/<digest>/` through a temporary
directory and a rename, so a half-written run is never read. Spark is imported only when the Spark
engine is asked for, so the local engine works without starting a JVM.
"""

from __future__ import annotations

import functools
import hashlib
import os
import shutil
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from wmviz.core.types import Profile
from wmviz.timeline.local import build_timeline_local
from wmviz.timeline.store import META, Timeline
from wmviz.trace.readers import read_trace

KEYFRAME_EVERY = 1000
Progress = Callable[[float, str], None]
"""A progress sink: the fraction done (0..1) and one human line."""


def cache_root() -> Path:
    """Where timelines are kept: $WMVIZ_CACHE, else ~/.cache/wmviz/timelines."""
    return Path(os.environ.get("WMVIZ_CACHE") or Path.home() / ".cache" / "wmviz" / "timelines")


@dataclass(frozen=True)
class RunRequest:
    """What to simulate: a trace file, its config file (if separate), a profile and an engine."""

    trace_path: Path
    config_path: Path | None
    profile: Profile | None
    engine: str
    keyframe_every: int = KEYFRAME_EVERY

    def digest(self) -> str:
        """The run's name: a hash of everything its result depends on."""
        h = hashlib.sha256()
        for part in (self.trace_path, self.config_path):
            h.update(file_digest(Path(part)).encode() if part is not None else b"-")
            h.update(b"\0")
        h.update(self.trace_path.suffix.encode())  # the format follows the extension
        profile = self.profile.value if self.profile else "scenario"
        h.update(f"{profile}|{self.engine}|{self.keyframe_every}".encode())
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


def run_timeline(request: RunRequest, progress: Progress | None = None, root: Path | None = None) -> Timeline:
    """The timeline of `request`, simulated now unless an earlier run left it in the cache."""
    root = root or cache_root()
    target = root / request.digest()
    if (target / META).is_file():
        return Timeline(target)
    root.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="run-", dir=root))
    try:
        out = work / "timeline"
        if request.engine == "spark":
            _simulate_spark(request, out, progress)
        else:
            _simulate_local(request, out, progress)
        try:
            out.rename(target)
        except OSError:
            if not (target / META).is_file():  # another session finished the same run first: fine
                raise
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Timeline(target)


def _simulate_local(request: RunRequest, out: Path, progress: Progress | None) -> None:
    trace = read_trace(request.trace_path, request.config_path)

    def report(done: int, total: int) -> None:
        if progress is not None:
            progress(done / max(total, 1), f"local engine: {done:,} of {total:,} rows simulated")

    build_timeline_local(trace, out, request.profile, keyframe_every=request.keyframe_every, progress=report)


def _simulate_spark(request: RunRequest, out: Path, progress: Progress | None) -> None:
    from wmviz.spark.run import spark_simulate

    def report(r) -> None:
        if progress is not None:
            progress(r.fraction, r.line())

    spark_simulate(
        request.trace_path,
        request.config_path,
        request.profile,
        out,
        None,
        request.keyframe_every,
        progress=report,
    )
