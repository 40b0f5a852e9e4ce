"""What `bench/load.py` measures besides the clients: the processes' CPU and memory and the
machine's load from /proc, and the figures of a phase (one server, or N behind the proxy) put
together, printed, and set against the goals of issue 23.

A phase's figures (`figures`) are a plain dict so that a test can check the aggregation on
made-up runs and samples, without a server.
"""

from __future__ import annotations

import os
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from load_sessions import Tally  # bench/ is on the path (load.py, the tests)

from tools.proctree import descendants  # the checkout is on the path (load.py)

GOAL_SERVER_P50_S = 0.040
GOAL_CLIENT_P95_S = {20: 0.5, 50: 1.0}  # up to this many sessions: this client step p95
FLAT_WITHIN = 0.05  # memory "flat": the halves of a run after warm-up within 5 % of each other


# --- processes and the machine, from /proc ---------------------------------------------------------


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


def machine_ticks() -> tuple[int, int]:
    """(busy, total) clock ticks of all cores so far (/proc/stat): their difference over a phase
    is how saturated the machine was, whoever used it."""
    values = [int(v) for v in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)  # idle + iowait
    return sum(values) - idle, sum(values)


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


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


# --- a phase's figures --------------------------------------------------------------------------------


@dataclass
class Usage:
    """What a phase cost the machine: CPU seconds per app server, of the proxy, the clients and Chromium,
    over `wall_s`; the app servers' memory summed, sampled as (seconds in, MB) from before the
    first session; the 1-minute load average sampled alike; the machine's busy share."""

    wall_s: float = 0.0
    server_cpu_s: list[float] = field(default_factory=list)
    proxy_cpu_s: float = 0.0
    clients_cpu_s: float = 0.0  # this benchmark's own process: the ws clients, the sampling
    chromium_cpu_s: float = 0.0
    memory: list[tuple[float, float]] = field(default_factory=list)
    load: list[float] = field(default_factory=list)
    machine_busy: float = float("nan")


@dataclass
class Phase:
    """One measured configuration: its label, what the clients saw, the servers' timed script
    runs (None: not measured, an outside server) and the usage."""

    label: str
    sessions: int
    tally: Tally
    runs: list[dict] | None
    usage: Usage


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


def memory_figures(samples: list[tuple[float, float]], wall_s: float) -> dict:
    """Start (before the first session), peak, end, and the drift between the halves of the
    samples after warm-up (the first third of the run, at most 2 min), None when too few."""
    if not samples:
        return {"start": None, "peak": None, "end": None, "drift": None}
    settled = [mb for t, mb in samples if t >= min(120, wall_s / 3)]
    drift = None
    if len(settled) >= 4:
        half = len(settled) // 2
        first, second = statistics.mean(settled[:half]), statistics.mean(settled[half:])
        drift = (second - first) / first
    return {
        "start": samples[0][1],
        "peak": max(mb for _, mb in samples),
        "end": samples[-1][1],
        "drift": drift,
    }


def figures(phase: Phase) -> dict:
    """Everything a phase's report says, as numbers (seconds, fractions, MB)."""
    tally, usage, runs = phase.tally, phase.usage, phase.runs or []
    steps = [r["s"] for r in runs if r["fragment"]]
    wall = usage.wall_s or float("nan")
    return {
        "label": phase.label,
        "sessions": phase.sessions,
        "presses": len(tally.presses),
        "client_errors": len(tally.errors),
        "server_errors": len([r for r in runs if "error" in r]),
        "crosstalk": len(tally.crosstalk),
        "server_measured": phase.runs is not None,
        "server_p50": statistics.median(steps) if steps else float("nan"),
        "server_p95": pct(steps, 0.95),
        "full_runs": [r["s"] for r in runs if not r["fragment"]],
        "client_p50": statistics.median(tally.presses) if tally.presses else float("nan"),
        "client_p95": pct(tally.presses, 0.95),
        "server_cpu": [cpu / wall for cpu in usage.server_cpu_s],
        # CPU per script run (steps and page loads): what a run costs, whatever else the machine does
        "cpu_per_run": sum(usage.server_cpu_s) / len(runs) if runs else float("nan"),
        "proxy_cpu": usage.proxy_cpu_s / wall,
        "clients_cpu": usage.clients_cpu_s / wall,
        "chromium_cpu": usage.chromium_cpu_s / wall,
        "machine_busy": usage.machine_busy,
        "memory": memory_figures(usage.memory, usage.wall_s),
        "load": (min(usage.load), max(usage.load)) if usage.load else None,
        "servers": dict(tally.servers),
    }


def goals(f: dict) -> list[tuple[str, bool | None]]:
    """Issue 23's goals against a phase's figures: (goal, held; None when not measured)."""
    client_goal = next((s for n, s in sorted(GOAL_CLIENT_P95_S.items()) if f["sessions"] <= n), None)
    drift = f["memory"]["drift"]
    checks: list[tuple[str, bool | None]] = [
        ("0 errors", f["client_errors"] + f["server_errors"] == 0),
        ("0 cross-talk", f["crosstalk"] == 0),
        (
            f"server step p50 <= {GOAL_SERVER_P50_S * 1000:.0f} ms",
            f["server_p50"] <= GOAL_SERVER_P50_S if f["server_measured"] else None,
        ),
        (
            f"memory flat (halves within {FLAT_WITHIN:.0%})",
            None if drift is None else abs(drift) <= FLAT_WITHIN,
        ),
    ]
    if client_goal is not None:
        checks.append((f"client step p95 <= {client_goal * 1000:,.0f} ms", f["client_p95"] <= client_goal))
    return checks


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms" if seconds == seconds else "n/a"  # NaN: nothing measured


def report(phase: Phase, client: str) -> None:
    f, tally = figures(phase), phase.tally
    print(f"== {f['label']}: {f['sessions']} sessions, {phase.usage.wall_s:,.0f} s")
    print(f"steps pressed: {f['presses']:,}; incident switches: {len(tally.switches):,}; "
          f"page checks: {tally.checks:,}; pages per server: {f['servers'] or 'none'}")  # fmt: skip
    errors = f["client_errors"] + f["server_errors"]
    print(f"errors: {errors} ({f['client_errors']} in clients, {f['server_errors']} script exceptions "
          f"on the servers); cross-talk: {f['crosstalk']}")  # fmt: skip
    server_errors = [r["error"] for r in phase.runs or [] if "error" in r]
    for line in (tally.errors + server_errors + tally.crosstalk)[:15]:
        print(f"  {line}")
    if f["server_measured"]:
        steps = [r["s"] for r in phase.runs or [] if r["fragment"]]
        print(f"server step (one fragment run per press): {spread(steps)}")
        print(f"server full runs (page loads, incident switches): {spread(f['full_runs'])}")
    else:
        print("server step: not measured (an outside server: only the clients' side)")
    print(f"{client} client step (asked -> new step read back): {spread(tally.presses)}")
    print(f"{client} client page open (link -> step 0 read back): {spread(tally.switches)}")
    cpu = ", ".join(f"{c:.0%}" for c in f["server_cpu"]) or "not measured"
    print(f"CPU (CPU seconds / wall, of one core): app servers {cpu}; proxy {f['proxy_cpu']:.0%}; "
          f"this process (the ws clients) {f['clients_cpu']:.0%}; Chromium {f['chromium_cpu']:.0%}; "
          f"the whole machine busy {f['machine_busy']:.0%} of {os.cpu_count()} cores")  # fmt: skip
    print(f"app servers' CPU per script run (steps and page loads): {_ms(f['cpu_per_run'])}")
    m = f["memory"]
    if m["start"] is not None:
        drift = "n/a (run too short)" if m["drift"] is None else f"{m['drift']:+.1%}"
        print(f"app servers' memory (RSS): start {m['start']:,.0f} MB, peak {m['peak']:,.0f} MB, "
              f"end {m['end']:,.0f} MB; after warm-up, second half vs first {drift}")  # fmt: skip
    if f["load"]:
        print(f"load average (1 min) during the phase: {f['load'][0]:.2f} to {f['load'][1]:.2f}")
    for goal, held in goals(f):
        print(f"goal {goal}: {'not measured' if held is None else 'held' if held else 'NOT held'}")


def compare(phases: list[Phase]) -> None:
    """The phases side by side, as a Markdown table (for docs/benchmarks.md)."""
    columns = ["phase", "steps", "errors / cross-talk", "server step p50 / p95", "client step p50 / p95",
               "CPU per app server", "CPU per run", "proxy CPU", "clients CPU", "machine busy",
               "memory start / peak / end", "load"]  # fmt: skip
    print(f"\n| {' | '.join(columns)} |")
    print("|---" * len(columns) + "|")
    for phase in phases:
        f = figures(phase)
        m, load_range = f["memory"], f["load"]
        memory = "n/a" if m["start"] is None else f"{m['start']:,.0f} / {m['peak']:,.0f} / {m['end']:,.0f} MB"
        cells = [
            f["label"],
            f"{f['presses']:,}",
            f"{f['client_errors'] + f['server_errors']} / {f['crosstalk']}",
            f"{_ms(f['server_p50'])} / {_ms(f['server_p95'])}",
            f"{_ms(f['client_p50'])} / {_ms(f['client_p95'])}",
            ", ".join(f"{c:.0%}" for c in f["server_cpu"]) or "n/a",
            _ms(f["cpu_per_run"]),
            f"{f['proxy_cpu']:.0%}",
            f"{f['clients_cpu']:.0%}",
            f"{f['machine_busy']:.0%}",
            memory,
            "n/a" if not load_range else f"{load_range[0]:.1f}–{load_range[1]:.1f}",
        ]
        print(f"| {' | '.join(cells)} |")
