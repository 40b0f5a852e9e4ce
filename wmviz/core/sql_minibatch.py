"""SQL's row-time mini-batch assigner: which watermarks reach a mini-batched window
(docs/rules.md: "SQL watermarks", SQL-M1 to SQL-M3).

With `table.exec.mini-batch.enabled` a windowed aggregation over row time gets a
`RowTimeMiniBatchAssginerOperator` (sic, the spelling of Flink's class) after the watermark is made:
it forwards only the watermarks that cross an event-time interval boundary (the window's size, as
the planner infers it), since a window can fire only there. Restated from Flink 2.3.0's
`flink-table-runtime/.../wmassigners/RowTimeMiniBatchAssginerOperator` (bytecode of the released
jar read; tests/flink/test_sql_model_flink.py drives that very class):

- its watermark starts at 0 and the first boundary is `interval − 1` (the end of the batch
  [0, interval));
- an upstream watermark raises it (never lowers it); once it reaches the next boundary it is
  forwarded as it stands, and the next boundary becomes the end of the batch that holds it, or
  of the batch after when it sits exactly on an end;
- Long.MAX_VALUE (the end of input) is forwarded at once, once; statuses pass unchanged; when the
  input finishes, the watermark it holds is forwarded (a trace has no such moment: `finish`);
- batch starts use Java's remainder (`w − (w + interval) % interval`), so a negative watermark
  counts from the batch below zero.
"""

from __future__ import annotations

from dataclasses import dataclass

from wmviz.core.java.longs import java_rem, wrap_long
from wmviz.core.types import MAX_MS


def minibatch_start_ms(watermark_ms: int, interval_ms: int) -> int:
    """SQL-M2: the start of the mini-batch holding `watermark_ms`, in Java's long arithmetic."""
    return wrap_long(watermark_ms - java_rem(wrap_long(watermark_ms + interval_ms), interval_ms))


@dataclass(frozen=True, slots=True)
class MiniBatchHeld:
    """A channel's watermark the mini-batch assigner did not forward (below its next boundary)."""

    channel: int
    watermark_ms: int
    next_ms: int

    def describe(self, t) -> str:
        return (
            f"mini-batch assigner ch{self.channel} holds W{t(self.watermark_ms)}: below its next "
            f"boundary {t(self.next_ms)}"
        )


class MiniBatchAssigner:
    """One channel's RowTimeMiniBatchAssginerOperator (SQL-M1 to SQL-M3)."""

    def __init__(self, interval_ms: int) -> None:
        self.interval_ms = interval_ms
        # SQL-M1: starts at 0; the first boundary is the end of [0, interval).
        self.current_ms = 0
        self.next_ms = minibatch_start_ms(0, interval_ms) + interval_ms - 1

    def on_watermark(self, watermark_ms: int) -> int | None:
        """SQL-M2 / SQL-M3: the watermark forwarded for an upstream one, or None (held back)."""
        if watermark_ms == MAX_MS and self.current_ms != MAX_MS:
            self.current_ms = MAX_MS
            return MAX_MS
        self.current_ms = max(self.current_ms, watermark_ms)
        if self.current_ms < self.next_ms:
            return None
        return self.advance()

    def advance(self) -> int:
        """SQL-M2: forward the watermark; the next boundary is its batch's end, or the next one's."""
        start = minibatch_start_ms(self.current_ms, self.interval_ms)
        end = wrap_long(start + self.interval_ms - 1)
        self.next_ms = end if end > self.current_ms else wrap_long(end + self.interval_ms)
        return self.current_ms

    def finish(self) -> int:
        """SQL-M3: at the end of input the watermark it holds is forwarded, whatever the boundary."""
        return self.advance()

    def snapshot(self) -> tuple:
        return (self.current_ms, self.next_ms)
