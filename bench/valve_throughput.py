"""Throughput of wmviz's Valve against the real Flink StatusWatermarkValve, on the same inputs.

    python bench/valve_throughput.py [--inputs N] [--channels C] [--seed S] [--download]

Generates N seeded random inputs over C channels (mostly rising watermarks with jitter, a few
percent IDLE/ACTIVE toggles), times `Valve.apply` over them in this process (best of 3), then, if
the flink-dist jar is cached (or `--download` is given), times the real valve on the very same
inputs in the JVM harness's bench mode. Both sides' emission counts and final watermark are
compared, so the two timings are known to describe the same work.
"""

from __future__ import annotations

import argparse
import gc
import platform
import random
import sys
import time
from pathlib import Path

# Runnable as `python bench/valve_throughput.py` from the repo root without installing anything.
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tools.flink.valve.jar import FLINK_VERSION, HarnessError, flink_jar_path, run_bench, unavailable_reason
from wmviz.core.types import (
    EmittedWatermark,
    Profile,
    Status,
    StatusInput,
    ValveInput,
    WatermarkInput,
)
from wmviz.core.valve import Valve

TOGGLE_RATE = 0.03
"""Share of inputs that flip one channel between IDLE and ACTIVE."""
MAX_STEP_MS = 3
"""The shared clock advances 0..MAX_STEP_MS ms per input."""
JITTER_MS = 200
"""Each watermark trails the clock by 0..JITTER_MS ms, so a channel's watermarks sometimes fall."""


def generate_inputs(n: int, channels: int, seed: int) -> list[ValveInput]:
    """`n` deterministic inputs over `channels`: jittered rising watermarks and status toggles."""
    rng = random.Random(seed)
    randrange, randint, rand = rng.randrange, rng.randint, rng.random
    active = [True] * channels
    now = 0
    inputs: list[ValveInput] = []
    append = inputs.append
    for _ in range(n):
        c = randrange(channels)
        if rand() < TOGGLE_RATE:
            active[c] = not active[c]
            append(StatusInput(c, Status.ACTIVE if active[c] else Status.IDLE))
        else:
            now += randint(0, MAX_STEP_MS)
            append(WatermarkInput(c, now - randint(0, JITTER_MS)))
    return inputs


def time_python(inputs: list[ValveInput], channels: int, rounds: int) -> float:
    """Best wall time (seconds) of feeding all inputs to a fresh Valve, over `rounds` rounds."""
    best = float("inf")
    for _ in range(rounds):
        valve = Valve(channels, Profile.FLINK_1X_2X)
        apply = valve.apply
        # As timeit does: keep the cyclic collector from landing a pause in one round only.
        gc_was_enabled = gc.isenabled()
        gc.disable()
        try:
            t0 = time.perf_counter()
            for inp in inputs:
                apply(inp)
            elapsed = time.perf_counter() - t0
        finally:
            if gc_was_enabled:
                gc.enable()
        best = min(best, elapsed)
    return best


def python_summary(inputs: list[ValveInput], channels: int) -> tuple[int, int, int]:
    """Untimed pass: (watermarks emitted, statuses emitted, final output watermark)."""
    valve = Valve(channels, Profile.FLINK_1X_2X)
    watermarks = statuses = 0
    for inp in inputs:
        for em in valve.apply(inp):
            if type(em) is EmittedWatermark:
                watermarks += 1
            else:
                statuses += 1
    return watermarks, statuses, valve.last_watermark_ms


def _rate(x: float) -> str:
    return f"{x / 1e6:.2f} M/s"


def _jvm_run(channels: int, inputs: list, *, download: bool) -> tuple[dict | None, str | None]:
    """The JVM side's result, or None and why it was skipped."""
    try:
        jar = flink_jar_path(download=download)
    except HarnessError as e:
        return None, str(e)
    skip_reason = unavailable_reason() if jar else None
    if jar is not None and skip_reason is None:
        return run_bench(channels, inputs, jar=jar), None
    return None, skip_reason or "the jar is not cached (pass --download to fetch it)"


def _print_table(rows: list[tuple]) -> None:
    width = max(len(r[0]) for r in rows)
    print()
    print(
        f"{'implementation':<{width}}  {'rounds':<24} {'time':>9} {'inputs/s':>11} {'W out':>8} {'S out':>6}"
    )
    for label, rounds, best, rate, wm, st in rows:
        print(f"{label:<{width}}  {rounds:<24} {best:>8.3f}s {_rate(rate):>11} {wm:>8,} {st:>6,}")
    print()


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark; print a table and a one-line summary for docs/benchmarks.md."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--inputs", type=int, default=1_000_000, help="number of inputs (default 1,000,000)")
    parser.add_argument("--channels", type=int, default=64, help="number of input channels (default 64)")
    parser.add_argument("--seed", type=int, default=1, help="random seed of the input generator (default 1)")
    parser.add_argument("--rounds", type=int, default=3, help="Python rounds, best is reported (default 3)")
    parser.add_argument(
        "--download", action="store_true", help=f"fetch the Flink {FLINK_VERSION} jar from PyPI if not cached"
    )
    args = parser.parse_args(argv)
    if args.inputs < 1 or args.channels < 1 or args.rounds < 1:
        parser.error("--inputs, --channels and --rounds must be positive")

    t0 = time.perf_counter()
    inputs = generate_inputs(args.inputs, args.channels, args.seed)
    toggles = sum(type(i) is StatusInput for i in inputs)
    print(
        f"generated {len(inputs):,} inputs over {args.channels} channels (seed {args.seed}, "
        f"{toggles / len(inputs):.1%} status toggles) in {time.perf_counter() - t0:.1f} s"
    )

    py_best = time_python(inputs, args.channels, args.rounds)
    py_rate = len(inputs) / py_best
    py_wm, py_st, py_last = python_summary(inputs, args.channels)
    python_label = f"wmviz Valve (CPython {platform.python_version()})"
    rows = [(python_label, f"best of {args.rounds}", py_best, py_rate, py_wm, py_st)]

    jvm, skip_reason = _jvm_run(args.channels, inputs, download=args.download)
    if jvm is not None:
        jvm_best = int(jvm["best_ns"]) / 1e9
        jvm_rate = float(jvm["best_rate"])
        jvm_label = f"Flink {FLINK_VERSION} valve (Java {jvm['java']})"
        rounds = f"best of {jvm['rounds']} after {jvm['warmup']} warm-up"
        rows.append((jvm_label, rounds, jvm_best, jvm_rate, int(jvm["watermarks"]), int(jvm["statuses"])))

    _print_table(rows)

    setting = f"{len(inputs):,} inputs over {args.channels} channels (seed {args.seed})"
    python = f"CPython {platform.python_version()}"
    if jvm is None:
        print(f"JVM side skipped: {skip_reason}")
        print(f"benchmarks.md: Valve throughput, {setting}: wmviz {_rate(py_rate)} on {python}.")
        return 0
    same = (py_wm, py_st, py_last) == (int(jvm["watermarks"]), int(jvm["statuses"]), int(jvm["last_wm"]))
    print(f"outputs agree (emission counts and final watermark): {'yes' if same else 'NO'}")
    ratio = py_rate / jvm_rate
    print(f"ratio Python/JVM: {ratio:.4f} (the JVM is {1 / ratio:.0f}x faster)")
    print(
        f"benchmarks.md: Valve throughput, {setting}: wmviz {_rate(py_rate)} on {python}, "
        f"Flink {FLINK_VERSION} StatusWatermarkValve {_rate(jvm_rate)} on Java {jvm['java']} "
        f"(Python/JVM = {ratio:.3f}, about {1 / ratio:.0f}x slower)."
    )
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
