"""The app as a person meets it, for the browser tests: `streamlit run app.py` on a free port with
its own data root, and Debian's Chromium through Playwright (never `playwright install`)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import CHROMIUM, CHROMIUM_ARGS, REPO

STARTUP_TIMEOUT_S = 90


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.read().decode().strip() == "ok"
    except OSError:
        return False


@contextmanager
def streamlit_app(folder: Path, env: dict[str, str]) -> Iterator[str]:
    """The app served from `folder` (its log there) with `env` added; yields the base URL. Fails
    the test with the log's tail when the server does not come up."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = folder / "streamlit.log"
    command = [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
               "--browser.gatherUsageStats", "false", "--server.address", "127.0.0.1",
               "--server.port", str(port)]  # fmt: skip
    with open(log_path, "wb") as log:
        # A session of its own, so teardown ends the server and its children (a JVM, if any) together.
        process = subprocess.Popen(
            command, cwd=REPO, env={**os.environ, **env}, stdout=log, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not healthy(url):
            if process.poll() is not None:
                pytest.fail(f"streamlit exited with {process.returncode}:\n{tail(log_path)}", pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail(f"streamlit not healthy after {STARTUP_TIMEOUT_S} s:\n{tail(log_path)}")
            time.sleep(0.25)
        yield url
    finally:
        stop(process)


def stop(process: subprocess.Popen) -> None:
    for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


@contextmanager
def chromium() -> Iterator:
    """One headless Chromium (one sync Playwright per process at a time: use it per module)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield browser
        finally:
            browser.close()
