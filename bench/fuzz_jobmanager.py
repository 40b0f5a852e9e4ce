"""A scriptable fake JobManager for fuzzing `wmviz record`, and the seeded scripts it plays.

The fake answers Flink's REST paths the recorder reads (`/jobs/<id>`, `/plan`, the vertices'
subtasks and metrics) for a source feeding an operator, from a `Script`: the job's state per poll
of `/jobs/<id>`, when the attempts change (a restart) and the parallelism (a rescale), and faults
on chosen paths: a status code, a body that is not what Flink sends (not JSON, the wrong JSON
type, a huge one), a delay, a body that trickles, a redirect (to a second fake on another port or
to a closed port: every request stays on 127.0.0.1), a connection closed without an answer.
The server runs in a thread of the fuzz worker on 127.0.0.1 and answers at most
`Script.budget` requests; an audit hook in the worker refuses any connection elsewhere.
"""

from __future__ import annotations

import json
import random
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

from fuzz_cli import Check, SurfaceCase, recording_check, run_cli, trace_check
from fuzz_inputs import Raw, dump_json
from fuzz_pool import Outcome
from fuzz_surfaces import DURATIONS, JSON_BAD

JOB, SRC, OP = "j1", "v-src", "v-op"
TIMEOUTS = ["200ms", "500ms", "1s", "100ms", "99ms", "0ms", "-1s", "1" * 400 + "ms", "٥s", "x"]
"""`record --timeout`: below a second, so a slow answer (a delay or trickle of up to 2.5 s) passes
the per-request timeout within the recording's 0.3-2 s, as it would pass the default 30 s in a
longer one; and values the option refuses."""
T0 = 1_795_600_000_000
PATHS = ("job", "plan", "subtasks", "metrics", "any")
FAULTS = ("status", "body", "delay", "trickle", "redirect", "elsewhere", "closed", "drop", "big")


@dataclass
class Script:
    """What the fake job does, poll by poll of `/jobs/<id>`."""

    states: list[str]
    parallelism: list[int]  # the operator's, per poll (a change is a rescale)
    restart_at: list[int] = field(default_factory=list)
    faults: list[tuple[str, str, Any, int]] = field(default_factory=list)
    """(path kind, fault, its value, from which request on)."""
    budget: int = 400

    def to_json(self) -> str:
        faults = [list(f) for f in self.faults]
        return dump_json(
            {"states": self.states, "parallelism": self.parallelism, "restart_at": self.restart_at}
            | {"faults": faults, "budget": self.budget}
        )

    @classmethod
    def from_json(cls, text: str) -> Script:
        body = json.loads(text)
        return cls(
            body["states"],
            body["parallelism"],
            body["restart_at"],
            [tuple(f) for f in body["faults"]],
            body["budget"],
        )


def make_script(rng: random.Random) -> tuple[Script, list[str]]:
    polls = rng.choice((1, 2, 4, 8))
    states = [
        rng.choice(["RUNNING"] * 6 + ["RESTARTING", "CREATED", "FAILED", "x", ""]) for _ in range(polls)
    ]
    states.append(rng.choice(["FINISHED", "CANCELED", "FAILED", "RUNNING"]))
    base = rng.choice((1, 2, 3, 64))
    parallelism = [base] * len(states)
    notes = [f"{len(states)} polls"]
    if rng.random() < 0.2:
        at = rng.randrange(len(states))
        parallelism[at:] = [rng.choice((1, 4, 0, -1, 1000, 10**9))] * (len(states) - at)
        notes.append(f"rescale at {at} to {parallelism[at]}")
    restarts = sorted(rng.sample(range(len(states)), k=min(len(states), rng.choice((0, 0, 1, 2)))))
    faults = []
    for _ in range(rng.choice((0, 0, 1, 1, 2))):
        kind, fault = rng.choice(PATHS), rng.choice(FAULTS)
        value = _fault_value(rng, fault)
        faults.append((kind, fault, value, rng.choice((0, 0, 1, 3, 10))))
        notes.append(f"{fault} on {kind}: {str(value)[:30]}")
    return Script(states, parallelism, restarts, faults), notes


def _fault_value(rng: random.Random, fault: str) -> Any:
    if fault == "status":
        return rng.choice((404, 500, 503, 204, 301, 400, 999))
    if fault == "body":
        value = rng.choice([*JSON_BAD, "not json", "ÿ", '{"state": "RUNNING"'])
        return (
            value.text if isinstance(value, Raw) else (value if isinstance(value, str) else json.dumps(value))
        )
    if fault in ("delay", "trickle"):  # now and then past --timeout and the recording's end
        return rng.choice((0.05, 0.05, 0.3, 0.3, 1.0, 2.5))
    if fault == "big":
        return rng.choice((1 << 20, 8 << 20, (64 << 20) + 1))
    return 0


class FakeJobManager:
    """The scripted answers, and counters of what was asked."""

    def __init__(self, script: Script, elsewhere_port: int = 0) -> None:
        self.script = script
        self.polls = 0
        self.requests = 0
        self.elsewhere_port = elsewhere_port

    def _poll(self) -> int:
        return min(max(self.polls - 1, 0), len(self.script.states) - 1)

    def answer(self, path: str, query: dict[str, list[str]]) -> Any:
        p = self._poll()
        attempt = sum(1 for at in self.script.restart_at if at <= p)
        ops = self.script.parallelism[p]
        if path == f"/jobs/{JOB}":
            self.polls += 1
            return {"state": self.script.states[self._poll()], "vertices": [
                {"id": SRC, "name": "Source: orders", "parallelism": 2},
                {"id": OP, "name": "window -> Sink: out", "parallelism": ops}]}  # fmt: skip
        if path == f"/jobs/{JOB}/plan":
            return {
                "plan": {
                    "nodes": [{"id": OP, "inputs": [{"id": SRC, "ship_strategy": "REBALANCE"}]}, {"id": SRC}]
                }
            }
        if path in (f"/jobs/{JOB}/vertices/{SRC}", f"/jobs/{JOB}/vertices/{OP}"):
            n = 2 if path.endswith(SRC) else ops
            return {"subtasks": [{"subtask": i, "attempt": attempt} for i in range(max(0, min(n, 1000)))]}
        base = T0 + 1000 * self.polls - 100_000 * attempt
        if path == f"/jobs/{JOB}/vertices/{SRC}/metrics":
            values = {f"{i}.Source__orders.currentOutputWatermark": base - 500 * i for i in range(2)}
            values |= {f"{i}.Source__orders.sourceIdleTime": 0 for i in range(2)}
            return _metrics(values, query)
        if path == f"/jobs/{JOB}/vertices/{OP}/metrics":
            return _metrics(
                {f"{i}.currentInputWatermark": base - 500 for i in range(max(0, min(ops, 1000)))}, query
            )
        return None

    def fault(self, path: str) -> tuple[str, Any] | None:
        kind = _kind(path)
        for where, fault, value, after in self.script.faults:
            if where in (kind, "any") and self.requests > after:
                return fault, value
        return None


def _kind(path: str) -> str:
    if path.endswith("/plan"):
        return "plan"
    if path.endswith("/metrics"):
        return "metrics"
    return "subtasks" if "/vertices/" in path else "job"


def _metrics(values: dict[str, int], query: dict[str, list[str]]) -> list[dict[str, str]]:
    if "get" not in query:
        return [{"id": k} for k in values]
    wanted = query["get"][0].split(",")
    return [{"id": k, "value": str(values[k])} for k in wanted if k in values]


class _Answer(BaseHTTPRequestHandler):
    """Answers from `fake` (set per server, in a subclass made by `_handler`)."""

    fake: FakeJobManager

    def do_GET(self) -> None:  # http.server's name
        fake = self.fake
        fake.requests += 1
        if fake.requests > fake.script.budget:
            self.send_error(429)
            return
        url = urlparse(self.path)
        found = fake.fault(url.path)
        body = json.dumps(fake.answer(url.path, parse_qs(url.query))).encode()
        if found is None:
            self.send(200, body)
            return
        fault, value = found
        _FAULTS[fault](self, value, body)

    def send(self, code: int, body: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def trickle(self, body: bytes, seconds: float) -> None:
        """The body a byte at a time, over `seconds`."""
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        for i in range(len(body)):
            self.wfile.write(body[i : i + 1])
            self.wfile.flush()
            time.sleep(seconds / max(len(body), 1))

    def redirect(self, target: str) -> None:
        self.send_response(302)
        self.send_header("Location", target)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: Any) -> None:
        pass


def _delayed(h: _Answer, value: Any, body: bytes) -> None:
    time.sleep(float(value))
    h.send(200, body)


def _dropped(h: _Answer, value: Any, body: bytes) -> None:
    h.close_connection = True


_FAULTS: dict[str, Callable[[_Answer, Any, bytes], None]] = {
    "status": lambda h, value, body: h.send(int(value), body),
    "body": lambda h, value, body: h.send(200, str(value).encode("utf-8", errors="surrogatepass")),
    "delay": _delayed,
    "trickle": lambda h, value, body: h.trickle(body, float(value)),
    "redirect": lambda h, value, body: h.redirect(h.path + "/again"),
    "elsewhere": lambda h, value, body: h.redirect(f"http://127.0.0.1:{h.fake.elsewhere_port}{h.path}"),
    "closed": lambda h, value, body: h.redirect(f"http://127.0.0.1:9{h.path}"),
    "drop": _dropped,
    "big": lambda h, value, body: h.send(200, b"[" + b"0," * (int(value) // 2) + b"0]"),
}


def _handler(fake: FakeJobManager) -> type[BaseHTTPRequestHandler]:
    return type("Handler", (_Answer,), {"fake": fake})


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the recorder hung up (its timeout, or a run ended): nothing to report


def _serve(fake: FakeJobManager) -> ThreadingHTTPServer:
    server = _Server(("127.0.0.1", 0), _handler(fake))
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    return server


def loopback_only() -> None:
    """Refuse, in this process, any connection or name look-up off 127.0.0.1 (an audit hook)."""

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event == "socket.connect" and isinstance(args[1], tuple) and args[1][0] != "127.0.0.1":
            raise PermissionError(f"the fuzzer connects only to 127.0.0.1, not {args[1][0]}")
        if event == "socket.getaddrinfo" and args[0] not in ("127.0.0.1", None):
            raise PermissionError(f"the fuzzer looks up no names ({args[0]!r})")

    sys.addaudithook(hook)


_GUARDED: list[bool] = []


def maybe_absent(check: Check) -> Check:
    """`check`, passing a file that was not written at all."""
    return lambda path: check(path) if path.exists() else None


def make_record(seed: int, index: int) -> SurfaceCase:
    """A script for the fake JobManager and `record`'s options (one vertex, or the whole job)."""
    rng = random.Random(f"wmviz-fuzz-record:{seed}:{index}")
    script, notes = make_script(rng)
    whole = rng.random() < 0.4
    out = "out.json" if whole else rng.choice(("out.jsonl", "out.csv", "out.parquet"))
    args = [
        "record",
        "--rest",
        "REST",
        "--job",
        rng.choice([JOB] * 9 + ["nope"]),
        "--every",
        rng.choice(["10ms"] * 8 + DURATIONS[:4]),
    ]
    args += ["--for", rng.choice(["300ms", "1s", "2s"]), "--out", out]
    if not whole:
        args += ["--vertex", rng.choice(["window", "window", OP, "Source: orders", "nope", ""])]
    if rng.random() < 0.3:
        args += ["--idleness", rng.choice(DURATIONS)]
    if rng.random() < 0.1:
        args += ["--rest", rng.choice(["ftp://x", "http://", "http://127.0.0.1:9", "REST/..", "http://[::1"])]
    if rng.random() < 0.3:  # drawn last: the choices above stay those of the inputs made before it
        args += ["--timeout", rng.choice(TIMEOUTS)]
    return SurfaceCase(
        index, "record", (("script.json", script.to_json().encode()),), tuple(args), tuple(notes)
    )


def run_record(case: SurfaceCase, folder: str) -> Outcome:
    """Serve the script on 127.0.0.1 (and a second fake as the host a redirect goes to), run `record`."""
    if not _GUARDED:
        loopback_only()
        _GUARDED.append(True)
    script = Script.from_json(case.files()["script.json"].decode())
    elsewhere = _serve(FakeJobManager(Script(["RUNNING"], [1])))
    fake = FakeJobManager(script, elsewhere.server_address[1])
    server = _serve(fake)
    rest = f"http://127.0.0.1:{server.server_address[1]}"
    args = tuple(rest if a == "REST" else a.replace("REST", rest) for a in case.args)
    out = args[args.index("--out") + 1]
    # A recording that took no sample writes nothing and says so: absent is not unreadable.
    check = maybe_absent(recording_check if out.endswith(".json") else trace_check)
    try:
        return run_cli(SurfaceCase(case.index, case.fmt, (), args, case.mutations), folder, check, out)
    finally:
        for s in (server, elsewhere):
            s.shutdown()
            s.server_close()
        socket.setdefaulttimeout(None)
