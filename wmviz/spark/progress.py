"""Progress of Spark jobs on stderr (and to a callback the UI can turn into a progress bar)."""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass

from pyspark.sql import SparkSession


@dataclass(frozen=True, slots=True)
class SparkProgressReport:
    """Where the running Spark work stands: stages and tasks done, and the rows being processed."""

    stage_ids: tuple[int, ...]
    tasks_done: int
    tasks_total: int
    rows_total: int
    label: str

    @property
    def fraction(self) -> float:
        """Tasks done over tasks known so far (0 before the first stage is planned)."""
        return self.tasks_done / self.tasks_total if self.tasks_total else 0.0

    def line(self) -> str:
        """One human line, e.g. `[spark] simulate: stages 3,4: 5/8 tasks (62%), 1,000,000 rows`."""
        stages = ",".join(str(s) for s in self.stage_ids) or "-"
        return (
            f"[spark] {self.label}: stages {stages}: {self.tasks_done}/{self.tasks_total} tasks "
            f"({self.fraction:.0%}), {self.rows_total:,} rows"
        )


def print_report(report: SparkProgressReport) -> None:
    """The default sink: one line on stderr."""
    print(report.line(), file=sys.stderr, flush=True)


class SparkProgress:
    """Polls Spark's status tracker while a block runs: `with SparkProgress(spark, "simulate", n): ...`."""

    def __init__(
        self,
        spark: SparkSession,
        label: str,
        rows_total: int,
        sink: Callable[[SparkProgressReport], None] = print_report,
        every_s: float = 1.0,
    ) -> None:
        self.tracker = spark.sparkContext.statusTracker()
        self.label, self.rows_total, self.sink, self.every_s = label, rows_total, sink, every_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._last: SparkProgressReport | None = None

    def report(self) -> SparkProgressReport:
        """The current state of the active stages."""
        done = total = 0
        ids = tuple(sorted(self.tracker.getActiveStageIds()))
        for stage_id in ids:
            info = self.tracker.getStageInfo(stage_id)
            if info is not None:
                done += info.numCompletedTasks
                total += info.numTasks
        return SparkProgressReport(ids, done, total, self.rows_total, self.label)

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            report = self.report()
            if report.stage_ids and report != self._last:
                self.sink(report)
                self._last = report

    def __enter__(self) -> SparkProgress:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
