"""The Kafka dump the per-split tests import (`tests/data/kafka/shop-orders.kcat.txt`).

The shape kcat writes with `kcat -C -t shop.orders -f '%p %o %T %s\\n'` for a LogAppendTime topic
whose values are the order's event time in epoch milliseconds: partition, offset, the broker's
append time, the event time. Run `python -m tests.support.kafka_dump` to write it again;
`tests/trace/test_kafka_import.py` checks the committed file is exactly what this writes.

The story: six partitions over three source subtasks (KafkaSourceEnumerator puts shop.orders'
partitions 2 and 5 on subtask 1). Each partition gets an order about every two seconds from
10:00. Partition 5's producer goes down at 10:02 and holds its orders; after a minute of silence
the split is idle and subtask 1 runs on partition 2 alone. At 10:12 the producer comes back and
appends its ten-minute backlog within 30 s: partition 5 resumes ten minutes behind and holds
subtask 1, and with it every operator downstream, until it has caught up.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

from tests.support import paths

DATA = paths.DATA / "kafka"
FILE = DATA / "shop-orders.kcat.txt"
START_MS = int(datetime(2026, 11, 24, 10, 0, tzinfo=UTC).timestamp() * 1000)
END_S = 15 * 60
DOWN_S, BACK_S, CATCH_UP_S = 120, 720, 30


def lines() -> list[str]:
    rng = random.Random(20261124)
    out = []
    for partition in range(6):
        offset = 0
        for tick in range(0, END_S, 2):
            event = START_MS + tick * 1000 + rng.randint(0, 900)
            if partition == 5 and DOWN_S <= tick < BACK_S:
                continue  # held by the producer; appended in the backlog below
            if partition == 5 and tick == BACK_S:
                backlog = range(DOWN_S, BACK_S, 2)
                for i, held in enumerate(backlog):
                    appended = START_MS + BACK_S * 1000 + i * CATCH_UP_S * 1000 // len(backlog)
                    out.append((partition, offset, appended, START_MS + held * 1000 + rng.randint(0, 900)))
                    offset += 1
            appended = max(
                event + rng.randint(50, 1500), out[-1][2] if out and out[-1][0] == partition else 0
            )
            out.append((partition, offset, appended, event))
            offset += 1
    return [f"{p} {o} {t} {e}" for p, o, t, e in out]


def write() -> None:
    DATA.mkdir(parents=True, exist_ok=True)
    FILE.write_text("\n".join(lines()) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write()
