"""Replay agreement: does the replayed valve output equal the watermark the job itself reported?

A recorded or imported trace carries, on the last row of every sample of an instance, the
watermark the operator reported (`reported_ms`, its `currentInputWatermark`). Replaying the trace
through the valve gives what the operator should have had from the upstream watermarks and the
inferred statuses; where the two differ, the import is wrong somewhere: a sample caught a
watermark in flight, an IDLE was inferred a little early or late, or the channel mapping does not
match the job. Counting and naming those samples is what makes an import checked rather than
trusted.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from wmviz.core.step_result import StepResult
from wmviz.core.timetext import Times
from wmviz.core.types import MAX_MS, MIN_MS, EmittedWatermark
from wmviz.trace.cellrules import reported_ms
from wmviz.trace.columns import REPORTED_MS

CHECK_COLUMN = REPORTED_MS


IN_FLIGHT = "in flight"
READ_SKEW = "read skew"
INFERRED_STATUS = "inferred status"
END_OF_INPUT = "end of input"
UNEXPLAINED = "unexplained"
CAUSES = (IN_FLIGHT, READ_SKEW, INFERRED_STATUS, END_OF_INPUT, UNEXPLAINED)


@dataclass(frozen=True, slots=True)
class Check:
    """One sample of one instance: the replay's output next to the job's report."""

    instance: str
    step: int
    replay_ms: int
    reported_ms: int
    cause: str = ""
    """For a disagreement: IN_FLIGHT (the job held a watermark between the replay's output at the
    previous sample and now: what the upstream reported was still on its way when the metrics
    were read), READ_SKEW (the job was ahead, but only by what the upstream reported at the next
    sample: the operator's metrics were read a moment after its upstream's), INFERRED_STATUS
    (this sample inferred a status the job had not, or not yet, taken), END_OF_INPUT (the job
    reached MAX, the end of event time, which its finishing sources send but their
    `currentOutputWatermark` does not show), or UNEXPLAINED (a missed
    sample, or a channel mapping that does not match the job)."""

    @property
    def agrees(self) -> bool:
        """The replay and the job hold the same watermark."""
        return self.replay_ms == self.reported_ms


def reported_of(result: StepResult) -> int | None:
    """The check column of the step's row, if it has one."""
    return reported_ms(result.row.payload)


@dataclass
class ReplayCheck:
    """Follows a replay step by step and compares it with the check column where there is one."""

    output: dict[str, int] = field(default_factory=dict)
    checks: list[Check] = field(default_factory=list)
    _previous: dict[str, int] = field(default_factory=dict)
    _inferred: set[str] = field(default_factory=set)
    _last_check: dict[str, int] = field(default_factory=dict)

    def observe(self, result: StepResult) -> Check | None:
        """Fold one step in; the check of this step, if its row carries one."""
        instance = result.instance
        for emission in result.out:
            if isinstance(emission, EmittedWatermark):
                self.output[instance] = emission.watermark_ms
        if any(name == "inferred" for name, _ in result.row.payload):
            self._inferred.add(instance)
        reported = reported_of(result)
        if reported is None:
            return None
        replay = self.output.get(instance, MIN_MS)
        check = Check(instance, result.step, replay, reported, self.cause(instance, replay, reported))
        self.confirm_read_skew(instance, replay)
        self._last_check[instance] = len(self.checks)
        self._previous[instance] = replay
        self._inferred.discard(instance)
        self.checks.append(check)
        return check

    def confirm_read_skew(self, instance: str, replay: int) -> None:
        """The previous check of the instance had the job ahead of the replay: if the replay has now
        reached the job's value, the job was merely read a moment later than its upstream."""
        index = self._last_check.get(instance)
        if index is None:
            return
        previous = self.checks[index]
        if previous.cause == UNEXPLAINED and previous.replay_ms < previous.reported_ms <= replay:
            self.checks[index] = replace(previous, cause=READ_SKEW)

    def cause(self, instance: str, replay: int, reported: int) -> str:
        """Why a check disagrees (empty when it agrees)."""
        if replay == reported:
            return ""
        if instance in self._inferred:
            return INFERRED_STATUS
        if reported == MAX_MS:
            return END_OF_INPUT
        if self._previous.get(instance, MIN_MS) <= reported < replay:
            return IN_FLIGHT
        return UNEXPLAINED

    @property
    def agreed(self) -> int:
        """How many checks agree."""
        return sum(c.agrees for c in self.checks)

    @property
    def share(self) -> float:
        """The share of checks that agree (1.0 when there are none)."""
        return self.agreed / len(self.checks) if self.checks else 1.0

    def summary(self, times: Times, limit: int = 10) -> list[str]:
        """What `explain` prints after the steps: the agreement, then the first disagreements."""
        if not self.checks:
            return []
        disagreements = [c for c in self.checks if not c.agrees]
        causes = ", ".join(
            f"{sum(c.cause == cause for c in disagreements)} {cause}"
            for cause in CAUSES
            if any(c.cause == cause for c in disagreements)
        )
        lines = [
            f"# replay agrees with the job's reported watermark at {self.agreed} of "
            f"{len(self.checks)} samples ({self.share:.1%})" + (f"; the others: {causes}" if causes else "")
        ]
        for check in disagreements[:limit]:
            lines.append(f"#   instance {check.instance} step {check.step}: {disagreement(check, times)}")
        if len(disagreements) > limit:
            lines.append(f"#   … and {len(disagreements) - limit} more")
        return lines


def verdict(check: Check, times: Times) -> str:
    """The clause `explain` appends to a step that carries a check."""
    if check.agrees:
        return f"the job reported {times(check.reported_ms)} too (agrees)"
    return f"DISAGREES with the job: {disagreement(check, times)}"


def disagreement(check: Check, times: Times) -> str:
    """Why a replay and a report may differ: the cause found, else by which one is ahead."""
    replay, reported = times(check.replay_ms), times(check.reported_ms)
    side = "ahead" if check.replay_ms > check.reported_ms else "behind"
    if check.cause == IN_FLIGHT:
        why = (
            "the job was between the replay's previous output and this one: what the upstream "
            "reported was still on its way (in a network buffer) when the metrics were read"
        )
    elif check.cause == READ_SKEW:
        why = "the operator's metrics were read a moment after its upstream's, which had moved on"
    elif check.cause == END_OF_INPUT:
        why = (
            "the job reached the end of event time: its sources sent their final MAX, which their "
            "currentOutputWatermark does not show until their tasks are FINISHED"
        )
    elif check.cause == INFERRED_STATUS:
        why = "this sample inferred a status from sourceIdleTime that the job had not (yet) taken"
    elif side == "ahead":
        why = (
            "the job is behind even the previous sample's replay: a watermark in flight for longer "
            "than a sample, or a channel mapping that does not match the job"
        )
    else:
        why = (
            "the operator's metrics were read after a newer upstream watermark reached it, a sample "
            "missed one, or the channel mapping does not match the job"
        )
    return f"replay {replay}, job {reported}: the replay is {side} ({why})"
