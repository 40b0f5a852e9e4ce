"""Past one process: two app servers behind HAProxy (`tools/serve_many.py`, `deploy/haproxy.cfg`).
Two clients from one address get one server each and stay there: a page's websocket reaches the
server its first request reached, steps stay its own, and a file upload for its session (which
only that server knows) is accepted, while the same upload sent with the other client's server
cookie is refused by the other server, so the cookie, not luck, keeps them apart. The two servers
open the same incident at the same moment into one shared data root: one whole timeline, no
work folder left behind, no traceback in either log. `bench/load.py --servers 2` measures both."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import urllib.error
import urllib.request
import uuid
from pathlib import Path

import pytest

from tests.conftest import REPO, truthy_env
from tools.serve_many import STICKY_COOKIE, farm, free_ports, haproxy, proxy_config, start_app_server
from wmviz.store.incidents import built_in_incidents
from wmviz.store.runs import cached_timeline

sys.path.append(str(REPO / "bench"))  # bench/ is scripts, not a package
from load_sessions import Crowd, Tally, WsPage, check


def needs_haproxy() -> None:
    if haproxy() is not None:
        return
    if truthy_env("CI"):
        pytest.fail("CI is set, so the proxy test must run; haproxy is missing (.ci/run installs it)")
    pytest.skip("haproxy is not installed (Debian: apt-get install haproxy); the proxy test needs it")


def upload(url: str, session_id: str, cookies: dict[str, str]) -> tuple[int, str]:
    """A file sent as the page's uploader sends it, for `session_id`, with `cookies`: the
    status and the body."""
    boundary = uuid.uuid4().hex
    body = (
        f'--{boundary}\r\nContent-Disposition: form-data; name="file"; filename="t.csv"\r\n'
        f"Content-Type: text/csv\r\n\r\na,b\r\n1,2\r\n--{boundary}--\r\n"
    ).encode()
    request = urllib.request.Request(
        f"{url}/_stcore/upload_file/{session_id}/{uuid.uuid4().hex}", data=body, method="PUT",
        headers={"Content-Type": f"multipart/form-data; boundary={boundary}",
                 "Cookie": "; ".join(f"{k}={v}" for k, v in cookies.items()),
                 "X-Xsrftoken": cookies.get("_streamlit_xsrf", "")},
    )  # fmt: skip
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, response.read().decode(errors="replace")
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode(errors="replace")


async def two_clients(url: str, slug: str, title: str) -> tuple[list[WsPage], Tally, list]:
    """Two pages of one incident opened at once, each stepped twice; the uploads of each with
    its own cookies and with the other's server cookie, while the sessions are open."""
    pages = list(await asyncio.gather(WsPage.open(url, slug), WsPage.open(url, slug)))
    tally = Tally()
    try:
        for who, page in enumerate(pages):
            last = check(await page.screen(), title, 0, None, tally, f"s{who}")
            for step in (1, 2):
                await page.forward(step, last)
                check(await page.screen(), title, step, last, tally, f"s{who}")
        uploads = []
        for page, other in (pages, pages[::-1]):
            crossed = {**page.cookies, STICKY_COOKIE: other.cookies[STICKY_COOKIE]}
            uploads.append(
                (
                    await asyncio.to_thread(upload, url, page.session_id, page.cookies),
                    await asyncio.to_thread(upload, url, page.session_id, crossed),
                )
            )
    finally:
        for page in pages:
            await page.close()
    return pages, tally, uploads


def test_the_config_has_one_sticky_server_line_per_app_server():
    config = proxy_config(8501, [8502, 8503])
    assert "bind 127.0.0.1:8501" in config and f"cookie {STICKY_COOKIE} insert" in config
    assert "server app1 127.0.0.1:8502 check inter 2s cookie app1" in config
    assert "server app2 127.0.0.1:8503 check inter 2s cookie app2" in config and "$" not in config


def test_two_clients_stay_on_their_own_server_and_the_servers_share_the_cache_safely(tmp_path: Path):
    needs_haproxy()
    data = tmp_path / "data"
    env = {**os.environ, "WMVIZ_CACHE": str(data), "WMVIZ_SPARK_START": "lazy"}
    slug, incident = next(iter(built_in_incidents().items()))
    front, *ports = free_ports(3)
    with farm(front, ports, tmp_path,
              launch=lambda port, log: start_app_server(port, env, log)) as (url, _, _):  # fmt: skip
        pages, tally, uploads = asyncio.run(two_clients(url, slug, incident.title))

    assert sorted(page.server for page in pages) == ["app1", "app2"]  # one each, from one address
    assert not tally.errors and not tally.crosstalk and tally.checks == 6, (tally.errors, tally.crosstalk)
    assert all(page.session_id for page in pages) and pages[0].session_id != pages[1].session_id
    for (own_status, own_body), (crossed_status, crossed_body) in uploads:
        assert own_status in (200, 204), own_body
        assert crossed_status == 400 and "Invalid session_id" in crossed_body, crossed_body

    timelines = data / "timelines"
    entries = sorted(timelines.iterdir())
    assert not [e for e in entries if e.name.startswith("run-")], entries  # no work folder left
    assert len(entries) == 1 and cached_timeline(entries[0]) is not None, entries
    for log in ("app1.log", "app2.log"):
        assert "Traceback" not in (tmp_path / log).read_text(errors="replace"), log


def test_the_load_bench_measures_two_servers_behind_the_proxy():
    # `bench/load.py --servers 2`: its timed servers behind the same proxy, both servers' runs
    # and CPU counted, the pages split between them by the cookie.
    needs_haproxy()
    from load import run_phase

    # Two presses per session, not a time to fill: a 10 s phase on a loaded machine ended while
    # each session was still opening its page (10.3 s each), and no press was measured.
    # 600 s only bounds a hang.
    args = argparse.Namespace(client="ws", url=None)
    phase = run_phase(2, args, Crowd(sessions=2, seconds=600, think=0.1, ramp=0.3, presses=2))
    tally, runs = phase.tally, phase.runs or []
    assert not tally.errors and not tally.crosstalk, (tally.errors, tally.crosstalk)
    assert set(tally.servers) == {"app1", "app2"} and len(tally.presses) == 4, (tally.servers, tally.presses)
    assert len({run["session"] for run in runs}) >= 2 and len([r for r in runs if r["fragment"]]) >= len(
        tally.presses
    )
    assert len(phase.usage.server_cpu_s) == 2 and min(phase.usage.server_cpu_s) > 0
    assert phase.label == "2 servers behind haproxy, spread"
