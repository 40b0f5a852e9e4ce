"""Sweep benchmark: a Kafka-like trace (records only, per-record generators, one-minute windows;
bench/gen_trace.py's `window` scenario) over 24 combinations, in this process and on Spark
`local[2]`, interleaved so both see the same machine load.

Two ratios, each measured as A against B in one run, interleaved:
- per combination: for each combination, a lone run of the model (a fresh pipeline per instance fed
  every row, nothing counted) and the sweep's count of that combination, one after the other, in
  this process's CPU time (on a loaded shared machine wall time mostly measures the other jobs);
- the engines: `wmviz sweep`'s work in this process (read the file, then `run_sweep`) against
  `spark_sweep_file` on the same file, in wall time, each repeat running both.

`python -m bench.sweep --rows 1000000` is the issue's size; `--cluster-workers 2` runs the Spark side on
a standalone cluster of two 1-core workers started here (tools/spark_cluster.py) instead of
`--master`; `--skip-per-combination` leaves out the first ratio. docs/sweep.md has figures.
"""

from __future__ import annotations

import argparse
import os
import time
from contextlib import nullcontext
from pathlib import Path

from bench.gen_trace import write_trace
from wmviz.analysis.sweep import Vary, count_combination, instance_rows, run_sweep, sweep_configs
from wmviz.core.scenario import ScenarioConfig, Trace
from wmviz.timeline.runner import RunSpec, new_pipeline
from wmviz.trace.readers import read_trace

VARIES = [
    Vary("generator.out_of_orderness_ms", (0, 500, 1000, 2000)),
    Vary("operator.allowed_lateness_ms", (0, 1000, 5000)),
    Vary("operator.size_ms", (30_000, 60_000)),
]  # 4 × 3 × 2 = 24 combinations


def lone_run(config: ScenarioConfig, trace: Trace, groups: list) -> None:
    """The model alone for one config: every instance's rows through a fresh pipeline."""
    spec = RunSpec.of(config, config.profile, trace.valve_channels, keyframe_every=1)
    for instance in groups:
        run_row = new_pipeline(spec, instance.name, instance.rows, manual=instance.manual).run_row
        for row in instance.rows:
            run_row(row, explain=False)


def per_combination(trace: Trace) -> None:
    """Each combination's lone model run against the sweep's count of it, interleaved (CPU time)."""
    started = time.process_time()
    groups = instance_rows(trace)
    decode_s = time.process_time() - started
    started = time.process_time()
    configs = sweep_configs(trace.config, VARIES)
    configs_s = time.process_time() - started
    spent = {"lone": 0.0, "counted": 0.0}
    for i, config in enumerate(configs):
        runs = {
            "lone": lambda config=config: lone_run(config, trace, groups),
            "counted": lambda config=config: count_combination(config, trace.valve_channels, groups),
        }
        # Every other combination runs the sweep's count first, so neither side always goes first.
        for name in sorted(runs, reverse=i % 2 == 1):
            started = time.process_time()
            runs[name]()
            spent[name] += time.process_time() - started
    lone_s, counted_s = spent["lone"], spent["counted"]
    print(
        f"CPU: decode once {decode_s:.2f} s, 24 configs validated {configs_s:.3f} s; lone model runs "
        f"{lone_s:.1f} s, sweep counts {counted_s:.1f} s: {counted_s / lone_s:.3f} x a lone run per "
        f"combination; load average {os.getloadavg()[0]:.1f}"
    )


def engines(paths: dict, master: str, repeats: int) -> None:
    """In-process against Spark on `master`, in wall time, each repeat running both."""
    from wmviz.spark.session import get_spark
    from wmviz.spark.sweep import spark_sweep_file

    spark = get_spark(master)
    spark.range(4).count()  # the JVM and its workers up before any timing
    quiet = lambda report: None  # noqa: E731
    for repeat in range(repeats):
        started = time.perf_counter()
        local = run_sweep(read_trace(paths["parquet"], paths["config"]), VARIES)
        local_s = time.perf_counter() - started
        started = time.perf_counter()
        remote = spark_sweep_file(spark, paths["parquet"], paths["config"], VARIES, quiet)
        spark_s = time.perf_counter() - started
        assert remote == local, "the engines disagree"
        print(
            f"run {repeat + 1}: in-process {local_s:.1f} s; Spark {master} {spark_s:.1f} s "
            f"({spark_s / local_s:.2f} x in-process); load average {os.getloadavg()[0]:.1f}"
        )
    spark.stop()  # before a cluster started for the run goes, so its executors are not lost mid-job


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--instances", type=int, default=6)
    parser.add_argument("--channels", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--master", default="local[2]")
    parser.add_argument("--cluster-workers", type=int, default=0, help="N 1-core workers")
    parser.add_argument("--skip-per-combination", action="store_true")
    parser.add_argument("--out", type=Path, default=Path("/tmp/wmviz-bench"))
    args = parser.parse_args()
    paths = write_trace(args.out, args.rows, args.instances, args.channels, scenario="window")
    shape = f"{args.instances} instances x {args.channels} channels"
    print(f"trace: {args.rows:,} rows, {shape}; 24 combinations; load average {os.getloadavg()[0]:.1f}")
    if not args.skip_per_combination:
        per_combination(read_trace(paths["parquet"], paths["config"]))
    if args.cluster_workers:
        from tools.spark_cluster import standalone_cluster

        cluster = standalone_cluster(args.out / "cluster", workers=args.cluster_workers, memory="2g")
    else:
        cluster = nullcontext(args.master)
    with cluster as master:
        engines(paths, master, args.repeats)


if __name__ == "__main__":
    main()
