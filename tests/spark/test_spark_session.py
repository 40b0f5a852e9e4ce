"""The Spark session's settings (`wmviz.spark.session`): the driver JVM options and the Arrow batch
cap that keep the driver's memory flat as a trace grows, each overridable from the environment."""

from __future__ import annotations

import pyarrow as pa
import pytest

from wmviz.spark.session import ARROW_BATCH_BYTES, DRIVER_JAVA_OPTIONS, session_config


def test_the_defaults_bound_the_arrow_batches_and_set_the_driver_jvm_options():
    config = session_config({})
    assert config["spark.sql.execution.arrow.maxBytesPerBatch"] == ARROW_BATCH_BYTES
    assert config["spark.driver.extraJavaOptions"] == DRIVER_JAVA_OPTIONS
    assert "-XX:G1HeapRegionSize=4m" in DRIVER_JAVA_OPTIONS.split()
    assert config["spark.driver.memory"] == "2g"


def test_each_setting_has_its_environment_variable():
    config = session_config(
        {
            "WMVIZ_ARROW_BATCH_BYTES": "64m",
            "WMVIZ_DRIVER_JAVA_OPTIONS": " -XX:+UseSerialGC ",
            "WMVIZ_DRIVER_MEMORY": "1g",
            "WMVIZ_SHUFFLE_PARTITIONS": "8",
        }
    )
    assert config["spark.sql.execution.arrow.maxBytesPerBatch"] == "64m"
    assert config["spark.driver.extraJavaOptions"] == "-XX:+UseSerialGC"
    assert config["spark.driver.memory"] == "1g"
    assert config["spark.sql.shuffle.partitions"] == "8"


def test_empty_java_options_set_none():
    assert "spark.driver.extraJavaOptions" not in session_config({"WMVIZ_DRIVER_JAVA_OPTIONS": " "})


@pytest.mark.spark
def test_the_driver_jvm_runs_with_the_options(spark):
    jvm = spark.sparkContext._jvm
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())
    for option in DRIVER_JAVA_OPTIONS.split():
        assert option in arguments
    assert int(spark.conf.get("spark.sql.execution.arrow.maxBytesPerBatch").rstrip("m")) > 0


@pytest.mark.spark
def test_a_task_input_over_the_batch_cap_reaches_its_worker_whole(spark):
    """With a small cap a task gets its bucket blobs over several Arrow batches; `from_buckets`
    still joins every row (as the instance job needs whole instances)."""
    from wmviz.spark.engine import ROWS_SCHEMA, from_buckets, table_frame
    from wmviz.trace.rowtable import ROW_SCHEMA

    n = 60_000
    rows = pa.table(
        {
            f.name: pa.array([f"i{k % 50}" for k in range(n)], f.type)
            if f.name == "instance"
            else pa.nulls(n, f.type)
            for f in ROW_SCHEMA
        }
    )
    frame = table_frame(spark, rows, 8).repartition(1)

    def count(batches):
        batches = list(batches)
        table = from_buckets(iter(batches))
        assert table.schema == ROWS_SCHEMA
        yield pa.record_batch(
            [pa.array([len(batches)]), pa.array([table.num_rows])], names=["batches", "rows"]
        )

    key = "spark.sql.execution.arrow.maxBytesPerBatch"
    before = spark.conf.get(key)
    try:
        spark.conf.set(key, "64k")
        (got,) = frame.mapInArrow(count, "batches long, rows long").collect()
    finally:
        spark.conf.set(key, before)
    assert got["rows"] == n
    assert got["batches"] > 1
