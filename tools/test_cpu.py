"""Where the test suite's CPU goes: a pytest plugin that charges each test the CPU its worker's
process tree used while it ran (setup, call and teardown).

    WMVIZ_TEST_CPU=/tmp/cpu python -m pytest -p tools.test_cpu -n 3 --dist loadfile
    python -m tools.test_cpu /tmp/cpu          # the costliest files and tests

The suite is bound by CPU on CI's two cores (tests/README.md, "The CI budget"), so a test's wall
time says little about what it costs the others: a module waiting on a settling Flink job holds a
worker but not a core. Each worker writes one JSON line per test to `$WMVIZ_TEST_CPU/<worker>.jsonl`:
`{"test", "cpu_s", "wall_s"}`. A test's CPU is the change, from its start to its end, of the CPU of
the worker itself, of the children it has reaped, and of every process still below it (read from
/proc: an app server, a JVM, Chromium). A process that outlives its parent and is adopted by init
is lost from the count; a session-long server's CPU is charged to the test it served.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from tools.proctree import descendants, stat_fields

_TICKS = os.sysconf("SC_CLK_TCK")


def _tree_cpu_s(root: int) -> float:
    """CPU seconds of `root` and every process below it, each with the children it has reaped."""
    spent = 0
    for pid in [root, *descendants(root)]:
        if (fields := stat_fields(pid)) is not None:
            spent += sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    return spent / _TICKS


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    folder = os.environ.get("WMVIZ_TEST_CPU")
    if not folder:
        yield
        return
    cpu, wall = _tree_cpu_s(os.getpid()), time.monotonic()
    yield
    line = {"test": item.nodeid, "cpu_s": round(_tree_cpu_s(os.getpid()) - cpu, 2)}
    line["wall_s"] = round(time.monotonic() - wall, 2)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    Path(folder).mkdir(parents=True, exist_ok=True)
    with open(Path(folder) / f"{worker}.jsonl", "a", encoding="utf-8") as out:
        out.write(json.dumps(line) + "\n")


def main(argv: list[str]) -> int:
    """Print the costliest files and tests of a run's lines."""
    lines = [json.loads(raw) for path in sorted(Path(argv[0]).glob("*.jsonl")) for raw in path.open()]
    by_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for line in lines:
        totals = by_file[line["test"].split("::")[0]]
        totals[0] += line["cpu_s"]
        totals[1] += line["wall_s"]
    cpu = sum(line["cpu_s"] for line in lines)
    wall = sum(line["wall_s"] for line in lines)
    print(f"{len(lines)} tests: {cpu:.0f} CPU-s, {wall:.0f} worker-s")
    print("costliest files (CPU-s, worker-s):")
    for name, (spent, took) in sorted(by_file.items(), key=lambda kv: -kv[1][0])[:30]:
        print(f"  {spent:7.1f} {took:7.1f}  {name}")
    print("costliest tests (CPU-s, worker-s):")
    for line in sorted(lines, key=lambda found: -found["cpu_s"])[:30]:
        print(f"  {line['cpu_s']:7.1f} {line['wall_s']:7.1f}  {line['test']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
