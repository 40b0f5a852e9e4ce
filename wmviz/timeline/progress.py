"""Progress of a run as a person reads it: what is happening now, how far it is, how long is left.

Both engines report through the same `Report`: the in-process engine per chunk read and per
instance simulated, the Spark engine per task of each job (`wmviz.spark.progress`). Pure: the
caller passes the clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Report:
    """One progress report. `total` 0 means not known yet (the fraction is then 0)."""

    phase: str
    """What is happening now: "reading and checking", "simulating", "writing"…"""
    done: int
    total: int
    unit: str
    """What `done` counts: rows, instances, tasks."""
    elapsed_s: float
    """Since the run began."""

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 0.0

    @property
    def remaining_s(self) -> float | None:
        """A linear estimate of the time left, once there is enough to go on (None before)."""
        if self.total <= 0 or self.done <= 0 or self.elapsed_s < 2 or self.fraction < 0.05:
            return None
        return self.elapsed_s * (1 - self.fraction) / self.fraction

    def line(self) -> str:
        """e.g. `simulating: instance 412 of 1,000 (41%), about 12 s left`."""
        if self.total:
            text = f"{self.phase}: {self.done:,} of {self.total:,} {self.unit} ({self.fraction:.0%})"
        else:
            text = f"{self.phase}: {self.done:,} {self.unit}" if self.done else f"{self.phase}…"
        left = self.remaining_s
        if left is not None and left >= 1:
            text += f", about {_duration(left)} left"
        return text


Sink = Callable[[Report], None]


def _duration(seconds: float) -> str:
    seconds = round(seconds)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"
