"""Whole-job `record`'s cost per sample and its memory, against how many samples it has taken.

    python bench/record_job_memory.py                  # 50 vertices x 10 subtasks, 1k/4k/16k samples
    python bench/record_job_memory.py --samples 1000 10000 --vertices 50 --parallelism 10

A synthetic job of V chained vertices of parallelism P (each subtask reports its input and output
watermark and, at the sources, sourceIdleTime; every 10th vertex has two input edges and reports
two input watermarks, so the input vote runs). For each sample count N the appended writer
(`wmviz.record.job_append.JobWriter`, what `record` runs) takes N samples under tracemalloc: the
peak of traced memory, the time of the slowest and the mean sample, and the file's size. Then the
whole-document save that `record` did before (every point held in a `JobRecording`, the input
vote and a rewrite of the whole file every 5 s) is timed once at the largest N that stays quick,
for comparison. The REST round trips are not in it (they cost the same either way).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import tracemalloc
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from wmviz.record.job import (
    INPUT_WATERMARK,
    OUTPUT_WATERMARK,
    SOURCE_IDLE_TIME,
    Edge,
    JobRecording,
    SeriesKey,
    Vertex,
    input_metric,
    write_recording,
)
from wmviz.record.job_append import JobWriter
from wmviz.record.job_inputs import assign_inputs


def job(vertices: int, parallelism: int) -> JobRecording:
    """V vertices in a chain; every 10th (from the 10th) also reads vertex 0 on a second edge."""
    plan = tuple(Vertex(f"v{i}", f"op {i}", parallelism) for i in range(vertices))
    edges = [Edge(f"v{i - 1}", f"v{i}", "HASH") for i in range(1, vertices)]
    edges += [Edge("v0", f"v{i}", "HASH") for i in range(10, vertices, 10)]
    return JobRecording("bench", plan, tuple(edges))


def points(rec: JobRecording, n: int) -> list[tuple[SeriesKey, int]]:
    """Sample n: watermarks that advance 1 s a sample, a little behind for each vertex downstream."""
    twice = {e.target for e in rec.edges if e.source == "v0" and e.target != "v1"}
    out: list[tuple[SeriesKey, int]] = []
    for depth, vertex in enumerate(rec.vertices):
        for s in range(vertex.parallelism):
            mark = 1_000 * n - 10 * depth - s
            out.append(((vertex.id, s, OUTPUT_WATERMARK, None), mark))
            if depth == 0:
                out.append(((vertex.id, s, SOURCE_IDLE_TIME, None), 0))
                continue
            out.append(((vertex.id, s, INPUT_WATERMARK, None), mark - 1))
            if vertex.id in twice:
                out += [
                    ((vertex.id, s, input_metric(1), None), mark - 1),
                    ((vertex.id, s, input_metric(2), None), 1_000 * n - s),
                ]
    return out


def appended(rec: JobRecording, samples: int, folder: Path) -> tuple[int, float, float, int]:
    """(peak traced bytes, slowest sample s, mean sample s, file bytes) of N appended samples."""
    path = folder / f"appended-{samples}.json"
    tracemalloc.start()
    writer = JobWriter(rec, path)
    slowest = total = 0.0
    for n in range(samples):
        taken = points(rec, n)
        start = time.perf_counter()
        writer.sample(1_800_000_000_000 + 1000 * n, taken)
        spent = time.perf_counter() - start
        slowest, total = max(slowest, spent), total + spent
    writer.close()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    size = path.stat().st_size
    path.unlink()
    return peak, slowest, total / samples, size


def whole(rec: JobRecording, samples: int, folder: Path) -> tuple[int, float]:
    """(peak traced bytes, seconds of one save) of the whole-document form at N samples."""
    tracemalloc.start()
    for n in range(samples):
        for key, value in points(rec, n):
            rec.add(key, 1_800_000_000_000 + 1000 * n, value)
    start = time.perf_counter()
    assign_inputs(rec)
    write_recording(rec, folder / "whole.json")
    spent = time.perf_counter() - start
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak, spent


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, nargs="+", default=[1_000, 4_000, 16_000])
    parser.add_argument("--vertices", type=int, default=50)
    parser.add_argument("--parallelism", type=int, default=10)
    parser.add_argument("--whole-samples", type=int, default=250, help="N for the whole-document save")
    args = parser.parse_args()
    per_sample = len(points(job(args.vertices, args.parallelism), 1))
    print(f"{args.vertices} vertices x {args.parallelism} subtasks: {per_sample} points a sample")
    print(f"{'samples':>8} {'points':>11} {'peak MB':>8} {'slowest ms':>11} {'mean ms':>8} {'file MB':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for samples in args.samples:
            peak, slowest, mean, size = appended(job(args.vertices, args.parallelism), samples, Path(tmp))
            print(
                f"{samples:>8} {samples * per_sample:>11,} {peak / 2**20:>8.1f} {slowest * 1000:>11.1f} "
                f"{mean * 1000:>8.2f} {size / 2**20:>8.1f}"
            )
        peak, spent = whole(job(args.vertices, args.parallelism), args.whole_samples, Path(tmp))
        print(
            f"before (whole document) at {args.whole_samples} samples ({args.whole_samples * per_sample:,} "
            f"points): one save {spent:.2f} s, peak {peak / 2**20:.0f} MB"
        )


if __name__ == "__main__":
    main()
