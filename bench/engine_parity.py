"""Issue 4's "done when": `--engine spark` and `--engine local` print identical transcripts on a
generated 300,000-row, 200-instance trace.

    python bench/engine_parity.py                       # 300,000 rows, 200 instances x 8 channels
    python bench/engine_parity.py --rows 50000 --instances 20

Runs `python -m wmviz transcript TRACE --engine …` for both engines in subprocesses and compares the
outputs line by line; prints the first differing line if any, and exits 1 then.
"""

from __future__ import annotations

import argparse
import hashlib
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.gen_trace import write_trace

ROOT = Path(__file__).resolve().parent.parent


def transcript(engine: str, trace: Path, config: Path, out: Path) -> float:
    """Write the engine's transcript to `out`; returns the wall time."""
    started = time.perf_counter()
    with out.open("w") as sink:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "wmviz",
                "transcript",
                str(trace),
                "--config",
                str(config),
                "--engine",
                engine,
            ],
            cwd=ROOT,
            stdout=sink,
            stderr=subprocess.DEVNULL,
            check=True,
        )
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=300_000)
    parser.add_argument("--instances", type=int, default=200)
    parser.add_argument("--channels", type=int, default=8)
    parser.add_argument("--work", type=Path, default=Path("/tmp/wmviz-bench"))
    args = parser.parse_args()
    paths = write_trace(args.work, args.rows, args.instances, args.channels)
    outputs = {}
    for engine in ("local", "spark"):
        out = args.work / f"transcript-{engine}-{args.rows}-{args.instances}.jsonl"
        seconds = transcript(engine, paths["parquet"], paths["config"], out)
        digest = hashlib.sha256(out.read_bytes()).hexdigest()[:16]
        lines = out.read_text().count("\n")
        print(f"{engine:5} {lines:,} lines in {seconds:.1f} s, sha256 {digest}")
        outputs[engine] = out
    with outputs["local"].open() as a, outputs["spark"].open() as b:
        for number, (x, y) in enumerate(zip(a, b, strict=False), 1):
            if x != y:
                print(f"line {number} differs:\n  local: {x.rstrip()}\n  spark: {y.rstrip()}")
                return 1
    if outputs["local"].stat().st_size != outputs["spark"].stat().st_size:
        print("the transcripts differ in length")
        return 1
    print(f"identical: {args.rows:,} rows over {args.instances} instances")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
