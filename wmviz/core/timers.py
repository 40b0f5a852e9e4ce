"""One timer service shared by the window operator and the interval join.

Flink identifies a timer by (key, namespace, timestamp) within a time domain: registering the same
one twice gives one callback. wmviz keeps every purpose a timer was registered for (an early-fire
and a cleanup timer of the interval join can share a timestamp), so the UI can label it. Due timers
fire in ascending (timestamp, key, namespace) order, one at a time, so a callback may register
another that is already due and it fires in the same pass, as in Flink.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from heapq import heappop, heappush


class TimeDomain(Enum):
    """Event time (driven by watermarks) or processing time (driven by the `proc_ms` clock)."""

    EVENT = "event"
    PROCESSING = "processing"


@dataclass(frozen=True, slots=True, order=True)
class Timer:
    """A pending callback: sorted by timestamp, then key, then namespace (wmviz's tie order)."""

    timestamp_ms: int
    key: str
    namespace: tuple[int, int] | None
    domain: TimeDomain


@dataclass(frozen=True, slots=True)
class TimerRegistration:
    """One registration call, shown in the timer lane; `new` is False for an already-pending timer."""

    timer: Timer
    purpose: str
    new: bool


@dataclass(frozen=True, slots=True)
class FiredTimer:
    """A timer that fired, with every purpose it was registered for, in registration order."""

    timer: Timer
    purposes: tuple[str, ...]


class TimerService:
    """Pending event-time and processing-time timers of one operator instance."""

    def __init__(self) -> None:
        self._purposes: dict[Timer, list[str]] = {}
        self._queues: dict[TimeDomain, list[tuple[int, str, tuple[int, int], Timer]]] = {
            TimeDomain.EVENT: [],
            TimeDomain.PROCESSING: [],
        }

    def register(
        self,
        domain: TimeDomain,
        timestamp_ms: int,
        key: str,
        purpose: str,
        namespace: tuple[int, int] | None = None,
    ) -> TimerRegistration:
        """Register a timer; a second registration of the same timer only adds its purpose."""
        timer = Timer(timestamp_ms, key, namespace, domain)
        purposes = self._purposes.get(timer)
        if purposes is not None:
            if purpose not in purposes:
                purposes.append(purpose)
            return TimerRegistration(timer, purpose, new=False)
        self._purposes[timer] = [purpose]
        heappush(self._queues[domain], (timestamp_ms, key, namespace or (0, 0), timer))
        return TimerRegistration(timer, purpose, new=True)

    def pop_due(self, domain: TimeDomain, time_ms: int) -> FiredTimer | None:
        """Remove and return the earliest timer due at `time_ms` (timestamp ≤ time), if any."""
        queue = self._queues[domain]
        if not queue or queue[0][0] > time_ms:
            return None
        timer = heappop(queue)[3]
        return FiredTimer(timer, tuple(self._purposes.pop(timer)))

    def next_due_ms(self, domain: TimeDomain) -> int | None:
        """The earliest pending timestamp in `domain`."""
        queue = self._queues[domain]
        return queue[0][0] if queue else None

    def pending(self) -> tuple[FiredTimer, ...]:
        """Every pending timer with its purposes, in firing order (event time first)."""
        return tuple(FiredTimer(t, tuple(p)) for t, p in sorted(self._purposes.items(), key=_order))


def _order(item: tuple[Timer, list[str]]) -> tuple:
    timer = item[0]
    return (timer.domain is not TimeDomain.EVENT, timer.timestamp_ms, timer.key, timer.namespace or (0, 0))
