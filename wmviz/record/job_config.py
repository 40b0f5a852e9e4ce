"""A job recording's configuration: what the metrics cannot say, per vertex, in the trace config's words.

Flink's REST API and metrics give a job's plan and its watermarks, never its `WatermarkStrategy`
(the out-of-orderness bound, the idleness timeout), its window assigners or its join bounds. The
freshness budget (`wmviz lag`, docs/lag.md) needs them, so a recording may carry them in its
optional `config` member:

    "config": {"clock": "wall",
               "vertices": {"<vertex id>": {<a scenario config, docs/trace-format.md §2>}, ...}}

Each vertex's config is a trace's scenario config, read by the one config reader
(`wmviz.trace.config.parse_config`), so a field means here what it means for one operator: a
source's `generator` (`out_of_orderness_ms`, `idle_timeout_ms`, `interval_ms`, `alignment`), a
window's or an interval join's `operator`. `clock` says what the sample times are: `wall` (the
recorder's wall clock) or `event` (a replay whose times are no wall clock: the budget then
measures from the newest event time instead); not said, the budget takes sample times that read as
instants (epoch ms from the year 2000 on) for a wall clock, and any others (a `wmviz sql replay`'s
processing times from 0) for none.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from wmviz.core.errors import BadInputError
from wmviz.core.scenario import ScenarioConfig
from wmviz.trace.config import parse_config
from wmviz.trace.config_write import config_to_dict
from wmviz.trace.errors import TraceValidationError

Clock = Literal["wall", "event"]
CLOCKS: tuple[Clock, ...] = ("wall", "event")


class JobConfigError(BadInputError, ValueError):
    """A recording's `config` member that cannot be read; the message names the file and field."""


@dataclass(frozen=True, slots=True)
class JobConfig:
    """The recording's clock and each configured vertex's scenario config (by vertex id)."""

    clock: Clock | None = None
    """None: not said (the budget tells by the sample times)."""
    vertices: dict[str, ScenarioConfig] = field(default_factory=dict)

    def of(self, vertex_id: str) -> ScenarioConfig | None:
        """The vertex's config, None when the recording gives none."""
        return self.vertices.get(vertex_id)

    @property
    def empty(self) -> bool:
        """Nothing said: what a recording without a `config` member holds."""
        return self.clock is None and not self.vertices


def job_config_of(body: Any, name: str, vertex_ids: set[str]) -> JobConfig:
    """The `config` member of a recording named `name` (absent or null: an empty config)."""
    if body is None:
        return JobConfig()
    if not isinstance(body, dict):
        raise JobConfigError(f"{name}: config: expected an object with `clock` and `vertices`")
    unknown = sorted(set(body) - {"clock", "vertices"})
    if unknown:
        raise JobConfigError(f"{name}: config: unknown field {unknown[0]!r} (the fields: clock, vertices)")
    clock = body.get("clock")
    if clock is not None and clock not in CLOCKS:
        raise JobConfigError(f"{name}: config.clock: {clock!r} is not one of wall, event")
    vertices = body.get("vertices", {})
    if not isinstance(vertices, dict):
        raise JobConfigError(f"{name}: config.vertices: expected an object keyed by vertex id")
    configs: dict[str, ScenarioConfig] = {}
    for vid, obj in vertices.items():
        where = f"{name}: config.vertices.{vid}"
        if vid not in vertex_ids:
            raise JobConfigError(f"{where}: vertex {vid!r} is not in the plan")
        try:
            configs[vid] = parse_config(obj, where)
        except TraceValidationError as err:
            raise JobConfigError(str(err).splitlines()[0]) from None
    return JobConfig(clock, configs)


def job_config_json(config: JobConfig) -> dict[str, Any] | None:
    """The `config` member as `job_config_of` reads it back (None: nothing to write)."""
    if config.empty:
        return None
    return {
        **({"clock": config.clock} if config.clock is not None else {}),
        "vertices": {vid: config_to_dict(c) for vid, c in config.vertices.items()},
    }
