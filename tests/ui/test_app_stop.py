"""Stopping `wmviz app` while its Spark warms up says nothing alarming (issue 30, item 8).

Before: Ctrl-C (or a SIGTERM from a service manager) during Spark's warm-up printed pages of Java
stack traces, a Py4J error and the JVM's "Exiting due to broken pipe": the server had only been
asked to stop. Now the server ends its SparkSession itself as it stops, with the JVM's logging
quietened first, and a start still under way is left to end with the server.

Each case is one `wmviz app` (one JVM); the page is opened in Chromium so the server starts Spark
after its first page, and the signal comes while the sidebar says "warming up" and the warm-up
task's Python worker runs (a signal before the workers start was quiet before too), or later, while
Spark warms live mode with a one-step streaming query and that query's Python source runs. Only
what is printed after the signal is read: the JVM's start has its own lines.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.browser.test_browser import MISSING, TIMEOUT_MS, VIEWPORT
from tools.appserver import free_port, healthy, stop_group
from tools.proctree import descendants

pytestmark = pytest.mark.spark

if MISSING and not os.environ.get("CI"):
    pytest.skip(f"these tests need Chromium and Playwright: {MISSING}", allow_module_level=True)

JAVA_NOISE = re.compile(r"^\s+at [\w$.]+\(|Exception in thread|Py4J|py4j|ERROR |WARN |Traceback", re.M)
"""A Java stack frame, a thread's uncaught exception, Py4J's complaint, a log4j error or warning,
a Python traceback: anything a person stopping the server should not have to read."""


def below(pid: int) -> dict[int, str]:
    """Every process below `pid` and its command line (a JVM in a session of its own is still the
    server's child)."""
    lines = {}
    for child in descendants(pid):
        try:
            lines[child] = Path(f"/proc/{child}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
    return lines


def start_app(tmp_path, port: int) -> subprocess.Popen:
    env = {**os.environ, "WMVIZ_CACHE": str(tmp_path / "cache"), "WMVIZ_SPARK_START": "eager"}
    env["WMVIZ_LIVE_WARM_UP"] = "on"  # as a user's server (the suite's servers have it off)
    command = [sys.executable, "-m", "wmviz", "app", "--server.port", str(port), "--server.headless", "true",
               "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"]  # fmt: skip
    with open(tmp_path / "stdout.txt", "wb") as out, open(tmp_path / "stderr.txt", "wb") as err:
        # Its own group, as a terminal gives it: Ctrl-C there signals the whole group.
        return subprocess.Popen(command, env=env, stdout=out, stderr=err, start_new_session=True)


PHASES = {
    "warm-up": ("Spark warming up", "pyspark.daemon"),
    "live warm-up": ("warming live mode", "python_streaming_source_runner"),
}
"""Each warm-up: what the sidebar says meanwhile, and the Python process it runs."""


@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
@pytest.mark.parametrize("phase", list(PHASES))
def test_stopping_the_app_while_spark_warms_up_prints_no_java_stack_trace(tmp_path, phase, how):
    from tests.support.app_server import chromium, fresh_page

    port = free_port()
    url = f"http://127.0.0.1:{port}"
    process = start_app(tmp_path, port)
    try:
        deadline = time.monotonic() + 120
        while not healthy(url):
            assert process.poll() is None, (tmp_path / "stderr.txt").read_text()
            assert time.monotonic() < deadline, "the app did not answer its health check"
            time.sleep(0.2)
        with chromium() as browser, fresh_page(browser, VIEWPORT, TIMEOUT_MS) as page:
            page.goto(url)
            # Spark starts a few seconds after the first page; the signal comes while it warms up.
            page.get_by_text(re.compile(r"Spark (starting|warming up)")).first.wait_for(timeout=TIMEOUT_MS)
            said_meanwhile, worker = PHASES[phase]
            page.get_by_text(said_meanwhile).first.wait_for(timeout=TIMEOUT_MS)
            deadline = time.monotonic() + 120
            while not any(worker in line for line in below(process.pid).values()):
                assert time.monotonic() < deadline, f"the {phase}'s Python worker never started"
                time.sleep(0.05)
        below_server = below(process.pid)  # the JVM and its workers, which end after the server
        said = {name: (tmp_path / name).stat().st_size for name in ("stdout.txt", "stderr.txt")}
        if how == "ctrl-c":
            os.killpg(process.pid, signal.SIGINT)  # what a terminal sends: the JVM gets it too
        else:
            process.send_signal(signal.SIGTERM)  # what a service manager sends: the server alone
        code = process.wait(timeout=120)
    finally:
        if process.poll() is None:
            stop_group(process)
    deadline = time.monotonic() + 120  # the JVM ends after the server: its last words come late
    while any(Path(f"/proc/{pid}").exists() for pid in below_server) and time.monotonic() < deadline:
        time.sleep(0.2)
    after = "".join(
        (tmp_path / name).read_bytes()[size:].decode(errors="replace") for name, size in said.items()
    )
    noise = [line for line in after.splitlines() if JAVA_NOISE.search(line)]
    assert not noise, f"stopping printed (exit {code}):\n" + "\n".join(noise[:40])
    assert code == 0, f"exit {code}:\n{after[-2000:]}"
