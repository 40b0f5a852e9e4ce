"""End-to-end pipeline benchmark: a generated trace → timeline directory, Spark vs local engine.

    python bench/pipeline.py --rows 10000000            # the issue's 10M-row run (Parquet and CSV)
    python bench/pipeline.py --rows 1000000 --formats parquet
    python bench/pipeline.py --rows 1000000 --formats parquet --engines local \
        --scenarios valve,operator,window --repeat 2      # the general path against valve-only

Scenarios (same instances, channels and row count): `valve` the valve-only path; `operator` the same
trace through a tumbling 60 s count window (the general path: every row becomes a TraceRow, runs
`InstancePipeline.run_row` and is recorded per step); `window` records only, their watermarks made
by a per-record generator, counted in tumbling 60 s windows (bench/gen_trace.py).

Each engine runs as `python -m wmviz simulate … --out DIR` in a subprocess while this script samples
/proc every 0.25 s for the peak resident memory of the driver (the Python process and, for Spark,
its JVM) and of the Spark Python workers. Prints a table and lines ready for docs/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.gen_trace import WINDOW_CONFIG, write_trace
from tools.proctree import descendants

PAGE = os.sysconf("SC_PAGE_SIZE")


def _rss(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/statm").read_text().split()[1]) * PAGE
    except OSError:
        return 0


def _role(pid: int, root: int) -> str:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
    except OSError:
        return "gone"
    if pid == root:
        return "driver_python"
    if "java" in cmd.split(" ")[0]:
        return "driver_jvm"
    if "pyspark" in cmd or "daemon" in cmd or "worker" in cmd:
        return "python_workers"
    return "other"


@dataclass
class MemoryWatch:
    """Peak summed RSS per role of a process tree, sampled from a thread."""

    root: int
    peaks: dict[str, int] = field(default_factory=dict)
    _stop: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self._stop.wait(0.25):
            totals: dict[str, int] = {}
            for pid in [self.root, *descendants(self.root)]:
                role = _role(pid, self.root)
                totals[role] = totals.get(role, 0) + _rss(pid)
            for role, total in totals.items():
                self.peaks[role] = max(self.peaks.get(role, 0), total)


@dataclass(frozen=True)
class Run:
    engine: str
    fmt: str
    rows: int
    seconds: float
    peaks: dict[str, int]
    scenario: str = "valve"
    timeline_rows: int = 0
    """Rows written over all timeline tables (meta.json): what the run produced."""

    @property
    def rate(self) -> float:
        return self.rows / self.seconds


def run_engine(
    engine: str, trace: Path, config: Path, out: Path, rows: int, fmt: str, scenario: str = "valve"
) -> Run:
    """One `python -m wmviz simulate` run, timed, with memory sampled."""
    cmd = [
        sys.executable,
        "-m",
        "wmviz",
        "simulate",
        str(trace),
        "--config",
        str(config),
        "--out",
        str(out),
        "--engine",
        engine,
    ]
    shutil.rmtree(out, ignore_errors=True)  # the benchmark's own scratch folder from an earlier run
    started = time.perf_counter()
    proc = subprocess.Popen(
        cmd, cwd=Path(__file__).resolve().parent.parent, stderr=subprocess.PIPE, text=True
    )
    watch = MemoryWatch(proc.pid)
    thread = threading.Thread(target=watch.run, daemon=True)
    thread.start()
    _, err = proc.communicate()
    seconds = time.perf_counter() - started
    watch._stop.set()
    thread.join()
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{err[-3000:]}")
    written = sum(json.loads((out / "meta.json").read_text())["rows"].values())
    return Run(engine, fmt, rows, seconds, dict(watch.peaks), scenario, written)


def mb(n: int) -> str:
    return f"{n / 2**20:,.0f} MB"


SCENARIOS = ("valve", "operator", "window")


def scenario_inputs(args: argparse.Namespace, scenario: str) -> dict[str, Path]:
    """The trace files and config of one scenario (`operator` reuses the valve trace)."""
    kind = "window" if scenario == "window" else "valve"
    paths = write_trace(args.work, args.rows, args.instances, args.channels, scenario=kind)
    if scenario == "operator":
        config = args.work / f"operator-{args.channels}.json"
        operator = WINDOW_CONFIG.split(", ", 1)[1]  # the window without the generator
        config.write_text(f'{{"name": "benchmark", "channels": {{"0": {args.channels}}}, {operator}}}\n')
        paths = {**paths, "config": config}
    return paths


def main() -> None:
    args, scenarios = _arguments()
    inputs = {scenario: scenario_inputs(args, scenario) for scenario in scenarios}
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    runs = [run for _ in range(args.repeat) for run in _round(args, scenarios, inputs)]
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    by: dict[tuple[str, str, str], Run] = {}
    for run in runs:  # the best of the rounds per engine, format and scenario
        best = by.get((run.engine, run.fmt, run.scenario))
        if best is None or run.seconds < best.seconds:
            by[(run.engine, run.fmt, run.scenario)] = run
    for fmt in args.formats.split(","):
        _summary(args, scenarios, fmt, by)


def _arguments() -> tuple[argparse.Namespace, list[str]]:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--channels", type=int, default=8)
    parser.add_argument("--formats", default="parquet,csv")
    parser.add_argument("--engines", default="spark,local")
    parser.add_argument("--scenarios", default="valve", help=f"comma-separated, of {', '.join(SCENARIOS)}")
    parser.add_argument("--work", type=Path, default=Path("/tmp/wmviz-bench"))
    parser.add_argument("--repeat", type=int, default=1, help="rounds, engines interleaved (best kept)")
    args = parser.parse_args()
    scenarios = args.scenarios.split(",")
    if unknown := set(scenarios) - set(SCENARIOS):
        parser.error(f"unknown scenario {', '.join(sorted(unknown))}")
    return args, scenarios


def _round(args: argparse.Namespace, scenarios: list[str], inputs: dict[str, dict[str, Path]]) -> list[Run]:
    """One run of every engine on every format and scenario, engines interleaved; each printed."""
    runs = []
    for fmt in args.formats.split(","):
        for scenario in scenarios:
            paths = inputs[scenario]
            for engine in args.engines.split(","):
                out = args.work / f"tl-{engine}-{fmt}"
                run = run_engine(engine, paths[fmt], paths["config"], out, args.rows, fmt, scenario)
                runs.append(run)
                peaks = ", ".join(f"{k} {mb(v)}" for k, v in sorted(run.peaks.items()) if k != "gone")
                print(
                    f"{engine:5} {fmt:7} {scenario:8} {run.seconds:7.1f} s  {run.rate:10,.0f} rows/s  "
                    f"timeline rows {run.timeline_rows:,} ({run.timeline_rows / run.seconds:,.0f}/s)  "
                    f"peak: {peaks}",
                    flush=True,
                )
    return runs


def _summary(
    args: argparse.Namespace, scenarios: list[str], fmt: str, by: dict[tuple[str, str, str], Run]
) -> None:
    """The benchmarks.md lines of one format: Spark against local, then each scenario against valve-only."""
    for scenario in scenarios:
        if ("spark", fmt, scenario) in by and ("local", fmt, scenario) in by:
            spark, local = by[("spark", fmt, scenario)], by[("local", fmt, scenario)]
            print(
                f"benchmarks.md: {args.rows:,} rows ({fmt}, {scenario}), {args.instances} instances x "
                f"{args.channels} channels: spark {spark.seconds:.1f} s, local {local.seconds:.1f} s, "
                f"spark/local = {spark.seconds / local.seconds:.2f}"
            )
    for engine in args.engines.split(","):
        base = by.get((engine, fmt, "valve"))
        for scenario in scenarios:
            run = by.get((engine, fmt, scenario))
            if base is None or run is None or scenario == "valve":
                continue
            print(
                f"benchmarks.md: {engine} {fmt}: {scenario} {run.seconds:.1f} s vs valve-only "
                f"{base.seconds:.1f} s "
                f"({run.seconds / base.seconds:.2f}x the time a row; timeline rows written "
                f"{run.timeline_rows / base.timeline_rows:.2f}x, time a timeline row "
                f"{(run.seconds / run.timeline_rows) / (base.seconds / base.timeline_rows):.2f}x)"
            )


if __name__ == "__main__":
    main()
