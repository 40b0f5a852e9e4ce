"""The one time formatter: every time the page, the narration, the CLI and the report show.

A watermark, event time or timer is a signed 64-bit count of milliseconds. How a person should
read it depends on what it is:

* **epoch-like values** (2000-01-01 up to the year 9999) are instants: shown as ISO-8601 with
  milliseconds in the chosen time zone, `2026-11-24 10:05:15.000Z` (`+01:00` for another zone),
  which the trace readers accept back as input;
* **small values** (the incidents' demo times 10, 25, 13000, negatives) are shown as the plain number:
  "1970-01-01 00:00:00.010" would only mislead;
* **relative** mode shows every time as an offset from an origin (the trace's first time):
  `+10m 5s`, `+250ms`, `-3s`;
* **ms** mode shows the raw number everywhere.

`MIN` and `MAX` (Flink's Long.MIN_VALUE / Long.MAX_VALUE) are always words. The raw number is
never lost: `raw` gives it, and `with_raw` puts it beside the readable text for hovers.

Pure: stdlib only (datetime and zoneinfo for the zones, never the wall clock). It lives outside
`wmviz.core`, whose modules may not import datetime at all; the core narrates through the
`wmviz.core.timetext.Times` protocol this class satisfies.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from wmviz.core.timetext import duration, emission_text, input_text
from wmviz.core.types import MAX_MS, MIN_MS, format_ms, is_epoch
from wmviz.trace.timecells import parse_time_ms

__all__ = ["DEFAULT", "MODES", "TimeFormat", "duration", "emission_text", "input_text", "is_epoch", "raw"]


MODES = ("utc", "relative", "ms")
"""`utc`: instants as ISO date-times (in the chosen zone), small values as numbers; `relative`:
offsets from an origin; `ms`: the raw numbers. The CLI's `--time` takes the same names."""

MODE_TITLES = {
    "utc": "date-time (small values as ms)",
    "relative": "relative to the first time",
    "ms": "raw milliseconds",
}

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Tick spacings for time axes, in ms: each a "round" duration a clock reader recognises.
_TIME_STEPS = (
    *(1, 2, 5, 10, 20, 50, 100, 200, 500),
    *(s * 1000 for s in (1, 2, 5, 10, 15, 30)),
    *(m * 60_000 for m in (1, 2, 5, 10, 15, 30)),
    *(h * 3_600_000 for h in (1, 2, 3, 6, 12)),
    *(d * 86_400_000 for d in (1, 2, 7, 14, 30, 90, 365)),
)


raw = format_ms
"""The number itself, `MIN`/`MAX` for the sentinels (how the narration and Flink's logs write it)."""


ZONE_NAME_LIMIT = 64
"""The longest zone name taken (the longest IANA name has 32 letters): a link or a bundle is user
input, and a name too long for the file system is an OSError, not an unknown zone."""
_ZONE_NAME = re.compile(r"[A-Za-z0-9_+-]+(/[A-Za-z0-9_+-]+)*")


@lru_cache(maxsize=64)
def _zone(name: str) -> ZoneInfo | None:
    if name.upper() in ("UTC", "Z", ""):
        return None
    if len(name) > ZONE_NAME_LIMIT or not _ZONE_NAME.fullmatch(name):
        return None
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        # OSError: a folder of the zone database (`Europe`, IsADirectoryError) or a file it cannot read
        return None


def zone_known(name: str) -> bool:
    """Whether `name` is UTC or an IANA time zone this machine knows (`Europe/Berlin`)."""
    return name.upper() in ("UTC", "Z", "") or _zone(name) is not None


@dataclass(frozen=True)
class TimeFormat:
    """How times are shown: a mode (`MODES`), a time zone for instants, an origin for `relative`.

    Call it on a value: `TimeFormat()(1795514715000) == "2026-11-24 10:05:15.000Z"`.
    """

    mode: str = "utc"
    zone: str = "UTC"
    origin_ms: int | None = None
    short: bool = False
    """Narration reads better without a date in every clause: with `short`, an instant on the
    origin's (local) date is shown as its clock time only, `10:05:15.000Z`; the page says the date."""

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"time mode {self.mode!r} is not one of {', '.join(MODES)}")
        if not zone_known(self.zone):
            raise ValueError(f"unknown time zone {self.zone!r} (an IANA name such as Europe/Berlin, or UTC)")

    # --- one value ---------------------------------------------------------------------------------

    def __call__(self, ms: int | None) -> str:
        """The readable text of one time (`""` for None)."""
        if ms is None:
            return ""
        ms = int(ms)
        if ms in (MIN_MS, MAX_MS) or self.mode == "ms":
            return raw(ms)
        if self.mode == "relative":
            origin = self.origin_ms if self.origin_ms is not None else 0
            offset = ms - origin
            return "+0" if offset == 0 else ("+" if offset > 0 else "") + duration(offset)
        return self.instant(ms) if is_epoch(ms) else str(ms)

    def instant(self, ms: int) -> str:
        """`ms` as an ISO date-time with milliseconds in this format's zone (whatever the mode);
        the clock time alone when `short` and on the origin's date."""
        text = _iso(int(ms), self.zone)
        if self.short and text[:10] == self.day:
            return text[11:]
        return text

    @property
    def day(self) -> str | None:
        """The origin's date (`2026-11-24`) when it is an instant: what `short` leaves out."""
        if self.origin_ms is None or not is_epoch(self.origin_ms):
            return None
        return _iso(self.origin_ms, self.zone)[:10]

    def with_raw(self, ms: int | None) -> str:
        """The readable text and, when it differs, the raw number: `2026-… (1795514715000 ms)`."""
        if ms is None:
            return ""
        text, number = self(ms), raw(int(ms))
        return text if text == number else f"{text} ({number} ms)"

    def token(self, ms: int) -> str:
        """The text as one token for the compact notation (`W10@2`): parenthesised when it has
        spaces or a sign, so `W(2026-11-24 10:05:15.000Z)@1` still reads as one input."""
        text = self(ms)
        return text if text.lstrip("-").isalnum() else f"({text})"

    @property
    def shows_instants(self) -> bool:
        """Whether epoch-like values come out as date-times (the `utc` mode)."""
        return self.mode == "utc"

    @property
    def zone_label(self) -> str:
        """`UTC`, or the zone's name."""
        return "UTC" if _zone(self.zone) is None else self.zone

    # --- an axis ----------------------------------------------------------------------------------

    def ticks(self, lo: float, hi: float, count: int = 6) -> tuple[list[int], list[str]]:
        """Tick values between `lo` and `hi` (finite ms) and their labels, about `count` of them.

        Instants get round clock times (`10:05:00`, the date on the first tick and where the day
        changes, milliseconds only when the spacing needs them); relative times round durations
        from the origin; plain numbers 1-2-5 steps."""
        lo, hi = math.floor(min(lo, hi)), math.ceil(max(lo, hi))
        span = max(hi - lo, 1)
        instants = self.mode == "utc" and is_epoch(lo) and is_epoch(hi)
        if self.mode == "relative" or instants:
            step = next((s for s in _TIME_STEPS if span / s <= count), _TIME_STEPS[-1])
            while span / step > count * 2:  # spans past a year: keep doubling
                step *= 2
        else:
            step = _nice_step(span / count)
        base = 0
        if self.mode == "relative":
            base = self.origin_ms or 0
        elif instants:
            base = -_offset_ms(self.zone, lo)  # round times of the local clock
        first = base + math.ceil((lo - base) / step) * step
        values = list(range(first, hi + 1, step))[: count * 3]
        if self.mode == "relative":
            labels = [self(v) for v in values]
        elif instants:
            labels = self._clock_labels(values, step)
        else:
            labels = [raw(v) for v in values]
        return values, labels

    def _clock_labels(self, values: list[int], step: int) -> list[str]:
        out, day = [], None
        for v in values:
            text = _iso(v, self.zone)  # `YYYY-MM-DD hh:mm:ss.mmm±zone`
            date, clock = text[:10], text[11:23]
            if step >= 86_400_000:
                label = date
            else:
                clock = clock if step % 1000 else clock[:8]
                clock = clock[:5] if step % 60_000 == 0 else clock
                label = f"{clock}<br>{date}" if date != day else clock
            day = date
            out.append(label)
        return out


def _iso(ms: int, zone_name: str) -> str:
    """`2026-11-24 10:05:15.000Z`, or with the zone's offset (`+01:00`) for another zone."""
    zone = _zone(zone_name)
    when = _EPOCH + timedelta(milliseconds=ms)
    try:
        local = when.astimezone(zone) if zone is not None else None
    except OverflowError:  # the last hours of the year 9999 east of Greenwich: say it in UTC
        local = None
    if local is None:
        return f"{when:%Y-%m-%d %H:%M:%S}.{ms % 1000:03d}Z"
    offset = local.strftime("%z")
    return f"{local:%Y-%m-%d %H:%M:%S}.{ms % 1000:03d}{offset[:3]}:{offset[3:]}"


def _offset_ms(zone: str, ms: float) -> int:
    tz = _zone(zone)
    if tz is None:
        return 0
    when = _EPOCH + timedelta(milliseconds=int(ms))
    offset = when.astimezone(tz).utcoffset()  # never None for an aware time; 0 keeps mypy sure
    return int(offset.total_seconds() * 1000) if offset is not None else 0


def _nice_step(raw_step: float) -> int:
    if raw_step <= 1:
        return 1
    power = 10 ** math.floor(math.log10(raw_step))
    for factor in (1, 2, 5, 10):
        if factor * power >= raw_step:
            return int(factor * power)
    return int(10 * power)


def origin_of(*values: int | None) -> int | None:
    """A relative origin: the smallest finite value given (None when there is none)."""
    finite = [int(v) for v in values if v is not None and v not in (MIN_MS, MAX_MS)]
    return min(finite) if finite else None


def trace_origin(trace) -> int | None:
    """The relative origin of a trace (`wmviz.core.scenario.Trace`): its smallest finite event
    time or watermark (event time is what the page shows), else its first processing time."""
    found = origin_of(*(v for r in trace.rows for v in (r.event_ms, r.watermark_ms)))
    return found if found is not None else origin_of(*(r.proc_ms for r in trace.rows))


DEFAULT = TimeFormat()


def editable_time(ms: int | None, t: TimeFormat) -> str:
    """A time in a field a person edits: as `t` writes it when that reads back as the same time
    (a date-time, MIN, MAX, a plain number), else the raw number (a relative offset does not)."""
    if ms is None:
        return ""
    shown = t(ms)
    try:
        same = parse_time_ms(shown, sentinels=True) == ms
    except ValueError:
        same = False
    return shown if same else format_ms(ms)
