"""One timer service shared by the window operator and the interval join, in Flink's firing order.

Flink identifies a timer by (key, namespace, timestamp) within a time domain: registering the same
one twice gives one callback. wmviz keeps every purpose a timer was registered for (an early-fire
and a cleanup timer of the interval join can share a timestamp), so the UI can label it.

The order of timers with equal timestamps is Flink 2.3.0's default (heap state backend) timer
service's, not a sort by key or window: each time domain is one `HeapPriorityQueueSet`, a binary
heap over all of the instance's timers that compares timestamps only (the key groups only
partition its duplicate check). Which of several equal timers comes first therefore depends on
nothing but the order of every earlier insertion and removal; key names and key hashes play no
part. `TimerHeap` repeats Flink's sift-up / sift-down steps exactly (1-based array, strict
comparisons, removal by moving the last element into the hole), which makes the order equal.
The RocksDB timer service orders differently (per-key-group queues sorted by serialized key and
namespace under a heap of key groups); wmviz does not model it.
Due timers fire one at a time, so a callback may register another that is already due and it
fires in the same pass, as in Flink.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum

from wmviz.core.types import format_ms


class TimeDomain(Enum):
    """Event time (driven by watermarks) or processing time (driven by the `proc_ms` clock)."""

    EVENT = "event"
    PROCESSING = "processing"

    # Members are singletons compared by identity, so identity hashing is consistent and, unlike
    # Enum's own __hash__, costs no Python call: every timer lookup hashes its domain.
    __hash__ = object.__hash__


@dataclass(frozen=True, slots=True, order=True)
class Timer:
    """A pending callback; equal when timestamp, key, namespace and domain are (Flink's identity)."""

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


class TimerHeap:
    """Flink's `HeapPriorityQueueSet` of timers for one time domain: a binary heap on timestamps.

    `heap` is 1-based (index 0 unused), as Flink's array is. Flink keeps each element's index in
    the element; here `_where` maps the timer object's identity to its index, which keeps the
    sift loops cheap. The duplicate check is the caller's (`TimerService` knows every timer).
    """

    __slots__ = ("_where", "heap")

    def __init__(self) -> None:
        self.heap: list[Timer | None] = [None]
        self._where: dict[int, int] = {}

    def __len__(self) -> int:
        return len(self.heap) - 1

    def peek(self) -> Timer | None:
        """The timer that fires next, if any."""
        return self.heap[1] if len(self.heap) > 1 else None

    def add(self, timer: Timer) -> None:
        """Queue a timer that is not queued yet: append it and sift it up."""
        self.heap.append(timer)
        self._sift_up(len(self.heap) - 1)

    def poll(self) -> Timer | None:
        """Remove and return the next timer."""
        return self._remove_at(1) if len(self.heap) > 1 else None

    def remove(self, timer: Timer) -> bool:
        """Delete the queued timer equal to `timer` wherever it sits; False if none is queued. The
        queued object itself is found by its identity at once (a session merge deletes two timers
        per merged window: a scan made merging quadratic); an equal copy, by a scan."""
        index = self._where.get(id(timer))
        if index is not None and self.heap[index] is timer:
            self._remove_at(index)
            return True
        for index in range(1, len(self.heap)):
            if self.heap[index] == timer:
                self._remove_at(index)
                return True
        return False

    def copy(self) -> TimerHeap:
        """An independent heap in exactly this state (to look ahead without changing this one)."""
        other = TimerHeap()
        other.heap, other._where = list(self.heap), dict(self._where)
        return other

    def firing_order(self) -> list[Timer]:
        """Every queued timer in the order it would fire if nothing else were registered first."""
        ahead = self.copy()
        return [t for _ in range(len(ahead)) if (t := ahead.poll()) is not None]

    def __getstate__(self) -> list[Timer | None]:
        return self.heap  # identities do not survive pickling: `_where` is rebuilt

    def __setstate__(self, heap: list[Timer | None]) -> None:
        self.heap = heap
        self._where = {id(t): i for i, t in enumerate(heap) if i}

    def _remove_at(self, index: int) -> Timer:
        """Flink's `removeInternal`: the last element fills the hole and is sifted down, else up."""
        heap = self.heap
        removed = heap[index]
        assert removed is not None
        del self._where[id(removed)]
        last = heap.pop()
        if index < len(heap):
            heap[index] = last
            self._where[id(last)] = index
            self._sift_down(index)
            if heap[index] is last:
                self._sift_up(index)
        return removed

    def _sift_up(self, index: int) -> None:
        heap, where = self.heap, self._where
        current = heap[index]
        ts = current.timestamp_ms  # type: ignore[union-attr]
        parent = index >> 1
        while parent > 0 and ts < heap[parent].timestamp_ms:  # type: ignore[union-attr]
            moved = heap[parent]
            heap[index] = moved
            where[id(moved)] = index
            index, parent = parent, parent >> 1
        heap[index] = current
        where[id(current)] = index

    def _sift_down(self, index: int) -> None:
        heap, where = self.heap, self._where
        size = len(heap) - 1
        current = heap[index]
        ts = current.timestamp_ms  # type: ignore[union-attr]
        child = index << 1
        if child < size and heap[child + 1].timestamp_ms < heap[child].timestamp_ms:  # type: ignore[union-attr]
            child += 1
        while child <= size and heap[child].timestamp_ms < ts:  # type: ignore[union-attr]
            moved = heap[child]
            heap[index] = moved
            where[id(moved)] = index
            index, child = child, child << 1
            if child < size and heap[child + 1].timestamp_ms < heap[child].timestamp_ms:  # type: ignore[union-attr]
                child += 1
        heap[index] = current
        where[id(current)] = index


class TimerService:
    """Pending event-time and processing-time timers of one operator instance."""

    def __init__(self) -> None:
        self._purposes: dict[Timer, list[str]] = {}
        self._queues: dict[TimeDomain, TimerHeap] = {domain: TimerHeap() for domain in TimeDomain}
        self._pending_cache: tuple[FiredTimer, ...] | None = None
        self._by_fields: dict[tuple, Timer] = {}
        """Each pending timer by its fields as a plain tuple: a window registers the same timers
        for every element, and finding one by a tuple (hashed and compared in C) costs a fifth of
        building a Timer to look it up. Derived from `_purposes`; keyframes do not store it."""

    def register(
        self,
        domain: TimeDomain,
        timestamp_ms: int,
        key: str,
        purpose: str,
        namespace: tuple[int, int] | None = None,
    ) -> TimerRegistration:
        """Register a timer; a second registration of the same timer only adds its purpose."""
        fields = (timestamp_ms, key, namespace, domain)
        pending = self._by_fields.get(fields)
        if pending is not None:
            purposes = self._purposes[pending]
            if purpose not in purposes:
                purposes.append(purpose)
                self._pending_cache = None
            return TimerRegistration(pending, purpose, new=False)
        timer = self._by_fields[fields] = Timer(timestamp_ms, key, namespace, domain)
        self._purposes[timer] = [purpose]
        self._queues[domain].add(timer)  # new: the purposes map is the duplicate check
        self._pending_cache = None
        return TimerRegistration(timer, purpose, new=True)

    def delete(
        self, domain: TimeDomain, timestamp_ms: int, key: str, namespace: tuple[int, int] | None = None
    ) -> bool:
        """Delete a pending timer, whatever its purposes (Flink's `deleteEventTimeTimer`)."""
        timer = Timer(timestamp_ms, key, namespace, domain)
        if timer not in self._purposes:
            return False
        self._queues[domain].remove(self._by_fields.get((timestamp_ms, key, namespace, domain), timer))
        del self._purposes[timer]
        del self._by_fields[(timestamp_ms, key, namespace, domain)]
        self._pending_cache = None
        return True

    def pop_due(self, domain: TimeDomain, time_ms: int) -> FiredTimer | None:
        """Remove and return the next timer due at `time_ms` (timestamp ≤ time), if any."""
        queue = self._queues[domain]
        head = queue.peek()
        if head is None or head.timestamp_ms > time_ms:
            return None
        queue.poll()
        self._pending_cache = None
        del self._by_fields[(head.timestamp_ms, head.key, head.namespace, head.domain)]
        return FiredTimer(head, tuple(self._purposes.pop(head)))

    def next_due_ms(self, domain: TimeDomain) -> int | None:
        """The earliest pending timestamp in `domain`."""
        head = self._queues[domain].peek()
        return head.timestamp_ms if head is not None else None

    def pending_count(self) -> int:
        """How many timers are pending in both domains."""
        return sum(len(queue) for queue in self._queues.values())

    def pending(self) -> tuple[FiredTimer, ...]:
        """Every pending timer with its purposes, in firing order (event time first).

        The firing order is what the queues would yield if no further timer were registered:
        exactly Flink's order for the timers already pending.
        """
        if self._pending_cache is None:
            self._pending_cache = tuple(
                FiredTimer(t, tuple(self._purposes[t]))
                for domain in (TimeDomain.EVENT, TimeDomain.PROCESSING)
                for t in self._queues[domain].firing_order()
            )
        return self._pending_cache

    def state(self) -> tuple:
        """Both queues' exact heap layouts and every timer's purposes, comparable with ==."""
        return (
            tuple(tuple(self._queues[d].heap[1:]) for d in TimeDomain),
            tuple(sorted((t, tuple(p)) for t, p in self._purposes.items())),
        )

    def __getstate__(self) -> dict:
        # The look-ahead cache is derived data: keyframes need not carry it.
        return {"_purposes": self._purposes, "_queues": self._queues, "_pending_cache": None}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        self._by_fields = {(t.timestamp_ms, t.key, t.namespace, t.domain): t for t in self._purposes}


@dataclass(frozen=True, slots=True)
class TiePosition:
    """Where a pending timer stands among the pending timers of its domain due at the same time."""

    rank: int
    """1-based: the rank-th of them to fire."""
    of: int
    timestamp_ms: int

    def describe(self) -> str:
        """`fires 2nd of 3 at 5000` (or `fires at 5000` when it is alone)."""
        if self.of == 1:
            return f"fires at {format_ms(self.timestamp_ms)}"
        return f"fires {ordinal(self.rank)} of {self.of} at {format_ms(self.timestamp_ms)}"


def tie_positions(pending: Sequence[FiredTimer]) -> dict[Timer, TiePosition]:
    """For each pending timer (given in firing order, as `TimerService.pending()` returns them),
    its rank among the timers of the same domain and timestamp: the data behind "fires 2nd of 3"."""
    counts: dict[tuple[TimeDomain, int], int] = {}
    for fired in pending:
        slot = (fired.timer.domain, fired.timer.timestamp_ms)
        counts[slot] = counts.get(slot, 0) + 1
    seen: dict[tuple[TimeDomain, int], int] = {}
    out: dict[Timer, TiePosition] = {}
    for fired in pending:
        t = fired.timer
        slot = (t.domain, t.timestamp_ms)
        seen[slot] = seen.get(slot, 0) + 1
        out[t] = TiePosition(seen[slot], counts[slot], t.timestamp_ms)
    return out


def ordinal(n: int) -> str:
    """1st, 2nd, 3rd, 4th, …, 11th, 12th, 13th, 21st, …"""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"
