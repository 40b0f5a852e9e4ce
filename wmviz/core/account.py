"""The structured account of one valve step: which rules applied and what changed.

Built around the valve's hot path rather than inside it: snapshot the input channel and the
output, let the valve process the input, and ask it what the emission routine it ran looked at.
Only channel `c` and the output state can change during an input (see the rules in docs/rules.md), so the
before/after pair of that channel plus the output is the complete diff.
"""

from __future__ import annotations

from dataclasses import dataclass

from wmviz.core.types import (
    ChannelState,
    Emission,
    EmittedWatermark,
    Profile,
    Status,
    StatusInput,
    ValveInput,
)
from wmviz.core.valve import Outcome, Routine, Valve


@dataclass(frozen=True, slots=True)
class StepAccount:
    """What one input did to the valve, for the UI and `explain` to narrate without parsing."""

    input: ValveInput
    profile: Profile
    outcome: Outcome
    before: ChannelState
    after: ChannelState
    last_watermark_before_ms: int
    last_watermark_after_ms: int
    last_status_before: Status
    last_status_after: Status
    emissions: tuple[Emission, ...]
    considered: tuple[tuple[int, int], ...]
    """(channel, watermark) pairs the emission routine looked at; empty if none ran."""
    active_channels_after: int
    idle_channels_after: int

    @property
    def rules(self) -> tuple[str, ...]:
        """The rule names that applied, in order (glossary ids, docs/rules.md)."""
        return self.outcome.rules

    @property
    def routine(self) -> Routine | None:
        """EMIT-MIN, EMIT-MAX or TRY-W, if the step ran one."""
        return self.outcome.routine

    @property
    def replayed_as_max(self) -> bool:
        """A FINISHED input replayed as `WMAX@c` because the profile has no FINISHED (REPLAY-MAX)."""
        return (
            isinstance(self.input, StatusInput)
            and self.input.status is Status.FINISHED
            and not self.profile.finished_status
        )

    @property
    def realigned(self) -> bool:
        """The channel (re)joined the aligned set during this step."""
        return self.after.aligned and not self.before.aligned

    @property
    def unaligned(self) -> bool:
        """The channel left the aligned set during this step."""
        return self.before.aligned and not self.after.aligned

    @property
    def emitted_watermark_ms(self) -> int | None:
        """The watermark emitted by this step, if any (at most one per step)."""
        for em in self.emissions:
            if isinstance(em, EmittedWatermark):
                return em.watermark_ms
        return None

    @property
    def changed(self) -> bool:
        """Whether the step changed any state at all."""
        return self.before != self.after or bool(self.emissions)


def account_step(valve: Valve, inp: ValveInput) -> StepAccount:
    """Apply `inp` to `valve` and return the account of what happened.

    Raises ChannelOutOfRange, with the valve untouched, for a bad channel index.
    """
    before = valve.channel(inp.channel)
    last_wm, last_status = valve.last_watermark_ms, valve.last_status
    out: list[Emission] = []
    outcome = valve.process(inp, out)
    routine = outcome.routine
    considered = tuple(sorted(valve.considered(routine).items())) if routine else ()
    return StepAccount(
        input=inp,
        profile=valve.profile,
        outcome=outcome,
        before=before,
        after=valve.channel(inp.channel),
        last_watermark_before_ms=last_wm,
        last_watermark_after_ms=valve.last_watermark_ms,
        last_status_before=last_status,
        last_status_after=valve.last_status,
        emissions=tuple(out),
        considered=considered,
        active_channels_after=valve.active_count,
        idle_channels_after=valve.idle_count,
    )
