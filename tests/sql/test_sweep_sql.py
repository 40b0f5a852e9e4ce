"""A sweep over a SQL job's WATERMARK delay (docs/sweep.md, "SQL jobs"): the sweepable
`generator.watermark_delay_ms`, and SQL output rows counted as firings, on both engines."""

from __future__ import annotations

import csv
from dataclasses import replace

import pytest

from tests.support import paths
from wmviz.analysis.sweep import Vary, default_grid, run_sweep
from wmviz.analysis.sweep_count import Counts, _count_step, sql_output_time
from wmviz.cli import main
from wmviz.core.operator_log import Dropped
from wmviz.core.scenario import GeneratorConfig, Kind, TraceRow
from wmviz.core.sql_expr import CastTo, Column, Shifted
from wmviz.core.sql_rows import RowKind, SqlOutput
from wmviz.core.timetext import TimedText
from wmviz.core.types import MIN_MS
from wmviz.trace.config_write import replace_field
from wmviz.trace.errors import TraceValidationError
from wmviz.trace.readers import read_trace

SQL = paths.DATA / "sql"
OVER = SQL / "sql-over-sweep.jsonl"
"""A row-time OVER aggregation; rows at 1, 3, 2.5, 6, 4.5, 9, 6.5, 12 s (0.5, 1.5 and 2.5 s behind
the newest), one key, no proc_ms: delays are read on the event-time clock."""

DELAYS = (0, 1000, 2000, 3000)
EXPECTED = {
    # Worked by hand from the OVER rules (docs/rules.md): with delay d the watermark after a row is
    # the newest time − d; a row at or behind it on arrival is dropped; a kept row is released
    # when the watermark reaches it, its delay the newest time then minus its own.
    # d = 0: 2.5, 4.5, 6.5 dropped; 1, 3, 6, 9, 12 released on arrival (delay 0).
    0: dict(late_dropped=3, firings=5, firing_delay_p50_ms=0, firing_delay_p95_ms=0),
    # d = 1 s: 4.5, 6.5 dropped; released 1 at 3 s (2 s), 2.5 and 3 at 6 s (3.5 s, 3 s), 6 at 9 s,
    # 9 at 12 s (3 s each); 12 s waits. Delays 2, 3, 3, 3, 3.5 s.
    1000: dict(late_dropped=2, firings=5, firing_delay_p50_ms=3000, firing_delay_p95_ms=3500),
    # d = 2 s: 6.5 dropped; 1 at 3 s, 2.5 and 3 at 6 s, 4.5 and 6 at 9 s, 9 at 12 s.
    # Delays 2, 3.5, 3, 4.5, 3, 3 s.
    2000: dict(late_dropped=1, firings=6, firing_delay_p50_ms=3000, firing_delay_p95_ms=4500),
    # d = 3 s: nothing dropped; 1, 2.5, 3 at 6 s; 4.5, 6 at 9 s; 6.5, 9 at 12 s.
    # Delays 5, 3.5, 3, 4.5, 3, 5.5, 3 s.
    3000: dict(late_dropped=0, firings=7, firing_delay_p50_ms=3500, firing_delay_p95_ms=5500),
}


def test_a_longer_watermark_delay_drops_fewer_rows_and_releases_them_later():
    table = run_sweep(read_trace(OVER), [Vary("generator.watermark_delay_ms", DELAYS)])
    for row, delay in zip(table, DELAYS, strict=True):
        assert row["generator.watermark_delay_ms"] == delay
        assert {k: row[k] for k in EXPECTED[delay]} == EXPECTED[delay], delay
        assert row["records"] == 8 and row["delay_clock"] == "event_ms"
        assert row["late_share"] == EXPECTED[delay]["late_dropped"] / 8
    shares = [row["late_share"] for row in table]
    p95 = [row["firing_delay_p95_ms"] for row in table]
    assert shares == sorted(shares, reverse=True) and shares[0] > shares[-1]
    assert p95 == sorted(p95) and p95[0] < p95[-1]


def test_the_command_line_sweeps_the_sql_delay(tmp_path, capsys):
    out = tmp_path / "sweep.csv"
    argv = ["sweep", str(OVER), "--vary", "generator.watermark_delay_ms=0,1s,2s", "--out", str(out)]
    assert main(argv) == 0
    assert "3 combinations over 8 records" in capsys.readouterr().out
    rows = list(csv.DictReader(out.open()))
    assert [r["generator.watermark_delay_ms"] for r in rows] == ["0", "1000", "2000"]
    assert [int(r["late_dropped"]) for r in rows] == [3, 2, 1]
    assert [int(r["firing_delay_p95_ms"]) for r in rows] == [0, 3500, 4500]


def test_the_delay_rewrites_the_expression_and_only_of_the_form_col_minus_interval():
    config = read_trace(OVER).config
    assert replace_field(config, "generator.watermark_delay_ms", 5000).generator.expression == Shifted(
        Column("ts"), -5000
    )
    assert replace_field(config, "generator.watermark_delay_ms", 0).generator.expression == Column("ts")
    cast = replace_field(config, "generator.expression", {"cast": "TIMESTAMP_LTZ", "of": "ts"})
    with pytest.raises(
        TraceValidationError, match=r"generator\.watermark_delay_ms.*not of the form col - INTERVAL"
    ):
        replace_field(cast, "generator.watermark_delay_ms", 1000, "--vary")
    with pytest.raises(TraceValidationError, match=r"generator\.watermark_delay_ms: -1 must be >= 0"):
        replace_field(config, "generator.watermark_delay_ms", -1, "--vary")
    datastream = replace_field(config, "generator", {"out_of_orderness_ms": 1000})
    assert datastream.generator == GeneratorConfig(out_of_orderness_ms=1000)
    with pytest.raises(TraceValidationError, match="has no SQL WATERMARK expression"):
        replace_field(datastream, "generator.watermark_delay_ms", 1000, "--vary")


def test_each_input_has_its_own_delay():
    trace = read_trace(SQL / "sql-join-two-tables.jsonl")  # generator: ts − 5 s; generators.R: ts − 2 s
    config = replace_field(trace.config, "generators.R.watermark_delay_ms", 3000, "--vary")
    assert config.generators["R"].expression == Shifted(Column("ts"), -3000)
    assert config.generator is not None and config.generator.expression == Shifted(Column("ts"), -5000)
    lines = default_grid(trace)
    assert [line.split("=")[0] for line in lines] == [
        "generator.watermark_delay_ms",
        "generators.R.watermark_delay_ms",
    ]


def test_the_default_grid_of_a_sql_trace_varies_its_delay_on_the_trace_scale():
    # Rows arrive 0.5, 1.5 and 2.5 s behind: 0, the median, the 90th percentile and the largest.
    assert default_grid(read_trace(OVER)) == ["generator.watermark_delay_ms=0ms,1.500s,2.500s"]
    cast = replace_field(read_trace(OVER).config, "generator.expression", {"cast": "TIMESTAMP", "of": "ts"})
    assert isinstance(cast.generator.expression, CastTo)  # type: ignore[union-attr]
    assert not any(
        "watermark_delay_ms" in line for line in default_grid(replace(read_trace(OVER), config=cast))
    )


def test_a_sql_row_counts_from_its_window_end_else_from_its_newest_input_row():
    event_of_row = {2: 1000, 3: 4000, 5: 2500}
    window = SqlOutput(RowKind.INSERT, (("n", 2), ("window_end", 10_000)), (2, 3))
    released = SqlOutput(RowKind.INSERT, (("user_id", "u1"), ("n", 2)), (2, 3))
    assert sql_output_time(window, event_of_row) == 10_000
    assert sql_output_time(released, event_of_row) == 4000
    assert sql_output_time(SqlOutput(RowKind.INSERT, (), (9,)), event_of_row) is None
    withdrawn = SqlOutput(RowKind.UPDATE_BEFORE, (("user_id", "u1"),), (2,))
    replaced = SqlOutput(RowKind.UPDATE_AFTER, (("user_id", "u1"),), (5,))
    counts = Counts()
    log = [window, withdrawn, replaced, released]
    _count_step(log, counts, 12_000, MIN_MS, event_of_row)
    # -U withdraws a row already counted: three firings, not four.
    assert (counts.firings, counts.delays, counts.dropped) == (3, [2000, 9500, 8000], 0)


def test_a_late_sql_drop_counts_as_a_drop():
    counts = Counts()
    drop = Dropped(TraceRow(3, Kind.RECORD, event_ms=2500), TimedText.plain("late"), late=True)
    _count_step([drop], counts, 0, MIN_MS, {})
    assert counts.dropped == 1 and counts.firings == 0


@pytest.mark.spark
def test_spark_gives_the_same_table_on_the_sql_trace(spark):
    from wmviz.spark.sweep import spark_sweep_file, spark_sweep_trace

    trace = read_trace(OVER)
    varies = [Vary("generator.watermark_delay_ms", DELAYS)]
    expected = run_sweep(trace, varies)
    assert spark_sweep_trace(spark, trace, varies, progress=lambda r: None) == expected
    assert spark_sweep_file(spark, OVER, None, varies, lambda r: None) == expected
