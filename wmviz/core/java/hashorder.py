"""The iteration order of a `java.util.HashMap` or `HashSet` of Flink `TimeWindow`s.

Flink's session windows keep their bookkeeping in such collections (`MergingWindowSet`'s window →
state-window map, and the sets `TimeWindow.mergeWindows` hands to its callback), and what the
operator does next follows their iteration order: which window's state absorbs the others (so
the order of a merged session's elements), and the order in which the merged windows' timers are
deleted (which shapes the timer heap, and so the order of later equal-timestamp firings).

That order is deterministic for a given sequence of puts and removes: each key sits in bucket
`(h ^ h >>> 16) & (capacity − 1)` with `h = TimeWindow.hashCode()` (Flink's
`MathUtils.longToIntWithBitMixing(start + end)`), buckets in index order, each bucket in the order
its keys were put; the capacity starts at 16 and doubles once the size passes three quarters of
it, or when one bucket would hold more than 8 keys while the table is smaller than 64. A bucket
of more than 8 keys in a larger table becomes a red-black tree whose order, for keys that are
not `Comparable` like `TimeWindow`, falls back to identity hash codes: Java itself gives no fixed
order there, and `JavaHashTable` keeps such a bucket in put order.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator
from functools import lru_cache
from typing import Generic, TypeVar

from wmviz.core.java.longs import wrap_long

K = TypeVar("K", bound=Hashable)

_MASK64 = (1 << 64) - 1
_INITIAL_CAPACITY = 16
_TREEIFY = 8
_MIN_TREEIFY_CAPACITY = 64


def long_to_int_with_bit_mixing(value: int) -> int:
    """Flink's `MathUtils.longToIntWithBitMixing`: a 64-bit finaliser, cut to a signed int."""
    v = value & _MASK64
    v = ((v ^ (v >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    v = ((v ^ (v >> 27)) * 0x94D049BB133111EB) & _MASK64
    v = (v ^ (v >> 31)) & 0xFFFFFFFF
    return v - (1 << 32) if v & 0x80000000 else v


@lru_cache(maxsize=65536)
def window_spread(window: tuple[int, int]) -> int:
    """`HashMap.hash(timeWindow)` (the hash spread over the low bits), unsigned 32-bit."""
    h = long_to_int_with_bit_mixing(wrap_long(window[0] + window[1])) & 0xFFFFFFFF
    return h ^ (h >> 16)


class JavaHashTable(Generic[K]):
    """The keys of a `HashMap` (or the elements of a `HashSet`) in Java's iteration order.

    Java's buckets are not kept: within a bucket the order is the put order (a resize splits each
    chain in order), so the iteration order is the put order sorted, stably, by bucket index at the
    table's current capacity, which is all this tracks."""

    __slots__ = ("_capacity", "_spread", "_where")

    def __init__(self, spread: Callable[[K], int] | None = None) -> None:
        self._spread: Callable[[K], int] = spread or window_spread
        self._where: dict[K, int] = {}
        """Each key's spread hash, in put order."""
        self._capacity = _INITIAL_CAPACITY

    def __len__(self) -> int:
        return len(self._where)

    def __contains__(self, key: object) -> bool:
        return key in self._where

    def __iter__(self) -> Iterator[K]:
        """A snapshot of the keys in iteration order (safe to change the table while walking it)."""
        where, mask = self._where, self._capacity - 1
        if len(where) < 2:
            return iter(list(where))
        return iter(sorted(where, key=lambda k: where[k] & mask))

    def add(self, key: K) -> None:
        """`put` of a new key: the end of its bucket's chain; a key already there keeps its place."""
        where = self._where
        if key in where:
            return
        h = where[key] = self._spread(key)
        size = len(where)
        if size > _TREEIFY and self._capacity < _MIN_TREEIFY_CAPACITY:
            mask = self._capacity - 1
            if sum(1 for other in where.values() if other & mask == h & mask) > _TREEIFY:
                self._capacity *= 2  # `treeifyBin` grows a small table instead of making a tree
        if size > self._capacity * 3 // 4:
            self._capacity *= 2

    def remove(self, key: K) -> bool:
        """`remove`: the key leaves its chain; the others keep their order. False if absent."""
        return self._where.pop(key, None) is not None

    def first(self) -> K:
        """`iterator().next()`."""
        where, mask = self._where, self._capacity - 1
        return min(where, key=lambda k: where[k] & mask)
