"""Value types shared by the whole simulation core.

Everything here is immutable. Times are signed 64-bit milliseconds, exactly as Flink's `long`.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from wmviz.core.errors import BadInputError

MIN_MS: int = -(2**63)
"""Long.MIN_VALUE: the watermark every channel starts with; never emitted."""
MAX_MS: int = 2**63 - 1
"""Long.MAX_VALUE: the end of event time; a finished upstream's final watermark."""


def fits_long(value: int) -> bool:
    """Whether `value` fits a Java `long` (signed 64-bit)."""
    return MIN_MS <= value <= MAX_MS


class Status(Enum):
    """A channel's or the valve's watermark status."""

    ACTIVE = "ACTIVE"
    IDLE = "IDLE"
    FINISHED = "FINISHED"


class Profile(Enum):
    """The three semantics profiles (docs/rules.md, "The valve"), differing in exactly three switches."""

    FLINK_1X_2X = "flink-1.x-2.x"
    FLINK_MASTER = "flink-master"
    FLIP_38477 = "flip-38477"

    @property
    def flush_unconditional(self) -> bool:
        """S1a: the all-idle flush runs even if the departing channel did not hold the output."""
        return self is Profile.FLINK_MASTER

    @property
    def rederive_on_reactivate(self) -> bool:
        """S2b: a reactivated channel re-runs EMIT-MIN (FLINK-40475)."""
        return self is Profile.FLINK_MASTER

    @property
    def drops_late_probe(self) -> bool:
        """SQL-T8: the event-time temporal join drops and counts a probe row at or behind its
        watermark (FLINK-39719, merged after 2.3.0; modelled, not checked against a release)."""
        return self is Profile.FLINK_MASTER

    @property
    def finished_status(self) -> bool:
        """FINISHED is a real status (FS1–FS3) rather than replayed as a MAX watermark (REPLAY-MAX)."""
        return self is Profile.FLIP_38477

    @property
    def describes(self) -> str:
        """One line on what the profile models, for the UI and the CLI help."""
        return _PROFILE_DESCRIPTIONS[self]

    @classmethod
    def parse(cls, name: str) -> Profile:
        """The profile called `name`; ValueError naming the valid ones otherwise."""
        for profile in cls:
            if profile.value == name:
                return profile
        valid = ", ".join(p.value for p in cls)
        raise ValueError(f"unknown profile {name!r}; expected one of {valid}")


_PROFILE_DESCRIPTIONS = {
    Profile.FLINK_1X_2X: "released Flink 1.4 through 2.3 (verified against the real 2.3.0 valve)",
    Profile.FLINK_MASTER: (
        "apache/flink master after FLINK-40475 and FLINK-39719 (rebuilt from the changes; not run on a"
        " master build)"
    ),
    Profile.FLIP_38477: "the proposed FINISHED status FLINK-38477 (PR #27083, not merged)",
}


class ChannelOutOfRange(BadInputError, ValueError):
    """An input named a channel the valve does not have (an error, as in Flink); nothing changed."""


@dataclass(frozen=True, slots=True)
class WatermarkInput:
    """`W<t>@c`: a watermark arriving on one input channel."""

    channel: int
    watermark_ms: int

    def __post_init__(self) -> None:
        # Checked once here, so the valve's hot path can trust every input it is given.
        if self.channel < 0:
            raise ChannelOutOfRange(f"channel index {self.channel} is negative")
        if not MIN_MS <= self.watermark_ms <= MAX_MS:
            raise ValueError(f"watermark {self.watermark_ms} is outside the signed 64-bit range")


@dataclass(frozen=True, slots=True)
class StatusInput:
    """`IDLE@c`, `ACTIVE@c` or `FINISHED@c`: a watermark status arriving on one channel."""

    channel: int
    status: Status

    def __post_init__(self) -> None:
        if self.channel < 0:
            raise ChannelOutOfRange(f"channel index {self.channel} is negative")
        if not isinstance(self.status, Status):
            raise TypeError(f"status must be a Status, got {self.status!r}")


ValveInput = WatermarkInput | StatusInput


@dataclass(frozen=True, slots=True)
class EmittedWatermark:
    """`W<t>`: a watermark the valve forwarded downstream."""

    watermark_ms: int


@dataclass(frozen=True, slots=True)
class EmittedStatus:
    """`S:<status>`: a status change the valve forwarded downstream."""

    status: Status


Emission = EmittedWatermark | EmittedStatus


@dataclass(frozen=True, slots=True)
class ChannelState:
    """One input channel as the valve sees it."""

    channel: int
    watermark_ms: int
    status: Status
    aligned: bool


@dataclass(frozen=True, slots=True)
class HeapNode:
    """One entry of the aligned min-heap, in array order (children of i are 2i+1 and 2i+2)."""

    channel: int
    watermark_ms: int


@dataclass(frozen=True, slots=True)
class ValveState:
    """The whole valve after a step: what the UI draws and the conformance checks read."""

    channels: tuple[ChannelState, ...]
    last_watermark_ms: int
    last_status: Status
    heap: tuple[HeapNode, ...]

    @property
    def aligned(self) -> dict[int, int]:
        """Aligned channel -> watermark: the set the minimum is taken over."""
        return {c.channel: c.watermark_ms for c in self.channels if c.aligned}


def format_ms(value: int) -> str:
    """`MIN`, `MAX` or the plain integer, the way the narration and the conformance cases write watermarks."""
    if value == MAX_MS:
        return "MAX"
    if value == MIN_MS:
        return "MIN"
    return str(value)


def format_input(inp: ValveInput) -> str:
    """`W10@2` / `IDLE@0`, the conformance notation."""
    if isinstance(inp, WatermarkInput):
        return f"W{format_ms(inp.watermark_ms)}@{inp.channel}"
    return f"{inp.status.value}@{inp.channel}"


def format_emission(em: Emission) -> str:
    """`W10` / `WMAX` / `S:IDLE`, the conformance notation."""
    if isinstance(em, EmittedWatermark):
        return f"W{format_ms(em.watermark_ms)}"
    return f"S:{em.status.value}"


def parse_input(token: str) -> ValveInput:
    """Parse the conformance notation: `W10@0`, `W-3@1`, `WMAX@2`, `WMIN@0`, `IDLE@1`, `FINISHED@0`."""
    body, sep, channel_text = token.strip().rpartition("@")
    if not sep or not channel_text.isdigit():
        raise ValueError(f"{token!r} is not <input>@<channel>, e.g. W10@0 or IDLE@1")
    channel = int(channel_text)
    if body.startswith("W"):
        value = body[1:]
        sentinels = {"MAX": MAX_MS, "MIN": MIN_MS}
        if value in sentinels:
            return WatermarkInput(channel, sentinels[value])
        try:
            ms = int(value)
        except ValueError:
            raise ValueError(f"{token!r}: {value!r} is not an integer, MIN or MAX") from None
        if not fits_long(ms):
            raise ValueError(f"{token!r}: {ms} is outside the signed 64-bit range")
        return WatermarkInput(channel, ms)
    try:
        return StatusInput(channel, Status(body.upper()))
    except ValueError:
        raise ValueError(f"{token!r}: {body!r} is not W<ms>, ACTIVE, IDLE or FINISHED") from None


EPOCH_FROM_MS = 946_684_800_000
"""2000-01-01T00:00:00Z: a value from here on is taken to be epoch milliseconds (an instant)."""
EPOCH_UNTIL_MS = 253_402_300_799_999
"""9999-12-31T23:59:59.999Z, the last instant an ISO year has four digits for."""


def is_epoch(ms: int) -> bool:
    """Whether `ms` reads as an instant (epoch milliseconds from the year 2000 on)."""
    return EPOCH_FROM_MS <= ms <= EPOCH_UNTIL_MS
