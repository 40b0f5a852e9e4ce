"""Fuzz wmviz: seeded hostile inputs through the readers and every surface added since.

    python bench/fuzz.py --n 100000 [--targets reader] [--seed 1] [--jobs 1] [--time-limit 10]
    python bench/fuzz.py --targets all --seconds 1800 --n 100000 --jobs 2   # a long run, all surfaces
    python bench/fuzz.py --targets new --n 100000 --jobs 2 --wait-jobs 4    # record's waits beside
    python bench/fuzz.py --targets newest --n 100000 --jobs 2               # issue 33's surfaces

Targets (input `i` of a run goes to target `i mod k` of the `k` named; each is a pure function of
seed and index, so any input can be made again from its number):

    reader           traces in every format: read, simulate, transcript, explain, written back
                     (bench/fuzz_reader.py, inputs from bench/fuzz_inputs.py)
    kafka            kcat and console-consumer dumps through `wmviz import kafka`
    prometheus       query_range exports through `wmviz import prometheus`, with and without --plan
    record           `wmviz record` against a scripted fake JobManager on 127.0.0.1
    blame            job recordings through `wmviz blame`
    sweep            `wmviz sweep --vary` fields and values
    url              link parameters through parse_view and what the page does with the view
    whatif           what-if tokens through decode_edit, applied and written
    bundle           bundles through open_bundle, stored, their view.json adopted
    recording        job recordings as one JSON document, appended lines or columnar Arrow through
                     `wmviz blame`, `lag` and `convert` (bench/fuzz_jobs.py)
    graph            the job graph page's link (?job=&at=&vertex=) through what the page computes
    plan             COMPILE PLAN JSON, EXPLAIN text and REST plans through `wmviz plan`
                     (bench/fuzz_sql.py)
    sqlreplay        an incident's plan and its rows file through `wmviz sql replay`
    late             traces through `wmviz late` and the step page's Late rows box (its HTML)
    configs          session-window and alignment configs through `wmviz late` and `explain`

Each input ends in one class:

    accepted           the input was read (a command exited 0) and what it wrote reads back
    clean error        what a user sees as one line: exit 2, a TraceValidationError, an UploadError,
                       the ValueError the page shows as a notice
    traceback          any other exception, or exit 1 (the last frames and the message are kept)
    hang               over --time-limit seconds of CPU time (3 × that of wall-clock time)
    over memory        MemoryError, or the worker killed, beyond --memory-mb of address space
    crash              the worker died otherwise (a signal)
    round trip         accepted, but what was written reads back differently (or fails)
    unreadable output  a command exited 0 but its trace does not validate (or its recording does
                       not read)
    markup             user text became a tag, a style or a foreign link in HTML a page draws

The pool (bench/fuzz_pool.py) runs the inputs in forked, limited workers (with --wait-jobs, the
recorder's inputs, which mostly sleep and wait on the fake JobManager, in workers of their own
beside the --jobs ones); the first examples of each bad class are saved to --out (the input's
files, its arguments, what happened), and the counts are printed per class and per target with
the load average and the mean time an input of each target took in its worker.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz_cli import SurfaceCase, recording_check, run_cli, trace_check
from fuzz_jobmanager import make_record, run_record
from fuzz_jobs import make_graph, make_recording, run_graph, run_recording
from fuzz_links import make_bundle, make_url, make_whatif, run_bundle, run_url, run_whatif
from fuzz_pool import (
    ACCEPTED,
    CLASSES,
    CLEAN,
    CRASH,
    GOOD,
    HANG,
    MEMORY,
    ROUND_TRIP,
    TRACEBACK,
    UNREADABLE,
    Case,
    Outcome,
    PoolOptions,
    Summary,
    Target,
    report,
    run_pool,
)
from fuzz_reader import Reader, ReaderTarget, default_reader
from fuzz_sql import (
    make_configs,
    make_late,
    make_plan,
    make_sqlreplay,
    run_configs,
    run_late,
    run_plan,
    run_sqlreplay,
)
from fuzz_surfaces import make_blame, make_kafka, make_prometheus, make_sweep

__all__ = ["ACCEPTED", "CLASSES", "CLEAN", "CRASH", "GOOD", "HANG", "MEMORY", "ROUND_TRIP", "TRACEBACK"]
__all__ += ["UNREADABLE", "PoolOptions", "Summary", "default_reader", "report", "run_fuzz", "target"]


def _command(case: SurfaceCase, folder: str) -> Outcome:
    """A command-line surface: its output, if it names one, must read back after exit 0."""
    args = case.args
    out = args[args.index("--out") + 1] if "--out" in args else None
    check = None
    if out is not None and case.fmt != "sweep":
        check = recording_check if out.endswith(".json") else trace_check
    return run_cli(case, folder, check, out)


@dataclass
class Surface:
    """A target made of a maker and a runner."""

    name: str
    maker: Callable[[int, int], SurfaceCase]
    runner: Callable[[SurfaceCase, str], Outcome]
    waiting: bool = False
    """Its inputs mostly wait, not compute (they may run in the pool's wait workers)."""

    def make(self, seed: int, index: int) -> SurfaceCase:
        return self.maker(seed, index)

    def run(self, case: SurfaceCase, folder: str) -> Outcome:
        from fuzz_reader import clear

        try:
            return self.runner(case, folder)
        finally:
            clear(folder)


SURFACES: dict[str, Target] = {
    "kafka": Surface("kafka", make_kafka, _command),
    "prometheus": Surface("prometheus", make_prometheus, _command),
    "record": Surface("record", make_record, run_record, waiting=True),
    "blame": Surface("blame", make_blame, _command),
    "sweep": Surface("sweep", make_sweep, _command),
    "url": Surface("url", make_url, run_url),
    "whatif": Surface("whatif", make_whatif, run_whatif),
    "bundle": Surface("bundle", make_bundle, run_bundle),
}
NEW_SURFACES = tuple(SURFACES)
SURFACES |= {
    "recording": Surface("recording", make_recording, run_recording),
    "plan": Surface("plan", make_plan, run_plan),
    "sqlreplay": Surface("sqlreplay", make_sqlreplay, run_sqlreplay),
    "late": Surface("late", make_late, run_late),
    "configs": Surface("configs", make_configs, run_configs),
    "graph": Surface("graph", make_graph, run_graph),
}
NEWEST_SURFACES = tuple(name for name in SURFACES if name not in NEW_SURFACES)


@dataclass
class Mixed:
    """Several targets in one run: input `i` goes to target `i mod k`."""

    parts: tuple[Target, ...]
    name: str = "mixed"

    def make(self, seed: int, index: int) -> Case:
        return self.parts[index % len(self.parts)].make(seed, index)

    def run(self, case: Any, folder: str) -> Outcome:
        return self.parts[case.index % len(self.parts)].run(case, folder)


def waits(target: Target) -> Callable[[int], bool]:
    """Whether input `i` of `target` is of a surface whose inputs mostly wait."""
    if isinstance(target, Mixed):
        parts = target.parts
        return lambda i: getattr(parts[i % len(parts)], "waiting", False)
    waiting = getattr(target, "waiting", False)
    return lambda i: waiting


def target(names: str, reader: Reader = default_reader) -> Target:
    """The target(s) named, comma-separated (`all`: the reader and every surface; `new`: issue 24's
    surfaces; `newest`: issue 33's, the recordings in every form, plans, SQL replay, `late`,
    session/alignment configs and the job graph's links)."""
    groups = {"all": ["reader", *SURFACES], "new": list(NEW_SURFACES), "newest": list(NEWEST_SURFACES)}
    wanted = groups.get(names, names.split(","))
    parts = [ReaderTarget(reader) if name == "reader" else SURFACES[name] for name in wanted]
    return parts[0] if len(parts) == 1 else Mixed(tuple(parts))


def run_fuzz(
    n: int,
    seed: int = 1,
    options: PoolOptions | None = None,
    *,
    targets: str = "reader",
    reader: Reader = default_reader,
    start: int = 0,
) -> Summary:
    """Run inputs [start, start + n) of `seed` of the named targets."""
    chosen = target(targets, reader)
    return run_pool(chosen, n, seed, options, start=start, waits=waits(chosen))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="how many inputs (at most, with --seconds)")
    parser.add_argument("--targets", default="reader", help="comma-separated targets, or all, or new")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0, help="first input index (to rerun a slice)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes at once")
    parser.add_argument(
        "--wait-jobs",
        type=int,
        default=0,
        help="more workers, only for the inputs that mostly wait (record's); 0: they share --jobs",
    )
    parser.add_argument(
        "--time-limit", type=float, default=10.0, help="CPU seconds per input (wall: 3 times)"
    )
    parser.add_argument("--memory-mb", type=int, default=2048, help="address space per input beyond start-up")
    parser.add_argument("--seconds", type=float, help="stop starting inputs after this long")
    parser.add_argument("--keep", type=int, default=5, help="examples saved per bad class")
    parser.add_argument("--out", default="fuzz-out", help="folder for the examples of bad classes")
    parser.add_argument(
        "--cold", action="store_true", help="workers import what their inputs need each (no warm parent)"
    )
    args = parser.parse_args(argv)
    started = time.perf_counter()

    def progress(summary: Summary, done: int) -> None:
        if done % 1000 == 0:
            rate = done / (time.perf_counter() - started)
            print(f"  … {done:,} done ({rate:.0f}/s), {summary.bad} bad", file=sys.stderr, flush=True)

    options = PoolOptions(
        args.jobs,
        args.time_limit,
        args.memory_mb,
        args.out,
        args.keep,
        args.seconds,
        args.wait_jobs,
        warm=not args.cold,
    )
    chosen = target(args.targets)
    summary = run_pool(
        chosen, args.n, args.seed, options, start=args.start, progress=progress, waits=waits(chosen)
    )
    print(report(summary, args.out))
    return 1 if summary.bad else 0


if __name__ == "__main__":
    sys.exit(main())
