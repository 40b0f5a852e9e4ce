"""Which engine makes a run's timeline: asked for by name (a link's `engine=`, `--engine`), then
resolved to the one that runs (`wmviz.store.plan.plan_run` decides `auto`)."""

from __future__ import annotations

from enum import StrEnum


class Engine(StrEnum):
    """An engine as a person asks for it; `AUTO` is resolved by the trace's size before a run."""

    AUTO = "auto"
    """Decided by the trace's size: in this process when small, on Spark when large."""
    SPARK = "spark"
    """Spark: a large trace is read, checked and simulated by its tasks."""
    LOCAL = "local"
    """In this process, with the pure reader and the model."""

    @classmethod
    def parse(cls, name: str) -> Engine:
        """The engine called `name`; ValueError naming the valid ones otherwise."""
        try:
            return cls(name)
        except ValueError:
            raise ValueError(f"unknown engine {name!r} (one of {', '.join(e.value for e in cls)})") from None
