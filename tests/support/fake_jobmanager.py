"""A scriptable fake Flink JobManager REST endpoint for the recorder's tests (no JVM): an
http.server on 127.0.0.1 in a thread answering what `FakeJob` says, including what a hostile
JobManager might (odd bodies, status codes, delays, sizes, redirects, restarts, rescales)."""

from __future__ import annotations

import json
import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

JOB, SRC, OP = "j1", "v-src", "v-op"
T0 = 1_795_600_000_000


@dataclass
class Reply:
    """What the fake answers one GET with: a status, a body, headers, and how it is sent."""

    body: bytes = b""
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    drip_s: float = 0.0
    """Pause between the body's bytes (a body trickling in)."""
    length: bool = True
    """Send Content-Length (else the body ends when the connection closes)."""


@dataclass
class FakeJob:
    """A source feeding an operator (rebalance), two subtasks each; watermarks advance 1 s per
    poll of the job; `states` says the state per poll and `restart_at` the poll from which every
    attempt is 1. Scriptable further: `rescale_at`/`rescaled` change the parallelism (source,
    operator) from a poll on, `attempts` gives each subtask index its own attempt number,
    `shuffled` lists subtasks in another order on every answer, and `hook(job, path, query)`
    answers any GET itself (a status, a body of any size, a redirect, a trickle) unless it
    returns None."""

    states: list[str]
    restart_at: int | None = None
    metrics_from: int = 0
    """Before this poll the tasks have registered no metrics yet (a job just submitted)."""
    rescale_at: int | None = None
    rescaled: tuple[int, int] = (2, 3)
    attempts: dict[int, int] = field(default_factory=dict)
    shuffled: bool = False
    hook: Callable[[FakeJob, str, dict], Reply | None] | None = None
    polls: int = 0
    server: ThreadingHTTPServer | None = None

    @property
    def attempt(self) -> int:
        return int(self.restart_at is not None and self.polls >= self.restart_at)

    @property
    def parallelism(self) -> tuple[int, int]:
        """(source, operator) subtasks now."""
        return self.rescaled if self.rescale_at is not None and self.polls >= self.rescale_at else (2, 2)

    def reply(self, path: str, query: dict) -> Reply:
        hooked = self.hook(self, path, query) if self.hook else None
        if hooked is not None:
            return hooked
        body = self.answer(path, query)
        return Reply(json.dumps(body).encode(), 200 if body is not None else 404)

    def answer(self, path: str, query: dict) -> object:
        src_p, op_p = self.parallelism
        if path == f"/jobs/{JOB}":
            self.polls += 1
            src_p, op_p = self.parallelism
            state = self.states[min(self.polls - 1, len(self.states) - 1)]
            return {"state": state, "vertices": [
                {"id": SRC, "name": "Source: orders", "parallelism": src_p},
                {"id": OP, "name": "window -> Sink: out", "parallelism": op_p}]}  # fmt: skip
        if path == f"/jobs/{JOB}/plan":
            return {"plan": {"nodes": [
                {"id": OP, "parallelism": op_p, "inputs": [{"id": SRC, "ship_strategy": "REBALANCE"}]},
                {"id": SRC, "parallelism": src_p}]}}  # fmt: skip
        for vid, count in ((SRC, src_p), (OP, op_p)):
            if path == f"/jobs/{JOB}/vertices/{vid}":
                order = list(range(count))
                if self.shuffled:
                    random.shuffle(order)
                return {
                    "subtasks": [{"subtask": i, "attempt": self.attempts.get(i, self.attempt)} for i in order]
                }
        if self.polls < self.metrics_from:
            return []
        # While tasks deploy, subtask 1 registers its metrics a poll later than subtask 0.
        deploying = self.polls < self.metrics_from + 2
        base = T0 + 1000 * self.polls - (100_000 if self.attempt else 0)
        if path == f"/jobs/{JOB}/vertices/{SRC}/metrics":
            up = range(1 if deploying else src_p)
            values = {f"{i}.Source__orders.currentOutputWatermark": base - 500 * i for i in up}
            values |= {f"{i}.Source__orders.sourceIdleTime": 0 for i in up}
            return _metrics(values, query)
        if path == f"/jobs/{JOB}/vertices/{OP}/metrics":
            return _metrics({f"{i}.currentInputWatermark": base - 500 for i in range(op_p)}, query)
        return None


def _metrics(values: dict, query: dict) -> list[dict]:
    if "get" not in query:
        return [{"id": k} for k in values]
    wanted = query["get"][0].split(",")
    return [{"id": k, "value": str(values[k])} for k in wanted if k in values]


def start_server(job: FakeJob) -> ThreadingHTTPServer:
    """Serve `job` on a free port of 127.0.0.1 until the server is shut down."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            url = urlparse(self.path)
            reply = job.reply(url.path, parse_qs(url.query))
            self.send_response(reply.status)
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if reply.length:
                self.send_header("Content-Length", str(len(reply.body)))
            else:
                self.close_connection = True
            self.end_headers()
            try:
                if reply.drip_s:
                    for i in range(len(reply.body)):
                        self.wfile.write(reply.body[i : i + 1])
                        self.wfile.flush()
                        time.sleep(reply.drip_s)
                else:
                    self.wfile.write(reply.body)
            except OSError:
                pass  # the recorder hung up (a deadline, a size cap)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    job.server = server
    return server


def url_of(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}"
