"""Many people on one server, or on N servers behind a proxy: sessions step through incidents
for a set time.

    python bench/load.py --sessions 20 --minutes 10                   # the goal, Streamlit's protocol
    python bench/load.py --sessions 50 --minutes 2 --mode same-link   # a team on one incident link
    python bench/load.py --sessions 20 --minutes 1 --servers 1,2 --rounds 2   # 1 vs 2 servers, interleaved
    python bench/load.py --sessions 5 --minutes 3 --client browser    # the same walk in Chromium
    python bench/load.py --sessions 20 --minutes 1 --url http://127.0.0.1:8501   # a server already running

Each session opens an incident by its link, steps to its last step with `--think` seconds between
steps (a person reading), opens the next incident, and so on: in `--mode spread` (the default)
each session starts at another incident, in `--mode same-link` all open the one link (`--incident`,
else the first built-in) and step the same steps. After every step a session checks the page is
its own: the title is its incident's, the one step heading is the step it expects of that
incident's step count, the link carries that step, and no exception is on the page. Anything else
is an error (cross-talk when the page shows another incident's title, step or step count). The
clients (`bench/load_sessions.py`): `ws` speaks Streamlit's websocket protocol as the page does
(no rendering: light enough for 50 on 2 cores); `browser` drives pages in their own contexts of
one Debian Chromium with the Right key.

`--servers N` starts N app servers; past one they sit behind HAProxy with sticky sessions
(`tools/serve_many.py`, `deploy/haproxy.cfg`), sharing one data root. A list (`1,2`) runs a phase
of each in turn, `--rounds` times, each phase `--minutes` long with fresh servers, and ends with
the phases side by side.

Measured, per phase:
* server step time: one timed script run per step (the step area's fragment, callbacks
  included, from its start to its last element sent), by a timer wrapped around Streamlit's
  script execution in the servers this benchmark starts (not with `--url`); full runs apart;
* client step time: the step asked for -> the new step read back (over the websocket, or on the
  page in Chromium); what it adds to the server's time is the client's: the websocket, the
  proxy, waiting for a CPU, and in a browser the rendering;
* CPU: each app server's, the proxy's and Chromium's CPU seconds over the wall time (from
  /proc), and how busy the whole machine was (/proc/stat);
* memory: the app servers' resident memory every 2 s, from before the first session (start,
  peak, end, and whether it stays flat after warm-up); the load average alike.

The servers run with WMVIZ_SPARK_START=lazy and the in-process engine (the incidents are small:
`auto` picks it too): Spark is not what this measures. The machine is shared: the load average
is printed before and after, and sampled during each phase.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))
from load_report import (  # noqa: E402
    Phase,
    Usage,
    chromium_pids,
    compare,
    cpu_seconds,
    descendants,
    load,
    machine_ticks,
    report,
    rss_mb,
)
from load_sessions import MODES, Crowd, Tally, drive  # noqa: E402

from tools.appserver import free_port, stop_group  # noqa: E402 (the checkout on the path first)
from tools.serve_many import farm, free_ports, wait_healthy  # noqa: E402

SAMPLE_EVERY_S = 2.0


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


def start_timed_server(port: int, log: Path, data: Path, stderr: Path) -> subprocess.Popen:
    """This file run as a server (`--serve`) on `port`, its script runs timed into `log`, its
    data root `data` (shared by the servers of a phase), in a session of its own."""
    env = {**os.environ, "WMVIZ_CACHE": str(data), "WMVIZ_SPARK_START": "lazy"}
    with open(stderr, "ab") as err:
        return subprocess.Popen(
            [sys.executable, __file__, "--serve", str(port), str(log)],
            cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
        )  # fmt: skip


def read_runs(log: Path) -> list[dict]:
    if not log.is_file():
        return []
    return [json.loads(line) for line in log.read_text().splitlines() if line.strip()]


class Server:
    """One timed server in its own data root under `work`, stopped at the end."""

    def __init__(self, work: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = work / "runs.jsonl"
        self.process = start_timed_server(self.port, self.log, work / "data", work / "server.err")

    def wait_healthy(self) -> None:
        wait_healthy(self.url, self.process, "the app server")

    def runs(self) -> list[dict]:
        return read_runs(self.log)

    def stop(self) -> None:
        stop_group(self.process, 15, 15)


# --- a phase: its servers, the crowd, and what it cost -------------------------------------------------


@contextlib.contextmanager
def servers_of(count: int, work: Path):
    """`count` timed servers (past one, behind the proxy) sharing a data root under `work`;
    yields the URL to open, the servers' processes, the proxy's (or None) and their run logs."""
    if count == 1:
        server = Server(work)
        try:
            server.wait_healthy()
            yield server.url, [server.process], None, [server.log]
        finally:
            server.stop()
        return
    front, *ports = free_ports(count + 1)
    logs = [work / f"runs-{port}.jsonl" for port in ports]

    def launch(port: int, err: Path) -> subprocess.Popen:
        return start_timed_server(port, work / f"runs-{port}.jsonl", work / "data", err)

    with farm(front, ports, work, launch=launch) as (url, processes, proxy):
        yield url, processes, proxy, logs


async def measure(
    url: str, client: str, crowd: Crowd, servers: list[int], proxy: int | None
) -> tuple[Tally, Usage]:
    """The crowd against `url`, with the servers' (pids) and proxy's CPU, the servers' memory,
    the load average and the machine's busy share sampled over it."""
    usage = Usage()
    stop = asyncio.Event()
    began = time.monotonic()
    ticks = machine_ticks()
    cpu_at_start = [cpu_seconds([pid, *descendants(pid)]) for pid in servers]
    proxy_at_start = cpu_seconds([proxy]) if proxy else 0.0
    clients_at_start = cpu_seconds([os.getpid()])  # the ws clients run in this process

    async def sample() -> None:
        chromium: dict[int, float] = {}  # Chromium's processes come and go: sum their last reading
        while not stop.is_set():
            usage.load.append(os.getloadavg()[0])
            if servers:
                usage.memory.append((time.monotonic() - began, sum(rss_mb(pid) for pid in servers)))
            if client == "browser":
                for pid in chromium_pids():
                    chromium[pid] = cpu_seconds([pid])
                usage.chromium_cpu_s = sum(chromium.values())
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), SAMPLE_EVERY_S)

    if servers:  # the first sample before the first session arrives
        usage.memory.append((0.0, sum(rss_mb(pid) for pid in servers)))
    sampler = asyncio.create_task(sample())
    tally = await drive(url, client, crowd)
    usage.server_cpu_s = [
        cpu_seconds([pid, *descendants(pid)]) - at for pid, at in zip(servers, cpu_at_start, strict=True)
    ]
    usage.proxy_cpu_s = cpu_seconds([proxy]) - proxy_at_start if proxy else 0.0
    usage.clients_cpu_s = cpu_seconds([os.getpid()]) - clients_at_start
    busy, total = (now - then for now, then in zip(machine_ticks(), ticks, strict=True))
    usage.machine_busy = busy / total if total else float("nan")
    usage.wall_s = time.monotonic() - began
    stop.set()
    await sampler
    return tally, usage


def run_phase(count: int | None, args: argparse.Namespace, crowd: Crowd) -> Phase:
    """One phase: `count` fresh servers (None: the outside server at --url) and the crowd."""
    if count is None:
        tally, usage = asyncio.run(measure(args.url, args.client, crowd, [], None))
        return Phase(f"outside server {args.url}", crowd.sessions, tally, None, usage)
    work = Path(tempfile.mkdtemp(prefix="wmviz-load-"))
    label = "1 server" if count == 1 else f"{count} servers behind haproxy"
    try:
        with servers_of(count, work) as (url, processes, proxy, logs):
            tally, usage = asyncio.run(
                measure(url, args.client, crowd, [p.pid for p in processes], proxy.pid if proxy else None)
            )
            time.sleep(0.5)  # the last runs' lines
            runs = [run for log in logs for run in read_runs(log)]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return Phase(f"{label}, {crowd.mode}", crowd.sessions, tally, runs, usage)


def plan(args: argparse.Namespace) -> list[int | None]:
    """The phases in order: each server count of --servers, --rounds times (None: --url)."""
    if args.url:
        return [None] * args.rounds
    counts = [int(c) for c in str(args.servers).split(",") if c.strip()]
    if not counts or min(counts) < 1:
        raise SystemExit("--servers: one or more counts of at least 1, such as 2 or 1,2")
    return counts * args.rounds


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, default=20)
    parser.add_argument("--minutes", type=float, default=10, help="each phase's length (fractions allowed)")
    parser.add_argument("--think", type=float, default=1.0, help="seconds between a session's key presses")
    parser.add_argument("--ramp", type=float, default=1.0, help="seconds between sessions' arrivals")
    parser.add_argument("--presses", type=int, help="each session leaves after this many key presses "
                        "(--minutes then only bounds the phase)")  # fmt: skip
    parser.add_argument("--mode", choices=MODES, default="spread",
                        help="spread: each session its own incident first; same-link: everyone "
                        "on one incident link, stepping the same steps")  # fmt: skip
    parser.add_argument("--incident", help="the incident (slug) opened first, the one link of same-link")
    parser.add_argument(
        "--client", choices=("ws", "browser"), default="ws", help="see bench/load_sessions.py"
    )
    parser.add_argument(
        "--servers", default="1", help="app servers: 1, 2 (behind haproxy), or 1,2 to compare"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="how many times the --servers phases run, in turn"
    )
    parser.add_argument("--url", help="an app (or proxy) already running: only the clients' figures")
    parser.add_argument("--serve", nargs=2, metavar=("PORT", "LOG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve(int(args.serve[0]), args.serve[1])
        return
    crowd = Crowd(
        args.sessions, args.minutes * 60, args.think, args.ramp, args.mode, args.incident, args.presses
    )
    print(f"load average before: {load()}; {args.sessions} sessions, {args.mode}, {args.minutes:g} min "
          f"per phase, {args.think:g} s between presses, {args.client} clients", flush=True)  # fmt: skip
    phases = []
    for count in plan(args):
        phases.append(run_phase(count, args, crowd))
        report(phases[-1], args.client)
        print(f"load average now: {load()}", flush=True)
    if len(phases) > 1:
        compare(phases)


if __name__ == "__main__":
    main()
