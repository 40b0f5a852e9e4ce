"""The app as a person meets it, for the browser tests: `streamlit run app.py` on a free port with
its own data root, and Debian's Chromium through Playwright (never `playwright install`)."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import CHROMIUM, CHROMIUM_ARGS, REPO
from tools.appserver import free_port, healthy, stop_group, streamlit_command

STARTUP_TIMEOUT_S = 90


@contextmanager
def streamlit_app(folder: Path, env: dict[str, str]) -> Iterator[str]:
    """The app served from `folder` (its log there) with `env` added; yields the base URL. Fails
    the test with the log's tail when the server does not come up."""
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = folder / "streamlit.log"
    command = streamlit_command(port)
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
        stop_group(process)


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


@contextmanager
def fresh_page(browser, viewport: dict[str, int], timeout_ms: int) -> Iterator:
    """A page in a context of its own (no cookies or storage shared with another test), with
    Playwright's waits and `expect` both bounded by `timeout_ms`; the context closes after."""
    from playwright.sync_api import expect

    expect.set_options(timeout=timeout_ms)
    context = browser.new_context(viewport=viewport)
    page = context.new_page()
    page.set_default_timeout(timeout_ms)
    # What the page's scripts complained about, for a failing test's message (see chart_report).
    page.wmviz_errors = errors = []
    page.on("pageerror", lambda error: errors.append(f"page error: {error}"))
    page.on("console", lambda msg: msg.type == "error" and errors.append(f"console error: {msg.text}"))
    try:
        yield page
    finally:
        context.close()
