"""The SQL sweep against real Flink SQL 2.3.0: the trace `tests/data/sql/sql-over-sweep.jsonl`
run for real once per WATERMARK delay (one table per delay, one JVM for them all), and each of the
sweep's counters equal to the same counter read from Flink's output.

Flink's side: the late drops are its `numLateRecordsDropped` deltas; a row is emitted at the step
of the line that released it, and its delay is the newest event time up to that line minus the
row's `ts` (the sweep's event-time clock, as the trace has no `proc_ms`). Rows Flink emits at the
end of input (its final MAX watermark) are left out: a trace has no end of input, so the sweep
never sees that watermark. A planted bug (the delay not written into the expression) is caught.
"""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from tests.conftest import require_flink
from tests.support import paths
from wmviz.analysis.sweep import Vary, nearest_rank, run_sweep
from wmviz.sql import jars
from wmviz.trace.readers import read_trace

pytestmark = pytest.mark.flink

OVER = paths.DATA / "sql" / "sql-over-sweep.jsonl"
DELAYS_S = (0, 1, 2, 3)
BASE = datetime(2026, 1, 1)


def _text(ms: int) -> str:
    return f"2026-01-01 00:00:{ms // 1000:02d}.{ms % 1000:03d}"


def _script_and_rows(times: list[int]) -> tuple[str, list[dict]]:
    """One source table and one OVER sink per delay, each table fed the trace's rows in order."""
    statements, inserts, rows = [], [], []
    for i, delay in enumerate(DELAYS_S):
        statements.append(
            f"CREATE TABLE c{i} (user_id STRING, ts TIMESTAMP(3),"
            f" WATERMARK FOR ts AS ts - INTERVAL '{delay}' SECOND) WITH ('connector' = 'kafka',"
            f" 'topic' = 'c{i}', 'format' = 'json', 'scan.watermark.emit.strategy' = 'on-event');\n"
            f"CREATE TABLE o{i} (user_id STRING, ts TIMESTAMP(3), n BIGINT)"
            f" WITH ('connector' = 'kafka', 'topic' = 'o{i}', 'format' = 'json');"
        )
        inserts.append(
            f"INSERT INTO o{i} SELECT user_id, ts, COUNT(*) OVER (PARTITION BY user_id ORDER BY ts"
            f" RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM c{i};"
        )
        rows += [{"table": f"c{i}", "partition": 0, "row": {"user_id": "u1", "ts": _text(t)}} for t in times]
    return "\n".join(statements + inserts) + "\n", rows


@pytest.fixture(scope="module")
def flink_counts(tmp_path_factory) -> dict[int, dict]:
    """Per delay (ms): late_dropped, firings and the delay percentiles, read from real Flink."""
    require_flink("Flink {version}'s SQL runtime", "the SQL sweep differential", jars.sql_unavailable_reason)
    from tools.flink.sql.run import run_script

    times = [row.event_ms for row in read_trace(OVER).rows]
    assert all(isinstance(t, int) and t < 60_000 for t in times)
    script, rows = _script_and_rows(times)  # type: ignore[arg-type]
    where = tmp_path_factory.mktemp("sqlsweep")
    (where / "over.sql").write_text(script)
    (where / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    output = run_script(where / "over.sql", where / "rows.jsonl")
    per_table, counts = len(times), {}
    for i, delay in enumerate(DELAYS_S):
        first, last = i * per_table, (i + 1) * per_table
        drops = sum(
            o["delta"]
            for o in output
            if o.get("metric") == "numLateRecordsDropped" and first <= o["step"] < last
        )
        delays = []
        for o in output:
            if o.get("sink") == f"o{i}" and o["kind"] == "+I" and o["step"] < len(rows):
                assert first <= o["step"] < last, o
                clock = max(times[: o["step"] - first + 1])
                ts = datetime.fromisoformat(o["row"]["ts"]) - BASE
                delays.append(clock - ts // (ts.resolution * 1000))
        counts[delay * 1000] = dict(
            late_dropped=drops,
            firings=len(delays),
            firing_delay_p50_ms=nearest_rank(delays, 0.5),
            firing_delay_p95_ms=nearest_rank(delays, 0.95),
        )
    return counts


def _sweep() -> dict[int, dict]:
    delays = tuple(d * 1000 for d in DELAYS_S)
    table = run_sweep(read_trace(OVER), [Vary("generator.watermark_delay_ms", delays)])
    keys = ("late_dropped", "firings", "firing_delay_p50_ms", "firing_delay_p95_ms")
    return {row["generator.watermark_delay_ms"]: {k: row[k] for k in keys} for row in table}


def test_every_delay_counts_as_real_flink_sql(flink_counts):
    assert _sweep() == flink_counts
    assert [flink_counts[d * 1000]["late_dropped"] for d in DELAYS_S] == [3, 2, 1, 0]


def test_a_delay_not_written_into_the_expression_is_caught(flink_counts, monkeypatch):
    import wmviz.core.scenario as scenario

    monkeypatch.setattr(scenario, "with_watermark_delay", lambda expr, ms: expr)  # the planted bug
    assert _sweep() != flink_counts
