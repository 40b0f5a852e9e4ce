"""How fast the fuzzer runs with and without the recorder's own workers, or warm workers.

    python bench/fuzz_speed.py [--n 800] [--rounds 3] [--jobs 2] [--wait-jobs 4] [--seed 7]
    python bench/fuzz_speed.py --compare warm --targets newest --start 14500 --seed 1 --jobs 1

One run, the two pools interleaved (their order swapped each round, so a change in the shared
machine's load falls on both): the same seeded slice of `bench/fuzz.py --targets new` with
`--wait-jobs 0` (the recorder's inputs share the `--jobs` workers, as before `--wait-jobs`
existed) and with `--wait-jobs N`. Each round prints inputs/s, the load average and, per target,
the mean wall-clock time an input took in its worker, and the classes counted (the inputs are the
same; a recording's outcome may still differ between runs where it races the fake's timing).

With `--compare warm`, the two pools are cold workers (each imports what its inputs need) and warm
ones (forked from a parent that imported it once, `PoolOptions.warm`); each pool starts from a
fresh parent (a forked one that has imported only the fuzzer), so the cold one never inherits what
the warm one imported. Each round also prints the CPU seconds the pool used (parent and workers).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz


def _round(
    n: int, seed: int, jobs: int, wait_jobs: int, targets: str = "new", warm: bool = True
) -> fuzz.Summary:
    with tempfile.TemporaryDirectory(prefix="wmviz-fuzz-speed-") as out:
        seconds = None if targets == "new" else 86400.0  # a budget: shares of 100, as a long run has
        options = fuzz.PoolOptions(
            jobs=jobs, out=out, keep=0, wait_jobs=wait_jobs, warm=warm, seconds=seconds
        )
        return fuzz.run_fuzz(n, seed, options, targets=targets, start=START[0])


START = [0]


def _fresh_round(n: int, seed: int, jobs: int, targets: str, warm: bool) -> tuple[fuzz.Summary, float]:
    """One pool in a forked parent of its own: its summary and the CPU seconds it and its workers used."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    here, there = context.Pipe(duplex=False)

    def child() -> None:
        summary = _round(n, seed, jobs, 0, targets, warm)
        summary.examples.clear()
        there.send(summary)

    before = os.times()
    process = context.Process(target=child)
    process.start()
    summary = here.recv()
    process.join()
    after = os.times()
    used = after.children_user + after.children_system - before.children_user - before.children_system
    return summary, used


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
    parser.add_argument("--start", type=int, default=0, help="first input index")
    parser.add_argument("--targets", default="new")
    parser.add_argument("--compare", choices=("wait-jobs", "warm"), default="wait-jobs")
    args = parser.parse_args(argv)
    START[0] = args.start
    if args.compare == "warm":
        return _compare_warm(args)
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


def _compare_warm(args: argparse.Namespace) -> int:
    rates: dict[str, list[float]] = {"cold": [], "warm": []}
    for r in range(args.rounds):
        print(f"round {r + 1}")
        order = ["cold", "warm"] if r % 2 == 0 else ["warm", "cold"]
        for label in order:
            summary, cpu = _fresh_round(args.n, args.seed, args.jobs, args.targets, label == "warm")
            rates[label].append(summary.done / summary.seconds)
            print(_line(label, summary) + f"\n    {cpu:.1f} CPU-s (parent and workers)", flush=True)
    for label, got in rates.items():
        print(f"{label}: mean {sum(got) / len(got):.1f} inputs/s over {len(got)} rounds")
    return 0


if __name__ == "__main__":
    sys.exit(main())
