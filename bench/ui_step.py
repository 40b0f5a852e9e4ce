"""Server time of one step in the app on a 1,000,000-step trace (issue 5's ≤ 150 ms target).

    python bench/ui_step.py                  # 1,000,000 steps, one instance x 8 channels
    python bench/ui_step.py --rows 100000

Builds the trace and its timeline once (local engine, cached under --work), then drives the real
app with Streamlit's AppTest: each measured step is one script run after a key-press equivalent
(Forward, Back, a jump to the next output-watermark change, or a slider drag to a random step,
which forces a rebuild from a keyframe). The time is the whole server-side run: callbacks, state
rebuild, tables, figures and their serialization; the browser's own drawing is not included.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("WMVIZ_SPARK_START", "lazy")  # measure the page, not a JVM starting beside it

STORY = """## What users saw
A benchmark trace: {rows:,} steps on one instance with 8 channels.

## What the valve did
Mostly rising watermarks, 3 % status changes, 5 % records.

## The fix
Nothing to fix: this measures the debugger.
"""


def prepare(work: Path, rows: int) -> Path:
    """A samples directory holding only the benchmark trace, its config and a story."""
    import pyarrow.parquet as pq

    from bench.gen_trace import generate_table

    samples = work / f"ui-samples-{rows}"
    trace = samples / f"bench-{rows}.parquet"
    if not trace.is_file():
        samples.mkdir(parents=True, exist_ok=True)
        pq.write_table(generate_table(rows, 1, 8, seed=7), trace)
        trace.with_suffix(".json").write_text(
            f'{{"name": "Benchmark: {rows:,} steps", "channels": {{"0": 8}}}}\n'
        )
        trace.with_suffix(".md").write_text(STORY.format(rows=rows))
    return samples


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--steps", type=int, default=40, help="measured steps per action")
    parser.add_argument("--work", type=Path, default=Path("/tmp/wmviz-bench"))
    args = parser.parse_args()
    samples = prepare(args.work, args.rows)
    os.environ["WMVIZ_SAMPLES"] = str(samples)
    os.environ["WMVIZ_CACHE"] = str(args.work / "ui-cache")

    from streamlit.testing.v1 import AppTest

    app = AppTest.from_file(str(ROOT / "app.py"), default_timeout=1800)
    app.query_params["scenario"] = f"bench-{args.rows}"
    app.query_params["engine"] = "local"
    app.query_params["step"] = str(args.rows // 2)
    started = time.perf_counter()
    app.run()
    assert not app.exception, app.exception
    print(
        f"first open (simulation, or the cached timeline, and loading): {time.perf_counter() - started:.1f} s"
    )
    rng = random.Random(7)
    results: dict[str, list[float]] = {}

    def timed(name: str, act) -> None:
        t = time.perf_counter()
        act().run()
        results.setdefault(name, []).append((time.perf_counter() - t) * 1000)
        assert not app.exception, app.exception

    for _ in range(args.steps):
        timed("forward (Right)", lambda: app.button(key="fwd").click())
    for _ in range(args.steps):
        timed("back (Left)", lambda: app.button(key="back").click())
    for _ in range(args.steps):
        timed("next output-watermark change", lambda: app.button(key="next_event").click())
    for _ in range(args.steps):
        target = rng.randrange(args.rows)
        timed("slider to a random step", lambda target=target: app.slider(key="step").set_value(target))
    print(f"server time per step on a {args.rows:,}-step trace (ms, {args.steps} steps each):")
    everything = []
    for name, values in results.items():
        everything.extend(values)
        print(
            f"  {name:32} median {statistics.median(values):6.1f}  p90 {percentile(values, 0.9):6.1f}"
            f"  max {max(values):6.1f}"
        )
    print(f"  {'all':32} median {statistics.median(everything):6.1f}  p90 {percentile(everything, 0.9):6.1f}")


if __name__ == "__main__":
    main()
