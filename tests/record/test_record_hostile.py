"""`wmviz record` against a hostile JobManager (issue 24): every odd answer ends in a one-line
message (exit 2) or a correct recording, never a traceback, a hang, a silent redirect, an
unbounded answer, or "RUNNING; waiting" forever."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

from tests.support.fake_jobmanager import JOB, OP, SRC, FakeJob, Reply
from wmviz.record.job import read_recording
from wmviz.trace.readers import read_trace


def _record(url: str, out, *extra, vertex: str | None = "window") -> list[str]:
    picked = ["--vertex", vertex] if vertex else []
    return [sys.executable, "-m", "wmviz", "record", "--rest", url, "--job", JOB, *picked,
            "--every", "50ms", "--out", str(out), *extra]  # fmt: skip


def _run(command: list[str], timeout: float = 60, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, capture_output=True, text=True, timeout=timeout, env={**os.environ, **env})


def _only(path: str, reply: Reply):
    """A hook answering `path` (and only it) with `reply`."""
    return lambda job, asked, query: reply if asked == path else None


def _json(body: object) -> Reply:
    return Reply(json.dumps(body).encode())


def _clean_exit_2(proc: subprocess.CompletedProcess) -> str:
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr
    return proc.stderr


def test_a_redirect_to_another_host_is_refused_naming_both_hosts(serve, tmp_path):
    elsewhere = serve(FakeJob(["RUNNING"]))
    port = elsewhere.rsplit(":", 1)[1]
    moved = Reply(status=302, headers={"Location": f"http://localhost:{port}/jobs/{JOB}"})
    url = serve(FakeJob(["RUNNING"], hook=_only(f"/jobs/{JOB}", moved)))
    err = _clean_exit_2(_run(_record(url, tmp_path / "r.jsonl")))
    assert f"http://localhost:{port}" in err and f"--rest {url}" in err
    assert not (tmp_path / "r.jsonl").exists()


def test_a_redirect_within_the_rest_host_is_followed(serve, tmp_path):
    job = FakeJob(["RUNNING"] * 4 + ["FINISHED"])
    moved = Reply(status=307, headers={"Location": f"/jobs/{JOB}/plan-moved"})
    plan = job.answer(f"/jobs/{JOB}/plan", {})
    job.hook = lambda _, path, query: (
        moved if path == f"/jobs/{JOB}/plan" else _json(plan) if path.endswith("plan-moved") else None
    )
    proc = _run(_record(serve(job), tmp_path / "r.jsonl"))
    assert proc.returncode == 0, proc.stderr
    assert "3 samples" in proc.stdout


def test_a_body_that_trickles_in_ends_at_the_deadline_with_a_bounded_number_of_tries(serve, tmp_path):
    """The body would take 90 s to arrive whole: each try is cut at --timeout, and after the third
    the recorder gives up. Counted, not timed: the endpoint sees exactly three requests (however
    slow the machine, a recorder that waited for the body would not end with this error)."""
    trickle = Reply(b'{"state": "RUNNING", "vertices": []}' * 50, drip_s=0.05)
    asked: list[str] = []

    def counted(job, path, query):
        if path == f"/jobs/{JOB}":
            asked.append(path)
            return trickle
        return None

    url = serve(FakeJob(["RUNNING"], hook=counted))
    err = _clean_exit_2(_run(_record(url, tmp_path / "r.jsonl", "--timeout", "500ms"), timeout=120))
    assert "no whole answer within 0.5 s (asked 3 times)" in err
    assert len(asked) == 3, asked


def test_an_answer_over_the_size_cap_is_refused_as_it_is_read(serve, tmp_path):
    big = [{"id": f"{i}.Source__orders.numRecordsOut"} for i in range(20_000)]
    for length in (True, False):  # declared up front, or only found out by reading
        reply = Reply(json.dumps(big).encode(), length=length)
        url = serve(FakeJob(["RUNNING"], hook=_only(f"/jobs/{JOB}/vertices/{SRC}/metrics", reply)))
        proc = _run(_record(url, tmp_path / "r.jsonl"), WMVIZ_MAX_REST_ANSWER_BYTES="100000")
        err = _clean_exit_2(proc)
        assert "100,000 bytes (WMVIZ_MAX_REST_ANSWER_BYTES)" in err


def test_a_parallelism_over_the_subtask_budget_is_refused(serve, tmp_path):
    for vertex in ("window", None):
        wide = {"state": "RUNNING", "vertices": [
            {"id": SRC, "name": "Source: orders", "parallelism": 10**9},
            {"id": OP, "name": "window -> Sink: out", "parallelism": 2}]}  # fmt: skip
        url = serve(FakeJob(["RUNNING"], hook=_only(f"/jobs/{JOB}", _json(wide))))
        out = tmp_path / ("r.jsonl" if vertex else "r.json")
        err = _clean_exit_2(_run(_record(url, out, vertex=vertex), timeout=60))
        assert "1,000,000,000 subtasks" in err and "(WMVIZ_MAX_SUBTASKS)" in err


ODD_ANSWERS = {
    "a list for the job": (f"/jobs/{JOB}", _json([1, 2])),
    "a numeric state": (f"/jobs/{JOB}", _json({"state": 7, "vertices": []})),
    "a parallelism as text": (
        f"/jobs/{JOB}",
        _json(
            {
                "state": "RUNNING",
                "vertices": [
                    {"id": SRC, "name": "s", "parallelism": "2"},
                    {"id": OP, "name": "window", "parallelism": 2},
                ],
            }
        ),
    ),
    "a vertex id as a number": (f"/jobs/{JOB}", _json({"state": "RUNNING", "vertices": [{"id": 5}]})),
    "a job without vertices": (f"/jobs/{JOB}", _json({"state": "RUNNING", "a": {"a": 1}})),
    "a plan without nodes": (f"/jobs/{JOB}/plan", _json({"plan": 3})),
    "a plan input without an id": (
        f"/jobs/{JOB}/plan",
        _json({"plan": {"nodes": [{"id": OP, "inputs": [{}]}]}}),
    ),
    "metric ids that are numbers": (f"/jobs/{JOB}/vertices/{SRC}/metrics", _json([{"id": 1}])),
    "metrics as an object": (f"/jobs/{JOB}/vertices/{OP}/metrics", _json({"id": "x"})),
    "deep JSON": (f"/jobs/{JOB}/plan", Reply(b"[" * 100_000 + b"]" * 100_000)),
    "not JSON": (f"/jobs/{JOB}", Reply(b"<html>busy</html>")),
    "an HTTP 500 every time": (f"/jobs/{JOB}", Reply(b"oops", status=500)),
}


@pytest.mark.parametrize("case", sorted(ODD_ANSWERS))
def test_an_odd_answer_at_the_start_is_one_line_and_exit_2(serve, tmp_path, case):
    path, reply = ODD_ANSWERS[case]
    for vertex in ("window", None):
        url = serve(FakeJob(["RUNNING"], hook=_only(path, reply)))
        out = tmp_path / ("r.jsonl" if vertex else "r.json")
        err = _clean_exit_2(_run(_record(url, out, vertex=vertex)))
        assert len(err.strip().splitlines()) == 1, err


def _odd_sample_values(job, path, query):
    """From the 4th poll on, the operator reports values no metric has."""
    if path == f"/jobs/{JOB}/vertices/{OP}/metrics" and "get" in query and job.polls >= 4:
        return _json(
            [{"id": i, "value": v} for i, v in zip(query["get"][0].split(","), ("abc", "٣"), strict=False)]
        )
    return None


def test_odd_values_during_a_recording_are_skipped_polls_that_end_it_after_give_up_after(serve, tmp_path):
    out = tmp_path / "r.jsonl"
    proc = _run(_record(serve(FakeJob(["RUNNING"], hook=_odd_sample_values)), out, "--give-up-after", "3"))
    err = _clean_exit_2(proc)
    assert err.count("sample skipped") == 2 and "not a number" in err
    assert "the recording ends: 3 polls in a row failed" in err and f"{out} holds the 2 whole samples" in err
    assert "waiting" not in err
    assert len(read_trace(out).rows) > 0


def test_an_endpoint_gone_for_good_ends_the_recording_saying_so(serve, tmp_path):
    for vertex in ("window", None):
        job = FakeJob(["RUNNING"])
        url = serve(job)
        out = tmp_path / ("r.jsonl" if vertex else "r.json")
        command = _record(url, out, "--give-up-after", "3", "--timeout", "1s", vertex=vertex)
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 300  # awaited: only a hung recorder reaches it
        while job.polls < 5 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()
        assert job.server is not None
        job.server.shutdown()
        job.server.server_close()
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 2, err
        assert "the recording ends: 3 polls in a row failed" in err and "Connection refused" in err
        assert "RUNNING; waiting" not in err
        assert out.exists()


def _gone(job, path, query):
    """From the 5th poll of the job on, the endpoint no longer knows it."""
    if path == f"/jobs/{JOB}" and job.polls >= 4:
        return Reply(b'{"errors": ["Job could not be found."]}', status=404)
    return None


def test_a_job_the_endpoint_no_longer_knows_ends_the_recording_at_once(serve, tmp_path):
    for vertex in ("window", None):
        out = tmp_path / ("r.jsonl" if vertex else "r.json")
        err = _clean_exit_2(_run(_record(serve(FakeJob(["RUNNING"], hook=_gone)), out, vertex=vertex)))
        assert f"job {JOB} is gone from" in err and "HTTP 404" in err
        assert "sample skipped" not in err and out.exists()
        if vertex is None:
            assert any("ended before the job" in note for note in read_recording(out).notes)


def test_attempts_are_compared_per_subtask_index_not_in_answer_order(serve, tmp_path):
    job = FakeJob(["RUNNING"] * 30 + ["FINISHED"], attempts={0: 1, 1: 0}, shuffled=True)
    proc = _run(_record(serve(job), tmp_path / "r.jsonl"))
    assert proc.returncode == 0, proc.stderr
    assert "29 samples" in proc.stdout and "0 restarts" in proc.stdout


def test_a_rescale_across_a_restart_re_resolves_the_vertex_and_says_so(serve, tmp_path):
    job = FakeJob(["RUNNING"] * 4 + ["RESTARTING"] * 2 + ["RUNNING"] * 4 + ["FINISHED"], restart_at=5,
                  rescale_at=5, rescaled=(2, 3))  # fmt: skip
    out = tmp_path / "r.jsonl"
    proc = _run(_record(serve(job), out))
    assert proc.returncode == 0, proc.stderr
    assert "note: rescaled" in proc.stderr and "'window -> Sink: out' × 3" in proc.stderr
    assert "1 restarts" in proc.stdout and "rescaled" in proc.stdout
    assert read_trace(out).instances == ["0", "1", "0@r1", "1@r1", "2@r1"]


def test_a_rescale_that_changes_the_channels_ends_the_recording(serve, tmp_path):
    for vertex in ("window", None):
        job = FakeJob(["RUNNING"] * 4 + ["RESTARTING"] * 2 + ["RUNNING"] * 4 + ["FINISHED"], restart_at=5,
                      rescale_at=5, rescaled=(4, 2))  # fmt: skip
        out = tmp_path / ("r.jsonl" if vertex else "r.json")
        err = _clean_exit_2(_run(_record(serve(job), out, vertex=vertex)))
        assert "the job was rescaled" in err and out.exists()
        if vertex is None:
            assert any("rescaled" in note for note in read_recording(out).notes)


@pytest.mark.parametrize("vertex", [None, "window"], ids=["whole job", "one vertex"])
def test_a_sample_cut_short_by_the_end_of_for_ends_the_recording_without_a_failure(serve, tmp_path, vertex):
    """The last sample runs into `--for`'s end (its answers trickle in): the recording ends there,
    with every earlier sample, and says nothing of a skipped sample or a failure."""
    job = FakeJob(["RUNNING"])

    def trickle_later(job: FakeJob, path: str, query: dict) -> Reply | None:
        if job.polls < 3 or "metrics" not in path:
            return None
        return Reply(json.dumps(job.answer(path, query)).encode(), drip_s=0.05)

    job.hook = trickle_later
    out = tmp_path / ("job.json" if vertex is None else "r.jsonl")
    proc = _run(_record(serve(job), out, "--for", "2s", vertex=vertex))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "sample skipped" not in proc.stderr and "failed" not in proc.stderr, proc.stderr[-2000:]
    assert out.is_file()
