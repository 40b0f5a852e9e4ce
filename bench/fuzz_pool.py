"""The fuzzer's worker pool: seeded inputs of one target run in forked, limited workers.

A target (`Target`) makes input `i` of seed `s` as a pure function of the two and runs it in a
scratch folder, answering an outcome class and a detail. Inputs run many per worker (a fork per
input would cost more than most inputs): each worker caps its address space (RLIMIT_AS, the
start-up size + the memory limit) and arms a CPU-time and a wall-clock timer per input (CPU time
measures the input, not how busy the shared machine is); the parent kills a worker that does not
answer within the wall limit plus a grace period, and starts another after the input that killed
it. The first examples of each bad class are saved to the output folder.

Inputs that mostly wait (the recorder's polls against the fake JobManager: its sleeps between
polls, its retries, answers that are slow on purpose) use little CPU, so a run may give them their
own workers (`PoolOptions.wait_jobs`) beside the `jobs` workers of the others: the same inputs
under the same limits, only no longer queued behind each other's waits.

Workers start warm: what an input imports (wmviz's modules, plotly, pyarrow, streamlit: ~1.2 CPU-s
in a fresh worker, a share of 100 inputs takes 4-9) is imported once in the parent, and every later
worker is forked with it. A worker tells the parent, when its share ends, which modules its inputs
imported; the parent imports them (`PoolOptions.warm`) and freezes its objects out of the cyclic
collector, so forked workers share those pages rather than copying them at their first collection.
The per-input limits are unchanged: a worker's address-space cap is measured from its own start-up
size, the warm modules included.
"""

from __future__ import annotations

import os
import re
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
from typing import Any, Protocol

ACCEPTED, CLEAN, TRACEBACK, HANG, MEMORY, CRASH, ROUND_TRIP, UNREADABLE = (
    "accepted",
    "clean error",
    "traceback",
    "hang",
    "over memory",
    "crash",
    "round trip",
    "unreadable output",
)
INJECTED = "markup"
"""User text that became markup: a tag, a style or a link to elsewhere in HTML a page draws."""
CLASSES = (ACCEPTED, CLEAN, TRACEBACK, HANG, MEMORY, CRASH, ROUND_TRIP, UNREADABLE, INJECTED)
GOOD = frozenset({ACCEPTED, CLEAN})
Outcome = tuple[str, str]

WALL_FACTOR = 3
"""The wall-clock limit is this many times the CPU limit: on a shared machine an input's own cost
is its CPU time, and a wait that uses none (a blocked read) is caught by the wall clock."""
GRACE_S = 20


class Case(Protocol):
    """One input, as the pool counts and saves it."""

    @property
    def index(self) -> int: ...

    @property
    def fmt(self) -> str: ...

    def files(self) -> dict[str, bytes]:
        """The input's files by name (what is saved as the example)."""
        ...

    def note(self) -> str:
        """How the input was made (format, mutations, arguments)."""
        ...


class Target(Protocol):
    """A surface under fuzz: how input `index` of `seed` is made, and how one runs."""

    name: str

    def make(self, seed: int, index: int) -> Case: ...

    def run(self, case: Any, folder: str) -> Outcome: ...


class Timeout(BaseException):
    """A per-input timer fired (a BaseException, so no `except Exception` in wmviz swallows it)."""


def _on_alarm(signum: int, frame: Any) -> None:
    raise Timeout("CPU" if signum == signal.SIGPROF else "wall-clock")


def describe(err: BaseException) -> str:
    """The exception's type, message and last frames, innermost first."""
    frames = traceback.extract_tb(err.__traceback__)[-6:]
    where = " <- ".join(f"{Path(f.filename).name}:{f.lineno} {f.name}" for f in reversed(frames))
    return f"{type(err).__name__}: {str(err)[:300]} at {where}"


@dataclass(frozen=True)
class PoolOptions:
    """How a run is limited: workers at once, CPU seconds and address space per input, examples
    kept per bad class (saved under `out`), and a wall-clock budget for the whole run."""

    jobs: int = 1
    time_limit: float = 10.0
    memory_mb: int = 2048
    out: str | None = None
    keep: int = 5
    seconds: float | None = None
    """Stop starting inputs after this long (the run counts what it finished)."""
    wait_jobs: int = 0
    """Workers at once for the inputs `run_pool`'s `waits` names (0: they share the `jobs` workers)."""
    warm: bool = True
    """Import in the parent what the workers' inputs imported, so later workers are forked warm."""


# ---- workers --------------------------------------------------------------------------------------


def _address_space() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _scratch_root() -> str | None:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


def _one(target: Target, case: Case, folder: str, limit_s: float, unraisable: list[str]) -> Outcome:
    """Run one case under its timers; an exception a library could only print counts too."""
    unraisable.clear()
    signal.setitimer(signal.ITIMER_PROF, limit_s)
    signal.setitimer(signal.ITIMER_REAL, limit_s * WALL_FACTOR)
    try:
        outcome = target.run(case, folder)
    except Timeout as timeout:
        clock = str(timeout)
        outcome = (HANG, f"over {limit_s * (1 if clock == 'CPU' else WALL_FACTOR):g} s of {clock} time")
    except MemoryError:
        outcome = (MEMORY, "MemoryError")
    finally:
        signal.setitimer(signal.ITIMER_PROF, 0)
        signal.setitimer(signal.ITIMER_REAL, 0)
    if unraisable and outcome[0] in GOOD:
        outcome = (TRACEBACK, unraisable[0][:2000])
    return outcome


def _worker(conn: Any, target: Target, seed: int, indexes: list[int], options: PoolOptions) -> None:
    """Run `indexes` in order, sending (index, class, detail) after each."""
    import gc

    limit = _address_space() + options.memory_mb * (1 << 20)
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.signal(signal.SIGPROF, _on_alarm)
    unraisable: list[str] = []
    known = set(sys.modules)
    sys.unraisablehook = lambda hook: unraisable.append(
        f"unraisable in {hook.object!r}: {describe(hook.exc_value) if hook.exc_value else hook.exc_type}"
    )
    with tempfile.TemporaryDirectory(prefix="wmviz-fuzz-", dir=_scratch_root()) as folder:
        for index in indexes:
            case = target.make(seed, index)
            began = time.perf_counter()
            outcome = _one(target, case, folder, options.time_limit, unraisable)
            conn.send((index, case.fmt, *outcome, time.perf_counter() - began))
            if outcome[0] in (HANG, MEMORY):
                conn.close()
                os._exit(0)  # state may be half-built: the parent starts a fresh worker
            gc.collect(0)
    conn.send((MODULES, [name for name in list(sys.modules) if name not in known]))
    conn.close()


MODULES = "modules"
"""The tag of a worker's last message: the modules its inputs imported (for the parent to warm)."""


def warm_up(names: list[str]) -> None:
    """Import `names` here, in the parent, so the workers forked from now on start with them; a
    module that does not import here (one that only imports in its worker's state) is skipped."""
    import gc
    import importlib

    for name in names:
        if name not in sys.modules and not name.startswith("__"):
            try:
                importlib.import_module(name)
            except Exception:  # warming is an optimisation, never a failure
                sys.modules.pop(name, None)
    gc.freeze()


# ---- the parent -----------------------------------------------------------------------------------


def signature(fmt: str, cls: str, detail: str) -> str:
    """What tells one bad outcome from another: the target, the class, the exception's type and
    message with numbers and quoted values blanked, and the innermost frame."""
    message, _, frames = detail.partition(" at ")
    message = message.split(" (run with --debug", 1)[0]
    message = re.sub(r"'[^']*'|\"[^\"]*\"", "'…'", message)
    message = re.sub(r"\d[\d,.]*", "N", message)[:160]
    return f"{fmt} | {cls} | {message} | {frames.split(' <- ', 1)[0]}"


@dataclass
class Summary:
    """Counts per class (and per format or target), the first examples of each bad class, the time."""

    n: int
    seed: int
    counts: Counter[str] = field(default_factory=Counter)
    by_format: dict[str, Counter[str]] = field(default_factory=dict)
    examples: dict[str, list[tuple[int, str]]] = field(default_factory=dict)
    seconds: float = 0.0
    signatures: dict[str, list[int]] = field(default_factory=dict)
    """Each distinct bad outcome (`signature`): the inputs that ended in it."""
    busy: dict[str, float] = field(default_factory=dict)
    """Wall-clock seconds the inputs of each format or target took in their workers."""

    def add(self, index: int, fmt: str, cls: str, detail: str, keep: int, seconds: float = 0.0) -> bool:
        """Count one outcome (that took `seconds` in its worker); True when it is a bad one worth
        saving as an example (one of the first `keep` of its class, or the first of its signature)."""
        self.counts[cls] += 1
        self.by_format.setdefault(fmt, Counter())[cls] += 1
        self.busy[fmt] = self.busy.get(fmt, 0.0) + seconds
        if cls in GOOD:
            return False
        seen = self.signatures.setdefault(signature(fmt, cls, detail), [])
        seen.append(index)
        kept = self.examples.setdefault(cls, [])
        if len(kept) < keep or len(seen) == 1:
            kept.append((index, detail))
            return True
        return False

    @property
    def done(self) -> int:
        """Inputs that ended in a class."""
        return sum(self.counts.values())

    @property
    def bad(self) -> int:
        """Inputs outside accepted and clean error."""
        return sum(c for cls, c in self.counts.items() if cls not in GOOD)


@dataclass
class _Slot:
    process: Any
    conn: Any
    left: list[int]
    last: float
    waiting: bool = False
    """A worker of the inputs that mostly wait (`PoolOptions.wait_jobs`)."""


class _Pool:
    """The running workers of one run, and what they answered."""

    def __init__(self, target: Target, seed: int, options: PoolOptions, summary: Summary) -> None:
        import multiprocessing

        self.context = multiprocessing.get_context("fork")
        self.target, self.seed, self.options, self.summary = target, seed, options, summary
        self.slots: list[_Slot] = []
        self.progress: Callable[[Summary, int], None] | None = None

    def start(self, indexes: list[int], waiting: bool = False) -> None:
        parent, child = self.context.Pipe(duplex=False)
        process = self.context.Process(
            target=_worker, args=(child, self.target, self.seed, indexes, self.options), daemon=True
        )
        process.start()
        child.close()
        self.slots.append(_Slot(process, parent, list(indexes), time.monotonic(), waiting))

    def running(self, waiting: bool) -> int:
        """Workers of the one kind now running."""
        return sum(1 for slot in self.slots if slot.waiting == waiting)

    def record(self, index: int, cls: str, detail: str, fmt: str | None = None, seconds: float = 0.0) -> None:
        """Count one outcome (the input is made again here only to learn its format or to save it)."""
        case = self.target.make(self.seed, index) if fmt is None else None
        fmt = case.fmt if case is not None else fmt
        assert fmt is not None
        if self.summary.add(index, fmt, cls, detail, self.options.keep, seconds) and self.options.out:
            save(self.options.out, cls, case or self.target.make(self.seed, index), detail)
        if self.progress is not None:
            self.progress(self.summary, self.summary.done)

    def drain(self, slot: _Slot, wait: float) -> bool:
        """Record the answers waiting on the slot's pipe; whether there were any."""
        got = False
        while slot.conn.poll(wait):
            try:
                message = slot.conn.recv()
            except EOFError:
                break
            got = True
            if message[0] == MODULES:
                if self.options.warm:
                    warm_up(message[1])
                continue
            index, fmt, cls, detail, seconds = message
            slot.left.remove(index)
            self.record(index, cls, detail, fmt, seconds)
        return got

    def ended(self, slot: _Slot, stuck: bool) -> list[int]:
        """A worker ended or is stuck: the input it was on gets its class; the rest to run again
        (on a worker of the same kind)."""
        if stuck:
            slot.process.kill()
        slot.process.join()
        if not stuck:
            self.drain(slot, 0)  # answers sent just before it ended
        slot.conn.close()
        if not slot.left:
            return []
        culprit, rest = slot.left[0], slot.left[1:]
        code = slot.process.exitcode
        took = time.monotonic() - slot.last
        if stuck:
            wall = self.options.time_limit * WALL_FACTOR + GRACE_S
            self.record(culprit, HANG, f"no answer in {wall:g} s (killed)", seconds=took)
        elif code == 0:
            rest = slot.left  # it stopped on purpose after a hang or over memory: already counted
        elif code in (-signal.SIGKILL, -signal.SIGSEGV, -signal.SIGABRT, -signal.SIGBUS):
            what = MEMORY if code == -signal.SIGKILL else CRASH
            self.record(culprit, what, f"worker died with signal {-code}", seconds=took)
        else:
            self.record(culprit, CRASH, f"worker exited with {code}", seconds=took)
        return rest

    def poll_once(self) -> tuple[bool, list[int]] | None:
        """Wait a little for each worker; when one ended, its kind and the indexes to run again."""
        wall = self.options.time_limit * WALL_FACTOR + GRACE_S
        for i, slot in enumerate(self.slots):
            if self.drain(slot, 0.05 / len(self.slots)):
                slot.last = time.monotonic()
                continue
            stuck = time.monotonic() - slot.last > wall
            if not slot.process.is_alive() or stuck:
                self.slots.pop(i)
                return slot.waiting, self.ended(slot, stuck)
        return None


def run_pool(
    target: Target,
    n: int,
    seed: int = 1,
    options: PoolOptions | None = None,
    *,
    start: int = 0,
    progress: Callable[[Summary, int], None] | None = None,
    waits: Callable[[int], bool] | None = None,
) -> Summary:
    """Run inputs [start, start + n) of `seed` in forked workers; the classes counted. With
    `options.wait_jobs`, the inputs `waits` names run in workers of their own."""
    options = options or PoolOptions()
    summary = Summary(n, seed)
    began = time.perf_counter()
    deadline = None if options.seconds is None else time.monotonic() + options.seconds
    pending = list(range(start, start + n))
    split = waits is not None and options.wait_jobs > 0
    waiting = [i for i in pending if waits(i)] if split and waits is not None else []
    chosen = set(waiting)
    queues = {
        False: _shares([i for i in pending if i not in chosen], options.jobs, deadline is not None),
        True: _shares(waiting, options.wait_jobs, deadline is not None),
    }
    most = {False: options.jobs, True: options.wait_jobs}
    pool = _Pool(target, seed, options, summary)
    pool.progress = progress
    while queues[False] or queues[True] or pool.slots:
        if deadline is not None and time.monotonic() > deadline:
            queues[False].clear()
            queues[True].clear()
        for kind, queue in queues.items():
            while queue and pool.running(kind) < most[kind]:
                pool.start(queue.pop(0), kind)
        ended = pool.poll_once()
        if ended and ended[1]:
            queues[ended[0]].insert(0, ended[1])
    summary.seconds = time.perf_counter() - began
    summary.n = summary.done
    return summary


def _shares(pending: list[int], jobs: int, budgeted: bool) -> list[list[int]]:
    """The indexes in runs of consecutive shares, one worker's each (small ones when the run has a
    time budget, so it stops near it)."""
    most = 100 if budgeted else 2000
    share = max(1, min(most, -(-len(pending) // max(jobs, 1))))
    return [pending[i : i + share] for i in range(0, len(pending), share)]


def save(out: str, cls: str, case: Case, detail: str) -> None:
    """The input's files and a note of how it was made and what happened, under out/<class>/."""
    folder = Path(out) / cls.replace(" ", "-")
    folder.mkdir(parents=True, exist_ok=True)
    stem = f"{case.fmt.replace('/', '-')}-{case.index}"
    for name, data in case.files().items():
        (folder / f"{stem}-{name}").write_bytes(data)
    (folder / f"{stem}.txt").write_text(f"{case.note()}\n{cls}: {detail}\n")


def report(summary: Summary, out: str | None) -> str:
    """The counts per class and per format or target, and the first examples of each bad class."""
    load = os.getloadavg()
    lines = [
        f"fuzz: {summary.n:,} inputs, seed {summary.seed}, {summary.seconds:.1f} s "
        f"({summary.n / max(summary.seconds, 1e-9):.0f} inputs/s); "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}",
    ]
    for cls in CLASSES:
        lines.append(f"  {cls:<17} {summary.counts.get(cls, 0):>8,}")
    for fmt, counts in sorted(summary.by_format.items()):
        parts = ", ".join(f"{cls} {counts[cls]:,}" for cls in CLASSES if counts.get(cls))
        each = summary.busy.get(fmt, 0.0) / max(sum(counts.values()), 1)
        lines.append(f"  [{fmt}] {parts}; {each * 1000:.0f} ms an input in its worker")
    for cls, examples in summary.examples.items():
        for index, detail in examples[:3]:
            lines.append(f"  {cls} #{index}: {detail[:300]}")
    for sig, indexes in sorted(summary.signatures.items()):
        lines.append(f"  {len(indexes):>6,} × {sig}  (e.g. #{indexes[0]})")
    if summary.examples and out:
        lines.append(f"first examples of each bad class saved under {out}")
    return "\n".join(lines)
