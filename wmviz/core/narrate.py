"""Plain-English narration of a StepAccount: what came in, which rule applied, what changed, why.

Rules are cited by their ids in the glossary (`wmviz.core.rules`, explained in docs/rules.md);
`cited_rules` says which ones a step's narration can name, for the page's legend.

Reads only the structured account, never strings, so the CLI's `explain` and the UI say the same.
Every time goes through one `Times` formatter (`t`: `wmviz.view.timefmt.TimeFormat` from the page, the
CLI and the report), so a 13-digit epoch reads as a UTC time everywhere.
"""

from __future__ import annotations

from wmviz.core.account import StepAccount
from wmviz.core.timetext import RAW, Times, emission_text, input_text
from wmviz.core.types import MAX_MS, MIN_MS, EmittedStatus, Status, StatusInput, WatermarkInput
from wmviz.core.valve import Outcome, Routine

ACTIVE, IDLE, FINISHED = Status.ACTIVE, Status.IDLE, Status.FINISHED


def narrate(acc: StepAccount, t: Times = RAW) -> str:
    """One line: the input, then each rule's effect, then the emissions."""
    parts = [_NARRATORS[acc.outcome](acc, t)]
    if acc.replayed_as_max:
        parts.insert(
            0,
            f"released Flink has no FINISHED status, so it is replayed as WMAX@{acc.input.channel} "
            "(REPLAY-MAX; shown as 'finished (replayed as MAX)')",
        )
    if not acc.emissions:
        parts.append("nothing emitted")
    elif any(isinstance(e, EmittedStatus) for e in acc.emissions) or acc.routine is None:
        # A lone watermark was already announced by the routine's "→ emit W…".
        parts.append("emits " + ", ".join(emission_text(e, t) for e in acc.emissions))
    return f"{input_text(acc.input, t)}: " + "; ".join(p for p in parts if p)


def cited_rules(acc: StepAccount) -> tuple[str, ...]:
    """The rules `narrate(acc)` can name, as ids of the glossary (`wmviz.core.rules`), in order: a
    replayed FINISHED, the branch's rules without their qualifiers, the emission routine it ran, and
    TRY-S, which the narration of FS1 and FS2 names."""
    names = ["REPLAY-MAX"] if acc.replayed_as_max else []
    names += [name.split(" ", 1)[0] for name in acc.rules]
    if acc.routine is not None:
        names.append(acc.routine.value)
    if acc.outcome in _SETTLES_STATUS:
        names.append("TRY-S")
    return tuple(names)


LISTED = 16
"""The most channels a narration line lists by name: a valve may have 32,768 channels, and a line
naming each would be half a megabyte per step (the channel table shows them all)."""


def describe_set(pairs: tuple[tuple[int, int], ...], t: Times = RAW) -> str:
    """`{0: 25, 1: MIN}`: channel -> watermark, the first `LISTED` of them."""
    shown = ", ".join(f"{c}: {t(w)}" for c, w in pairs[:LISTED])
    more = f", … {len(pairs) - LISTED:,} more" if len(pairs) > LISTED else ""
    return "{" + shown + more + "}"


def name_channels(channels: list[int]) -> str:
    """`ch1, ch3`: at most `LISTED` names, then how many more."""
    names = ", ".join(f"ch{c}" for c in channels[:LISTED])
    return names + (f" and {len(channels) - LISTED:,} more" if len(channels) > LISTED else "")


def _channel(acc: StepAccount) -> str:
    return f"ch{acc.input.channel}"


def _watermark_dropped_idle(acc: StepAccount, t: Times) -> str:
    why = f"{_channel(acc)} is IDLE" if acc.before.status is IDLE else "the valve is IDLE"
    return f"dropped (W1): {why}, so the watermark is neither stored nor counted"


def _watermark_not_above(acc: StepAccount, t: Times) -> str:
    # A FINISHED replayed as MAX (the only other input that reaches W2) on a channel already at MAX.
    value = acc.input.watermark_ms if isinstance(acc.input, WatermarkInput) else MAX_MS
    return (
        f"dropped (W2): {t(value)} is not above {_channel(acc)}'s "
        f"watermark {t(acc.before.watermark_ms)} (equal values are dropped too)"
    )


def _watermark_accepted(acc: StepAccount, t: Times) -> str:
    ch = _channel(acc)
    parts = [f"{ch} {t(acc.before.watermark_ms)} → {t(acc.after.watermark_ms)} (W3)"]
    out_ms = t(acc.last_watermark_before_ms)
    if acc.realigned:
        parts.append(f"{ch} has caught up with the output {out_ms} and rejoins the aligned set (W4)")
    elif not acc.after.aligned:
        parts.append(f"{ch} stays unaligned: still below the output {out_ms} (W4)")
    parts.append(_routine_result(acc, t))
    return "; ".join(parts)


def _finished_takes_max(acc: StepAccount, t: Times) -> str:
    return f"{_channel(acc)} is FINISHED and takes MAX (FW1); " + _routine_result(acc, t)


def _finished_rejects(acc: StepAccount, t: Times) -> str:
    return f"rejected (FW1): {_channel(acc)} is FINISHED and accepts only a MAX watermark"


def _repeated_status(acc: StepAccount, t: Times) -> str:
    return f"{_channel(acc)} is already {acc.before.status.value}; a repeated status changes nothing (S0)"


def _last_active_idle(acc: StepAccount, t: Times) -> str:
    ch = _channel(acc)
    head = f"{ch} ACTIVE → IDLE; no ACTIVE channel is left (S1a)"
    held = acc.before.watermark_ms == acc.last_watermark_before_ms
    if acc.outcome is Outcome.S1A_LAST_ACTIVE_IDLE_NO_FLUSH:
        return (
            f"{head}; {ch} ({t(acc.before.watermark_ms)}) did not hold the output "
            f"{t(acc.last_watermark_before_ms)}, so released Flink skips the all-idle flush "
            "(the order-dependent gap fixed by FLINK-40475); then S:IDLE"
        )
    why = "it held the output" if held else "flink-master flushes unconditionally"
    return f"{head}; {why}, so flush: {_routine_result(acc, t)}; then S:IDLE"


def _min_holder_idle(acc: StepAccount, t: Times) -> str:
    return (
        f"{_channel(acc)} ACTIVE → IDLE and leaves the aligned set; it held the minimum "
        f"{t(acc.before.watermark_ms)}, so (S1b) {_routine_result(acc, t)}"
    )


def _non_holder_idle(acc: StepAccount, t: Times) -> str:
    ch = _channel(acc)
    return (
        f"{ch} ACTIVE → IDLE and leaves the aligned set; {ch} ({t(acc.before.watermark_ms)}) "
        f"did not hold the output {t(acc.last_watermark_before_ms)}, so the output cannot rise (S1b)"
    )


def _reactivated(acc: StepAccount, t: Times) -> str:
    ch = _channel(acc)
    wm, out_ms = t(acc.after.watermark_ms), t(acc.last_watermark_before_ms)
    parts = [f"{ch} IDLE → ACTIVE (S2)"]
    if acc.after.aligned:
        parts.append(f"its watermark {wm} has caught up with the output {out_ms}, so it is aligned")
    else:
        parts.append(
            f"its watermark {wm} is behind the output {out_ms}, so it stays unaligned and is ignored "
            "for the minimum until a watermark reaches the output"
        )
    if acc.last_status_before is IDLE:
        parts.append("the valve was IDLE, so it announces S:ACTIVE first (S2a)")
    if acc.outcome is Outcome.S2_REACTIVATED_REDERIVE:
        parts.append(f"flink-master re-derives (S2b): {_routine_result(acc, t)}")
    return "; ".join(parts)


def _left_active(acc: StepAccount, t: Times) -> str:
    assert isinstance(acc.input, StatusInput)
    ch, target = _channel(acc), acc.input.status
    parts = [f"{ch} ACTIVE → {target.value} and leaves the aligned set (FS1)"]
    if target is FINISHED:
        parts.append(f"its watermark stays {t(acc.after.watermark_ms)} (no jump to MAX)")
    if acc.outcome is Outcome.FS1_LEFT_ACTIVE_HOLDER:
        parts.append(f"it held the output, so TRY-W: {_routine_result(acc, t)}")
    else:
        parts.append("it did not hold the output, so no watermark is computed")
    parts.append(_try_s(acc))
    return "; ".join(parts)


def _left_idle(acc: StepAccount, t: Times) -> str:
    ch = _channel(acc)
    if acc.after.status is FINISHED:
        head = f"{ch} IDLE → FINISHED and its watermark jumps to MAX (FS2); no watermark is computed"
    elif acc.after.aligned:
        head = f"{ch} IDLE → ACTIVE, caught up, aligned (FS2); no watermark is computed"
    else:
        head = f"{ch} IDLE → ACTIVE, behind the output, unaligned (FS2); no watermark is computed"
    return f"{head}; {_try_s(acc)}"


def _finished_terminal(acc: StepAccount, t: Times) -> str:
    return f"{_channel(acc)} is FINISHED; FINISHED is terminal, so the status is ignored (FS3)"


def _try_s(acc: StepAccount) -> str:
    status = acc.last_status_after
    if status is acc.last_status_before:
        return f"TRY-S: the valve stays {status.value}"
    return f"TRY-S: the valve becomes {status.value}"


def _routine_result(acc: StepAccount, t: Times) -> str:
    """What EMIT-MIN / EMIT-MAX / TRY-W saw and decided."""
    routine = acc.routine
    if routine is None:
        return ""
    emitted = acc.emitted_watermark_ms
    prior = t(acc.last_watermark_before_ms)
    if routine is Routine.EMIT_MAX:
        what = f"the max over all channels {describe_set(acc.considered, t)}"
    elif routine is Routine.EMIT_MIN or acc.active_channels_after:
        if not acc.considered:
            return "no channel is aligned, so there is no minimum and nothing can be emitted"
        what = f"the minimum over aligned channels {describe_set(acc.considered, t)}"
    elif acc.idle_channels_after:
        what = f"no channel is ACTIVE: the max over non-FINISHED channels {describe_set(acc.considered, t)}"
    else:
        at_max = all(w == MAX_MS for _, w in acc.considered)
        if not at_max:
            return (
                "every channel is FINISHED but not all have reached MAX "
                f"{describe_set(acc.considered, t)}, so there is no candidate yet"
            )
        what = "every channel is FINISHED at MAX: the candidate"
    value = emitted if emitted is not None else _extreme(acc)
    if emitted is not None:
        return f"{what} is {t(value)} → emit W{t.token(value)}"
    holders = name_channels([c for c, w in acc.considered if w == value])
    held = ""
    if routine is not Routine.EMIT_MAX:
        held = f" (held by {holders}: no watermark yet)" if value == MIN_MS else f" (held by {holders})"
    return f"{what} is {t(value)}{held}, not above the output {prior}"


def _extreme(acc: StepAccount) -> int:
    values = [w for _, w in acc.considered]
    if acc.routine is Routine.EMIT_MAX:
        return max(values)
    if acc.routine is Routine.TRY_W and not acc.active_channels_after:
        return max(values)
    return min(values)


_SETTLES_STATUS = frozenset(
    {Outcome.FS1_LEFT_ACTIVE_HOLDER, Outcome.FS1_LEFT_ACTIVE_NON_HOLDER, Outcome.FS2_LEFT_IDLE}
)
"""The branches whose narration ends in `_try_s`."""

_NARRATORS = {
    Outcome.W1_DROPPED_IDLE: _watermark_dropped_idle,
    Outcome.W2_DROPPED_NOT_ABOVE: _watermark_not_above,
    Outcome.W3_TO_W5_ACCEPTED: _watermark_accepted,
    Outcome.FW1_FINISHED_TAKES_MAX: _finished_takes_max,
    Outcome.FW1_FINISHED_REJECTS: _finished_rejects,
    Outcome.S0_REPEATED_STATUS: _repeated_status,
    Outcome.S1A_LAST_ACTIVE_IDLE_FLUSH: _last_active_idle,
    Outcome.S1A_LAST_ACTIVE_IDLE_NO_FLUSH: _last_active_idle,
    Outcome.S1B_MIN_HOLDER_IDLE: _min_holder_idle,
    Outcome.S1B_NON_HOLDER_IDLE: _non_holder_idle,
    Outcome.S2_REACTIVATED: _reactivated,
    Outcome.S2_REACTIVATED_REDERIVE: _reactivated,
    Outcome.FS1_LEFT_ACTIVE_HOLDER: _left_active,
    Outcome.FS1_LEFT_ACTIVE_NON_HOLDER: _left_active,
    Outcome.FS2_LEFT_IDLE: _left_idle,
    Outcome.FS3_FINISHED_IS_TERMINAL: _finished_terminal,
}
