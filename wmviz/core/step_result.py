"""What one trace row caused in its operator instance (`StepResult`), and what each valve did with
the inputs it processed during that row (`ValveStep`): the pipeline's results, kept apart from the
pipeline that computes them (`wmviz.core.pipeline`) so the readers of a run — the transcript, the
story, the ledger, the timeline — depend on the result's shape, not on the machinery."""

from __future__ import annotations

from dataclasses import dataclass

from wmviz.core.account import StepAccount
from wmviz.core.generator import ProbeResult
from wmviz.core.operator_log import Dropped, OperatorOutput, StepEvent
from wmviz.core.scenario import TraceRow
from wmviz.core.timers import FiredTimer, TimerRegistration
from wmviz.core.types import Emission, ValveInput
from wmviz.core.valve import Outcome


@dataclass(frozen=True, slots=True)
class ValveStep:
    """One input the valve of `input` processed during a row: the row's own, or a generated one."""

    input: str
    valve_input: ValveInput
    generated: bool
    emissions: tuple[Emission, ...]
    account: StepAccount | None
    outcome: Outcome


ValveStepFields = tuple[str, ValveInput, bool, tuple[Emission, ...], StepAccount | None, Outcome]
"""A ValveStep's fields in order, as `run_row` keeps them."""


@dataclass(frozen=True, slots=True)
class StepResult:
    """Everything one trace row caused in its instance, in order."""

    step: int
    instance: str
    row: TraceRow
    out: tuple[Emission, ...]
    """The valve's emissions (one input) or the combined input's (two inputs), as the transcript's `out`."""
    valve_steps: tuple[ValveStep, ...]
    emit: tuple[OperatorOutput, ...]
    dropped: tuple[Dropped, ...]
    timers_registered: tuple[TimerRegistration, ...]
    timers_fired: tuple[FiredTimer, ...]
    probes: tuple[ProbeResult, ...]
    notes: tuple[str, ...]
    events: tuple[StepEvent, ...] = ()
    """The operator's outputs, drops, timer registrations, firings and notes, in causal order."""
    pending_timers: tuple[FiredTimer, ...] = ()
    """Every timer still pending after the step, in firing order (filled when explaining, while at
    most `wmviz.core.pipeline.PENDING_LISTED` are pending: ordering them all after every step would
    cost more than the step)."""

    @property
    def emissions(self) -> tuple[Emission, ...]:
        """Alias of `out`."""
        return self.out

    @property
    def account(self) -> StepAccount | None:
        """The account of the row's own valve input, when it had one and was explained."""
        for vs in self.valve_steps:
            if not vs.generated:
                return vs.account
        return None
