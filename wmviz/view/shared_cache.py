"""A process-wide cache of built values, least recently used first out, bounded in bytes.

The page's step (`wmviz.view.step_view`) is the same for everyone who looks at the same timeline,
instance, step and view options: when a link goes to a team, the first viewer builds it and the
others read it. One Streamlit server is one Python process, so one cache serves every session.

Values must be immutable or never changed by a reader (the step view holds strings, Arrow tables
and frozen dataclasses). Two sessions asking for the same missing key at once build it once: the
second waits for the first instead of building it again beside it.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from typing import Generic, TypeVar

V = TypeVar("V")


@dataclass(frozen=True)
class CacheStats:
    """What the cache holds and how it was used since it was made."""

    entries: int
    bytes: int
    max_bytes: int
    hits: int
    misses: int


class SharedCache(Generic[V]):
    """`get(key, build)` returns the value kept for `key`, or builds, keeps and returns it.

    `size(value)` is the value's size in bytes as the bound counts it; a value larger than the
    whole bound is returned but not kept, and `max_bytes` 0 keeps nothing (every get builds)."""

    def __init__(self, max_bytes: int, size: Callable[[V], int]) -> None:
        if max_bytes < 0:
            raise ValueError(f"a cache bound is a number of bytes >= 0, not {max_bytes}")
        self._max = max_bytes
        self._size = size
        self._entries: OrderedDict[Hashable, tuple[V, int]] = OrderedDict()
        self._bytes = 0
        self._hits = 0
        self._misses = 0
        self._lock = threading.Lock()
        self._building: dict[Hashable, threading.Event] = {}

    def get(self, key: Hashable, build: Callable[[], V]) -> V:
        with self._lock:
            found = self._hit(key)
            if found is not None:
                return found[0]
            waiting = self._building.get(key)
            if waiting is None:
                self._building[key] = threading.Event()
        if waiting is not None:  # another session builds it now: its value, once it is kept
            waiting.wait()
            with self._lock:
                found = self._hit(key)
            if found is not None:
                return found[0]
            return self._build_alone(build)  # it failed, or was too large to keep
        try:
            value = self._build_alone(build)
            self._keep(key, value)
            return value
        finally:
            with self._lock:
                self._building.pop(key).set()

    def _hit(self, key: Hashable) -> tuple[V, int] | None:
        """The entry of `key`, counted as a hit and made the most recently used (lock held)."""
        found = self._entries.get(key)
        if found is not None:
            self._entries.move_to_end(key)
            self._hits += 1
        return found

    def _build_alone(self, build: Callable[[], V]) -> V:
        with self._lock:
            self._misses += 1
        return build()

    def _keep(self, key: Hashable, value: V) -> None:
        size = self._size(value)
        if size > self._max:
            return
        with self._lock:
            self._entries[key] = (value, size)
            self._bytes += size
            while self._bytes > self._max:
                _, (_, dropped) = self._entries.popitem(last=False)
                self._bytes -= dropped

    def stats(self) -> CacheStats:
        with self._lock:
            return CacheStats(len(self._entries), self._bytes, self._max, self._hits, self._misses)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._bytes = 0
