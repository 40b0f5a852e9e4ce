"""What a timeline is a run of, read once where the timeline is opened, and the shape every
timeline has for the page.

meta.json is JSON: read as a dict, every reader would look its fields up by string and parse the
profile and the config again (the page did, five times a run). `TimelineMeta` is that file read
once, checked and typed: the config parsed into a `ScenarioConfig`, the profile a `Profile`, the
steps per instance a mapping. A disk timeline builds it when it opens meta.json; live mode's
timeline, which grows a step at a time, holds one too and swaps in a new one as steps land (it is
frozen, so a reader never sees it change under it).

`TimelineSource` is what the cursor, the views and the page need of a timeline, whichever kind it
is: a folder on disk (`store.Timeline`) or a live run's tables in memory (`memory.MemoryTimeline`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Protocol, TypeVar

import pyarrow as pa

from wmviz.core.errors import BadInputError
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import ScenarioConfig
from wmviz.core.types import Profile
from wmviz.trace.config import parse_config
from wmviz.trace.errors import TraceValidationError

T = TypeVar("T")

LIVE_ENGINE = "spark (live)"
"""The engine a live run's timeline names (a disk timeline names the engine that wrote it)."""


class TimelineError(BadInputError, ValueError):
    """A directory that is not a timeline this wmviz can read."""


@dataclass(frozen=True)
class TimelineMeta:
    """A run's timeline described: what it ran, under which rules, and how many steps each
    instance took."""

    config: ScenarioConfig
    """The scenario's config, parsed and validated once."""
    profile: Profile
    engine: str
    """The engine that made the timeline: "local", "spark" or "spark (live)"."""
    keyframe_every: int
    """A keyframe is stored every this many steps of an instance."""
    instances: Mapping[str, int] = field(default_factory=lambda: MappingProxyType({}))
    """Steps per instance, by instance name."""
    valve_channels: Mapping[tuple[str, str], int] = field(default_factory=lambda: MappingProxyType({}))
    """Channels per (instance, input)."""
    source: str = ""
    """The trace file's name ("" for a live run)."""

    @property
    def steps(self) -> int:
        """Every instance's steps together (the trace's rows)."""
        return sum(self.instances.values())

    def refs(self) -> dict[str, Any]:
        """The objects a keyframe names rather than stores (`keyframe.encode`/`decode`)."""
        return {"config": self.config, "profile": self.profile}

    def with_steps(self, instances: Mapping[str, int]) -> TimelineMeta:
        """The same run with these steps per instance (a live timeline after a step lands)."""
        return replace(self, instances=MappingProxyType(dict(instances)))

    @classmethod
    def from_json(cls, raw: Mapping[str, Any], where: str) -> TimelineMeta:
        """meta.json's run fields as a `TimelineMeta`; `where` names the file in the message of a
        field that is missing or not of its type (a `TimelineError`)."""
        try:
            config = parse_config(raw.get("config") or {}, where)
        except TraceValidationError as exc:
            raise TimelineError(f"{where}: field config: {exc}") from None
        try:
            profile = Profile.parse(_field(raw, "profile", str, where))
        except ValueError as exc:
            raise TimelineError(f"{where}: field profile: {exc}") from None
        instances = _field(raw, "instances", dict, where)
        if not all(isinstance(k, str) and type(v) is int and v >= 0 for k, v in instances.items()):
            raise TimelineError(f"{where}: field instances: not a count of steps per instance name")
        channels = _field(raw, "valve_channels", list, where)
        if not all(
            isinstance(c, list)
            and len(c) == 3
            and isinstance(c[0], str)
            and isinstance(c[1], str)
            and type(c[2]) is int
            for c in channels
        ):
            raise TimelineError(f"{where}: field valve_channels: not a list of [instance, input, channels]")
        keyframe_every = _field(raw, "keyframe_every", int, where)
        if keyframe_every < 1:
            raise TimelineError(f"{where}: field keyframe_every: {keyframe_every} is not a positive count")
        return cls(
            config=config,
            profile=profile,
            engine=_field(raw, "engine", str, where),
            keyframe_every=keyframe_every,
            instances=MappingProxyType(dict(instances)),
            valve_channels=MappingProxyType({(c[0], c[1]): c[2] for c in channels}),
            source=_field(raw, "source", str, where),
        )


def _field(raw: Mapping[str, Any], name: str, kind: type[T], where: str) -> T:
    """meta.json's field `name`, of type `kind` (a bool is not an int), or a TimelineError."""
    value = raw.get(name)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        shown = "missing" if name not in raw else f"{type(value).__name__}, not {kind.__name__}"
        raise TimelineError(f"{where}: field {name}: {shown}")
    return value


class TimelineSource(Protocol):
    """What the cursor, the step views and the page read of a timeline, on disk or in memory."""

    @property
    def meta(self) -> TimelineMeta:
        """The run described (a growing timeline answers with its newest)."""
        ...

    @property
    def path(self) -> Path | None:
        """The folder it is stored in; None for a timeline held in memory (live mode)."""
        ...

    def table(
        self, name: str, instance: str | None = None, first: int | None = None, last: int | None = None
    ) -> pa.Table | None:
        """Rows of one table, optionally one instance and a step range, sorted by (instance, step)."""
        ...

    def decode_keyframe(self, blob: bytes) -> InstancePipeline:
        """A keyframe of this timeline back as a pipeline."""
        ...
