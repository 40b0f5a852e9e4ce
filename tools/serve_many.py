"""More than one core: N `wmviz app` servers behind HAProxy, each browser kept on one.

    python -m tools.serve_many --servers 2 --port 8501      # open http://127.0.0.1:8501
    python -m tools.serve_many --servers 2 --print-config   # the proxy's config, to adapt

One Streamlit server is one Python process, and its sessions' script runs share one interpreter
lock, so a second core only helps a second process. The servers listen on the ports after
`--port` (8502, 8503, ...) and share one data root ($WMVIZ_CACHE, else ~/.cache/wmviz): a
timeline one server simulates is renamed into the cache whole and the other reads it, and a link
to an upload opens on either. The proxy's config is `deploy/haproxy.cfg` (why a cookie, and not
the client's address, keeps a session on its server is said there). Ctrl-C stops them all.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from string import Template

from tools.appserver import app_command, healthy, stop_group

REPO = Path(__file__).resolve().parent.parent
PROXY_CONFIG = REPO / "deploy" / "haproxy.cfg"
STICKY_COOKIE = "WMVIZ_SERVER"
SERVER_HEADER = "X-Wmviz-Server"  # which app server answered, set by the proxy
STARTUP_TIMEOUT_S = 90


def free_ports(count: int) -> list[int]:
    """`count` different TCP ports on 127.0.0.1 that nothing listens on right now (all held
    open while choosing, so no port comes twice)."""
    with ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for s in sockets:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in sockets]


def haproxy() -> str | None:
    """The HAProxy binary on PATH (Debian: `apt-get install haproxy`), or None."""
    return shutil.which("haproxy", path=f"{os.environ.get('PATH', '')}:/usr/sbin:/usr/local/sbin")


def server_name(index: int) -> str:
    """The name of the `index`-th app server (from 0): the proxy's cookie value and header."""
    return f"app{index + 1}"


def proxy_config(front_port: int, server_ports: list[int], address: str = "127.0.0.1") -> str:
    """deploy/haproxy.cfg for a proxy on `address:front_port` in front of app servers on
    127.0.0.1 at `server_ports`, each checked by Streamlit's health endpoint."""
    servers = "\n".join(
        f"    server {server_name(i)} 127.0.0.1:{port} check inter 2s cookie {server_name(i)}"
        for i, port in enumerate(server_ports)
    )
    return Template(PROXY_CONFIG.read_text()).substitute(front=f"{address}:{front_port}", servers=servers)


def wait_healthy(
    url: str, process: subprocess.Popen, what: str, timeout_s: float = STARTUP_TIMEOUT_S
) -> None:
    """Until `url` answers Streamlit's health check; RuntimeError if `process` exits first or
    the time runs out."""
    deadline = time.monotonic() + timeout_s
    while not healthy(url, timeout=1):
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"{what} did not answer {url}/_stcore/health in {timeout_s:g} s")
        time.sleep(0.2)


@contextmanager
def running(process: subprocess.Popen) -> Iterator[subprocess.Popen]:
    """`process` (started in a session of its own), ended with its children on leaving."""
    try:
        yield process
    finally:
        stop_group(process, 15, 5)


def start_app_server(port: int, env: dict[str, str], log: Path) -> subprocess.Popen:
    """`wmviz app` on 127.0.0.1:`port`, in a session of its own, output to `log`."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            app_command(port), cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


def start_proxy(config: str, folder: Path) -> subprocess.Popen:
    """HAProxy in the foreground (`-db`) with `config`, written to `folder/haproxy.cfg`; its
    output to `folder/haproxy.log`."""
    binary = haproxy()
    if binary is None:
        raise RuntimeError("haproxy is not installed (Debian: apt-get install haproxy)")
    path = folder / "haproxy.cfg"
    path.write_text(config)
    check = subprocess.run([binary, "-c", "-f", str(path)], capture_output=True, text=True)
    if check.returncode != 0:
        raise RuntimeError(f"haproxy rejected {path}:\n{check.stdout}{check.stderr}")
    with open(folder / "haproxy.log", "ab") as out:
        return subprocess.Popen(
            [binary, "-db", "-f", str(path)], stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


Launch = Callable[[int, Path], subprocess.Popen]


@contextmanager
def farm(
    front_port: int,
    server_ports: list[int],
    folder: Path,
    launch: Launch | None = None,
    address: str = "127.0.0.1",
) -> Iterator[tuple[str, list[subprocess.Popen], subprocess.Popen]]:
    """App servers on `server_ports` (started by `launch(port, log)`, by default `wmviz app`
    with this environment) and the proxy on `front_port`, each waited for; yields the
    proxy's URL, the servers and the proxy, and stops them all on leaving."""
    launch = launch or (lambda port, log: start_app_server(port, dict(os.environ), log))
    with ExitStack() as stack:
        servers = []
        for i, port in enumerate(server_ports):
            servers.append(stack.enter_context(running(launch(port, folder / f"{server_name(i)}.log"))))
        for i, (port, process) in enumerate(zip(server_ports, servers, strict=True)):
            wait_healthy(f"http://127.0.0.1:{port}", process, f"app server {server_name(i)}")
        proxy = stack.enter_context(
            running(start_proxy(proxy_config(front_port, server_ports, address), folder))
        )
        url = f"http://127.0.0.1:{front_port}"
        wait_healthy(url, proxy, "haproxy", timeout_s=15)
        yield url, servers, proxy


def _stop(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--servers", type=int, default=2, help="app servers (one per core)")
    parser.add_argument(
        "--port", type=int, default=8501, help="the proxy's port; the servers take the next ones"
    )
    parser.add_argument(
        "--address", default="127.0.0.1", help="the proxy's address (0.0.0.0: every interface)"
    )
    parser.add_argument("--print-config", action="store_true", help="print the proxy's config and stop")
    args = parser.parse_args()
    ports = [args.port + 1 + i for i in range(args.servers)]
    if args.print_config:
        print(proxy_config(args.port, ports, args.address), end="")
        return
    folder = Path(tempfile.mkdtemp(prefix="wmviz-serve-many-"))
    signal.signal(signal.SIGTERM, _stop)  # a service manager's stop ends the servers too
    with farm(args.port, ports, folder, address=args.address):
        print(f"{args.servers} app servers on {ports} behind http://{args.address}:{args.port} "
              f"(logs in {folder}); Ctrl-C stops them", flush=True)  # fmt: skip
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
