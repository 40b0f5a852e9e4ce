"""How fast the fuzzer runs the newer surfaces with and without the recorder's own workers.

    python bench/fuzz_speed.py [--n 800] [--rounds 3] [--jobs 2] [--wait-jobs 4] [--seed 7]

One run, the two pools interleaved (their order swapped each round, so a change in the shared
machine's load falls on both): the same seeded slice of `bench/fuzz.py --targets new` with
`--wait-jobs 0` (the recorder's inputs share the `--jobs` workers, as before `--wait-jobs`
existed) and with `--wait-jobs N`. Each round prints inputs/s, the load average and, per target,
the mean wall-clock time an input took in its worker, and the classes counted (the inputs are the
same; a recording's outcome may still differ between runs where it races the fake's timing).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz


def _round(n: int, seed: int, jobs: int, wait_jobs: int) -> fuzz.Summary:
    with tempfile.TemporaryDirectory(prefix="wmviz-fuzz-speed-") as out:
        options = fuzz.PoolOptions(jobs=jobs, out=out, keep=0, wait_jobs=wait_jobs)
        return fuzz.run_fuzz(n, seed, options, targets="new")


def _line(label: str, summary: fuzz.Summary) -> str:
    load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    each = ", ".join(
        f"{fmt} {summary.busy.get(fmt, 0.0) * 1000 / max(sum(c.values()), 1):.0f}"
        for fmt, c in sorted(summary.by_format.items())
    )
    rate = summary.done / summary.seconds
    counts = ", ".join(f"{cls} {summary.counts[cls]}" for cls in fuzz.CLASSES if summary.counts[cls])
    return (
        f"  {label:<13} {summary.done} inputs in {summary.seconds:6.1f} s = {rate:5.1f}/s; load {load}\n"
        f"    ms an input in its worker: {each}\n    {counts}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=800, help="inputs per pool per round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--wait-jobs", type=int, default=4)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    pools = {"wait-jobs 0": 0, f"wait-jobs {args.wait_jobs}": args.wait_jobs}
    rates: dict[str, list[float]] = {label: [] for label in pools}
    for r in range(args.rounds):
        print(f"round {r + 1}")
        order = list(pools) if r % 2 == 0 else list(reversed(pools))
        for label in order:
            summary = _round(args.n, args.seed, args.jobs, pools[label])
            rates[label].append(summary.done / summary.seconds)
            print(_line(label, summary), flush=True)
    for label, got in rates.items():
        print(f"{label}: mean {sum(got) / len(got):.1f} inputs/s over {len(got)} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
