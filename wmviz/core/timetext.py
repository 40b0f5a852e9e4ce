"""How the narration writes a time: through a `Times` formatter the caller chooses.

The core only knows the protocol and the raw default (`MIN`, `MAX` or the plain number, as the
conformance cases write watermarks); readable date-times, relative offsets and time zones come from
`wmviz.view.timefmt.TimeFormat`, which the page, the CLI and the report pass in. Pure, no clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from wmviz.core.types import (
    Emission,
    EmittedWatermark,
    ValveInput,
    WatermarkInput,
    format_emission,
    format_input,
    format_ms,
)


class Times(Protocol):
    """A time formatter: `t(ms)` for text, `t.token(ms)` for one token of the compact notation."""

    def __call__(self, ms: int) -> str: ...

    def token(self, ms: int) -> str: ...


class RawTimes:
    """The numbers themselves: what narration said before times became readable, and what
    machine-facing text keeps."""

    def __call__(self, ms: int) -> str:
        return format_ms(ms)

    def token(self, ms: int) -> str:
        return format_ms(ms)


RAW = RawTimes()


class _Slots:
    """A `Times` that writes `{0}`, `{1}`, … where each time goes and keeps the times: what a text
    built through `t` becomes when it must be written later with the reader's formatter."""

    def __init__(self) -> None:
        self.times: list[int] = []

    def __call__(self, ms: int) -> str:
        self.times.append(ms)
        return "{" + str(len(self.times) - 1) + "}"

    def token(self, ms: int) -> str:
        return self(ms)


@dataclass(frozen=True, slots=True)
class TimedText:
    """A text with times in it, kept so any formatter can write it (a drop reason is made while
    the trace runs, and read later in the reader's time format): `text(t)`."""

    template: str  # `{0}`, `{1}` … where the times go; no other braces
    times: tuple[int, ...] = ()

    @classmethod
    def of(cls, write: Callable[[Times], str]) -> TimedText:
        """The text `write(t)` gives, for every `t` (`write` must not branch on what `t` returns)."""
        slots = _Slots()
        template = write(slots)
        return cls(template, tuple(slots.times))

    @classmethod
    def plain(cls, text: str) -> TimedText:
        """A text without times."""
        return cls(text.replace("{", "{{").replace("}", "}}"))

    def text(self, t: Times = RAW) -> str:
        return self.template.format(*(t(ms) for ms in self.times))


def input_text(inp: ValveInput, t: Times = RAW) -> str:
    """A valve input in the conformance notation with its time formatted: `W10@2`,
    `W(2026-11-24 10:05:15.000Z)@1`, `IDLE@0`."""
    if isinstance(inp, WatermarkInput):
        return f"W{t.token(inp.watermark_ms)}@{inp.channel}"
    return format_input(inp)


def emission_text(em: Emission, t: Times = RAW) -> str:
    """An emission in the conformance notation with its time formatted: `W10`, `WMAX`, `S:IDLE`."""
    if isinstance(em, EmittedWatermark):
        return f"W{t.token(em.watermark_ms)}"
    return format_emission(em)


_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000))


def duration(ms: int) -> str:
    """A length of time for a person: `250ms`, `5s`, `5.250s`, `10m 5s`, `2h 0m 5s`, `3d 4h`.

    Exact to the millisecond (no rounding): units from the largest non-zero one down to seconds,
    the milliseconds as a decimal fraction of the seconds."""
    sign = "-" if ms < 0 else ""
    left = abs(int(ms))
    if left < 1000:
        return f"{sign}{left}ms"
    parts: list[str] = []
    for name, size in _UNITS:
        count, left = divmod(left, size)
        if count or parts:
            parts.append(f"{count}{name}")
    seconds, millis = divmod(left, 1000)
    if millis:
        parts.append(f"{seconds}.{millis:03d}s")
    elif seconds or not parts:
        parts.append(f"{seconds}s")
    # `2h 0m` reads oddly at the end: drop trailing zero units once seconds are zero.
    while len(parts) > 1 and parts[-1][0] == "0" and parts[-1][1:] in ("s", "m", "h"):
        parts.pop()
    return sign + " ".join(parts)
