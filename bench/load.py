"""Many people on one server: N sessions step through different incidents for a set time.

    python bench/load.py --sessions 20 --minutes 10                   # the goal, Streamlit's protocol
    python bench/load.py --sessions 5 --minutes 3 --client browser    # the same walk in Chromium

Each session opens an incident by its link, steps to its last step with `--think` seconds between
steps (a person reading), opens the next incident, and so on, each session starting at another
incident. After every step it checks the page is its own: the title is its incident's, the one
step heading is the step it expects of that incident's step count, the link carries that step,
and no exception is on the page. Anything else is an error (cross-talk when the page shows another
incident's title, step or step count). The clients (`bench/load_sessions.py`): `ws` speaks
Streamlit's websocket protocol as the page does (no rendering: light enough for 20 on 2 cores);
`browser` drives pages in their own contexts of one Debian Chromium with the Right key.

Measured:
* server step time: one timed script run per step (the step area's fragment, callbacks
  included, from its start to its last element sent), by a timer wrapped around Streamlit's
  script execution in the server process this benchmark starts; full runs (page loads) apart;
* client step time: the step asked for -> the new step read back (over the websocket, or on the
  page in Chromium); what it adds to the server's time is the client's: the websocket, waiting
  for a CPU, and in a browser the rendering;
* the server's and Chromium's CPU seconds, and the server's resident memory every 10 s.

The server runs with WMVIZ_SPARK_START=lazy and the in-process engine (the incidents are small:
`auto` picks it too): Spark is not what this measures. The load average is printed before and
after: the machine is shared.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from tools.appserver import free_port, healthy, stop_group  # noqa: E402 (the checkout on the path first)

GOAL_P95_S = 1.0


# --- the server, with a timer on every script run --------------------------------------------------


def serve(port: int, log: str) -> None:
    """`streamlit run app.py` in this process, every script run timed into `log` (JSON lines)."""
    import threading

    from streamlit.runtime.scriptrunner import script_runner

    run = script_runner.exec_func_with_error_handling
    lock = threading.Lock()
    out = open(log, "a", buffering=1)  # noqa: SIM115  (open for the server's life)

    profile_to = os.environ.get("WMVIZ_LOAD_PROFILE")  # where the steps' profile goes, if asked
    profiled = []

    def timed(func, ctx):
        started = time.perf_counter()
        fragment = bool(getattr(ctx, "fragment_ids_this_run", None))
        if profile_to and fragment:
            result = _profiled(run, func, ctx, profiled, profile_to, lock)
        else:
            result = run(func, ctx)
        took = time.perf_counter() - started
        error = result[4]
        record = {"t": time.time(), "session": ctx.session_id, "s": took, "fragment": fragment}
        if error is not None:
            record["error"] = f"{type(error).__name__}: {error}"[:300]
        with lock:
            out.write(json.dumps(record) + "\n")
        return result

    script_runner.exec_func_with_error_handling = timed
    from streamlit.web import cli

    sys.argv = ["streamlit", "run", str(REPO / "app.py"), "--server.headless", "true",
                "--browser.gatherUsageStats", "false", "--server.address", "127.0.0.1",
                "--server.port", str(port), "--server.fileWatcherType", "none"]  # fmt: skip
    cli.main()


def _profiled(run, func, ctx, profiled: list, path: str, lock) -> tuple:
    """One step's run under cProfile (its own thread only); every 20 steps, all of them so far
    are written to `path` (pstats), since the server is stopped by a signal."""
    import cProfile
    import pstats

    profiler = cProfile.Profile()
    profiler.enable()
    try:
        return run(func, ctx)
    finally:
        profiler.disable()
        with lock:
            profiled.append(profiler)
            if len(profiled) % 20 == 0:
                pstats.Stats(*profiled).dump_stats(path)


class Server:
    """This file run as the server (`--serve`), in its own data root, stopped at the end."""

    def __init__(self, work: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = work / "runs.jsonl"
        env = {**os.environ, "WMVIZ_CACHE": str(work / "data"), "WMVIZ_SPARK_START": "lazy"}
        self.process = subprocess.Popen(
            [sys.executable, __file__, "--serve", str(self.port), str(self.log)],
            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=open(work / "server.err", "w"),  # noqa: SIM115
            start_new_session=True,
        )  # fmt: skip

    def wait_healthy(self) -> None:
        for _ in range(600):
            if healthy(self.url, timeout=1):
                return
            time.sleep(0.1)
        raise RuntimeError("the server did not start")

    def runs(self) -> list[dict]:
        if not self.log.is_file():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def stop(self) -> None:
        stop_group(self.process, 15, 15)


# --- processes: memory and CPU from /proc -----------------------------------------------------------


def rss_mb(pid: int) -> float:
    """Resident memory of `pid` and its descendants (a JVM, if one started), in MB."""
    total = 0
    for p in [pid, *descendants(pid)]:
        try:
            for line in Path(f"/proc/{p}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds of these processes so far."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0
    for p in pids:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])
        except (OSError, IndexError):
            continue
    return total / tick


def descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int(entry.joinpath("stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found


def chromium_pids() -> list[int]:
    """Chromium's processes started under this benchmark (Playwright's driver starts them)."""
    pids = []
    for p in descendants(os.getpid()):
        try:
            if "chromium" in Path(f"/proc/{p}/cmdline").read_bytes().split(b"\0")[0].decode(errors="replace"):
                pids.append(p)
        except OSError:
            continue
    return pids


# --- the report -------------------------------------------------------------------------------------


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


def spread(values: list[float]) -> str:
    if not values:
        return "none"
    return (
        f"p50 {statistics.median(values) * 1000:,.0f} ms, p95 {pct(values, 0.95) * 1000:,.0f} ms, "
        f"max {max(values) * 1000:,.0f} ms (n={len(values):,})"
    )


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--minutes", type=float, default=10)
    parser.add_argument("--think", type=float, default=1.0, help="seconds between a session's key presses")
    parser.add_argument("--ramp", type=float, default=1.0, help="seconds between sessions' arrivals")
    parser.add_argument(
        "--client", choices=("ws", "browser"), default="ws", help="see bench/load_sessions.py"
    )
    parser.add_argument("--serve", nargs=2, metavar=("PORT", "LOG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    from load_sessions import drive

    if args.serve:
        serve(int(args.serve[0]), args.serve[1])
        return
    print(f"load average before: {load()}", flush=True)
    work = Path(tempfile.mkdtemp(prefix="wmviz-load-"))
    server = Server(work)
    memory: list[tuple[float, float]] = []
    try:
        server.wait_healthy()
        began = time.monotonic()
        stop = asyncio.Event()

        async def sample() -> None:
            while not stop.is_set():
                memory.append((time.monotonic() - began, rss_mb(server.process.pid)))
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 10)

        async def run() -> tuple:
            sampler = asyncio.create_task(sample())
            server_cpu = cpu_seconds([server.process.pid])
            chromium_cpu = [0.0]

            async def watch_chromium() -> None:  # Chromium's processes come and go: sum their last reading
                seen: dict[int, float] = {}
                while not stop.is_set():
                    for pid in chromium_pids():
                        seen[pid] = cpu_seconds([pid])
                    chromium_cpu[0] = sum(seen.values())
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), 2)

            watcher = asyncio.create_task(watch_chromium())
            tally = await drive(
                server.url, args.client, args.sessions, args.minutes * 60, args.think, args.ramp
            )
            server_cpu = cpu_seconds([server.process.pid]) - server_cpu
            stop.set()
            await sampler
            await watcher
            return tally, server_cpu, chromium_cpu[0]

        tally, server_cpu, chromium_cpu = asyncio.run(run())
        wall = time.monotonic() - began
        runs = server.runs()
    finally:
        server.stop()
    report(args, tally, runs, memory, server_cpu, chromium_cpu, wall)
    shutil.rmtree(work, ignore_errors=True)
    print(f"load average after: {load()}", flush=True)


def report(args, tally, runs: list[dict], memory, server_cpu: float, chromium_cpu: float,
           wall: float) -> None:  # fmt: skip
    steps = [r["s"] for r in runs if r["fragment"]]
    full = [r["s"] for r in runs if not r["fragment"]]
    server_errors = [r["error"] for r in runs if "error" in r]
    print(
        f"{args.sessions} sessions for {args.minutes:g} min ({wall:,.0f} s), {args.think:g} s between presses"
    )
    print(f"steps pressed: {len(tally.presses):,}; incident switches: {len(tally.switches):,}; "
          f"page checks: {tally.checks:,}")  # fmt: skip
    print(f"errors: {len(tally.errors) + len(server_errors)} ({len(tally.errors)} in clients, "
          f"{len(server_errors)} script exceptions on the server); "
          f"cross-talk: {len(tally.crosstalk)}")  # fmt: skip
    for line in (tally.errors + server_errors + tally.crosstalk)[:15]:
        print(f"  {line}")
    print(f"server step (one fragment run per press): {spread(steps)}")
    print(f"server full runs (page loads, incident switches): {spread(full)}")
    print(f"{args.client} client step (asked -> new step read back): {spread(tally.presses)}")
    if tally.presses and steps:
        client_part = statistics.median(tally.presses) - statistics.median(steps)
        print(f"  outside the script run (p50 client - p50 server: the websocket, the wait for a script "
              f"thread and a CPU, {'rendering' if args.client == 'browser' else 'reading the messages'}): "
              f"{client_part * 1000:,.0f} ms")  # fmt: skip
    print(f"{args.client} client page open (link -> step 0 read back): {spread(tally.switches)}")
    print(f"CPU over the run: server {server_cpu:,.0f} s ({server_cpu / wall:.0%} of one core), "
          f"Chromium {chromium_cpu:,.0f} s ({chromium_cpu / wall:.0%} of one core), "
          f"{os.cpu_count()} cores")  # fmt: skip
    if memory:
        series = ", ".join(f"{t / 60:.1f}m {mb:,.0f}" for t, mb in memory[:: max(1, len(memory) // 12)])
        print(f"server memory (MB): {series}")
        settled = [mb for t, mb in memory if t >= min(120, wall / 3)]
        if len(settled) >= 2:
            half = len(settled) // 2
            first, second = statistics.mean(settled[:half]), statistics.mean(settled[half:])
            peak = max(mb for _, mb in memory)
            print(f"  after warm-up: mean of the first half {first:,.0f} MB, of the second "
                  f"{second:,.0f} MB ({(second - first) / first:+.1%}); peak {peak:,.0f} MB")  # fmt: skip
    clean = not tally.errors and not server_errors and not tally.crosstalk
    held = clean and bool(steps) and pct(steps, 0.95) <= GOAL_P95_S
    verdict = "held" if held else "NOT held"
    print(f"goal (0 errors, no cross-talk, server step p95 <= {GOAL_P95_S:g} s): {verdict}")


if __name__ == "__main__":
    main()
