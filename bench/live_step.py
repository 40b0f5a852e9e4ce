"""What one live step (one Structured Streaming micro-batch) costs, and where its time goes.

    python bench/live_step.py                          # every variant, 3 rounds of 16 steps
    python bench/live_step.py --variants now,raw-fs --rounds 5 --steps 20

Each variant is a live session (`wmviz.spark.live.LiveSession`) on the demo valve trace, started
anew in every round; the variants take turns within a round (their order rotates), so a load that
comes and goes falls on all of them. A step is timed as the page's worker times it (its input
file written → its output on the driver), with a pause between steps as between a person's
clicks (the previous batch has committed by then). Spark's own progress report splits each
batch: `latestOffset` (the source's read), `walCommit` (the offset log), `queryPlanning`,
`addBatch` (the job: the state store's load and commit, the Python function, the sink),
`commitOffsets` (the commit log, after the output reached the driver). Every variant's transcript
is compared with the pure engine's, so a faster variant is known to give the same steps.

The `floor` variant is the same source and sink with nothing in between (no state, no Python
function): what a micro-batch costs here before wmviz does anything. `realtime` tries Spark's
real-time trigger on that floor query and reports why it does not run, if it does not
(`realtime-unchecked` with its allowlist check off).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

# Runnable as `python bench/live_step.py` from the repo root without installing anything.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from wmviz.core.simulate import simulate
from wmviz.spark.live import LiveSession, demo_trace
from wmviz.spark.live_query import QUERY_CONF, ROCKSDB
from wmviz.spark.live_worker import SOURCE_NAME, LiveStepSource, step_file
from wmviz.timeline.transcript import transcript_record

CHECKSUMMED = {"fs.AbstractFileSystem.file.impl": "org.apache.hadoop.fs.local.LocalFs"}
"""Hadoop's default local file system for the checkpoint: every file with a .crc beside it (the
live query's setting before `QUERY_CONF` named the raw one)."""
LEAN = {
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
    "spark.sql.streaming.minBatchesToRetain": "2",
    "spark.sql.streaming.stateStore.stateSchemaCheck": "false",
    "spark.sql.streaming.stateStore.commitValidation.enabled": "false",
}
VARIANTS: dict[str, dict[str, Any]] = {
    "now": {},
    "checksummed": {"conf": CHECKSUMMED},
    "disk": {"shm": False},
    "lean": {"conf": LEAN},
    "wait-50ms": {"wait_ms": 50},
    "files-source": {"source": "files"},
    "rocksdb": {"conf": ROCKSDB},
    "transformWithState": {"stateful_api": "transformWithStateInPandas"},
    "floor": {"floor": True},
    "realtime": {"floor": True, "trigger": {"realTime": "5 seconds"}},
    "realtime-unchecked": {
        "floor": True,
        "trigger": {"realTime": "5 seconds"},
        "output_mode": "update",  # the mode refuses append
        "conf": {"spark.sql.streaming.realTimeMode.allowlistCheck": "false"},
    },
}
PHASES = ("latestOffset", "walCommit", "queryPlanning", "addBatch", "commitOffsets")


def work_dir(shm: bool) -> Path:
    base = "/dev/shm" if shm and os.access("/dev/shm", os.W_OK) else None
    return Path(tempfile.mkdtemp(prefix="wmviz-live-bench-", dir=base))


def run_live(spark, trace, options: dict[str, Any], pause_s: float) -> dict[str, Any]:
    """One live session of the variant: every step's latency, Spark's split, same as pure?"""
    options = dict(options)
    work = work_dir(options.pop("shm", True))
    expected = [transcript_record(r) for r in simulate(trace)]
    try:
        live = LiveSession.from_trace(spark, trace, work / "q", **options)
        got = []
        try:
            for row in trace.rows:
                got.append(live.step(row))
                time.sleep(pause_s)
            progress = live._stream.query.recentProgress
        finally:
            live.close()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {
        "latencies": live.latencies_ms,
        "progress": progress,
        "same": got == expected,
        "startup": live.startup_ms,
    }


def run_floor(spark, steps: int, options: dict[str, Any], pause_s: float) -> dict[str, Any]:
    """The same source and foreachBatch sink with nothing between: Spark's own per-batch cost."""
    work = work_dir(True)
    session = spark.newSession()
    for key, value in {**QUERY_CONF, **options.get("conf", {})}.items():
        session.conf.set(key, value)
    session.dataSource.register(LiveStepSource)
    arrived = threading.Event()
    writer = (
        session.readStream.format(SOURCE_NAME)
        .option("path", str(work / "input"))
        .option("wait_ms", "200")
        .load()
        .select("instance")
        .writeStream.foreachBatch(lambda batch, _id: batch.collect() and arrived.set())
        .option("checkpointLocation", str(work / "checkpoint"))
    )
    if "output_mode" in options:
        writer = writer.outputMode(options["output_mode"])
    if "trigger" in options:
        writer = writer.trigger(**options["trigger"])
    (work / "input").mkdir(parents=True)
    latencies = []
    try:
        query = writer.start()
        for order in range(steps):
            arrived.clear()
            started = time.perf_counter()
            target = step_file(work / "input", order)
            tmp = target.with_name(f".{target.name}.tmp")
            tmp.write_text(
                json.dumps({"row": order + 1, "kind": "watermark", "instance": "0", "channel": 0}) + "\n"
            )
            os.replace(tmp, target)
            while not arrived.wait(0.5):
                if query.exception() is not None or not query.isActive:
                    raise RuntimeError(str(query.exception()))
            latencies.append((time.perf_counter() - started) * 1000)
            time.sleep(pause_s)
        progress = query.recentProgress
        query.stop()
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"latencies": latencies, "progress": progress, "same": True, "startup": float("nan")}


def split(progress: list[Any], skip: int) -> dict[str, list[float]]:
    """Spark's per-batch durations (and the state store's commit and update times), by phase."""
    out: dict[str, list[float]] = {p: [] for p in (*PHASES, "state commit", "state updates", "trigger")}
    for p in progress:
        if p.numInputRows == 0 or p.batchId < skip:
            continue
        d = p.durationMs
        for phase in PHASES:
            out[phase].append(d.get(phase, 0))
        out["trigger"].append(d.get("triggerExecution", 0))
        ops = p.stateOperators
        out["state commit"].append(sum(o.commitTimeMs for o in ops))
        out["state updates"].append(sum(o.allUpdatesTimeMs for o in ops))
    return out


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--steps", type=int, default=16, help="steps per session (the first 2 are not counted)"
    )
    parser.add_argument(
        "--pause-ms", type=int, default=300, help="between a step's output and the next click"
    )
    args = parser.parse_args()
    names = args.variants.split(",")
    unknown = set(names) - set(VARIANTS)
    if unknown:
        parser.error(f"unknown variants: {', '.join(sorted(unknown))}")

    from wmviz.spark.session import get_spark

    spark = get_spark()
    trace = demo_trace(args.steps)
    load_before = os.getloadavg()[0]
    results: dict[str, dict[str, Any]] = {
        n: {"latencies": [], "split": {}, "same": True, "startup": []} for n in names
    }
    failed: dict[str, str] = {}
    skip = 2  # the first batches start the Python workers and load the state store
    run_live(spark, demo_trace(6), {}, 0)  # a warm-up, not counted: the JVM's first query is slower
    for round_ in range(args.rounds):
        order = names[round_ % len(names) :] + names[: round_ % len(names)]
        for name in order:
            if name in failed:
                continue
            options = dict(VARIANTS[name])
            pause = args.pause_ms / 1000
            try:
                if options.pop("floor", False):
                    got = run_floor(spark, args.steps, options, pause)
                else:
                    got = run_live(spark, trace, options, pause)
            except Exception as exc:  # a variant Spark refuses here: say why, keep the others
                failed[name] = f"{type(exc).__name__}: {' '.join(str(exc).split())[:600]}"
                continue
            result = results[name]
            result["latencies"] += got["latencies"][skip:]
            result["same"] &= got["same"]
            result["startup"].append(got["startup"])
            for phase, values in split(got["progress"], skip).items():
                result["split"].setdefault(phase, []).extend(values)
            print(
                f"round {round_ + 1} {name}: p50 {statistics.median(got['latencies'][skip:]):.0f} ms",
                flush=True,
            )
    load_after = os.getloadavg()[0]
    print(f"\nload average {load_before:.1f} -> {load_after:.1f}; {args.rounds} rounds x {args.steps} steps")
    print_table(names, results, failed)


def print_table(names: list[str], results: dict[str, dict[str, Any]], failed: dict[str, str]) -> None:
    """The variants' figures as a Markdown table (milliseconds; Spark's phases as medians)."""
    header = "| variant | step p50 / p90 | query start | same as pure | " + " | ".join(
        (*PHASES, "state commit", "state updates")
    )
    print(header + " |")
    print("|---" * (header.count("|")) + "|")
    for name in names:
        if name in failed:
            print(f"| {name} | did not run: {failed[name]} |")
            continue
        r = results[name]
        lat = r["latencies"]
        cells = [f"{statistics.median(r['split'][k]):.0f}" if r["split"].get(k) else "-" for k in PHASES]
        cells += [
            f"{statistics.median(r['split'][k]):.0f}" if r["split"].get(k) else "-"
            for k in ("state commit", "state updates")
        ]
        start = f"{statistics.median(r['startup']):,.0f} ms"
        row = f"| {name} | {p(lat, 0.5):.0f} / {p(lat, 0.9):.0f} ms | {start} | {r['same']} | "
        print(row + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
