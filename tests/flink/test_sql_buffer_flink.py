"""SQL's buffering operators against real Flink SQL 2.3.0: OVER (ROWS and RANGE, unbounded and
bounded), row-time deduplication (keep first, insert-only: buffered; keep last: at once) and
ORDER BY rowtime.

`tests/data/sql/buffer_ops.sql` runs for real (`tools.flink.sql.run`) on rows drawn from seeds
(several keys, ties in time, rows exactly at the watermark, rows behind it, NULL amounts). wmviz's
side: each operator's config read from its COMPILE PLAN node by `wmviz.sql.plan_buffer`, run by
the core (`tests/support_sql_ops.drive`) on the same rows with the source's watermark at each step
as the real run reports it. Per step, every sink row (kind and values, through the projection
after the operator, evaluated from the plan) and every `numLateRecordsDropped` delta must agree.
Planted bugs (OVER's late test `<` instead of `≤`, the deduplication dropping at `≤`, the sort
or a bounded frame testing the watermark, RANGE run as ROWS, a ROWS frame one row short, a RANGE
cleanup that never clears or keeps the last fired time) must make the comparison fail; what the
readers do not model is refused by name.

Flink's own harness tests are replayed without Flink in tests/sql/test_sql_buffer.py
(RowTimeDeduplicateKeepFirstRowFunctionTest, RowTimeDeduplicateFunctionTest, the OVER tests'
testLateRecordMetrics); where one of them (a RANGE frame's state after its cleanup) disagrees with
the released 2.3.0 class, the real runs here decide.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from typing import Any

import pytest

from tests.conftest import require_flink
from tests.support import paths
from tests.support.support_sql_ops import Line, StepAnswer, drive, input_watermarks, lines_of, timestamp_ms
from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.sql import jars
from wmviz.sql.load import read_plan_file
from wmviz.sql.model import OperatorRefused, SqlJob
from wmviz.sql.operators import operator_of

pytestmark = pytest.mark.flink

DATA = paths.DATA / "sql"
SCRIPT = DATA / "buffer_ops.sql"
SOURCE_NODE = 1
OPERATORS = {
    3: "over_rows_unbounded",
    6: "over_range_unbounded",
    9: "over_rows_bounded",
    12: "over_range_bounded",
    15: "first_click",
    17: "last_click",
    20: "sorted_clicks",
}
"""Plan node of each modelled operator -> the sink it writes (buffer_ops.plan.json)."""
SEEDS = (31,)
LINES = 44
"""One real run per module (a JVM start is most of its time): one seed, enough lines to reach every case."""


def clicks(rng: random.Random, lines: int) -> list[dict]:
    """Three users, rising times with ties, a quarter of the rows behind (some exactly at the
    watermark, which is the largest time − 2 s), a few NULL amounts."""
    out: list[dict] = []
    clock = 10.0
    for _ in range(lines):
        clock += rng.choice([0.0, 0.0, 0.5, 1.0, 2.0, 3.0])
        ts = clock - (rng.choice([1.0, 2.0, 2.0, 3.0, 6.0]) if rng.random() < 0.3 else 0.0)
        whole, ms = divmod(round(ts * 1000), 1000)
        minutes, seconds = divmod(whole, 60)
        amount = None if rng.random() < 0.1 else rng.randint(1, 9)
        row = {
            "user_id": rng.choice(["u0", "u1", "u2"]),
            "amount": amount,
            "ts": f"2026-11-24 10:{minutes:02d}:{seconds:02d}.{ms:03d}",
        }
        out.append({"table": "clicks", "partition": 0, "row": row})
    return out


# --- the projection after an operator, evaluated from the plan ------------------------------------


def _evaluate(expr: dict[str, Any], row: list[Any]) -> Any:
    """The few RexNode calls the planner puts after an OVER aggregate (SUM as CASE over $SUM0, AVG
    as a cast of a division)."""
    kind = expr.get("kind")
    if kind == "INPUT_REF":
        return row[expr["inputIndex"]]
    if kind == "LITERAL":
        return expr.get("value")
    args = [_evaluate(e, row) for e in expr.get("operands", [])]
    name = expr.get("internalName")
    if name == "$CASE$1":
        return args[1] if args[0] else args[2]
    if name == "$>$1":
        return None if None in args else args[0] > args[1]
    if name == "$/$1":
        if None in args:
            return None
        quotient = abs(args[0]) // abs(args[1])
        return quotient if (args[0] >= 0) == (args[1] > 0) else -quotient
    if name == "$CAST$1":
        return args[0]
    raise AssertionError(f"the test does not evaluate {name}")


def projection(job: SqlJob, node: int, sink: str) -> Any:
    """A function from the operator's output values (in order) to the sink's row by field name."""
    after = [e.target for e in job.edges if e.source == str(node)]
    target = job.node(after[0])
    sink_node = target
    exprs = None
    if target.flink_type == "stream-exec-calc":
        exprs = target.spec["projection"]
        sink_node = job.node(next(e.target for e in job.edges if e.source == target.id))
    columns = [
        c["name"] for c in sink_node.spec["dynamicTableSink"]["table"]["resolvedTable"]["schema"]["columns"]
    ]
    assert sink in sink_node.name or sink in str(sink_node.spec["dynamicTableSink"])

    def project(values: list[Any]) -> dict[str, Any]:
        out = [_evaluate(e, values) for e in exprs] if exprs is not None else values
        return dict(zip(columns, out, strict=True))

    return project


def _normal(row: dict[str, Any]) -> dict[str, Any]:
    return {k: timestamp_ms(v) if k == "ts" and isinstance(v, str) else v for k, v in row.items()}


def flink_steps(events: list[dict], node: int, sink: str, steps: int) -> list[StepAnswer]:
    answers = [StepAnswer() for _ in range(steps + 1)]
    for event in events:
        if event.get("sink") == sink:
            answers[event["step"]].outputs.append((event["kind"], _normal(event["row"])))
        elif event.get("metric") == "numLateRecordsDropped" and event["operator"].endswith(f"[{node}]"):
            answers[event["step"]].late_dropped += event["delta"]
    return answers


def wmviz_steps(
    job: SqlJob, node: int, sink: str, lines: list[Line | None], events: list[dict]
) -> list[StepAnswer]:
    config = operator_of(job.node(str(node)), job)
    assert isinstance(config, SqlOperatorKind)
    project = projection(job, node, sink)
    answers = drive(config, lines, input_watermarks(events, SOURCE_NODE))
    for answer in answers:
        answer.outputs = [(kind, _normal(project(list(values.values())))) for kind, values in answer.outputs]
    return answers


def disagreements(flink: list[StepAnswer], mine: list[StepAnswer]) -> list[str]:
    out = []
    for step, (a, b) in enumerate(zip(flink, mine, strict=True)):
        if a.outputs != b.outputs:
            out.append(f"step {step}: rows flink {a.outputs} wmviz {b.outputs}")
        if a.late_dropped != b.late_dropped:
            out.append(f"step {step}: numLateRecordsDropped flink {a.late_dropped} wmviz {b.late_dropped}")
    return out


@pytest.fixture(scope="module")
def real_runs(tmp_path_factory) -> dict[int, tuple[list[dict], list[dict]]]:
    require_flink(
        "Flink {version}'s SQL runtime", "the buffering operators' differential", jars.sql_unavailable_reason
    )
    from tools.flink.sql.run import run_script

    runs = {}
    for seed in SEEDS:
        rows = clicks(random.Random(seed), LINES)
        path = tmp_path_factory.mktemp(f"buffer{seed}") / "rows.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in rows))
        runs[seed] = (rows, run_script(SCRIPT, path))
    return runs


def _compare(runs, seed: int, node: int) -> list[str]:
    rows, events = runs[seed]
    job = read_plan_file(DATA / "buffer_ops.plan.json")
    lines = lines_of(rows, "ts")
    sink = OPERATORS[node]
    return disagreements(
        flink_steps(events, node, sink, len(lines)), wmviz_steps(job, node, sink, lines, events)
    )


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("node", sorted(OPERATORS))
def test_every_row_and_drop_equals_real_flink(real_runs, seed, node):
    _rows, events = real_runs[seed]
    assert any(e.get("sink") == OPERATORS[node] for e in events), "the real run wrote nothing to compare"
    assert _compare(real_runs, seed, node) == []


def test_the_seeds_reach_the_cases_that_matter(real_runs):
    """Late drops in OVER and the buffered deduplication, -U-less updates in keep-last, ties."""
    events = [e for _, evs in real_runs.values() for e in evs]
    late = {e["operator"] for e in events if e.get("metric") == "numLateRecordsDropped"}
    assert {"OverAggregate[3]", "OverAggregate[6]", "Deduplicate[15]"} <= late
    assert any(e.get("sink") == "last_click" and e["kind"] == "+U" for e in events)


def test_a_late_test_of_strictly_before_in_over_is_caught(real_runs, monkeypatch):
    from wmviz.core.sql_over import OverAggregate

    monkeypatch.setattr(OverAggregate, "o1_is_late", lambda self, ts: ts < self.watermark_ms)
    assert any(_compare(real_runs, seed, 3) for seed in SEEDS)


def test_a_deduplication_dropping_at_the_watermark_is_caught(real_runs, monkeypatch):
    from wmviz.core.sql_dedup import Deduplicate

    monkeypatch.setattr(Deduplicate, "d1_is_late", lambda self, ts: ts <= self.watermark_ms)
    assert any(_compare(real_runs, seed, 15) for seed in SEEDS)


def test_a_range_frame_run_as_rows_is_caught(real_runs, monkeypatch):
    from wmviz.core.sql_over import OverAggregate

    monkeypatch.setattr(OverAggregate, "o4_range", OverAggregate.o3_rows)
    assert any(_compare(real_runs, seed, 6) for seed in SEEDS)


def test_a_sort_that_drops_behind_the_watermark_is_caught(real_runs, monkeypatch):
    from wmviz.core.sql_sort import TemporalSort

    monkeypatch.setattr(
        TemporalSort,
        "sort1_is_late",
        lambda self, ts: self.last_emitted_ms is not None and ts <= self.watermark_ms,
    )
    assert any(_compare(real_runs, seed, 20) for seed in SEEDS)


def test_a_bounded_frame_that_tests_the_watermark_is_caught(real_runs, monkeypatch):
    """The bounded frames' late test is the last fired time, not the watermark."""
    from wmviz.core.sql_over_bounded import BoundedOver

    monkeypatch.setattr(BoundedOver, "o5_is_late", lambda self, key, ts: ts <= self.watermark_ms)
    assert any(_compare(real_runs, seed, node) for seed in SEEDS for node in (9, 12))


def test_a_rows_frame_one_row_short_is_caught(real_runs, monkeypatch):
    """ROWS 2 PRECEDING holds three rows; Flink's precedingOffset is n + 1."""
    from wmviz.core.sql_over_bounded import BoundedOver

    real = BoundedOver.__init__

    def short(self, config, timers):
        real(self, config, timers)
        self.preceding -= 1

    monkeypatch.setattr(BoundedOver, "__init__", short)
    assert any(_compare(real_runs, seed, 9) for seed in SEEDS)


def test_what_the_readers_do_not_model_is_refused_by_name():
    job = read_plan_file(DATA / "buffer_ops.plan.json")
    over = job.node("3")
    old = replace(over, spec={**over.spec, "unboundedOverVersion": 1})
    with pytest.raises(OperatorRefused, match=r"plan node 3\): table.exec.unbounded-over.version 1"):
        operator_of(old, job)
    dedup = job.node("15")
    minibatch = replace(
        dedup, spec={**dedup.spec, "configuration": {"table.exec.mini-batch.enabled": "true"}}
    )
    with pytest.raises(OperatorRefused, match="mini-batch deduplication"):
        operator_of(minibatch, job)


def test_a_range_cleanup_that_never_clears_is_caught(real_runs, monkeypatch):
    """SQL-O6: after a quiet spell the key's state is gone and an old row is taken again."""
    from wmviz.core.sql_over_bounded import BoundedOver

    cleared = []
    real = BoundedOver.o6_cleans

    def counting(self, key, ts):
        done = real(self, key, ts)
        cleared.append(done)
        return done

    monkeypatch.setattr(BoundedOver, "o6_cleans", counting)
    assert _compare(real_runs, SEEDS[0], 12) == [] and any(cleared), "the seeds reach no cleanup"
    monkeypatch.setattr(BoundedOver, "o6_cleans", lambda self, key, ts: False)
    assert any(_compare(real_runs, seed, 12) for seed in SEEDS)


def test_a_range_cleanup_that_keeps_the_last_fired_time_is_caught(real_runs, monkeypatch):
    """Flink 2.3.0's cleanup clears lastTriggeringTsState with the rows (its bytecode does; a
    RowTimeRangeBoundedPrecedingFunctionTest of another version expects it kept): the real run
    decides, and a model that keeps it must fail."""
    from wmviz.core.sql_over_bounded import BoundedOver

    def keeps_last_fired(self, key, ts):
        at = self.cleanup_at.get(key)
        if at is None or at > ts:
            return False
        self.held.pop(key, None)
        del self.cleanup_at[key]
        return True

    monkeypatch.setattr(BoundedOver, "o6_cleans", keeps_last_fired)
    assert any(_compare(real_runs, seed, 12) for seed in SEEDS)
