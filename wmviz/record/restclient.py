"""GETs from one JobManager's REST endpoint, each bounded: one host, one deadline, one size.

A JobManager's answer is input like any file: a redirect may point at another host (whose data
would then be recorded as if it came from `--rest`), a body may trickle in a byte at a time (a
socket timeout only bounds each read, so it never fires), and a body may be any size. So every
request has a total deadline (a timer shuts the socket down when it passes), follows redirects
only within the `--rest` host, reads the body in chunks and stops at the size cap, and is retried
a bounded number of times when the failure may pass (no connection, a timeout, a 5xx).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
import urllib.parse
from typing import Any

from wmviz.core.budgets import rest_answer_reason
from wmviz.core.errors import BadInputError
from wmviz.core.settings import MAX_REST_ANSWER_BYTES

_REDIRECTS = {301, 302, 303, 307, 308}
_MAX_HOPS = 5
_CHUNK = 64 << 10


class RecordError(BadInputError):
    """The endpoint, job or vertex cannot be recorded; the message says why.

    `status` is the HTTP status of the answer that failed (None: no answer), `passing` whether
    the failure may pass if asked again (no connection, a timeout, a 5xx), `final` whether a
    recording under way must end on it rather than try the next poll."""

    def __init__(
        self, message: str, status: int | None = None, passing: bool = False, final: bool = False
    ) -> None:
        super().__init__(message)
        self.status = status
        self.passing = passing
        self.final = final


def _origin(parts: urllib.parse.SplitResult) -> str:
    """scheme://host:port, the port spelled out, for comparing where two URLs point."""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}"


def _split(url: str, label: str) -> urllib.parse.SplitResult:
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 (a port that is not a number raises here)
    except ValueError as err:
        raise RecordError(f"{label} {url!r}: {err}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RecordError(f"{label} {url!r}: expected http://host:port")
    return parts


class RestClient:
    """GETs JSON from one Flink REST endpoint (see the module's docstring for the bounds)."""

    def __init__(
        self, base_url: str, timeout_s: float = 10.0, deadline_s: float = 30.0, retries: int = 2
    ) -> None:
        parts = _split(base_url, "--rest")
        self.base = base_url.rstrip("/")
        self.origin = _origin(parts)
        self.timeout_s = timeout_s
        """Connecting, and each read of the answer."""
        self.deadline_s = deadline_s
        """The whole request, from connecting to the last byte of the body."""
        self.retries = retries
        self.stop_at: float | None = None
        """When the recording ends (`time.monotonic()`; `--for`), if it has an end: no request
        outlives it, and none is retried past it."""

    def _limit_s(self) -> float:
        """How long the next request may take: its deadline, cut to the time the recording has left."""
        if self.stop_at is None:
            return self.deadline_s
        return max(0.0, min(self.deadline_s, self.stop_at - time.monotonic()))

    def time_up(self) -> bool:
        """Whether the recording's time (`--for`) has run out: a request failing now was cut by it."""
        return self.stop_at is not None and time.monotonic() >= self.stop_at

    def get(self, path: str, params: dict[str, str] | None = None) -> Any:
        """The decoded JSON of `path`; RecordError naming the URL on any failure."""
        # A job id is the user's text: quoted, a space or a "?" in it stays in the path.
        quoted = urllib.parse.quote(path, safe="/")
        url = self.base + quoted + ("?" + urllib.parse.urlencode(params) if params else "")
        for attempt in range(self.retries + 1):
            try:
                return self._follow(url)
            except RecordError as err:
                if not err.passing or attempt == self.retries or self._limit_s() == 0:
                    tries = f" (asked {attempt + 1} times)" if attempt else ""
                    raise RecordError(f"{err}{tries}", err.status, err.passing, err.final) from None
            time.sleep(min(0.2 * 2**attempt, 1.0))
        raise AssertionError("unreachable")

    def _follow(self, url: str) -> Any:
        """GET `url`, following redirects within the `--rest` host."""
        for _ in range(_MAX_HOPS + 1):
            status, location, body = self._once(url)
            if status not in _REDIRECTS:
                return _decode(url, body)
            target = urllib.parse.urljoin(url, location or "")
            there = _origin(_split(target, f"GET {url}: redirected to"))
            if there != self.origin:
                raise RecordError(
                    f"GET {url}: the answer redirects to {there}, another host than --rest "
                    f"{self.origin}; wmviz records only from the host it was given (pass --rest "
                    f"{there} to record from there)",
                    status,
                    final=True,
                )
            url = target
        raise RecordError(f"GET {url}: more than {_MAX_HOPS} redirects")

    def _once(self, url: str) -> tuple[int, str | None, bytes]:
        """One request: (status, Location, body) of a 2xx or a redirect; RecordError otherwise."""
        parts = urllib.parse.urlsplit(url)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        try:
            conn = kind(parts.hostname or "", parts.port, timeout=self.timeout_s)
        except http.client.InvalidURL as err:  # a host with a space or a control character
            raise RecordError(f"GET {url}: {err}") from None
        # The socket is kept here, not read from `conn` when the timer fires: `getresponse` hands
        # it to the response and forgets it when the answer closes the connection.
        held: list[socket.socket] = []
        expired = threading.Event()
        limit_s = self._limit_s()
        timer = threading.Timer(limit_s, _shut, (held, expired))
        timer.daemon = True
        timer.start()
        try:
            conn.connect()
            held.append(conn.sock)
            if expired.is_set():
                raise OSError("connected after the deadline")
            target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
            conn.request("GET", target, headers={"Accept": "application/json"})
            with conn.getresponse() as response:
                if response.status in _REDIRECTS:
                    return response.status, response.getheader("Location"), b""
                if response.status >= 300:
                    passing = response.status >= 500
                    raise RecordError(
                        f"GET {url}: HTTP {response.status} {response.reason}", response.status, passing
                    )
                return response.status, None, _body(url, response, expired)
        except (OSError, http.client.HTTPException) as err:
            if expired.is_set():
                raise RecordError(f"GET {url}: no whole answer within {limit_s:g} s", passing=True) from None
            if isinstance(err, TimeoutError | socket.timeout):
                reason = f"no answer within {self.timeout_s:g} s"
            else:
                reason = str(getattr(err, "reason", None) or err) or type(err).__name__
            raise RecordError(f"GET {url}: {reason}", passing=True) from None
        finally:
            timer.cancel()
            conn.close()


def _shut(held: list[socket.socket], expired: threading.Event) -> None:
    """The deadline passed: shut the socket, which wakes the read waiting on it."""
    expired.set()
    for sock in held:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _body(url: str, response: http.client.HTTPResponse, expired: threading.Event) -> bytes:
    """The body, read in chunks and refused as soon as it passes the cap."""
    declared = response.getheader("Content-Length")
    if declared and declared.strip().isdigit() and int(declared) > MAX_REST_ANSWER_BYTES.get():
        raise RecordError(f"GET {url}: {rest_answer_reason(f'{int(declared):,} bytes')}", final=True)
    body = bytearray()
    while chunk := response.read1(_CHUNK):
        body += chunk
        if len(body) > MAX_REST_ANSWER_BYTES.get():
            raise RecordError(f"GET {url}: {rest_answer_reason('longer')}", final=True)
    if expired.is_set():
        raise OSError("cut by the deadline")
    return bytes(body)


def _decode(url: str, body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, RecursionError):
        raise RecordError(f"GET {url}: the answer is not JSON") from None
