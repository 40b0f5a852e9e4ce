"""Many people on one server: N browser sessions (pages in their own contexts of one Debian
Chromium) step through different incidents for a set time.

    python bench/load.py --sessions 20 --minutes 10        # the goal: 0 errors, server p95 <= 1 s
    python bench/load.py --sessions 5 --minutes 1 --think 0.5

Each session opens its own incident, presses Right (the page's shortcut key) until the last step,
then picks the next incident in the sidebar, and so on, with `--think` seconds between presses (a
person reading the step). After every press it checks the page is its own: the title is its
incident's, the heading is the step it expects of that incident's step count, the link carries
that step, and no exception is on the page. Anything else is an error (or cross-talk, when the
page shows another incident's title or step count).

Measured:
* server step time: one timed script run per press (the step area's fragment, callbacks included,
  from its start to its last element sent), by a timer wrapped around Streamlit's script
  execution in the server process this benchmark starts; full runs (page loads, incident
  switches) are reported apart;
* browser step time: key press -> the new step's heading on the page; what it adds to the
  server's time is the browser's (rendering, the websocket, and waiting for a CPU);
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
import re
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
WAIT_MS = 60_000
GOAL_P95_S = 1.0


# --- the server, with a timer on every script run --------------------------------------------------


def serve(port: int, log: str) -> None:
    """`streamlit run app.py` in this process, every script run timed into `log` (JSON lines)."""
    import threading

    from streamlit.runtime.scriptrunner import script_runner

    run = script_runner.exec_func_with_error_handling
    lock = threading.Lock()
    out = open(log, "a", buffering=1)  # noqa: SIM115  (open for the server's life)

    def timed(func, ctx):
        started = time.perf_counter()
        fragment = bool(getattr(ctx, "fragment_ids_this_run", None))
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


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """This file run as the server (`--serve`), in its own data root, stopped at the end."""

    def __init__(self, work: Path) -> None:
        self.port = _free_port()
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
            try:
                with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=1) as response:
                    if response.read().strip() == b"ok":
                        return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("the server did not start")

    def runs(self) -> list[dict]:
        if not self.log.is_file():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines() if line.strip()]

    def stop(self) -> None:
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.killpg(self.process.pid, sig)
                self.process.wait(timeout=15)
                return
            except (ProcessLookupError, subprocess.TimeoutExpired):
                continue


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


# --- the sessions -----------------------------------------------------------------------------------


@dataclass
class Tally:
    """What every session saw."""

    presses: list[float] = field(default_factory=list)
    switches: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    crosstalk: list[str] = field(default_factory=list)
    checks: int = 0


_STEP = re.compile(r"^Step (\d+) of (\d+)$")
_CHECK = """() => ({
  title: (document.querySelector('h1') || {}).innerText || '',
  steps: [...document.querySelectorAll('h3')].map(h => h.innerText)
    .filter(t => /^Step \\d+ of \\d+$/.test(t)),
  exceptions: document.querySelectorAll('[data-testid="stException"]').length,
  search: location.search,
})"""


async def on_screen(page, want_title: str, step: int, last: int | None, tally: Tally, who: str) -> int:
    """Check the page shows this session's incident at `step`; returns its last step."""
    state = await page.evaluate(_CHECK)
    tally.checks += 1
    if state["exceptions"]:
        tally.errors.append(f"{who}: an exception on the page at step {step}")
    if not state["title"].startswith(want_title[:30]):
        tally.crosstalk.append(f"{who}: title {state['title'][:50]!r}, expected {want_title[:50]!r}")
    shown = [_STEP.match(t) for t in state["steps"]]
    if len(shown) != 1 or shown[0] is None:
        tally.errors.append(f"{who}: step headings {state['steps']!r}")
        return last or 0
    now, count = int(shown[0][1]), int(shown[0][2])
    if now != step or (last is not None and count != last):
        tally.crosstalk.append(f"{who}: shows step {now} of {count}, expected {step} of {last}")
    if f"step={step}" not in state["search"]:
        tally.crosstalk.append(f"{who}: the link says {state['search'][:80]!r} at step {step}")
    return count


async def session(browser, url: str, order: list[tuple[str, str]], deadline: float, think: float,
                  tally: Tally, who: str) -> None:  # fmt: skip
    """One person: their incidents in turn, every step, until the deadline."""
    context = await browser.new_context(viewport={"width": 1440, "height": 900})
    page = await context.new_page()
    page.set_default_timeout(WAIT_MS)
    turn = 0
    slug, title = order[0]
    try:
        await page.goto(f"{url}/?scenario={slug}&engine=local&step=0")
        await page.get_by_role("heading", name=re.compile(r"^Step 0 of \d+$")).wait_for()
        await page.locator(IDLE).wait_for()
        while time.monotonic() < deadline:
            await page.get_by_role("heading", level=1).first.click()  # focus on the page, not a widget
            last = await on_screen(page, title, 0, None, tally, who)
            for step in range(1, last + 1):
                if time.monotonic() >= deadline:
                    return
                await asyncio.sleep(think)
                started = time.perf_counter()
                await page.keyboard.press("ArrowRight")
                await page.get_by_role("heading", name=f"Step {step} of {last}", exact=True).wait_for()
                tally.presses.append(time.perf_counter() - started)
                await page.locator(IDLE).wait_for()
                await on_screen(page, title, step, last, tally, who)
            turn += 1
            slug, title = order[turn % len(order)]
            await asyncio.sleep(think)
            started = time.perf_counter()
            await page.locator(".st-key-scenario").click()
            await page.get_by_role("option", name=title).click()
            await page.get_by_role("heading", level=1, name=title).wait_for()
            await page.get_by_role("heading", name=re.compile(r"^Step 0 of \d+$")).wait_for()
            await page.locator(IDLE).wait_for()
            tally.switches.append(time.perf_counter() - started)
    except Exception as exc:  # a timeout or a broken page: counted, and this session goes on afresh
        tally.errors.append(f"{who}: {type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
        await context.close()
        if time.monotonic() < deadline - 10:
            await session(browser, url, order[turn % len(order):] + order[: turn % len(order)], deadline,
                          think, tally, who)  # fmt: skip
        return
    await context.close()


async def drive(url: str, sessions: int, seconds: float, think: float, ramp: float) -> Tally:
    from playwright.async_api import async_playwright

    from wmviz.incidents import built_in_incidents

    incidents = [(slug, incident.title) for slug, incident in built_in_incidents().items()]
    tally = Tally()
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        deadline = time.monotonic() + seconds
        tasks = []
        for i in range(sessions):
            order = incidents[i % len(incidents) :] + incidents[: i % len(incidents)]
            tasks.append(asyncio.create_task(session(browser, url, order, deadline, think, tally, f"s{i}")))
            await asyncio.sleep(ramp)  # people arrive one after another, not in the same millisecond
        await asyncio.gather(*tasks)
        await browser.close()
    return tally


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
    parser.add_argument("--serve", nargs=2, metavar=("PORT", "LOG"), help=argparse.SUPPRESS)
    args = parser.parse_args()
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

        async def run() -> tuple[Tally, float, float]:
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
            tally = await drive(server.url, args.sessions, args.minutes * 60, args.think, args.ramp)
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


def report(args, tally: Tally, runs: list[dict], memory, server_cpu: float, chromium_cpu: float,
           wall: float) -> None:  # fmt: skip
    steps = [r["s"] for r in runs if r["fragment"]]
    full = [r["s"] for r in runs if not r["fragment"]]
    server_errors = [r["error"] for r in runs if "error" in r]
    print(
        f"{args.sessions} sessions for {args.minutes:g} min ({wall:,.0f} s), {args.think:g} s between presses"
    )
    print(f"steps pressed: {len(tally.presses):,}; incident switches: {len(tally.switches):,}; "
          f"page checks: {tally.checks:,}")  # fmt: skip
    print(f"errors: {len(tally.errors) + len(server_errors)} ({len(tally.errors)} in browsers, "
          f"{len(server_errors)} script exceptions on the server); "
          f"cross-talk: {len(tally.crosstalk)}")  # fmt: skip
    for line in (tally.errors + server_errors + tally.crosstalk)[:15]:
        print(f"  {line}")
    print(f"server step (one fragment run per press): {spread(steps)}")
    print(f"server full runs (page loads, incident switches): {spread(full)}")
    print(f"browser step (key press -> new heading on the page): {spread(tally.presses)}")
    if tally.presses and steps:
        browser_part = statistics.median(tally.presses) - statistics.median(steps)
        print(f"  the browser's part (p50 browser - p50 server): {browser_part * 1000:,.0f} ms")
    print(f"browser incident switch (sidebar -> step 0 shown): {spread(tally.switches)}")
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
