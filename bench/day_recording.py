"""A day-long recording of a large job: how it is refused as JSON, converted, and read.

    python bench/day_recording.py                       # 50 vertices x 10 subtasks, 86,400 samples (1 s)
    python bench/day_recording.py --samples 3600 --keep /tmp/day   # an hour; keep the files

Writes the appended recording `record` makes of `bench/record_job_memory.py`'s synthetic job (the
header, the series and the input vote's lines by `wmviz.record.job_append.JobWriter` for the first
samples; then each sample line as the writer spells it, written directly, so that a day is made
in minutes rather than the day's own 19 minutes of the writer's bookkeeping). Then, each in its
own process, timed with its peak resident memory (`/usr/bin/time`): `wmviz blame` of the JSON
file (refused: over the reader's bound, naming the command), `wmviz convert` to `.arrow`, and
`wmviz blame` and `wmviz lag` of the columnar file.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from record_job_memory import job, points

from wmviz.record.job_append import JobWriter, line

START_MS = 1_800_000_000_000
WRITER_SAMPLES = 300
"""Samples written through the real writer (past the input vote's window of 240)."""


def write_day(path: Path, samples: int, vertices: int, parallelism: int) -> tuple[int, float]:
    """(points, seconds) of writing the recording."""
    rec = job(vertices, parallelism)
    started = time.perf_counter()
    writer = JobWriter(rec, path)
    total = 0
    for n in range(min(samples, WRITER_SAMPLES)):
        taken = points(rec, n)
        writer.sample(START_MS + 1000 * n, taken)
        total += len(taken)
    keys = dict(writer.keys)
    writer.close()
    with path.open("ab") as out:
        for n in range(WRITER_SAMPLES, samples):
            taken = points(rec, n)
            out.write(line({"t": START_MS + 1000 * n, "v": [[keys[k], v] for k, v in taken]}))
            total += len(taken)
    return total, time.perf_counter() - started


def measured(args: list[str]) -> tuple[int, float, int, str]:
    """(exit code, wall seconds, peak resident MB, first line of stderr) of `wmviz ARGS`."""
    command = ["/usr/bin/time", "-f", "%e %M", sys.executable, "-m", "wmviz", *args]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
    lines = done.stderr.strip().splitlines()
    seconds, kb = lines[-1].split()
    first_out = done.stdout.strip().splitlines()[0] if done.stdout.strip() else ""
    said = next((x for x in lines[:-1] if x.strip()), first_out)
    return done.returncode, float(seconds), int(kb) // 1024, said[:300]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--samples", type=int, default=86_400)
    parser.add_argument("--vertices", type=int, default=50)
    parser.add_argument("--parallelism", type=int, default=10)
    parser.add_argument("--keep", type=Path, help="write the files here and keep them")
    args = parser.parse_args()
    folder = args.keep or Path(tempfile.mkdtemp(prefix="wmviz-day-"))
    folder.mkdir(parents=True, exist_ok=True)
    day, arrow = folder / "day.json", folder / "day.arrow"
    count, seconds = write_day(day, args.samples, args.vertices, args.parallelism)
    print(
        f"{args.vertices} vertices x {args.parallelism}, {args.samples:,} samples: {count:,} points, "
        f"{day.stat().st_size / 2**20:,.0f} MB appended, written in {seconds:.0f} s"
    )
    for label, command in (
        ("blame day.json", ["blame", str(day)]),
        ("convert day.json day.arrow", ["convert", str(day), str(arrow)]),
        ("blame day.arrow", ["blame", str(arrow)]),
        ("lag day.arrow", ["lag", str(arrow)]),
    ):
        code, wall, peak, said = measured(command)
        size = f", {arrow.stat().st_size / 2**20:,.0f} MB columnar" if label.startswith("convert") else ""
        print(f"  {label}: exit {code}, {wall:.1f} s, peak RSS {peak:,} MB{size}\n    {said}")
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.keep is None:
        for path in (day, arrow):
            path.unlink(missing_ok=True)
        folder.rmdir()


if __name__ == "__main__":
    main()
