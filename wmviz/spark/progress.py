"""Progress of Spark jobs as `wmviz.timeline.progress.Report`s: on stderr for the command line, to a
callback the app turns into a progress bar.

`SparkProgress` watches Spark's status tracker while a block runs and reports the tasks done in
the running stages, from the moment the block starts (before the first stage is planned it says
what is about to run), so a progress bar moves from the first second.
"""

from __future__ import annotations

import sys
import threading
import time

from pyspark.sql import SparkSession

from wmviz.timeline.progress import Report, Sink


def print_report(report: Report) -> None:
    """The command line's sink: one line on stderr."""
    print(f"[spark] {report.line()}", file=sys.stderr, flush=True)


class SparkProgress:
    """`with SparkProgress(spark, "simulating", sink): ...` reports the tasks of the jobs inside."""

    def __init__(
        self,
        spark: SparkSession,
        phase: str,
        sink: Sink = print_report,
        every_s: float = 0.5,
        started: float | None = None,
    ) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.phase, self.sink, self.every_s = phase, sink, every_s
        self.started = started if started is not None else time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._last: tuple[int, int] | None = None

    def report(self) -> Report:
        """The tasks done and planned in the stages running now."""
        done = total = 0
        for stage_id in self.tracker.getActiveStageIds():
            info = self.tracker.getStageInfo(stage_id)
            if info is not None:
                done += info.numCompletedTasks
                total += info.numTasks
        return Report(self.phase, done, total, "tasks", time.monotonic() - self.started)

    def _run(self) -> None:
        self.sink(Report(self.phase, 0, 0, "tasks", time.monotonic() - self.started))
        while not self._stop.wait(self.every_s):
            report = self.report()
            if (report.done, report.total) != self._last:
                self.sink(report)
                self._last = (report.done, report.total)

    def __enter__(self) -> SparkProgress:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
