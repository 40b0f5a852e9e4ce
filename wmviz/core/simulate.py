"""Run a validated trace through one valve per (instance, input), in arrival order."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from wmviz.core.account import StepAccount, account_step
from wmviz.core.scenario import Kind, ScenarioConfig, Trace, TraceRow
from wmviz.core.types import Emission, Profile, StatusInput, ValveInput, WatermarkInput
from wmviz.core.valve import Valve


class UnsupportedScenario(ValueError):
    """The scenario asks for something this version does not simulate (said, never ignored)."""


@dataclass(frozen=True, slots=True)
class StepResult:
    """One trace element after it went through its instance's valve."""

    step: int
    """Counts from 0 within the instance (trace-format.md §4)."""
    instance: str
    row: TraceRow
    emissions: tuple[Emission, ...]
    account: StepAccount | None
    """Present when the simulation was asked to explain and the row reached the valve."""


def valve_input(row: TraceRow) -> ValveInput | None:
    """The valve input a trace row carries; None for records and proctime rows."""
    if row.kind is Kind.WATERMARK:
        assert row.channel is not None and row.watermark_ms is not None
        return WatermarkInput(row.channel, row.watermark_ms)
    if row.kind is Kind.STATUS:
        assert row.channel is not None and row.status is not None
        return StatusInput(row.channel, row.status)
    return None


def check_supported(config: ScenarioConfig) -> None:
    """Refuse, with a reason, configs whose behaviour this build cannot reproduce."""
    if config.generator is not None:
        raise UnsupportedScenario(
            "the scenario config has a 'generator', but watermark generation is not simulated yet; "
            "remove it to replay the trace's own watermarks"
        )
    if config.operator.type != "none":
        raise UnsupportedScenario(
            f"operator type {config.operator.type!r} is not simulated yet; "
            "use operator type 'none' to replay the valve alone"
        )


def simulate(trace: Trace, profile: Profile | None = None, *, explain: bool = False) -> Iterator[StepResult]:
    """Yield a StepResult per trace row, in arrival order, every instance interleaved as received.

    Each (instance, input) has its own valve, sized by `trace.valve_channels`. Records and
    proctime rows pass the valve untouched (Flink forwards records around it).
    """
    check_supported(trace.config)
    profile = profile or trace.config.profile
    valves: dict[tuple[str, str], Valve] = {}
    steps: dict[str, int] = {}
    for row in trace.rows:
        step = steps.get(row.instance, 0)
        steps[row.instance] = step + 1
        inp = valve_input(row)
        if inp is None:
            yield StepResult(step, row.instance, row, (), None)
            continue
        key = (row.instance, row.input)
        valve = valves.get(key)
        if valve is None:
            valve = valves[key] = Valve(trace.valve_channels[key], profile)
        if explain:
            acc = account_step(valve, inp)
            yield StepResult(step, row.instance, row, acc.emissions, acc)
        else:
            yield StepResult(step, row.instance, row, tuple(valve.apply(inp)), None)
