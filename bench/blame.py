"""Blame benchmark: a generated job recording of a given shape, `blame` timed in two trees.

The job (`write_job`) is a chain of `--vertices` vertices of parallelism `--parallelism`: a source
whose subtasks each read `--splits` splits (FLIP-513 split metrics: a watermark and the
accumulated idle time; none with `--splits 0`, then each subtask reports its output and
`sourceIdleTime`), then one vertex after another over HASH edges (all to all), each subtask
reporting its output watermark. `--samples` samples, 10 s apart; event time runs 5 s behind the
clock, each subtask and split a little apart. Split 0 of source subtask 0 stops half way and is
not idle, so it holds the whole job from there (blame walks the whole chain back to it, and the
run of samples it held for). `--idle-source` makes every source subtask idle instead (its
`sourceIdleTime` past the job's idleness timeout), the case that asked each downstream subtask
about every upstream one.

Each measured run is a fresh `python` in a tree (`--base`, default /work/main: today's main, and
this checkout), which reads the recording and then blames it, timing the two apart in CPU time
(`time.process_time`) and reporting its peak resident memory (`ru_maxrss`); the two trees
alternate, so both see the same machine load, and the ratio is of the same run. A run past
`--timeout` is reported as that. `--profile` prints this tree's blame under cProfile.

    python -m bench.blame --vertices 12 --parallelism 128 --samples 360 --repeat 3

docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
T0 = 1_795_633_000_000
STEP_MS = 10_000

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
from wmviz.record.job import read_recording
from wmviz.analysis.blame import Walker
started = time.process_time()
rec = read_recording(Path(sys.argv[1]))
read_s = time.process_time() - started
started = time.process_time()
blame = Walker(rec).blame(None, None)
blame_s = time.process_time() - started
print(json.dumps({"read_s": read_s, "blame_s": blame_s, "hops": len(blame.chain),
                  "ending": blame.ending,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def write_job(path: Path, vertices: int, parallelism: int, splits: int, samples: int, idle: bool) -> None:
    """The recording, written as wmviz-job/1 JSON (one series at a time, to keep this small)."""
    stall = samples // 2
    series: list[dict] = []

    def put(vid: str, sub: int, metric: str, split: str | None, values: list[int]) -> None:
        points = [[T0 + i * STEP_MS, v] for i, v in enumerate(values)]
        series.append({"vertex": vid, "subtask": sub, "metric": metric, "split": split, "points": points})

    def clock(i: int, lag: int) -> int:
        return T0 + i * STEP_MS - 5_000 - lag

    outs: list[list[int]] = []
    for sub in range(parallelism):
        if splits:
            mine = []
            for k in range(splits):
                held = sub == 0 and k == 0
                wm = [clock(min(i, stall) if held else i, 7 * sub + 3 * k) for i in range(samples)]
                put("v0", sub, "currentWatermark", f"s{sub}-{k}", wm)
                put("v0", sub, "accumulatedIdleTimeMs", f"s{sub}-{k}", [0] * samples)
                mine.append(wm)
            out = [min(w[i] for w in mine) for i in range(samples)]
        else:
            out = [clock(min(i, stall) if sub == 0 else i, 7 * sub) for i in range(samples)]
            idle_ms = [60_000 + i * STEP_MS if idle else 0 for i in range(samples)]
            put("v0", sub, "sourceIdleTime", None, idle_ms)
        put("v0", sub, "currentOutputWatermark", None, out)
        outs.append(out)
    below = [min(o[i] for o in outs) for i in range(samples)]
    for v in range(1, vertices):
        for sub in range(parallelism):
            put(f"v{v}", sub, "currentOutputWatermark", None, below)
    body = {
        "format": "wmviz-job/1",
        "job": "bench",
        "source": "bench/blame.py",
        "idleness_ms": 30_000 if idle else None,
        "watermark_interval_ms": 200,
        "notes": [],
        "vertices": [
            {"id": f"v{v}", "name": "Source: s" if v == 0 else f"op {v}", "parallelism": parallelism}
            for v in range(vertices)
        ],
        "edges": [
            {"source": f"v{v - 1}", "target": f"v{v}", "ship_strategy": "HASH", "input": 1}
            for v in range(1, vertices)
        ],
        "series": series,
    }
    path.write_text(json.dumps(body, separators=(",", ":")))


def run(tree: Path, recording: Path, timeout: float) -> dict:
    """One fresh interpreter in `tree`: read, then blame; its figures (or the timeout)."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, str(recording)],
            cwd=tree, env=env, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}
    return {**json.loads(proc.stdout), "wall_s": time.perf_counter() - started}


def profile(recording: Path) -> None:
    """This tree's blame under cProfile: where its time goes (read first, not profiled)."""
    import cProfile
    import pstats

    from wmviz.analysis.blame import Walker
    from wmviz.record.job import read_recording

    rec = read_recording(recording)
    prof = cProfile.Profile()
    prof.enable()
    Walker(rec).blame(None, None)
    prof.disable()
    stats = pstats.Stats(prof)
    total = stats.total_tt  # type: ignore[attr-defined]
    print(f"blame under cProfile: {total:.3f} s")
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:12]  # type: ignore[attr-defined]
    for (file, line, func), (_, calls, tottime, _cum, _) in rows:
        print(f"  {tottime / total:6.1%}  {calls:>10,}  {Path(file).name}:{line} {func}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--vertices", type=int, default=12)
    p.add_argument("--parallelism", type=int, default=128)
    p.add_argument("--splits", type=int, default=0)
    p.add_argument("--samples", type=int, default=360)
    p.add_argument("--idle-source", action="store_true")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--timeout", type=float, default=300.0)
    p.add_argument("--base", type=Path, default=Path("/work/main"), help="the tree to compare with")
    p.add_argument("--out", type=Path, default=Path("/tmp/wmviz-bench-blame.json"))
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()
    if args.idle_source and args.splits:
        p.error("--idle-source is for a source without split metrics (--splits 0)")
    write_job(args.out, args.vertices, args.parallelism, args.splits, args.samples, args.idle_source)
    print(
        f"{args.vertices} vertices × p{args.parallelism} × {args.splits} splits × {args.samples} samples"
        f"{' (idle source)' if args.idle_source else ''}: {args.out.stat().st_size / 2**20:.1f} MB; "
        f"load average {os.getloadavg()[0]:.1f}"
    )
    trees = {"base": args.base, "this": HERE}
    for i in range(args.repeat):
        for label, tree in trees.items():
            print(f"  {i + 1} {label}: {json.dumps(run(tree, args.out, args.timeout))}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f}")
    if args.profile:
        profile(args.out)


if __name__ == "__main__":
    main()
