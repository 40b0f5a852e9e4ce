"""The Kafka-rebalance trace the browser test uploads (`tests/data/kafka-rebalance.csv`).

A realistic trace in the shape people export from logs: ISO-8601 times, two window-operator
subtasks, three source subtasks upstream (channels), keyed click records, one consumer-group
rebalance. Run `python -m tests.support.kafka_trace` to write it again; `tests/ui/test_uploads.py` checks the
committed file is exactly what this writes, so the fixture never drifts from its description.

The story: source subtask 2 loses its partitions in a rebalance at 10:05:20 and sends nothing, not
even IDLE, so both window subtasks' watermarks stall at its last watermark 10:05:15 while the other
two run on. A minute of silence later the idleness timeout marks it IDLE and the watermark jumps;
the [10:05, 10:06) windows fire. At 10:07:20 it gets its partitions back with a backlog: it
announces ACTIVE, its watermarks restart behind the output (unaligned, ignored until they catch
up) and its backlogged clicks from 10:05 are dropped as late.
"""

from __future__ import annotations

import csv
import io
import random
from datetime import UTC, datetime, timedelta

from tests.support import paths

DATA = paths.DATA
START = datetime(2026, 11, 24, 10, 0, 0, tzinfo=UTC)
TICK_S = 10
TICKS = 55  # 10:00:00 .. 10:09:00
LAG_S = 5  # each source subtask's watermark trails its proc time by 5 s (bounded out-of-orderness)
SILENT_FROM_S = 330  # 10:05:30: subtask 2's partitions are revoked (its last tick was 10:05:20)
IDLE_AT_S = 385  # 10:06:25: withIdleness(1 min) after its last record, about 10:05:25
BACK_AT_S = 440  # 10:07:20: partitions re-assigned, with a backlog
COLUMNS = ["seq", "instance", "channel", "kind", "event_ms", "watermark_ms", "status", "proc_ms", "key",
           "value", "partition"]  # fmt: skip


def _iso(seconds: float) -> str:
    when = START + timedelta(milliseconds=round(seconds * 1000))
    return when.strftime("%Y-%m-%dT%H:%M:%S.") + f"{when.microsecond // 1000:03d}Z"


def rows() -> list[dict]:
    topic = _Topic()
    for tick in range(TICKS):
        topic.tick(tick)
    topic.out.sort(key=lambda item: item[0])
    return [{"seq": i, **row} for i, (_, row) in enumerate(topic.out, 1)]


class _Topic:
    """The rows as they are made, tick by tick, from one seeded random stream (the order of the
    draws is the file's: changing it changes every row)."""

    def __init__(self) -> None:
        self.rng = random.Random(20261124)
        self.out: list[tuple[float, dict]] = []
        self.clicks = 0

    def add(self, proc_s: float, **row) -> None:
        self.out.append((proc_s, {"proc_ms": _iso(proc_s), **row}))

    def tick(self, tick: int) -> None:
        now = tick * TICK_S
        for channel in range(3):
            silent = channel == 2 and SILENT_FROM_S <= now < BACK_AT_S
            if not silent:
                self.channel_tick(tick, channel)
        if now + TICK_S > IDLE_AT_S >= now:
            for instance in ("0", "1"):
                self.add(IDLE_AT_S, instance=instance, channel=2, kind="status", status="IDLE")

    def channel_tick(self, tick: int, channel: int) -> None:
        """Records first (they arrive during the tick), then the subtask's watermark."""
        now = tick * TICK_S
        partition = f"clicks-{channel * 2 + tick % 2}"
        backlog = channel == 2 and now >= BACK_AT_S
        for instance in ("0", "1"):
            for _ in range(self.rng.choice((0, 0, 1, 0, 1, 2, 0, 0))):
                self.clicks += 1
                behind = (now - SILENT_FROM_S + 20) if backlog and now < BACK_AT_S + 30 else 0
                event = now - behind - self.rng.uniform(0.2, LAG_S - 0.2)
                self.add(
                    now + self.rng.uniform(0.05, 0.9),
                    instance=instance,
                    channel=channel,
                    kind="record",
                    event_ms=_iso(event),
                    key=f"user-{self.rng.randrange(1, 40)}",
                    value=f"click-{self.clicks}",
                    partition=partition,
                )
        if channel == 2 and now == BACK_AT_S:
            for instance in ("0", "1"):
                self.add(now + 0.01, instance=instance, channel=2, kind="status", status="ACTIVE")
        wm_behind = (BACK_AT_S - SILENT_FROM_S + 10 - (now - BACK_AT_S) * 2) if backlog else 0
        watermark = now - LAG_S - max(wm_behind, 0)
        for instance in ("0", "1"):
            self.add(
                now + 0.95, instance=instance, channel=channel, kind="watermark", watermark_ms=_iso(watermark)
            )


def csv_text() -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows():
        writer.writerow(row)
    return buffer.getvalue()


if __name__ == "__main__":
    DATA.mkdir(exist_ok=True)
    (DATA / "kafka-rebalance.csv").write_text(csv_text(), encoding="utf-8")
    print(len(rows()), "rows")
