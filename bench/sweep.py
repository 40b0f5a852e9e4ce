"""Sweep benchmark: a Kafka-like trace (records only, per-record generators, one-minute windows;
bench/gen_trace.py's `window` scenario) over 24 combinations, in this process and on Spark
`local[2]`, interleaved so both see the same machine load.

Prints a lone run's model time (one combination, rows already decoded), the in-process sweep's
time per combination against it, and the Spark sweep's time against the in-process one, with the
load average. `python -m bench.sweep --rows 1000000` is the issue's size; docs/sweep.md has figures.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from bench.gen_trace import write_trace
from wmviz.analysis.sweep import Vary, count_combination, instance_rows, run_sweep, sweep_configs
from wmviz.trace.readers import read_trace

VARIES = [
    Vary("generator.out_of_orderness_ms", (0, 500, 1000, 2000)),
    Vary("operator.allowed_lateness_ms", (0, 1000, 5000)),
    Vary("operator.size_ms", (30_000, 60_000)),
]  # 4 × 3 × 2 = 24 combinations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--instances", type=int, default=6)
    parser.add_argument("--channels", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--out", type=Path, default=Path("/tmp/wmviz-bench"))
    args = parser.parse_args()
    paths = write_trace(args.out, args.rows, args.instances, args.channels, scenario="window")
    trace = read_trace(paths["parquet"], paths["config"])
    shape = f"{args.instances} instances x {args.channels} channels"
    print(f"trace: {args.rows:,} rows, {shape}; 24 combinations")

    started = time.perf_counter()
    groups = instance_rows(trace)
    decode_s = time.perf_counter() - started
    config = sweep_configs(trace.config, VARIES)[0]
    started = time.perf_counter()
    count_combination(config, trace.valve_channels, groups)
    lone_s = time.perf_counter() - started
    print(f"decode once: {decode_s:.2f} s; a lone run's model time: {lone_s:.2f} s")

    from wmviz.spark.session import get_spark
    from wmviz.spark.sweep import spark_sweep_file

    spark = get_spark(args.master)
    spark.range(4).count()  # the JVM and its workers up before any timing
    quiet = lambda report: None  # noqa: E731
    for repeat in range(args.repeats):
        started = time.perf_counter()
        local = run_sweep(trace, VARIES)
        local_s = time.perf_counter() - started
        started = time.perf_counter()
        remote = spark_sweep_file(spark, paths["parquet"], paths["config"], VARIES, quiet)
        spark_s = time.perf_counter() - started
        assert remote == local, "the engines disagree"
        per = (local_s - decode_s) / 24
        print(
            f"run {repeat + 1}: in-process {local_s:.1f} s ({per:.2f} s per combination = "
            f"{per / lone_s:.2f} x a lone run); Spark {args.master} {spark_s:.1f} s "
            f"({spark_s / local_s:.2f} x in-process); load average {os.getloadavg()[0]:.1f}"
        )


if __name__ == "__main__":
    main()
