"""`wmviz sweep` on the command line, and the same table on Spark as in this process."""

from __future__ import annotations

import json

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest

from tests.support import paths
from wmviz.analysis.sweep import Vary, run_sweep
from wmviz.cli import main
from wmviz.store.incidents import built_in_incidents

SAMPLES = paths.REPO / "sample_data"
LATE = SAMPLES / "resumed-partition-records-late.jsonl"
VARY = ["--vary", "generator.out_of_orderness_ms=0,1s,5s", "--vary", "operator.allowed_lateness_ms=0,5s"]


def test_the_table_has_a_row_per_combination_in_grid_order(tmp_path, capsys):
    out = tmp_path / "t.json"
    assert main(["sweep", str(LATE), *VARY, "--out", str(out)]) == 0
    table = json.loads(out.read_text())
    assert [(r["generator.out_of_orderness_ms"], r["operator.allowed_lateness_ms"]) for r in table] == [
        (0, 0), (0, 5000), (1000, 0), (1000, 5000), (5000, 0), (5000, 5000),
    ]  # fmt: skip
    assert list(table[0])[2:] == [
        "records", "late_dropped", "late_share", "firings", "firing_delay_p50_ms", "firing_delay_p95_ms",
        "output_stall_ms", "delay_clock",
    ]  # fmt: skip
    err = capsys.readouterr().err
    assert "[local] sweep: 1/6 combinations" in err and "6/6 combinations (100%)" in err
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]  # nothing left beside it


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_csv_and_parquet_hold_the_same_table(tmp_path, suffix):
    out = tmp_path / f"t{suffix}"
    assert main(["sweep", str(LATE), *VARY, "--out", str(out)]) == 0
    read = pq.read_table(out) if suffix == ".parquet" else pacsv.read_csv(out)
    expected = run_sweep(
        built_in_incidents()["resumed-partition-records-late"].trace(),
        [
            Vary("generator.out_of_orderness_ms", (0, 1000, 5000)),
            Vary("operator.allowed_lateness_ms", (0, 5000)),
        ],
    )
    assert read.to_pylist() == expected


def test_the_target_names_the_fastest_combination_that_meets_it(tmp_path, capsys):
    out = tmp_path / "t.csv"
    assert main(["sweep", str(LATE), *VARY, "--out", str(out), "--target-late-share", "0.05"]) == 0
    line = capsys.readouterr().out.splitlines()[-1]
    assert line.startswith("lowest latency with late share ≤ 0.05: generator.out_of_orderness_ms=0, ")
    assert "operator.allowed_lateness_ms=5000 (late share 0, firing delay p95" in line
    assert main(["sweep", str(LATE), "--vary", "operator.size_ms=10s", "--out", str(out),
                 "--target-late-share", "0.001"]) == 0  # fmt: skip
    assert (
        capsys.readouterr()
        .out.splitlines()[-1]
        .startswith("no combination keeps the late share at or below 0.001; the lowest is 0.07692")
    )


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--vary", "generator.out_of_orderness_ms=0,soon"],
            'field generator.out_of_orderness_ms: "soon" is not',
        ),
        (["--vary", "operator.lower_ms=1"], "field operator.lower_ms: not used by operator type window"),
        (["--vary", "generator.out_of_orderness_ms"], "expected FIELD=V1,V2"),
        (["--vary", "a=1", "--vary", "a=2"], "--vary a is given twice"),
        (["--vary", "a=1", "--target-late-share", "2"], "expected a share between 0 and 1"),
    ],
)
def test_bad_fields_and_values_exit_2_naming_them(tmp_path, capsys, argv, message):
    out = tmp_path / "t.csv"
    assert main(["sweep", str(LATE), *argv, "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_the_combination_budget_is_a_clear_error(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("WMVIZ_MAX_SWEEP_COMBINATIONS", "5")
    assert main(["sweep", str(LATE), *VARY, "--out", str(tmp_path / "t.csv")]) == 2
    assert "3 × 2 = 6 combinations are more than a sweep may run: 5 (WMVIZ_MAX_SWEEP_COMBINATIONS)" in (
        capsys.readouterr().err
    )


def test_a_bad_destination_is_named(tmp_path, capsys):
    assert main(["sweep", str(LATE), *VARY, "--out", str(tmp_path / "t.txt")]) == 2
    assert "expected a .csv, .parquet or .json file" in capsys.readouterr().err
    assert main(["sweep", str(LATE), *VARY, "--out", str(tmp_path / "nowhere" / "t.csv")]) == 2
    assert "no such folder" in capsys.readouterr().err


def _operator_incidents():
    return [s for s, i in built_in_incidents().items() if i.trace().config.operator.type_name != "none"]


@pytest.mark.spark
def test_spark_gives_the_same_table_as_in_process_on_every_built_in_incident(spark):
    from wmviz.spark.sweep import spark_sweep_file, spark_sweep_trace

    for slug in _operator_incidents():
        incident = built_in_incidents()[slug]
        trace = incident.trace()
        if trace.config.generator is not None and trace.config.generator.style.startswith("sql"):
            varies = [Vary("generator.watermark_delay_ms", (0, 2000))]  # a SQL WATERMARK's knob
        elif trace.config.generator is not None:
            varies = [
                Vary("generator.out_of_orderness_ms", (0, 2000, 5000)),
                Vary("generator.idle_timeout_ms", (None, 3000)),
            ]
        else:
            varies = [Vary("operator.min_cleanup_interval_ms", (0, 1000))]
        expected = run_sweep(trace, varies)
        assert spark_sweep_trace(spark, trace, varies, progress=lambda r: None) == expected, slug
        from_file = spark_sweep_file(spark, incident.trace_path, incident.config_path, varies, lambda r: None)
        assert from_file == expected, slug


@pytest.mark.spark
def test_spark_sweeps_the_kafka_sample_from_the_command_line(spark, tmp_path):
    data = paths.DATA
    argv = ["sweep", str(data / "kafka-rebalance.csv"), "--config", str(data / "kafka-rebalance.json"),
            "--vary", "operator.allowed_lateness_ms=0,30s,2m",
            "--vary", "operator.size_ms=30s,1m"]  # fmt: skip
    assert main([*argv, "--out", str(tmp_path / "local.json")]) == 0
    assert (
        main([*argv, "--engine", "spark", "--master", "local[2]", "--out", str(tmp_path / "spark.json")]) == 0
    )
    local = json.loads((tmp_path / "local.json").read_text())
    assert json.loads((tmp_path / "spark.json").read_text()) == local
    assert local[0]["late_dropped"] > local[4]["late_dropped"] >= 0


@pytest.mark.spark
def test_spark_counts_every_chunk_of_a_file_read_in_several(spark, monkeypatch):
    """A file read in several chunks reaches a task as several blobs per bucket (one per chunk):
    all of them are counted, so the table is still the in-process one."""
    import wmviz.spark.run as spark_run
    from wmviz.spark.sweep import spark_sweep_file
    from wmviz.trace.readers import read_trace

    planned = []

    def small_chunks(*args, **kwargs):
        plan = real_plan(*args, **{**kwargs, "chunk_bytes": 4096})
        planned.append(len(plan.chunks))
        return plan

    real_plan = spark_run.plan_trace
    monkeypatch.setattr(spark_run, "plan_trace", small_chunks)
    data = paths.DATA
    trace, config = data / "kafka-rebalance.csv", data / "kafka-rebalance.json"
    varies = [
        Vary("operator.allowed_lateness_ms", (0, 2 * 60_000)),
        Vary("operator.size_ms", (30_000, 60_000)),
    ]
    expected = run_sweep(read_trace(trace, config), varies)
    assert spark_sweep_file(spark, trace, config, varies, lambda r: None) == expected
    assert planned and planned[0] > 2
