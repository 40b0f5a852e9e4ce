"""Run a validated trace, one InstancePipeline per instance, in arrival order."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

from wmviz.core.pipeline import InstancePipeline
from wmviz.core.scenario import IntervalJoinConfig, Kind, ScenarioConfig, Trace, TraceRow
from wmviz.core.step_result import StepResult
from wmviz.core.types import Profile

__all__ = ["Simulation", "StepResult", "manual_channels", "simulate"]


def manual_channels(trace: Trace) -> dict[str, set[tuple[str, int]]]:
    """Per instance, the (input, channel) pairs that carry explicit watermark rows.

    With a generator configured, every other channel is generated: in Flink every split has its
    own generator, even one that never receives a record.
    """
    manual: dict[str, set[tuple[str, int]]] = {}
    for row in trace.rows:
        if row.kind is Kind.WATERMARK and row.channel is not None:
            manual.setdefault(row.instance, set()).add((row.input, row.channel))
    return manual


def instance_channels(
    valve_channels: Mapping[tuple[str, str], int], config: ScenarioConfig, instance: str
) -> dict[str, int]:
    """Channel count per input of one instance; a two-input operator always has both inputs."""
    channels = {inp: n for (inst, inp), n in valve_channels.items() if inst == instance}
    if isinstance(config.operator, IntervalJoinConfig):
        for name in ("L", "R"):
            channels.setdefault(name, config.channels.get(name, 1))
        return {"L": channels["L"], "R": channels["R"]}
    return channels or {"0": config.channels.get("0", 1)}


def manual_channels_of(rows: Iterable[TraceRow]) -> set[tuple[str, int]]:
    """The (input, channel) pairs of one instance's rows that carry explicit watermarks."""
    return {(r.input, r.channel) for r in rows if r.kind is Kind.WATERMARK and r.channel is not None}


class Simulation:
    """A run over a whole trace; keeps each instance's pipeline so its final state can be read."""

    def __init__(self, trace: Trace, profile: Profile | None = None) -> None:
        self.trace = trace
        self.profile = profile or trace.config.profile
        self.pipelines: dict[str, InstancePipeline] = {}
        self._manual = manual_channels(trace) if trace.config.generator is not None else {}

    def pipeline(self, instance: str) -> InstancePipeline:
        """The instance's pipeline, created on its first row."""
        pipeline = self.pipelines.get(instance)
        if pipeline is None:
            pipeline = self.pipelines[instance] = InstancePipeline(
                instance,
                self.trace.config,
                self.profile,
                instance_channels(self.trace.valve_channels, self.trace.config, instance),
                self._manual.get(instance, set()),
            )
        return pipeline

    def run(self, *, explain: bool = False) -> Iterator[StepResult]:
        """Yield a StepResult per trace row, in arrival order, every instance interleaved as received."""
        steps: dict[str, int] = {}
        for row in self.trace.rows:
            step = steps.get(row.instance, 0)
            steps[row.instance] = step + 1
            yield self.pipeline(row.instance).process(step, row, explain=explain)


def simulate(trace: Trace, profile: Profile | None = None, *, explain: bool = False) -> Iterator[StepResult]:
    """Yield a StepResult per trace row (see Simulation.run)."""
    return Simulation(trace, profile).run(explain=explain)
