"""Fuzz wmviz's readers: seeded hostile inputs through reader → validation → simulation → transcript.

    python bench/fuzz.py --n 100000 [--seed 1] [--jobs 1] [--time-limit 10] [--memory-mb 2048]

Every input (`bench/fuzz_inputs.py`: CSV, JSON Lines, compact and Parquet traces, configs in a
`--config` file, a JSON Lines line or Parquet metadata) goes the way the CLI takes it: `read_trace`,
then, if accepted, the whole simulation with every transcript and `explain` line, then the
writers: the accepted trace written in its own format and as JSON Lines must read back to the same
rows. Each input ends in one class:

    accepted       the trace validated, simulated and round-tripped
    clean error    a TraceValidationError or ScenarioError: what a user sees as `file:row: column: reason`
    traceback      any other exception (the first frames and the message are kept)
    hang           over --time-limit seconds of CPU time (3 × that of wall-clock time)
    over memory    MemoryError, or the worker killed, beyond --memory-mb of address space
    crash          the worker died otherwise (a signal)
    round trip     accepted, but what the writer wrote reads back differently (or fails)

Inputs run in forked worker processes, many per worker (a fork per input would cost more than most
inputs): each worker caps its address space (RLIMIT_AS, the start-up size + --memory-mb) and arms
a CPU-time and a wall-clock timer per input (CPU time measures the input, not how busy the shared
machine is); the parent kills a worker that does not answer within the wall limit plus a grace
period, and starts another after the input that killed it. The first examples of each bad class
are saved to --out (the input, its config, what happened), and the counts are printed with the
load average.
"""

from __future__ import annotations

import argparse
import os
import resource
import signal
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from fuzz_inputs import FuzzInput, make_input, seed_docs

ACCEPTED, CLEAN, TRACEBACK, HANG, MEMORY, CRASH, ROUND_TRIP = (
    "accepted",
    "clean error",
    "traceback",
    "hang",
    "over memory",
    "crash",
    "round trip",
)
CLASSES = (ACCEPTED, CLEAN, TRACEBACK, HANG, MEMORY, CRASH, ROUND_TRIP)
GOOD = frozenset({ACCEPTED, CLEAN})
Reader = Callable[[str, str | None], Any]


class _Timeout(BaseException):
    """A per-input timer fired (a BaseException, so no `except Exception` in wmviz swallows it)."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Timeout("CPU" if signum == signal.SIGPROF else "wall-clock")


WALL_FACTOR = 3
"""The wall-clock limit is this many times the CPU limit: on a shared machine an input's own cost
is its CPU time, and a wait that uses none (a blocked read) is caught by the wall clock."""


def default_reader(path: str, config_path: str | None) -> Any:
    from wmviz.trace.readers import read_trace

    return read_trace(path, config_path)


# ---- one input -----------------------------------------------------------------------------------


def _row_key(row: Any, fmt: str) -> tuple[Any, ...]:
    """What a round trip must keep of a row: everything but its row number. Payload values compare
    as the writer's text where the format stores payload as text (CSV, Parquet) or the value is
    not JSON (a Parquet timestamp written to JSON Lines); a CSV `value` compares as its text."""
    from wmviz.trace.payload import payload_text
    from wmviz.trace.writers import _text

    def cell(name: str, value: Any) -> Any:
        if fmt in ("csv", "parquet"):
            return _text(name, value)
        return value if _is_json(value) else payload_text(value)

    payload = tuple((n, cell(n, v)) for n, v in row.payload)
    value = row.value
    if fmt == "csv" and value is not None:
        value = _text("value", value)
    return (row.seq, row.instance, row.input, row.channel, row.kind, row.event_ms, row.watermark_ms,
            row.status, row.proc_ms, row.key, value, payload)  # fmt: skip


def _is_json(value: Any) -> bool:
    import json

    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def _fits_compact(trace: Any) -> bool:
    return all(
        r.kind.value in ("watermark", "status") and r.input == "0" and r.seq is None
        and r.proc_ms is None and not r.payload
        for r in trace.rows
    )  # fmt: skip


def _round_trip(trace: Any, fmt: str, folder: str, reader: Reader) -> str | None:
    """Why the trace written in its own format, or as JSON Lines (what a download offers for any
    upload), does not read back the same (None if both do)."""
    formats = [fmt if fmt != "compact" or _fits_compact(trace) else "jsonl"]
    if formats[0] != "jsonl":
        formats.append("jsonl")
    for out_fmt in formats:
        problem = _write_and_read(trace, out_fmt, folder, reader)
        if problem:
            return f"{fmt} → {out_fmt}: {problem}"[:2000]
    return None


def _write_and_read(trace: Any, out_fmt: str, folder: str, reader: Reader) -> str | None:
    from wmviz.trace.config import config_to_dict, parse_config
    from wmviz.trace.writers import write_config, write_trace

    ext = {"csv": ".csv", "jsonl": ".jsonl", "compact": ".jsonl", "parquet": ".parquet"}[out_fmt]
    path = os.path.join(folder, "again" + ext)
    config_path = None
    if out_fmt == "csv":
        config_path = os.path.join(folder, "again-config.json")
        write_config(trace.config, config_path)
        write_trace(trace.rows, path, "csv")
    else:
        write_trace(trace, path, out_fmt)
    again = reader(path, config_path)
    if parse_config(config_to_dict(trace.config), "config") != trace.config or again.config != trace.config:
        return "the config reads back differently"
    if out_fmt == "compact":
        return None  # instances are renamed and regrouped by design (writers.py)
    before = [_row_key(r, out_fmt) for r in trace.rows]
    after = [_row_key(r, out_fmt) for r in again.rows]
    if len(before) != len(after):
        return f"{len(before)} rows became {len(after)}"
    for i, (a, b) in enumerate(zip(before, after, strict=True)):
        if a != b:
            return f"row {i}: {a!r} became {b!r}"
    return None


def run_input(inp: FuzzInput, folder: str, reader: Reader = default_reader) -> tuple[str, str]:
    """(class, detail) of one input; `folder` is an empty scratch folder."""
    from wmviz.core.simulate import simulate
    from wmviz.core.story import explain_line
    from wmviz.core.windows import ScenarioError
    from wmviz.timeline.transcript import transcript_line
    from wmviz.trace.errors import TraceValidationError
    from wmviz.view.timefmt import TimeFormat, trace_origin

    path = os.path.join(folder, inp.name)
    with open(path, "wb") as f:
        f.write(inp.data)
    config_path = None
    if inp.config is not None:
        config_path = os.path.join(folder, "config.json")
        with open(config_path, "wb") as f:
            f.write(inp.config)
    try:
        try:
            trace = reader(path, config_path)
        except TraceValidationError as err:
            return CLEAN, str(err).split("\n", 1)[0]
        with_input = len({r.input for r in trace.rows}) > 1
        operator = not trace.config.valve_only
        times = TimeFormat("utc", origin_ms=trace_origin(trace), short=True)
        try:
            for result in simulate(trace, explain=True):  # what `transcript` and `explain` print
                transcript_line(result, with_input=with_input, operator=operator)
                explain_line(result, times)
        except ScenarioError as err:
            return CLEAN, str(err)
        try:
            problem = _round_trip(trace, inp.fmt, folder, reader)
        except TraceValidationError as err:
            problem = f"the written file is refused: {str(err).splitlines()[0]}"
        except Exception as err:  # a writer that fails on what the reader accepted
            problem = f"the writer failed: {_traceback(err)}"
        return (ROUND_TRIP, problem) if problem else (ACCEPTED, "")
    except _Timeout:
        raise
    except MemoryError:
        return MEMORY, "MemoryError"
    except Exception as err:
        return TRACEBACK, _traceback(err)
    finally:
        for name in os.listdir(folder):
            os.unlink(os.path.join(folder, name))


def _traceback(err: BaseException) -> str:
    frames = traceback.extract_tb(err.__traceback__)[-6:]
    where = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(frames))
    return f"{type(err).__name__}: {str(err)[:300]} at {where}"


# ---- workers --------------------------------------------------------------------------------------


def _address_space() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _worker(conn: Any, seed: int, indexes: list[int], limit_s: float, memory_mb: int, reader: Reader) -> None:
    """Run `indexes` in order, sending (index, class, detail) after each."""
    import gc

    limit = _address_space() + memory_mb * (1 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.signal(signal.SIGPROF, _on_alarm)
    docs = seed_docs()
    # An exception a library could not raise (in a callback from native code) is only printed:
    # caught here, it is a traceback like any other.
    unraisable: list[str] = []
    sys.unraisablehook = lambda hook: unraisable.append(
        f"unraisable in {hook.object!r}: {_traceback(hook.exc_value) if hook.exc_value else hook.exc_type}"
    )
    with tempfile.TemporaryDirectory(prefix="wmviz-fuzz-", dir=_scratch_root()) as folder:
        for index in indexes:
            inp = make_input(seed, index, docs)
            unraisable.clear()
            signal.setitimer(signal.ITIMER_PROF, limit_s)
            signal.setitimer(signal.ITIMER_REAL, limit_s * WALL_FACTOR)
            try:
                outcome = run_input(inp, folder, reader)
            except _Timeout as timeout:
                clock = str(timeout)
                outcome = (
                    HANG,
                    f"over {limit_s * (1 if clock == 'CPU' else WALL_FACTOR):g} s of {clock} time",
                )
            except MemoryError:
                outcome = (MEMORY, "MemoryError")
            finally:
                signal.setitimer(signal.ITIMER_PROF, 0)
                signal.setitimer(signal.ITIMER_REAL, 0)
            if unraisable and outcome[0] in GOOD:
                outcome = (TRACEBACK, unraisable[0][:2000])
            conn.send((index, *outcome))
            if outcome[0] in (HANG, MEMORY):
                conn.close()
                os._exit(0)  # state may be half-built: the parent starts a fresh worker
            gc.collect(0)
    conn.close()


def _scratch_root() -> str | None:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


@dataclass
class Summary:
    """Counts per class (and per format), the first examples of each bad class, the run's time."""

    n: int
    seed: int
    counts: Counter[str] = field(default_factory=Counter)
    by_format: dict[str, Counter[str]] = field(default_factory=dict)
    examples: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    seconds: float = 0.0

    def add(self, index: int, fmt: str, cls: str, detail: str, keep: int) -> bool:
        self.counts[cls] += 1
        self.by_format.setdefault(fmt, Counter())[cls] += 1
        if cls in GOOD:
            return False
        kept = self.examples.setdefault(cls, [])
        if len(kept) < keep:
            kept.append((index, detail))
            return True
        return False

    @property
    def bad(self) -> int:
        return sum(c for cls, c in self.counts.items() if cls not in GOOD)


def run_fuzz(
    n: int,
    seed: int = 1,
    *,
    jobs: int = 1,
    time_limit: float = 10.0,
    memory_mb: int = 2048,
    out: str | None = None,
    keep: int = 5,
    reader: Reader = default_reader,
    start: int = 0,
    progress: Callable[[Summary, int], None] | None = None,
) -> Summary:
    """Run inputs [start, start + n) of `seed` in `jobs` forked workers; the classes counted."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    summary = Summary(n, seed)
    docs = seed_docs()
    began = time.perf_counter()
    pending = list(range(start, start + n))
    share = max(1, min(2000, -(-len(pending) // max(jobs, 1))))
    queue = [pending[i : i + share] for i in range(0, len(pending), share)]
    running: list[tuple[Any, Any, list[int], float]] = []  # (process, conn, indexes left, last answer)
    done = 0

    def record(index: int, cls: str, detail: str) -> None:
        nonlocal done
        inp = make_input(seed, index, docs)
        if summary.add(index, inp.fmt, cls, detail, keep) and out:
            _save(out, cls, inp, detail)
        done += 1
        if progress is not None:
            progress(summary, done)

    while queue or running:
        while queue and len(running) < jobs:
            indexes = queue.pop(0)
            parent, child = context.Pipe(duplex=False)
            process = context.Process(
                target=_worker, args=(child, seed, indexes, time_limit, memory_mb, reader), daemon=True
            )
            process.start()
            child.close()
            running.append((process, parent, list(indexes), time.monotonic()))
        for slot, (process, conn, left, last) in enumerate(list(running)):
            got = False
            while conn.poll(0.05):
                try:
                    index, cls, detail = conn.recv()
                except EOFError:
                    break
                got = True
                left.remove(index)
                record(index, cls, detail)
            if got:
                running[slot] = (process, conn, left, time.monotonic())
                continue
            stuck = time.monotonic() - last > time_limit * WALL_FACTOR + 20
            if not process.is_alive() or stuck:
                if stuck:
                    process.kill()
                process.join()
                while not stuck and conn.poll(0):  # answers sent just before it ended
                    try:
                        index, cls, detail = conn.recv()
                    except EOFError:
                        break
                    left.remove(index)
                    record(index, cls, detail)
                conn.close()
                running.pop(slot)
                if left:
                    culprit, rest = left[0], left[1:]
                    if stuck:
                        record(culprit, HANG, f"no answer in {time_limit * WALL_FACTOR + 20:g} s (killed)")
                    elif process.exitcode == 0:
                        rest = left  # it stopped on purpose after a hang or over memory: already counted
                    elif process.exitcode in (
                        -signal.SIGKILL,
                        -signal.SIGSEGV,
                        -signal.SIGABRT,
                        -signal.SIGBUS,
                    ):
                        what = MEMORY if process.exitcode == -signal.SIGKILL else CRASH
                        record(culprit, what, f"worker died with signal {-process.exitcode}")
                    else:
                        record(culprit, CRASH, f"worker exited with {process.exitcode}")
                    if rest:
                        queue.insert(0, rest)
                break
    summary.seconds = time.perf_counter() - began
    return summary


def _save(out: str, cls: str, inp: FuzzInput, detail: str) -> None:
    folder = Path(out) / cls.replace(" ", "-")
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"input-{inp.index}"
    (folder / f"{stem}{Path(inp.name).suffix}").write_bytes(inp.data)
    if inp.config is not None:
        (folder / f"{stem}-config.json").write_bytes(inp.config)
    note = f"format: {inp.fmt}\nmutations: {'; '.join(inp.mutations)}\n{cls}: {detail}\n"
    (folder / f"{stem}.txt").write_text(note)


# ---- command line -------------------------------------------------------------------------------


def report(summary: Summary, out: str | None) -> str:
    load = os.getloadavg()
    lines = [
        f"fuzz: {summary.n:,} inputs, seed {summary.seed}, {summary.seconds:.1f} s "
        f"({summary.n / max(summary.seconds, 1e-9):.0f} inputs/s); "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
    ]
    for cls in CLASSES:
        lines.append(f"  {cls:<12} {summary.counts.get(cls, 0):>8,}")
    for fmt, counts in sorted(summary.by_format.items()):
        parts = ", ".join(f"{cls} {counts[cls]:,}" for cls in CLASSES if counts.get(cls))
        lines.append(f"  [{fmt}] {parts}")
    for cls, examples in summary.examples.items():
        for index, detail in examples[:3]:
            lines.append(f"  {cls} #{index}: {detail[:300]}")
    if summary.examples and out:
        lines.append(f"first examples of each bad class saved under {out}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=10_000, help="how many inputs")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--start", type=int, default=0, help="first input index (to rerun a slice)")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes at once")
    parser.add_argument(
        "--time-limit", type=float, default=10.0, help="CPU seconds per input (wall: 3 times)"
    )
    parser.add_argument("--memory-mb", type=int, default=2048, help="address space per input beyond start-up")
    parser.add_argument("--keep", type=int, default=5, help="examples saved per bad class")
    parser.add_argument("--out", default="fuzz-out", help="folder for the examples of bad classes")
    args = parser.parse_args(argv)
    started = time.perf_counter()

    def progress(summary: Summary, done: int) -> None:
        if done % 5000 == 0:
            rate = done / (time.perf_counter() - started)
            print(f"  … {done:,} done ({rate:.0f}/s), {summary.bad} bad", file=sys.stderr, flush=True)

    summary = run_fuzz(
        args.n,
        args.seed,
        jobs=args.jobs,
        time_limit=args.time_limit,
        memory_mb=args.memory_mb,
        out=args.out,
        keep=args.keep,
        start=args.start,
        progress=progress,
    )
    print(report(summary, args.out))
    return 1 if summary.bad else 0


if __name__ == "__main__":
    sys.exit(main())
