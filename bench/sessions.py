"""Session windows of one key: the merging set before and after it kept its windows sorted.

    python bench/sessions.py [--sizes 5000,20000,100000] [--old-rev f241a00] [--old-budget 120]
                             [--shapes ascending,shuffled,merging] [--seed S]

Each size N is a trace of N records of one key, run through `InstancePipeline` as a user's trace is
(a session gap of 1,000 ms, no watermark until the end): `ascending` records 2 s apart (no two
merge), `shuffled` the same records in a seeded random order, `merging` random times 1.5 s apart
on average (about half the records touch the session before them). The new code runs every size
whole; the old code (`wmviz/core/sessions.py` as of `--old-rev`, read with `git show` and run in
the same process on the same rows) runs until `--old-budget` seconds; when it stops short, the
ratio compares it with the new code's time to the same row. Both runs' outputs (every step's
events, as text) are compared over the records both ran, so the two timings describe the same work.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
import types
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import wmviz.core.pipeline as pipeline_module  # noqa: E402
from wmviz.core.pipeline import InstancePipeline  # noqa: E402
from wmviz.core.scenario import Kind, ScenarioConfig, TraceRow, WindowConfig  # noqa: E402
from wmviz.core.types import MAX_MS, Profile  # noqa: E402

GAP_MS = 1_000


def rows_of(shape: str, n: int, seed: int) -> list[TraceRow]:
    """`n` records of key `k` in the given shape, then a MAX watermark."""
    rng = random.Random(seed)
    if shape == "merging":
        times = [rng.randrange(n * 1_500) for _ in range(n)]
    else:
        times = [i * 2 * GAP_MS for i in range(n)]
        if shape == "shuffled":
            rng.shuffle(times)
    rows = [
        TraceRow(i + 1, Kind.RECORD, channel=0, event_ms=t, key="k", value=i) for i, t in enumerate(times)
    ]
    rows.append(TraceRow(n + 1, Kind.WATERMARK, channel=0, watermark_ms=MAX_MS))
    return rows


def old_operator(rev: str) -> type:
    """`SessionWindowOperator` as it was at `rev`, loaded from git as a module of its own."""
    source = subprocess.run(
        ["git", "-C", str(ROOT), "show", f"{rev}:wmviz/core/sessions.py"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    module = types.ModuleType("old_sessions")
    module.__dict__["__file__"] = f"{rev}:wmviz/core/sessions.py"
    exec(compile(source, module.__file__, "exec"), module.__dict__)
    return module.SessionWindowOperator


def run(operator: type, rows: list[TraceRow], budget_s: float) -> tuple[list[float], list[str]]:
    """The seconds taken at every 256th row (stopping past the budget) and every step's events."""
    config = ScenarioConfig(
        channels={"0": 1}, operator=WindowConfig(session_gap_ms=GAP_MS, aggregate="count")
    )
    saved = pipeline_module.SessionWindowOperator
    pipeline_module.SessionWindowOperator = operator  # type: ignore[misc]
    try:
        pipeline = InstancePipeline("0", config, Profile.FLINK_1X_2X, {"0": 1}, {("0", 0)})
        out: list[str] = []
        marks: list[float] = []
        start = time.perf_counter()
        for step, row in enumerate(rows):
            out.append(repr(pipeline.process(step, row, explain=False).events))
            if (step + 1) % 256 == 0:
                marks.append(time.perf_counter() - start)
                if marks[-1] > budget_s:
                    return marks, out
        marks.append(time.perf_counter() - start)
        return marks, out
    finally:
        pipeline_module.SessionWindowOperator = saved  # type: ignore[misc]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="5000,20000,100000")
    parser.add_argument("--shapes", default="ascending,shuffled,merging")
    parser.add_argument("--old-rev", default="f241a00", help="the commit whose sessions.py is the old code")
    parser.add_argument(
        "--old-budget", type=float, default=120.0, help="seconds the old code may take per run"
    )
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average before: {load}; old code: {args.old_rev}")
    old = old_operator(args.old_rev)
    new = pipeline_module.SessionWindowOperator
    print("| shape | records | new | old | old / new |")
    print("|---|---:|---:|---:|---:|")
    failed = False
    for shape in args.shapes.split(","):
        for n in (int(s) for s in args.sizes.split(",")):
            rows = rows_of(shape, n, args.seed)
            new_marks, new_out = run(new, rows, float("inf"))
            old_marks, old_out = run(old, rows, args.old_budget)
            done, old_s, new_s = len(old_out), old_marks[-1], new_marks[-1]
            if new_out[:done] != old_out:
                failed = True
                first = next(i for i, (a, b) in enumerate(zip(new_out, old_out, strict=False)) if a != b)
                print(f"DIFFERENT OUTPUT at row {first + 1} ({shape}, {n})")
            if done == len(rows):
                old_text, ratio = f"{old_s:.2f} s", f"{old_s / new_s:.0f}×"
            else:  # the same work: the new code's time for the rows the old code did
                same = new_marks[len(old_marks) - 1]
                old_text = f"> {old_s:.0f} s (stopped after {done:,} records)"
                ratio = f"{old_s / same:.0f}× on those {done:,} (new: {same:.2f} s)"
            print(f"| {shape} | {n:,} | {new_s:.2f} s | {old_text} | {ratio} |", flush=True)
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    print(f"load average after: {load}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
