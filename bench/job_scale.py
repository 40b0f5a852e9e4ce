"""Whole-job recordings at scale: JSON against columnar, open, blame, page and peak memory.

Generates a job recording of a given shape (`write_job_lines`: a source of `--parallelism`
subtasks with `--splits` FLIP-513 splits each, then a chain of vertices over HASH edges,
`--samples` samples 10 s apart; split 0 of subtask 0 stalls half way and holds the job), with the
series Flink reports for it: every subtask's `currentOutputWatermark`, every non-source subtask's
`currentInputWatermark`, every source subtask's `sourceIdleTime` and, per split, its
`currentWatermark` and `accumulatedIdleTimeMs`. It is written as appended JSON lines, a sample at
a time (`wmviz.record.job_append.JobWriter`, what `wmviz record` writes), so neither the generator
nor the import (`wmviz convert`, which streams lines: `wmviz.record.job_stream`) holds the whole
recording; `--document` writes `bench/blame.py`'s leaner single JSON document instead (the
earlier figures; source output and split series only). Then, in one interleaved run (JSON,
columnar, JSON, columnar, ...; with `--baseline TREE` each measurement is taken in that tree too,
right after this one's), a fresh interpreter per measurement:

- open: `read_recording` (the JSON decode and series build, or the columnar header and mapping);
- blame: `Walker(rec).blame(None, at)` at three moments (the first, the middle and the last
  sample: the first of them pays the walker's set-up, the sample times, reported apart);
- page: what the job page builds on its first draw, without Streamlit: the recording opened and
  walked, `graph_at` at the last sample, the Plotly figure (as JSON), the chain's rows and folded
  lines, every vertex's group and the shown one's, and the freshness budget at that moment and
  over 60 moments (`wmviz.ui.lag_view`'s MOMENTS); `graph` is the part before the budget;
- peak: the child's peak resident memory (`ru_maxrss`, mapped pages it touched included).

Times are wall clock in the child (`time.perf_counter`) and CPU (`time.process_time`): the machine
is shared, so CPU time is the steadier figure. `--profile` prints, for the columnar form, the
fractions of cProfile's total per function for open + blame + page.

    nice -n 10 python -m bench.job_scale --vertices 12 --parallelism 128 --samples 360 --repeat 2 --profile
    nice -n 10 python -m bench.job_scale --vertices 100 --parallelism 10 --samples 360 --forms columnar

docs/benchmarks.md has the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

from bench.blame import STEP_MS, T0, write_job
from wmviz.record.job import Edge, JobRecording, Vertex
from wmviz.record.job_append import JobWriter

HERE = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, resource, sys, time
from pathlib import Path
clock = lambda: (time.perf_counter(), time.process_time())
def since(start):
    now = clock()
    return {"wall_s": round(now[0] - start[0], 3), "cpu_s": round(now[1] - start[1], 3)}
started = clock()
from wmviz.record.job import read_recording
from wmviz.analysis.blame import Walker
from wmviz.analysis.job_moment import graph_at
from wmviz.analysis.lag_budget import LagBudget
from wmviz.view.jobgraph import chain_rows, job_graph_figure
from wmviz.view.jobgraph_groups import chain_lines, group_line, group_rows
from wmviz.view.timefmt import TimeFormat
out = {"imports": since(started)}
path = Path(sys.argv[1])
start = clock()
rec = read_recording(path)
out["open"] = since(start)
start = clock()
walker = Walker(rec)
out["walker"] = since(start)
times = walker.times
ats = [times[0], times[len(times) // 2], times[-1]]
out["blame"] = []
for at in ats:
    start = clock()
    blame = walker.blame(None, at)
    out["blame"].append({**since(start), "hops": len(blame.chain)})
start = clock()
rec = read_recording(path)
walker = Walker(rec)
graph = graph_at(walker, None, None)
t = TimeFormat(origin_ms=walker.times[0])
json.dumps(job_graph_figure(graph, t, None))
chain_rows(graph, t)
chain_lines(graph, t)
group_rows(graph, t)
if graph.chain:
    group_line(next(v for v in graph.vertices if v.id == graph.chain[0].vertex), t)
out["graph"] = since(start)
if graph.chain:
    budget = LagBudget(rec, walker)
    budget.at(walker.vertex(graph.chain[0].vertex), None)
    budget.over_time(walker.vertex(graph.chain[0].vertex), most=60)
out["page"] = since(start)
out["ending"] = graph.ending
out["peak_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
print(json.dumps(out))
"""


def write_job_lines(path: Path, vertices: int, parallelism: int, splits: int, samples: int) -> int:
    """The recording as appended lines, one sample at a time (see the module); its point count.
    The watermarks are `bench/blame.py`'s: each source subtask 7 ms × its number behind, split k
    3 ms × k more, split 0 of subtask 0 (or subtask 0 without splits) standing still from half way."""
    plan = tuple(Vertex(f"v{v}", "Source: s" if v == 0 else f"op {v}", parallelism) for v in range(vertices))
    edges = tuple(Edge(f"v{v - 1}", f"v{v}", "HASH") for v in range(1, vertices))
    writer = JobWriter(JobRecording("bench", plan, edges, source="bench/job_scale.py"), path)
    stall, points = samples // 2, 0
    try:
        for i in range(samples):
            t = T0 + i * STEP_MS
            sample: list[tuple[tuple[str, int, str, str | None], int]] = []
            outs = []
            for sub in range(parallelism):
                held = min(i, stall) if sub == 0 else i
                marks = [
                    T0 + (held if k == 0 else i) * STEP_MS - 5_000 - 7 * sub - 3 * k for k in range(splits)
                ]
                for k, mark in enumerate(marks):
                    sample.append((("v0", sub, "currentWatermark", f"s{sub}-{k}"), mark))
                    sample.append((("v0", sub, "accumulatedIdleTimeMs", f"s{sub}-{k}"), 0))
                out = min(marks) if marks else T0 + held * STEP_MS - 5_000 - 7 * sub
                sample.append((("v0", sub, "sourceIdleTime", None), 0))
                sample.append((("v0", sub, "currentOutputWatermark", None), out))
                outs.append(out)
            below = min(outs)
            for v in range(1, vertices):
                for sub in range(parallelism):
                    sample.append(((f"v{v}", sub, "currentInputWatermark", None), below))
                    sample.append(((f"v{v}", sub, "currentOutputWatermark", None), below))
            writer.sample(t, sample)
            points += len(sample)
    finally:
        writer.close()
    return points


def run(recording: Path, timeout: float, tree: Path = HERE) -> dict:
    """One fresh interpreter in `tree`: open, blame at three moments, the page; its figures or why not."""
    env = {**os.environ, "PYTHONPATH": str(tree)}
    try:
        proc = subprocess.run(
            [sys.executable, "-c", CHILD, str(recording)],
            cwd=tree, env=env, capture_output=True, text=True, timeout=timeout,
        )  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"timeout": timeout}
    if proc.returncode != 0:
        return {"error": proc.stderr.strip().splitlines()[-1] if proc.stderr.strip() else proc.returncode}
    return json.loads(proc.stdout)


def convert(source: Path, out: Path) -> dict:
    """`wmviz convert` in a child: its wall time and peak memory (the columnar writer's cost)."""
    started = time.perf_counter()
    proc = subprocess.run(
        ["/usr/bin/time", "-f", "%M", sys.executable, "-m", "wmviz", "convert", str(source), str(out)],
        cwd=HERE, capture_output=True, text=True,
    )  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"convert failed: {proc.stderr.strip()}")
    peak_kb = int(proc.stderr.strip().splitlines()[-1])
    return {"wall_s": round(time.perf_counter() - started, 2), "peak_mb": peak_kb // 1024}


def line(form: str, got: dict) -> str:
    """One measurement in a row of text."""
    if "open" not in got:
        return f"{form:8} {json.dumps(got)}"
    blames = " / ".join(f"{b['cpu_s']:.2f}" for b in got["blame"])
    return (
        f"{form:8} open {got['open']['cpu_s']:6.2f} s cpu ({got['open']['wall_s']:.2f} wall)  "
        f"walker {got['walker']['cpu_s']:5.2f}  blame {blames}  graph {got['graph']['cpu_s']:5.2f} "
        f"({got['graph']['wall_s']:.2f} wall)  page {got['page']['cpu_s']:6.2f} "
        f"({got['page']['wall_s']:.2f} wall)  peak {got['peak_mb']} MB  imports {got['imports']['cpu_s']:.2f}"
    )


def profile(recording: Path) -> None:
    """Open + blame (three moments) + the page (graph, budget), under cProfile: fractions of the total."""
    import cProfile
    import pstats

    from wmviz.analysis.blame import Walker
    from wmviz.analysis.job_moment import graph_at
    from wmviz.analysis.lag_budget import LagBudget
    from wmviz.record.job import read_recording

    prof = cProfile.Profile()
    prof.enable()
    rec = read_recording(recording)
    walker = Walker(rec)
    for at in (walker.times[0], walker.times[len(walker.times) // 2], walker.times[-1]):
        walker.blame(None, at)
    graph = graph_at(walker, None, None)
    if graph.chain:  # the page's budget, now and over 60 moments
        budget = LagBudget(rec, walker)
        budget.at(walker.vertex(graph.chain[0].vertex), None)
        budget.over_time(walker.vertex(graph.chain[0].vertex), most=60)
    prof.disable()
    stats = pstats.Stats(prof)
    total = stats.total_tt  # type: ignore[attr-defined]
    print(f"{recording.name} under cProfile: {total:.3f} s (open, walker, 3 blames, graph, budget)")
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])[:12]  # type: ignore[attr-defined]
    for (file, number, func), (_, calls, tottime, _cum, _) in rows:
        print(f"  {tottime / total:6.1%}  {calls:>10,}  {Path(file).name}:{number} {func}")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--vertices", type=int, default=12)
    p.add_argument("--parallelism", type=int, default=128)
    p.add_argument("--splits", type=int, default=0)
    p.add_argument("--samples", type=int, default=360)
    p.add_argument("--repeat", type=int, default=2)
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--dir", type=Path, default=Path("/tmp/wmviz-job-scale"))
    p.add_argument("--forms", default="json,columnar", help="which forms to measure (json, columnar)")
    p.add_argument("--document", action="store_true", help="bench/blame.py's single JSON document")
    p.add_argument("--baseline", type=Path, help="another tree (e.g. a worktree of main) to measure too")
    p.add_argument("--profile", action="store_true")
    args = p.parse_args()
    args.dir.mkdir(parents=True, exist_ok=True)
    stem = f"job-{args.vertices}x{args.parallelism}x{args.splits}x{args.samples}"
    stem += "-document" if args.document else ""
    files = {"json": args.dir / f"{stem}.json", "columnar": args.dir / f"{stem}.arrow"}
    started = time.perf_counter()
    if args.document:
        write_job(files["json"], args.vertices, args.parallelism, args.splits, args.samples, False)
        points = "?"
    else:
        points = (
            f"{write_job_lines(files['json'], args.vertices, args.parallelism, args.splits, args.samples):,}"
        )
    print(
        f"generated {files['json'].name} ({points} points) in {time.perf_counter() - started:.1f} s, "
        f"this process's peak {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024} MB",
        flush=True,
    )
    print(
        f"import (convert to columnar): {json.dumps(convert(files['json'], files['columnar']))}", flush=True
    )
    print(
        f"{args.vertices} vertices × p{args.parallelism} × {args.splits} splits × {args.samples} samples: "
        f"JSON {files['json'].stat().st_size / 2**20:.1f} MB, columnar "
        f"{files['columnar'].stat().st_size / 2**20:.1f} MB; load average {os.getloadavg()[0]:.1f}",
        flush=True,
    )
    forms = [f.strip() for f in args.forms.split(",") if f.strip()]
    trees = [("", HERE)] + ([("base ", args.baseline.resolve())] if args.baseline else [])
    for i in range(args.repeat):
        for form in forms:
            for label, tree in trees:
                print(f"{i + 1} {label}{line(form, run(files[form], args.timeout, tree))}", flush=True)
    print(f"load average {os.getloadavg()[0]:.1f}")
    if args.profile:
        profile(files["columnar"])


if __name__ == "__main__":
    main()
