"""Where SQL's slicing windows are cut and when they fire, in the session's time zone (SQL-W1,
SQL-W2 of docs/rules.md).

A window over a TIMESTAMP_LTZ time attribute is cut in local time: a row's instant is read as the
wall clock of `table.local-time-zone` (taken as if UTC), the windows are cut on that reading, and
a window's end is turned back into an instant to fire it. Across a daylight-saving change a local
hour is then not 3 600 000 ms of watermark. A TIMESTAMP time attribute is cut in UTC arithmetic
(zone "UTC": both conversions are the identity). Flink's rules, in wmviz's words:
- a local reading in a gap (clocks turned forward) fires at the first instant after the gap's
  start hour; in an overlap (clocks turned back) at the later of the two instants, so both local
  hours are in before the window fires;
- `uses_daylight_saving` stands for Java's `TimeZone.useDaylightTime()`: here, whether the zone's
  offset differs between January and July of the year in question (no wall clock is read).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from functools import lru_cache
from zoneinfo import ZoneInfo

from wmviz.core.errors import Refused
from wmviz.core.sql_expr import instant_of_local_ms, local_ms_of_instant
from wmviz.core.types import MAX_MS

HOUR_MS = 3_600_000
_EPOCH = datetime(1970, 1, 1)


@lru_cache(maxsize=64)
def uses_daylight_saving(zone: str, year: int) -> bool:
    """Whether `zone` changes its offset during `year` (January against July)."""
    if zone == "UTC":
        return False
    info = ZoneInfo(zone)
    winter = datetime(year, 1, 15, tzinfo=info).utcoffset()
    summer = datetime(year, 7, 15, tzinfo=info).utcoffset()
    return winter != summer


def _year_of(ms: int) -> int:
    clamped = max(min(ms, 253_402_300_799_000), -62_135_596_800_000)
    return (datetime(1970, 1, 1, tzinfo=UTC) + timedelta(milliseconds=clamped)).year


class ShiftZone:
    """The session time zone windows are cut in (`UTC`: no shift)."""

    __slots__ = ("zone",)

    def __init__(self, zone: str) -> None:
        self.zone = zone

    def __reduce__(self) -> tuple[type, tuple[str]]:
        return (ShiftZone, (self.zone,))

    def local_ms(self, epoch_ms: int) -> int:
        """A row's instant as the wall clock of the zone (Flink's `toUtcTimestampMills`)."""
        if self.zone == "UTC" or epoch_ms == MAX_MS:
            return epoch_ms
        return local_ms_of_instant(epoch_ms, self.zone)

    def instant_ms(self, local_ms: int) -> int:
        """A wall-clock reading as an instant (Flink's `toEpochMills`: the earlier in an overlap)."""
        if self.zone == "UTC" or local_ms == MAX_MS:
            return local_ms
        return instant_of_local_ms(local_ms, self.zone)

    def timer_ms(self, local_ms: int) -> int:
        """The watermark at which a window whose last local millisecond is `local_ms` fires (Flink's
        `toEpochMillsForTimer`): in a gap, the start of the hour of the instant; in an overlap, the
        later instant."""
        if self.zone == "UTC" or local_ms == MAX_MS:
            return local_ms
        first = instant_of_local_ms(local_ms, self.zone)
        if not uses_daylight_saving(self.zone, _year_of(local_ms)):
            return first
        hour_later = instant_of_local_ms(local_ms + HOUR_MS, self.zone)
        if first == hour_later:  # the reading is in a gap: no instant has it
            return first - _java_rem(first, HOUR_MS)
        if hour_later - first > HOUR_MS:  # the reading comes twice: the later one
            return first + HOUR_MS
        return first

    def fired(self, window_end: int, progress: int) -> bool:
        """SQL-W2: a window has fired once the watermark reached its end − 1 as an instant."""
        if window_end == MAX_MS:
            return False
        return progress >= self.timer_ms(window_end - 1)

    def next_trigger(self, progress: int, interval: int, offset: int) -> int:
        """The next watermark at which a slice can fire (Flink's `getNextTriggerWatermark`): the
        stages flush their buffers only once the watermark reaches it."""
        if progress == MAX_MS:
            return progress
        if uses_daylight_saving(self.zone, _year_of(progress)):
            start = window_start(self.local_ms(progress), offset, interval)
            trigger = self.timer_ms(start + interval - 1)
        else:
            trigger = window_start(progress, offset, interval) + interval - 1
        return trigger if trigger > progress else trigger + interval


def window_start(ts_ms: int, offset_ms: int, size_ms: int) -> int:
    """The start of the window of `size_ms` (shifted by `offset_ms`) that holds `ts_ms`."""
    return ts_ms - (ts_ms - offset_ms) % size_ms


def _java_rem(a: int, b: int) -> int:
    """Java's `%`: the sign of the dividend."""
    r = abs(a) % abs(b)
    return -r if a < 0 else r


def timestamp_text(local_ms: int) -> str:
    """A TIMESTAMP(3) value as Flink's sinks print it here: `YYYY-MM-DD HH:MM:SS.fff`."""
    try:
        moment = _EPOCH + timedelta(milliseconds=local_ms)
    except OverflowError:
        # A window over rows near the end of year 9999 ends past it: Flink's TIMESTAMP(3) stops at
        # 9999-12-31 23:59:59.999, and what its sink prints beyond is not known here.
        raise Refused(
            f"a window bound at {local_ms} ms (local) is past 9999-12-31 23:59:59.999, the last "
            "TIMESTAMP(3) value; wmviz does not print it"
        ) from None
    return moment.strftime("%Y-%m-%d %H:%M:%S.") + f"{moment.microsecond // 1000:03d}"
