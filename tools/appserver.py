"""The app as a local server, for the browser tests and the benchmarks alike: a free port, the
`streamlit run` and `wmviz app` commands, Streamlit's health check, and stopping the server with
its children."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import urllib.request


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def streamlit_command(port: int) -> list[str]:
    """`streamlit run app.py` headless on 127.0.0.1:`port` (run it from the checkout)."""
    return [sys.executable, "-m", "streamlit", "run", "app.py", *_options(port)]


def app_command(port: int) -> list[str]:
    """`wmviz app`, as a user starts it (the page's imports made while the browser loads), with the
    same options (run it from the checkout: `-m wmviz` is the checkout's)."""
    return [sys.executable, "-m", "wmviz", "app", *_options(port)]


def _options(port: int) -> list[str]:
    return ["--server.headless", "true", "--browser.gatherUsageStats", "false",
            "--server.address", "127.0.0.1", "--server.port", str(port)]  # fmt: skip


def healthy(url: str, timeout: float = 2.0) -> bool:
    """Whether the Streamlit server at `url` answers its health check."""
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=timeout) as response:
            return response.read().decode().strip() == "ok"
    except OSError:
        return False


def stop_group(process: subprocess.Popen, term_wait_s: float = 10, kill_wait_s: float = 5) -> None:
    """End a server started with `start_new_session=True` and its children (a JVM, if any): SIGTERM
    to the whole group, then SIGKILL if it has not gone."""
    for sig, wait_s in ((signal.SIGTERM, term_wait_s), (signal.SIGKILL, kill_wait_s)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue
