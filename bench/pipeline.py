"""End-to-end pipeline benchmark: a generated trace → timeline directory, Spark vs local engine.

    python bench/pipeline.py --rows 10000000            # the issue's 10M-row run (Parquet and CSV)
    python bench/pipeline.py --rows 1000000 --formats parquet

Each engine runs as `python -m wmviz simulate … --out DIR` in a subprocess while this script samples
/proc every 0.25 s for the peak resident memory of the driver (the Python process and, for Spark,
its JVM) and of the Spark Python workers. Prints a table and README-ready lines.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.gen_trace import write_trace

PAGE = os.sysconf("SC_PAGE_SIZE")


def _children(pid: int) -> list[int]:
    kids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                kids.append(int(entry))
    return kids


def _tree(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(_children(p))
    return out


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
            for pid in _tree(self.root):
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

    @property
    def rate(self) -> float:
        return self.rows / self.seconds


def run_engine(engine: str, trace: Path, config: Path, out: Path, rows: int, fmt: str) -> Run:
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
    return Run(engine, fmt, rows, seconds, dict(watch.peaks))


def mb(n: int) -> str:
    return f"{n / 2**20:,.0f} MB"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=10_000_000)
    parser.add_argument("--instances", type=int, default=1000)
    parser.add_argument("--channels", type=int, default=8)
    parser.add_argument("--formats", default="parquet,csv")
    parser.add_argument("--engines", default="spark,local")
    parser.add_argument("--work", type=Path, default=Path("/tmp/wmviz-bench"))
    parser.add_argument("--repeat", type=int, default=1, help="rounds, engines interleaved (best kept)")
    args = parser.parse_args()
    paths = write_trace(args.work, args.rows, args.instances, args.channels)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    runs = []
    for _ in range(args.repeat):
        for fmt in args.formats.split(","):
            for engine in args.engines.split(","):
                run = run_engine(
                    engine, paths[fmt], paths["config"], args.work / f"tl-{engine}-{fmt}", args.rows, fmt
                )
                runs.append(run)
                peaks = ", ".join(f"{k} {mb(v)}" for k, v in sorted(run.peaks.items()) if k != "gone")
                print(
                    f"{engine:5} {fmt:7} {run.seconds:7.1f} s  {run.rate:10,.0f} rows/s  peak: {peaks}",
                    flush=True,
                )
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    by: dict[tuple[str, str], Run] = {}
    for run in runs:  # the best of the rounds per engine and format
        best = by.get((run.engine, run.fmt))
        if best is None or run.seconds < best.seconds:
            by[(run.engine, run.fmt)] = run
    for fmt in args.formats.split(","):
        if ("spark", fmt) in by and ("local", fmt) in by:
            ratio = by[("spark", fmt)].seconds / by[("local", fmt)].seconds
            print(
                f"README: {args.rows:,} rows ({fmt}), {args.instances} instances x {args.channels} channels: "
                f"spark {by[('spark', fmt)].seconds:.1f} s, local {by[('local', fmt)].seconds:.1f} s, "
                f"spark/local = {ratio:.2f}"
            )


if __name__ == "__main__":
    main()
