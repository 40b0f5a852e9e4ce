"""`wmviz record` against a scripted JobManager REST endpoint (no JVM): a restart, the job
finishing, Ctrl-C, and an endpoint that fails, each leaving a valid trace of every sample taken."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time

from tests.support.fake_jobmanager import JOB, T0, FakeJob
from wmviz.trace.readers import read_trace


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


def _samples_in(text: str) -> set[str]:
    """The sample numbers a trace being written holds so far (each on the last row of an instance)."""
    return set(re.findall(r'"sample": ?([0-9]+)', text))


def test_ctrl_c_keeps_every_sample_taken(serve, tmp_path):
    out = tmp_path / "r.jsonl"
    proc = subprocess.Popen(_record(serve(FakeJob(["RUNNING"])), out), stderr=subprocess.PIPE, text=True)
    # Awaited, not timed: interrupt once 10 samples are in (the cap only stops a hung recorder).
    deadline = time.monotonic() + 300
    while proc.poll() is None and (not out.exists() or len(_samples_in(out.read_text())) < 10):
        assert time.monotonic() < deadline, "the recorder took no 10 samples in 300 s"
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
