"""When an instance's generated channels are probed (docs/rules.md, "Generation"; SQL-A8).

Inputs whose generator configs are equal share one schedule, a *probe group*: with one `generator`
for the trace that is every generated input, as it always was; with `generators` giving a join's
inputs configs of their own, each config probes its inputs on its own interval. A long quiet clock
jump runs only the probes that can change something (`relevant_probes`, or a SQL assigner's own
`relevant_probes`).
"""

from __future__ import annotations

from collections.abc import Mapping

from wmviz.core.channel_generators import AnyGenerator, assigner_probes, probe_times
from wmviz.core.scenario import GeneratorConfig
from wmviz.core.schedule import relevant_probes

PROBE_BURST = 1000
PROBE_VISITS = 100_000
"""A clock jump is probed probe by probe while that is at most `PROBE_BURST` probes and
`PROBE_VISITS` generator visits (1,024 generated channels probed 1,000 times took 1.5 s a row);
beyond, only the probes that can change anything run (`relevant_probes`)."""


class ProbeSchedule:
    """The probe groups of one instance and the last probe each ran."""

    def __init__(self) -> None:
        self.groups: list[tuple[GeneratorConfig, tuple[str, ...]]] = []
        self.last_ms: dict[int, int] = {}
        """The last probe of each group, by its index."""

    def add(self, generator: GeneratorConfig, input_name: str) -> None:
        """An input with a generator joins the group of its config (a new one if none is equal)."""
        for index, (config, names) in enumerate(self.groups):
            if config == generator:
                self.groups[index] = (config, (*names, input_name))
                return
        self.groups.append((generator, (input_name,)))

    def inputs_of(self, group: int) -> tuple[str, ...]:
        return self.groups[group][1]

    def ran(self, group: int, time_ms: int) -> None:
        self.last_ms[group] = time_ms

    def due(
        self,
        generators: Mapping[tuple[str, int], AnyGenerator],
        clock_start_ms: int,
        now_ms: int,
        inclusive: bool,
    ) -> list[tuple[int, int]]:
        """(time, group) of every probe due by `now_ms`, in time order (group order on a tie)."""
        out: list[tuple[int, int]] = []
        for group, (config, inputs) in enumerate(self.groups):
            members = [g for (name, _), g in generators.items() if name in inputs]
            if members:
                times = self._group_due(config, members, group, clock_start_ms, now_ms, inclusive)
                out.extend((time, group) for time in times)
        return sorted(out)

    def _group_due(
        self,
        config: GeneratorConfig,
        members: list[AnyGenerator],
        group: int,
        clock_start_ms: int,
        now_ms: int,
        inclusive: bool,
    ) -> list[int]:
        due = probe_times(config, clock_start_ms, self.last_ms.get(group), now_ms, inclusive)
        if not due:
            return []
        if len(due) <= PROBE_BURST and len(due) * len(members) <= PROBE_VISITS:
            return list(due)
        if config.style == "sql-assigner":
            return assigner_probes(due, members)
        countdowns = (c for g in members for c in g.countdowns())
        return relevant_probes(due, config.idle_timeout_ms, countdowns)

    def snapshot(self) -> tuple:
        return tuple(sorted(self.last_ms.items()))
