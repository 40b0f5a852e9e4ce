"""A 4-vertex job's metrics as Flink reports them: a plan and a Prometheus `query_range` export.

    Source: orders (3 subtasks, 2 splits each) --HASH--> Join: orders x payments (4) input 1
    Source: payments (2 subtasks)              --HASH--> Join: orders x payments (4) input 2
    Join --RESCALE--> Window: revenue -> Sink: warehouse (2)

One sample every 10 s for 10 minutes; event time is the clock minus a few seconds, except:
- orders split `orders-3` (subtask 0) goes idle after 30 s (its accumulatedIdleTimeMs grows);
- payments subtask 1 lags 60 s for the first 5 minutes, then catches up;
- payments subtask 0 stops at 198 s (sourceIdleTime grows; idleness 30 s makes it idle at 230 s),
  its watermark frozen below everything else: the valve must leave it out;
- orders split `orders-5` (subtask 2) stops at 295 s (not idle: orders reads no idleness) and
  holds the whole job from 300 s to the end.
So the culprit is payments subtask 1 before 300 s and orders subtask 2's split orders-5 after.
Downstream values are what the job would report (the minimum over non-idle channels).

`python -m tests.support.job_shape` rewrites tests/data/prometheus/orders-job-*.json.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence

from tests.support import paths

T0 = 1_795_633_000_000
STEP_MS = 10_000
SAMPLES = 61
IDLENESS_MS = 30_000
ORDERS, PAYMENTS, JOIN, WINDOW = "a1", "b2", "c3", "d4"
NAMES = {
    ORDERS: "Source: orders",
    PAYMENTS: "Source: payments",
    JOIN: "Join: orders x payments",
    WINDOW: "Window: revenue -> Sink: warehouse",
}
PARALLELISM = {ORDERS: 3, PAYMENTS: 2, JOIN: 4, WINDOW: 2}
SPLITS = {0: ["orders-0", "orders-3"], 1: ["orders-1", "orders-4"], 2: ["orders-2", "orders-5"]}
DATA = paths.DATA / "prometheus"


def plan() -> dict:
    """The /jobs/:jid/plan response (descriptions as Flink writes them: HTML, chains on lines)."""

    def node(vid: str, description: str, inputs: list) -> dict:
        return {
            "id": vid,
            "parallelism": PARALLELISM[vid],
            "operator": "",
            "operator_strategy": "",
            "description": description,
            "optimizer_properties": {},
            "inputs": [
                {"num": n, "id": up, "ship_strategy": s, "exchange": "pipelined_bounded"}
                for n, (up, s) in enumerate(inputs)
            ],
        }

    return {
        "plan": {
            "jid": "7d3f0c2a9b8e4f1a6c5d4e3f2a1b0c9d",
            "name": "revenue",
            "type": "STREAMING",
            "nodes": [
                node(ORDERS, "Source: orders<br/>", []),
                node(PAYMENTS, "Source: payments<br/>", []),
                node(JOIN, "Join: orders x payments<br/>", [(ORDERS, "HASH"), (PAYMENTS, "HASH")]),
                node(WINDOW, "Window: revenue<br/>+- Sink: warehouse<br/>", [(JOIN, "RESCALE")]),
            ],
        }
    }


def _order_splits(put: Callable[[tuple, int, int], None], sub: int, splits: Sequence[str], s: int) -> int:
    """Put the split series of one orders subtask, `s` ms into the recording; the smallest watermark of its
    splits that are not idle (the subtask's output watermark)."""
    t = T0 + s
    live = []
    for split in splits:
        wm = t - 5000
        idle_ms = 0
        if split == "orders-3" and s > 30_000:
            wm, idle_ms = T0 + 25_000, s - 30_000
        if split == "orders-5":
            wm = T0 + min(s, 295_000) - 5000
        put((ORDERS, sub, "currentWatermark", split), t, wm)
        put((ORDERS, sub, "accumulatedIdleTimeMs", split), t, idle_ms)
        put((ORDERS, sub, "idleTimeMsPerSecond", split), t, 1000 if idle_ms else 0)
        if not idle_ms:
            live.append(wm)
    return min(live)


def series() -> dict[tuple, list[tuple[int, int]]]:
    """(vertex id, subtask, metric, split) -> points, as in a job recording."""
    out: dict[tuple, list[tuple[int, int]]] = {}

    def put(key: tuple, t: int, value: int) -> None:
        out.setdefault(key, []).append((t, value))

    for i in range(SAMPLES):
        s = i * STEP_MS
        t = T0 + s
        orders = {}
        for sub, splits in SPLITS.items():
            orders[sub] = _order_splits(put, sub, splits, s)
            put((ORDERS, sub, "currentOutputWatermark", None), t, orders[sub])
            put((ORDERS, sub, "sourceIdleTime", None), t, s - 295_000 if sub == 2 and s > 295_000 else 40)
        last0 = min(s, 198_000)
        payments = {0: T0 + last0 - 2000, 1: t - (60_000 if s < 300_000 else 2000)}
        idle = {0: s - last0 >= IDLENESS_MS + 400, 1: False}
        for sub in (0, 1):
            put((PAYMENTS, sub, "currentOutputWatermark", None), t, payments[sub])
            put((PAYMENTS, sub, "sourceIdleTime", None), t, s - last0 if sub == 0 else 40)
        in1 = min(orders.values())
        in2 = min(w for sub, w in payments.items() if not idle[sub])
        for sub in range(4):
            put((JOIN, sub, "currentInput1Watermark", None), t, in1)
            put((JOIN, sub, "currentInput2Watermark", None), t, in2)
            put((JOIN, sub, "currentInputWatermark", None), t, min(in1, in2))
            put((JOIN, sub, "currentOutputWatermark", None), t, min(in1, in2))
        for sub in range(2):
            put((WINDOW, sub, "currentInputWatermark", None), t, min(in1, in2))
            put((WINDOW, sub, "currentOutputWatermark", None), t, min(in1, in2))
    return out


def _filtered(value: str) -> str:
    """A label value as Flink's Prometheus reporter writes it."""
    return re.sub(r"[^a-zA-Z0-9:_]", "_", value)


def query_range() -> dict:
    """The series as a query_range response: sources and the join at operator scope (the join
    also at task scope), the window chain only at operator scope, splits with a `split` label."""
    result = []
    for (vid, sub, metric, split), points in series().items():
        name = NAMES[vid]
        labels = {
            "job_id": "7d3f0c2a9b8e4f1a6c5d4e3f2a1b0c9d",
            "job_name": "revenue",
            "task_id": vid * 16,
            "task_name": _filtered(name),
            "subtask_index": str(sub),
            "task_attempt_num": "0",
            "task_attempt_id": f"{vid}{sub}",
            "host": "10.0.3.17",
            "tm_id": "10_0_3_17:6122-9c1e",
        }
        values = [[tp / 1000, str(v)] for tp, v in points]
        operators = name.split(" -> ")
        if split is not None:
            scoped = [("flink_taskmanager_job_task_operator_split_watermark_" + metric, operators[0])]
            labels["split"] = split
        elif vid == JOIN and metric == "currentInputWatermark":
            scoped = [("flink_taskmanager_job_task_" + metric, None)]
        elif metric == "currentOutputWatermark":
            scoped = [("flink_taskmanager_job_task_operator_" + metric, op) for op in operators]
        else:
            scoped = [("flink_taskmanager_job_task_operator_" + metric, operators[0])]
        for metric_name, operator in scoped:
            extra = (
                {"operator_name": _filtered(operator), "operator_id": operator.encode().hex()[:32]}
                if operator
                else {}
            )
            result.append({"metric": {"__name__": metric_name, **labels, **extra}, "values": values})
    return {"status": "success", "data": {"resultType": "matrix", "result": result}}


if __name__ == "__main__":
    (DATA / "orders-job-plan.json").write_text(json.dumps(plan(), indent=1) + "\n", encoding="utf-8")
    (DATA / "orders-job-query-range.json").write_text(json.dumps(query_range()) + "\n", encoding="utf-8")
