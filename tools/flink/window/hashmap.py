"""`wmviz.core.java.javamap.JavaLongMap` beside the JDK's own `java.util.HashMap<Long, Integer>`.

Seeded random sequences of puts, iterator removals and fresh maps, with key sets chosen to
collide (so buckets grow past 8 and turn into red-black trees, split on resize and shrink on
removal), epoch-millisecond times at regular steps, negative times and random longs. After some
steps and at the end, the iteration order must be the JDK's (WmvizHashMapHarness.java).
"""

from __future__ import annotations

import random
from pathlib import Path

from tools.flink.launcher import Harness, HarnessError, no_jars
from wmviz.core.java.javamap import JavaLongMap

HARNESS_SOURCE = Path(__file__).with_name("WmvizHashMapHarness.java")
HARNESS_CLASS = "WmvizHashMapHarness"
HASHMAP = Harness("the hashmap harness", (HARNESS_SOURCE,), HARNESS_CLASS, tag="hashmap-", jars=no_jars)

Op = tuple[str, int | None]
"""("N", None) a new map, ("P", k) put, ("R", k) iterator removal, ("O", None) read the order."""


def random_ops(seed: int) -> list[Op]:
    rng = random.Random(seed)
    style = rng.choice(("small", "collide", "spread", "epoch", "negative"))
    if style == "collide":
        stride, base = rng.choice((16, 64, 128, 256)), rng.randint(-1000, 1000)
        pool = [base + stride * i * rng.choice((1, 2, 4)) for i in range(300)]
    elif style == "epoch":
        step = rng.choice((1000, 250, 60000, 1024, 4096))
        pool = [1_700_000_000_000 + step * i for i in range(400)]
    elif style == "negative":
        pool = list(range(-60, 60))
    elif style == "spread":
        pool = [rng.randint(-(2**63), 2**63 - 1) for _ in range(300)]
    else:
        pool = list(range(200))
    ops: list[Op] = [("N", None)]
    keys: set[int] = set()
    for _ in range(rng.randint(5, 400)):
        r = rng.random()
        if r < 0.65 or not keys:
            key = rng.choice(pool)
            ops.append(("P", key))
            keys.add(key)
        elif r < 0.95:
            key = rng.choice(sorted(keys))
            ops.append(("R", key))
            keys.discard(key)
        else:
            ops.append(("N", None))
            keys = set()
        if rng.random() < 0.2:
            ops.append(("O", None))
    ops.append(("O", None))
    return ops


def wmviz_orders(ops: list[Op]) -> list[list[int]]:
    """The iteration order JavaLongMap gives at every ("O", None)."""
    current: JavaLongMap[int] = JavaLongMap()
    orders = []
    for op, key in ops:
        if op == "N":
            current = JavaLongMap()
        elif op == "P":
            assert key is not None
            current.put(key, 0)
        elif op == "R":
            assert key is not None
            current.remove(key)
        else:
            orders.append(list(current))
    return orders


def jdk_orders(sequences: list[list[Op]]) -> list[list[list[int]]]:
    """The JDK HashMap's iteration orders for every sequence, in one JVM (needs only java)."""
    lines = [op if key is None else f"{op} {key}" for ops in sequences for op, key in ops]
    proc = HASHMAP.run(stdin="\n".join(lines) + "\n", timeout=300)
    replies = proc.stdout.splitlines()
    wanted = sum(1 for ops in sequences for op, _ in ops if op == "O")
    if len(replies) != wanted:
        tail = HASHMAP.stderr_tail(proc)
        raise HarnessError(f"the hashmap harness answered {len(replies)} of {wanted}:\n{tail}")
    out, pos = [], 0
    for ops in sequences:
        n = sum(1 for op, _ in ops if op == "O")
        out.append([[int(x) for x in r.split()] for r in replies[pos : pos + n]])
        pos += n
    return out
