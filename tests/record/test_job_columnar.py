"""The columnar job recording (`wmviz.record.job_columnar`): the same answers as the JSON form,
the converter and `--format`, and hostile files refused with one line naming file and place.

The differential tests read one recording in both forms and ask both the same questions: every
series' value at random times (before, at and between points), blame at every sample and the
freshness budget. A reader bug in either form (an off-by-one in the binary search, a series cut
one point short, the sample times of one series only) makes them disagree.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from wmviz.analysis.blame import BlameError, Walker
from wmviz.analysis.lag_budget import LagBudget
from wmviz.record.job import (
    OUTPUT_WATERMARK,
    SOURCE_IDLE_TIME,
    SPLIT_WATERMARK,
    TASK_ATTEMPT,
    TASK_FINISHED,
    Edge,
    JobFormatError,
    JobRecording,
    Vertex,
    is_recording_bytes,
    read_recording,
    to_json,
    write_recording,
)
from wmviz.record.job_columnar import COLUMNAR_FORMAT, HEADER_KEY, ColumnarSeries

SAMPLE = Path("sample_data/jobs/silent-split-holds-the-whole-job.json")


def _wmviz(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wmviz", *args], capture_output=True, text=True)


def _random_job(seed: int) -> JobRecording:
    """Three vertices (a source with splits, a rescale, a hash), series starting and ending at
    different samples, an idle source subtask, a restart and a finished subtask."""
    rng = random.Random(seed)
    vertices = (Vertex("s", "Source: s", 4), Vertex("m", "map", 2), Vertex("k", "Sink: k", 3))
    rec = JobRecording("r", vertices, (Edge("s", "m", "RESCALE"), Edge("m", "k", "HASH")), idleness_ms=3_000)
    times = sorted(rng.sample(range(0, 200_000, 1_000), 40))
    for v in vertices:
        for sub in range(v.parallelism):
            wm = rng.randrange(-5_000, 5_000)
            first, last = rng.randrange(0, 5), rng.randrange(30, 41)
            for t in times[first:last]:
                wm += rng.choice([0, 0, 1_000, 3_000])
                rec.add((v.id, sub, OUTPUT_WATERMARK, None), t, wm)
                if v.id == "s":
                    rec.add((v.id, sub, SOURCE_IDLE_TIME, None), t, rng.choice([0, 5_000]))
                    for split in range(rng.randrange(0, 3)):
                        rec.add((v.id, sub, SPLIT_WATERMARK, f"p{sub}-{split}"), t, wm + split * 500)
            rec.add((v.id, sub, TASK_ATTEMPT, None), times[0], 0)
            rec.add((v.id, sub, TASK_ATTEMPT, None), times[25], 1 if sub == 0 else 0)
    rec.add(("k", 2, TASK_FINISHED, None), times[35], 1)
    return rec


def _both(rec: JobRecording, tmp_path: Path) -> tuple[JobRecording, JobRecording]:
    write_recording(rec, tmp_path / "r.json")
    write_recording(rec, tmp_path / "r.arrow", columnar=True)
    return read_recording(tmp_path / "r.json"), read_recording(tmp_path / "r.arrow")


def _blames(rec: JobRecording) -> list[object]:
    walker, out = Walker(rec), []
    for t in walker.times:
        try:
            out.append(walker.blame(None, t).as_json())
        except BlameError as err:
            out.append(str(err))
    return out


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_both_forms_answer_every_series_at_random_times_alike(tmp_path, seed):
    plain, col = _both(_random_job(seed), tmp_path)
    assert isinstance(col.series, ColumnarSeries) and not isinstance(plain.series, ColumnarSeries)
    assert col.times() == plain.times() and list(col.series) == sorted(
        plain.series, key=lambda k: (k[:3], k[3] or "")
    )
    rng = random.Random(seed)
    probes = sorted(rng.randrange(-10_000, 210_000) for _ in range(60)) + plain.times()
    probes.sort()
    for key in plain.series:
        assert col.series[key] == plain.series[key]
        assert col.values_over(key, probes) == plain.values_over(key, probes), key
    assert col.values_over(("s", 0, "nope", None), probes[:3]) == [None] * 3
    assert col.restarts() == plain.restarts() and col.splits_of("s", 1) == plain.splits_of("s", 1)


@pytest.mark.parametrize("seed", [1, 2])
def test_blame_and_the_budget_agree_at_every_sample(tmp_path, seed):
    plain, col = _both(_random_job(seed), tmp_path)
    assert _blames(col) == _blames(plain)


def test_the_built_in_job_blames_and_budgets_alike_in_both_forms(tmp_path):
    plain = read_recording(SAMPLE)
    write_recording(plain, tmp_path / "j.arrow", columnar=True)
    col = read_recording(tmp_path / "j.arrow")
    assert _blames(col) == _blames(plain)
    ours, theirs = LagBudget(col), LagBudget(plain)
    for t in plain.times()[::7]:
        assert ours.at(None, t).as_json() == theirs.at(None, t).as_json()
    assert [b.as_json() for b in ours.over_time(None, 20)] == [
        b.as_json() for b in theirs.over_time(None, 20)
    ]


def test_a_columnar_recording_is_read_only(tmp_path):
    _, col = _both(_random_job(1), tmp_path)
    with pytest.raises(TypeError, match="read-only"):
        col.add(("s", 0, OUTPUT_WATERMARK, None), 10**9, 1)


def test_convert_both_ways_keeps_every_point_and_blame_says_the_same(tmp_path):
    arrow, back = tmp_path / "j.arrow", tmp_path / "back.json"
    proc = _wmviz("convert", str(SAMPLE), str(arrow))
    assert proc.returncode == 0, proc.stderr
    assert "48 series, 61 samples over 600 s, 2928 points" in proc.stdout
    assert _wmviz("convert", str(arrow), str(back)).returncode == 0
    assert json.loads(back.read_text()) == to_json(read_recording(SAMPLE))
    for flags in ([], ["--json"], ["--at", "2026-11-25T19:00:00Z"]):
        assert _wmviz("blame", str(arrow), *flags).stdout == _wmviz("blame", str(SAMPLE), *flags).stdout
    assert _wmviz("lag", str(arrow)).stdout == _wmviz("lag", str(SAMPLE)).stdout
    assert is_recording_bytes(arrow.read_bytes()) and not is_recording_bytes(b"ARROW1 not one")


def test_convert_and_import_refuse_a_form_and_extension_that_disagree(tmp_path):
    proc = _wmviz("convert", str(SAMPLE), str(tmp_path / "j.parquet"))
    assert proc.returncode == 2 and "written as .json (or columnar, as .arrow)" in proc.stderr
    plan = Path("tests/data/prometheus/orders-job-plan.json")
    export = Path("tests/data/prometheus/orders-job-query-range.json")
    out = tmp_path / "o.json"
    args = ["import", "prometheus", str(export), "--plan", str(plan), "--out"]
    proc = _wmviz(*args, str(out), "--format", "columnar")
    assert proc.returncode == 2 and "a columnar job recording is written as .arrow" in proc.stderr
    assert not out.exists()
    proc = _wmviz(*args, str(tmp_path / "o.arrow"), "--format", "columnar")
    assert proc.returncode == 0, proc.stderr
    proc = _wmviz("import", "prometheus", str(export), "--out", str(tmp_path / "t.jsonl"), "--format", "json")
    assert proc.returncode == 2 and "is for a whole-job recording (with --plan)" in proc.stderr
    assert isinstance(read_recording(tmp_path / "o.arrow").series, ColumnarSeries)


def _arrow(path: Path, header: object, time: list, value: list, fields=("time", "value")) -> Path:
    meta = {} if header is None else {HEADER_KEY: json.dumps(header).encode()}
    types = [pa.int64() if f in ("time", "value") else pa.string() for f in fields]
    schema = pa.schema(list(zip(fields, types, strict=True)), metadata=meta)
    columns = [pa.array(time, types[0]), pa.array(value, types[1])]
    with pa.OSFile(str(path), "wb") as sink, pa.ipc.new_file(sink, schema) as writer:
        writer.write_batch(pa.record_batch(columns, schema=schema))
    return path


def _raw(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def _header(**index) -> dict:
    body = {k: v for k, v in to_json(read_recording(SAMPLE)).items() if k != "series"}
    base = {
        "vertex": ["a1"],
        "subtask": [0],
        "metric": [OUTPUT_WATERMARK],
        "split": [None],
        "start": [0, 2],
    }
    return {**body, "format": COLUMNAR_FORMAT, "index": {**base, **index}}


HOSTILE = {
    "not arrow at all": (
        lambda p: _raw(p, b"ARROW1" + b"\0" * 40 + b"ARROW1"),
        "not a columnar job recording",
    ),
    "no header": (lambda p: _arrow(p, None, [1, 2], [1, 2]), "without a wmviz header"),
    "header of another format": (
        lambda p: _arrow(p, {"format": "x"}, [1, 2], [1, 2]),
        "header: not a columnar",
    ),
    "header not an object": (lambda p: _arrow(p, [1], [1, 2], [1, 2]), "header: not a columnar"),
    "wrong columns": (
        lambda p: _arrow(p, _header(), [1, 2], ["a", "b"], ("time", "v")),
        "expected exactly (time: int64",
    ),
    "a null time": (lambda p: _arrow(p, _header(), [1, None], [1, 2]), "column time, row 1: empty"),
    "index lists differ": (
        lambda p: _arrow(p, _header(subtask=[0, 1]), [1, 2], [1, 2]),
        "header index: its lists differ",
    ),
    "index missing": (
        lambda p: _arrow(p, _header(start=None), [1, 2], [1, 2]),
        "header index: a value of the wrong kind",
    ),
    "start past the rows": (
        lambda p: _arrow(p, _header(start=[0, 5]), [1, 2], [1, 2]),
        "start[1]: 5 is not a whole number from 0 to 2",
    ),
    "start not from 0": (lambda p: _arrow(p, _header(start=[1, 2]), [1, 2], [1, 2]), "start must run from 0"),
    "subtask negative": (lambda p: _arrow(p, _header(subtask=[-1]), [1, 2], [1, 2]), "series 0: subtask: -1"),
    "split a number": (lambda p: _arrow(p, _header(split=[7]), [1, 2], [1, 2]), "split 7 is not a split id"),
    "time runs back": (lambda p: _arrow(p, _header(), [5, 2], [1, 2]), "row 1 (series ('a1', 0"),
    "vertex not in plan": (
        lambda p: _arrow(p, _header(vertex=["ghost"]), [1, 2], [1, 2]),
        "vertex 'ghost' is not in the plan",
    ),
    "a key twice": (
        lambda p: _arrow(
            p,
            _header(
                vertex=["a1"] * 2,
                subtask=[0, 0],
                metric=["m", "m"],
                split=[None, None],
                start=[0, 1, 2],
            ),
            [1, 2],
            [1, 2],
        ),
        "appears twice",
    ),
}


CLI_CASES = {"not arrow at all", "wrong columns", "time runs back", "vertex not in plan"}


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_a_bad_columnar_file_is_one_error_naming_file_and_place(tmp_path, case):
    make, said = HOSTILE[case]
    path = make(tmp_path / "bad.arrow")
    with pytest.raises(JobFormatError) as err:
        read_recording(path)
    assert str(err.value).startswith("bad.arrow: ") and said in str(err.value), str(err.value)
    if case not in CLI_CASES:
        return  # one interpreter per case is slow; the CLI's handling is one path for all
    proc = _wmviz("blame", str(path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and said in proc.stderr, proc.stderr


def test_a_good_hand_made_file_reads(tmp_path):
    rec = read_recording(_arrow(tmp_path / "ok.arrow", _header(), [1, 2], [10, 20]))
    assert rec.values_over(("a1", 0, OUTPUT_WATERMARK, None), [0, 1, 3]) == [None, 10, 20]
    assert np.array_equal(rec.times(), [1, 2])


def test_an_uploaded_columnar_recording_opens_on_the_graph_as_its_json_does(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from wmviz.store import uploads

    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("WMVIZ_SPARK_START", "lazy")
    rec = read_recording(SAMPLE)
    write_recording(rec, tmp_path / "incident.arrow", columnar=True)
    said = []
    for name, data in (
        ("incident.arrow", (tmp_path / "incident.arrow").read_bytes()),
        ("incident.json", SAMPLE.read_bytes()),
    ):
        app = AppTest.from_file(str(Path("app.py").resolve()), default_timeout=180)
        app.query_params["job"] = uploads.store_upload(name, data, None).digest
        app.run()
        assert not app.exception, app.exception
        said.append([m.value for m in app.markdown if "holds it" in m.value or "Who holds" in m.value])
    assert said[0] and said[0] == said[1]
