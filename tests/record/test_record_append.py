"""Whole-job `record` appends (issue 33, deliver 3): the header once, each sample one line, the
file never rewritten, the writer's memory bounded by one sample, a late sample said, a kill leaving
a readable recording, and the appended form read as the whole-document form is."""

from __future__ import annotations

import json
import random
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

from tests.cli.test_output_kills import kill_while_writing
from tests.support.fake_jobmanager import JOB, OP, SRC, FakeJob
from wmviz.record.job import (
    INPUT_WATERMARK,
    OUTPUT_WATERMARK,
    Edge,
    JobFormatError,
    JobRecording,
    Vertex,
    input_metric,
    read_recording,
    write_recording,
)
from wmviz.record.job_append import JobWriter
from wmviz.record.job_inputs import MAX_TIMES, assign_inputs


def _whole_job(url: str, out: Path, every: str = "10ms") -> list[str]:
    return [sys.executable, "-m", "wmviz", "record", "--rest", url, "--job", JOB,
            "--every", every, "--out", str(out)]  # fmt: skip


def test_the_recording_is_appended_never_rewritten_and_holds_its_header_once(serve, tmp_path):
    """Watched while it records: one inode from the first sample on, a size that only grows, one
    header line, one line per sample — and it reads back as every sample taken. The size is also
    read at each poll of the job (by the endpoint, so however busy the machine: a sample is
    written before the next poll asks for the job's state)."""
    out = tmp_path / "r.json"
    at_polls: list[int] = []

    def size_at_poll(job, path, query):
        if path == f"/jobs/{JOB}" and out.exists():
            at_polls.append(out.stat().st_size)
        return None

    url = serve(FakeJob(["RUNNING"] * 80 + ["FINISHED"], hook=size_at_poll))
    proc = subprocess.Popen(_whole_job(url, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen: list[tuple[int, int]] = []
    while proc.poll() is None:
        try:
            info = out.stat()
            seen.append((info.st_ino, info.st_size))
        except FileNotFoundError:
            pass
        time.sleep(0.001)
    stdout, stderr = proc.communicate()
    assert proc.returncode == 0, stderr[-2000:]
    info = out.stat()
    seen.append((info.st_ino, info.st_size))
    assert len({ino for ino, _ in seen}) == 1, "the file was replaced (rewritten) while recording"
    sizes = [size for _, size in seen]
    assert sizes == sorted(sizes), "the file shrank while recording"
    assert at_polls == sorted(at_polls) and len(set(at_polls)) >= 70, "the file did not grow sample by sample"
    lines = out.read_text().splitlines()
    assert sum('"format"' in line for line in lines) == 1 and json.loads(lines[0])["layout"] == "lines"
    samples = [line for line in lines if line.startswith('{"t":')]
    rec = read_recording(out)
    assert len(samples) == len(rec.times()) >= 70 and f"{len(samples)} samples" in stdout
    assert rec.series[(OP, 0, INPUT_WATERMARK, None)] and rec.series[(SRC, 1, OUTPUT_WATERMARK, None)]


def _job(inputs: int = 1) -> JobRecording:
    """Two sources into a vertex of two input edges (a join), parallelism 4 each."""
    vertices = (Vertex("a", "Source: a", 4), Vertex("b", "Source: b", 4), Vertex("j", "join", 4))
    return JobRecording("j1", vertices, (Edge("a", "j", "HASH"), Edge("b", "j", "HASH")))


def _points(n: int) -> list[tuple[tuple[str, int, str, str | None], int]]:
    """Sample n of `_job`: b lags a, and the join reports input 1 = a's minimum, input 2 = b's."""
    points: list[tuple[tuple[str, int, str, str | None], int]] = []
    for s in range(4):
        points += [
            (("a", s, OUTPUT_WATERMARK, None), 1000 * n + s),
            (("b", s, OUTPUT_WATERMARK, None), 500 * n + s),
        ]
        points += [(("j", s, input_metric(1), None), 1000 * n), (("j", s, input_metric(2), None), 500 * n)]
    return points


def _write(path: Path, samples: int) -> JobWriter:
    writer = JobWriter(_job(), path)
    for n in range(samples):
        writer.sample(1_000_000 + 1000 * n, _points(n))
    return writer


def test_the_writers_memory_is_one_samples_not_the_historys(tmp_path):
    """Its state after 10x the samples is the same size: the keys it numbered, and the vote's window
    let go after MAX_TIMES samples. (bench/record_job_memory.py measures the whole loop.)"""
    peaks = []
    for samples in (MAX_TIMES + 10, 10 * (MAX_TIMES + 10)):
        tracemalloc.start()
        writer = _write(tmp_path / f"r{samples}.json", samples)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        assert len(writer.keys) == 16 and not writer.vote.open and not writer.vote.window.series
        writer.close()
    assert peaks[1] < 1.5 * peaks[0], peaks


def test_the_vote_decides_as_the_whole_document_writer_does(tmp_path):
    """The input vote on the appended form's window agrees with `assign_inputs` on the whole
    recording (here the plan lists b's edge first, so only the vote can say b feeds input 2)."""
    path = tmp_path / "r.json"
    whole = _job()
    whole.edges = (Edge("b", "j", "HASH"), Edge("a", "j", "HASH"))
    writer = JobWriter(whole, path)
    for n in range(12):
        writer.sample(1_000_000 + 1000 * n, _points(n))
        for key, value in _points(n):
            whole.add(key, 1_000_000 + 1000 * n, value)
    writer.close()
    assign_inputs(whole)
    assert [e.input for e in whole.edges] == [2, 1]
    assert read_recording(path).edges == whole.edges


def test_a_late_sample_is_written_and_said_as_late(serve, tmp_path):
    """One answer takes 600 ms at a 100 ms period: the next sample starts late and says by how much.
    On a busy machine other samples may start late too; each is written and said the same way."""

    def slow(job, path, query):
        if path == f"/jobs/{JOB}" and job.polls == 4:
            time.sleep(0.6)
        return None

    out = tmp_path / "r.json"
    url = serve(FakeJob(["RUNNING"] * 10 + ["FINISHED"], hook=slow))
    proc = subprocess.run(_whole_job(url, out, "100ms"), capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    late = [json.loads(line)["late_ms"] for line in out.read_text().splitlines() if '"late_ms"' in line]
    assert late and max(late) >= 400, out.read_text()[-500:]
    said = [line for line in proc.stderr.splitlines() if line.startswith("[record]") and "ms late)" in line]
    assert sorted(int(line.split("(")[1].split(" ")[0]) for line in said) == sorted(late), proc.stderr
    assert f", {len(late)} started late" in proc.stdout


def test_the_whole_document_form_still_reads_and_both_forms_agree(tmp_path):
    appended, whole = tmp_path / "a.json", tmp_path / "w.json"
    _write(appended, 5).close()
    rec = read_recording(appended)
    write_recording(rec, whole)
    again = read_recording(whole)
    assert (again.series, again.edges, again.vertices, again.notes) == (
        rec.series,
        rec.edges,
        rec.vertices,
        rec.notes,
    )


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('{"t": 5, "v": [[99, 1]]}', "line N: [99, 1] is not [a series number declared before"),
        ('{"t": 5, "v": 7}', "line N: `v` 7 is not a list"),
        ("[1, 2]", "line N: "),
        ('{"what": 1}', "line N: no `t`, `series`, `note` or `inputs`"),
        ('{"series": [[0, "a", 0, "m", null]]}', "line N: series number 0 is declared twice"),
        ('{"inputs": [1]}', "`inputs` names 1 edges, the header has 2"),
        ("{not json", "line N: not JSON"),
    ],
)
def test_an_odd_appended_line_is_a_clean_error_naming_the_line(tmp_path, line, said):
    path = tmp_path / "r.json"
    _write(path, 1).close()
    before = path.read_text()
    path.write_text(before + line + "\n")
    with pytest.raises(JobFormatError, match=r"r\.json") as err:
        read_recording(path)
    assert said.replace("line N", f"line {len(before.splitlines()) + 1}") in str(err.value)


def test_a_line_cut_short_is_left_out_and_said(tmp_path):
    path = tmp_path / "r.json"
    _write(path, 3).close()
    path.write_text(path.read_text() + '{"t": 9, "v": [[0,')
    rec = read_recording(path)
    assert len(rec.times()) == 3 and any("cut off" in note for note in rec.notes)


def test_a_killed_whole_job_recording_is_readable(serve, tmp_path):
    """SIGKILLed at random moments while it appends: what is at --out reads back, whole samples."""
    url = serve(FakeJob(["RUNNING"]))
    out = tmp_path / "r.json"
    rng = random.Random(5)
    taken = []
    for _ in range(3):
        # Once its third write has begun: two whole samples at least, however slow its start (as
        # tests/cli/test_output_kills.py's recording, which beside a CPU hog was killed before its
        # first sample).
        assert kill_while_writing(_whole_job(url, out)[3:], out, rng, 1.5, dest_changes=3)
        rec = read_recording(out)
        assert not any("cut off" in note for note in rec.notes)
        # whole samples: every series of the operator has a point at every sample time
        times = rec.times()
        assert all(len(rec.series[(OP, s, INPUT_WATERMARK, None)]) == len(times) for s in range(2))
        taken.append(len(times))
    assert min(taken) > 1
