"""Java's `long` arithmetic, as Flink's window operator computes with it.

Flink computes window bounds and cleanup times with Java's signed 64-bit `long`, which wraps
around on overflow, and with Java's `%`, whose remainder takes the dividend's sign; Python's
integers never overflow and its `%` floors, so every such step goes through these helpers.
"""

from __future__ import annotations

_LONG_MASK = (1 << 64) - 1
_LONG_SIGN = 1 << 63


def wrap_long(value: int) -> int:
    """`value` as Java's `long` would hold it after an overflowing `+` or `-`."""
    if -_LONG_SIGN <= value < _LONG_SIGN:
        return value
    value &= _LONG_MASK
    return value - (1 << 64) if value & _LONG_SIGN else value


def java_rem(dividend: int, divisor: int) -> int:
    """Java's `%` on longs: the remainder takes the sign of the dividend (Python's `%` floors)."""
    remainder = abs(dividend) % abs(divisor)
    return -remainder if dividend < 0 else remainder
