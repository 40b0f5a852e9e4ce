"""`wmviz record` against a scripted JobManager REST endpoint (no JVM): a restart, the job
finishing, Ctrl-C, and an endpoint that fails, each leaving a valid trace of every sample taken."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse

import pytest

from wmviz.trace.readers import read_trace

JOB, SRC, OP = "j1", "v-src", "v-op"
T0 = 1_795_600_000_000


class FakeJob:
    """A two-subtask source feeding a two-subtask operator (rebalance); watermarks advance 1 s per
    poll of the job; `script` says the state per poll and when the attempts change."""

    def __init__(self, states: list[str], restart_at: int | None = None, metrics_from: int = 0) -> None:
        self.states = states
        self.restart_at = restart_at
        self.metrics_from = metrics_from
        """Before this poll the tasks have registered no metrics yet (a job just submitted)."""
        self.polls = 0

    @property
    def attempt(self) -> int:
        return int(self.restart_at is not None and self.polls >= self.restart_at)

    def answer(self, path: str, query: dict) -> object:
        if path == f"/jobs/{JOB}":
            self.polls += 1
            state = self.states[min(self.polls - 1, len(self.states) - 1)]
            return {"state": state, "vertices": [
                {"id": SRC, "name": "Source: orders", "parallelism": 2},
                {"id": OP, "name": "window -> Sink: out", "parallelism": 2}]}  # fmt: skip
        if path == f"/jobs/{JOB}/plan":
            return {"plan": {"nodes": [{"id": OP, "inputs": [{"id": SRC, "ship_strategy": "REBALANCE"}]},
                                       {"id": SRC}]}}  # fmt: skip
        if path in (f"/jobs/{JOB}/vertices/{SRC}", f"/jobs/{JOB}/vertices/{OP}"):
            return {"subtasks": [{"subtask": i, "attempt": self.attempt} for i in range(2)]}
        if self.polls < self.metrics_from:
            return []
        # While tasks deploy, subtask 1 registers its metrics a poll later than subtask 0.
        deploying = self.polls < self.metrics_from + 2
        base = T0 + 1000 * self.polls - (100_000 if self.attempt else 0)
        if path == f"/jobs/{JOB}/vertices/{SRC}/metrics":
            up = range(1 if deploying else 2)
            values = {f"{i}.Source__orders.currentOutputWatermark": base - 500 * i for i in up}
            values |= {f"{i}.Source__orders.sourceIdleTime": 0 for i in up}
            return _metrics(values, query)
        if path == f"/jobs/{JOB}/vertices/{OP}/metrics":
            return _metrics({f"{i}.currentInputWatermark": base - 500 for i in range(2)}, query)
        return None


def _metrics(values: dict, query: dict) -> list[dict]:
    if "get" not in query:
        return [{"id": k} for k in values]
    wanted = query["get"][0].split(",")
    return [{"id": k, "value": str(values[k])} for k in wanted if k in values]


@pytest.fixture
def serve():
    servers = []

    def start(job: FakeJob) -> str:
        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                url = urlparse(self.path)
                body = job.answer(url.path, parse_qs(url.query))
                self.send_response(200 if body is not None else 404)
                self.end_headers()
                self.wfile.write(json.dumps(body).encode())

            def log_message(self, *args):
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server in servers:
        server.shutdown()


def _record(url: str, out, *extra) -> list[str]:
    return [sys.executable, "-m", "wmviz", "record", "--rest", url, "--job", JOB, "--vertex", "window",
            "--every", "50ms", "--out", str(out), *extra]  # fmt: skip


def test_a_restart_starts_fresh_instances_and_the_finished_job_ends_the_recording(serve, tmp_path):
    job = FakeJob(["RUNNING"] * 4 + ["RESTARTING"] * 2 + ["RUNNING"] * 4 + ["FINISHED"], restart_at=5)
    out = tmp_path / "r.jsonl"
    proc = subprocess.run(_record(serve(job), out), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "the job is RESTARTING; waiting" in proc.stderr
    assert "the job is FINISHED; recording ends" in proc.stderr
    # The first RUNNING answer is the recorder's look-up of the job; then 3 + 4 running samples.
    assert "7 samples" in proc.stdout and "1 restarts" in proc.stdout
    trace = read_trace(out)
    assert trace.instances == ["0", "1", "0@r1", "1@r1"]
    # After the restart the watermarks start again far lower: fresh valves take them.
    first_after = next(r for r in trace.rows if r.instance == "0@r1" and r.watermark_ms is not None)
    assert first_after.watermark_ms < T0


def test_ctrl_c_keeps_every_sample_taken(serve, tmp_path):
    out = tmp_path / "r.jsonl"
    proc = subprocess.Popen(_record(serve(FakeJob(["RUNNING"])), out), stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and (not out.exists() or out.read_text().count('"sample"') < 20):
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    assert "interrupted; every sample so far is in the trace" in err
    progress = [line for line in err.splitlines() if line.startswith("[record]")]
    trace = read_trace(out)
    samples = {dict(r.payload)["sample"] for r in trace.rows if "sample" in dict(r.payload)}
    assert len(samples) == len(progress) >= 10


def test_a_vertex_the_job_lacks_and_an_unreachable_endpoint_exit_2(serve, tmp_path):
    url = serve(FakeJob(["RUNNING"]))
    command = _record(url, tmp_path / "r.jsonl")
    command[command.index("window")] = "join"
    proc = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and "--vertex 'join' is not a vertex of the job" in proc.stderr
    proc = subprocess.run(_record("http://127.0.0.1:9", tmp_path / "r.jsonl"), capture_output=True, text=True)
    assert proc.returncode == 2 and "GET http://127.0.0.1:9/jobs/j1" in proc.stderr


def test_metrics_registered_after_the_recording_started_are_found(serve, tmp_path):
    out = tmp_path / "r.jsonl"
    job = FakeJob(["RUNNING"] * 8 + ["FINISHED"], metrics_from=4)
    proc = subprocess.run(_record(serve(job), out), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(out)
    checked = [r for r in trace.rows if "reported_ms" in dict(r.payload)]
    assert len(checked) >= 2 * 4  # both subtasks, from the poll the metrics appear on
    # Upstream subtask 1, registered a poll later than subtask 0, is read too: its channel has watermarks.
    assert any(r.channel == 1 and r.watermark_ms is not None for r in trace.rows)
