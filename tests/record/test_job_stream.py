"""`wmviz convert` of an appended recording into the columnar form, line by line
(`wmviz.record.job_stream`): the same recording the whole reader reads, point for point; every
bad line the same clean error; memory bounded by a batch of lines, not the file; and a JSON
recording over the reader's bound names the command that converts it."""

from __future__ import annotations

import json
import random
import tracemalloc
from pathlib import Path

import pytest

from wmviz.cli.commands import main
from wmviz.record import job as job_module
from wmviz.record import job_stream
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
from wmviz.record.job_stream import convert_lines


def _job(vertices: int = 4, parallelism: int = 3) -> JobRecording:
    plan = tuple(Vertex(f"v{i}", f"op {i}", parallelism) for i in range(vertices))
    edges = [Edge(f"v{i - 1}", f"v{i}", "HASH") for i in range(1, vertices)]
    edges.append(Edge("v0", f"v{vertices - 1}", "REBALANCE"))
    return JobRecording("stream", plan, tuple(edges))


def _write(path: Path, samples: int, seed: int = 1, vertices: int = 4, parallelism: int = 3) -> None:
    rng = random.Random(seed)
    rec = _job(vertices, parallelism)
    writer = JobWriter(rec, path)
    for n in range(samples):
        points = []
        for depth, vertex in enumerate(rec.vertices):
            for s in range(vertex.parallelism):
                if rng.random() < 0.1:  # a series that skips a sample
                    continue
                mark = 1000 * n - 10 * depth - rng.randrange(50)
                points.append(((vertex.id, s, OUTPUT_WATERMARK, None), mark))
                if depth:
                    points.append(((vertex.id, s, INPUT_WATERMARK, None), mark - 1))
                if depth == vertices - 1:
                    points.append(((vertex.id, s, input_metric(1), None), mark - 1))
                    points.append(((vertex.id, s, input_metric(2), None), 1000 * n - s))
        writer.sample(1_800_000_000_000 + 1000 * n + rng.randrange(3), points)
    writer.close()


def _same(a: JobRecording, b: JobRecording) -> None:
    assert (a.vertices, a.edges, a.notes, a.job) == (b.vertices, b.edges, b.notes, b.job)
    assert list(a.series) == list(b.series) or sorted(a.series, key=str) == sorted(b.series, key=str)
    for key in a.series:
        assert [tuple(p) for p in a.series[key]] == [tuple(p) for p in b.series[key]], key
    assert a.times() == b.times()


def test_the_lines_converted_line_by_line_are_the_recording_the_whole_reader_reads(tmp_path):
    lines = tmp_path / "r.json"
    _write(lines, 300)
    convert_lines(lines, tmp_path / "streamed.arrow")
    whole = read_recording(lines)
    write_recording(whole, tmp_path / "whole.arrow", columnar=True)
    streamed = read_recording(tmp_path / "streamed.arrow")
    _same(streamed, whole)
    assert (tmp_path / "streamed.arrow").read_bytes() == (tmp_path / "whole.arrow").read_bytes()
    assert not list(tmp_path.glob(".wmviz-convert-*"))


def test_samples_out_of_order_and_a_key_declared_twice_read_as_the_whole_reader_reads_them(tmp_path):
    lines = tmp_path / "r.json"
    _write(lines, 20)
    text = lines.read_text().splitlines()
    samples = [i for i, line in enumerate(text) if line.startswith('{"t"')]
    text[samples[3]], text[samples[7]] = text[samples[7]], text[samples[3]]  # times run back
    text.append('{"series": [[900, "v1", 0, "currentOutputWatermark", null]]}')
    text.append('{"t": 5, "v": [[900, 7], [0, 2]]}')
    text.append('{"t":5,"v":[[900,9],[1,4]]}')  # a plain line at the same time: sorted by value
    text.append('{"t": 5, "v": [[900, 3], [1, 8]]}')
    lines.write_text("\n".join(text) + "\n" + '{"t": 9, "v": [[0,')  # and a last line cut short
    convert_lines(lines, tmp_path / "s.arrow")
    _same(read_recording(tmp_path / "s.arrow"), read_recording(lines))


@pytest.mark.parametrize(
    ("line", "said"),
    [
        ('{"t": 5, "v": [[99, 1]]}', "line N: [99, 1] is not [a series number declared before"),
        ('{"t": "x", "v": [[0, 1]]}', "line N: `t`: 'x' is not an integer"),
        ('{"t": 5, "v": [[0, 1.5]]}', "line N: series 0's value: 1.5 is not an integer"),
        ('{"t": 5, "v": [[0, true]]}', "line N: series 0's value: True is not an integer"),
        ("{not json", "line N: not JSON"),
        ('{"inputs": [1]}', "`inputs` names 1 edges, the header has 4"),
    ],
)
def test_a_bad_line_is_the_same_clean_error_naming_file_and_line(tmp_path, capsys, line, said):
    path = tmp_path / "r.json"
    _write(path, 3)
    before = path.read_text()
    path.write_text(before + line + "\n")
    code = main(["convert", str(path), str(tmp_path / "o.arrow")])
    err = capsys.readouterr().err
    assert code == 2 and "r.json" in err
    assert said.replace("line N", f"line {len(before.splitlines()) + 1}") in err
    assert not (tmp_path / "o.arrow").exists()


def test_memory_is_a_batch_of_lines_not_the_file(tmp_path):
    """Python's traced memory converting 4x the samples stays the same (the columns live in
    scratch files and the kernel's cache; bench/day_recording.py measures a day of 50 vertices)."""
    peaks = []
    for samples in (600, 2400):
        path = tmp_path / f"r{samples}.json"
        _write(path, samples, vertices=10, parallelism=4)
        tracemalloc.start()
        convert_lines(path, tmp_path / f"r{samples}.arrow")
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    assert peaks[1] < 1.3 * peaks[0], peaks


def test_a_json_recording_over_the_bound_names_its_size_the_bound_and_the_command(
    tmp_path, capsys, monkeypatch
):
    path = tmp_path / "day.json"
    _write(path, 50)
    monkeypatch.setattr(job_module, "MAX_FILE_BYTES", 1000)
    for command in (["blame", str(path)], ["lag", str(path)]):
        assert main(command) == 2
        err = capsys.readouterr().err
        assert "day.json:" in err and "MB is larger than the 0 MB a JSON job recording may be" in err
        assert "open that: wmviz convert day.json day.arrow" in err
    assert main(["convert", str(path), str(tmp_path / "day.arrow")]) == 0
    capsys.readouterr()
    assert main(["blame", str(tmp_path / "day.arrow")]) in (0, 2)
    with pytest.raises(JobFormatError, match="where it is made"):
        (tmp_path / "whole.json").write_text(json.dumps({"format": "wmviz-job/1", "pad": "x" * 2000}))
        read_recording(tmp_path / "whole.json")


def test_a_killed_conversion_leaves_the_destination_and_its_scratch_is_cleared_next_time(
    tmp_path, monkeypatch
):
    lines = tmp_path / "r.json"
    _write(lines, 40)
    out = tmp_path / "r.arrow"
    out.write_bytes(b"before")

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(job_stream, "write_columnar", killed)
    monkeypatch.setattr(job_stream.tempfile, "TemporaryDirectory", _Kept)
    with pytest.raises(KeyboardInterrupt):
        convert_lines(lines, out)
    assert out.read_bytes() == b"before" and list(tmp_path.glob(".wmviz-convert-*"))
    monkeypatch.undo()
    convert_lines(lines, out)
    assert not list(tmp_path.glob(".wmviz-convert-*"))
    _same(read_recording(out), read_recording(lines))


class _Kept:
    """A scratch folder a kill leaves behind (no cleanup runs)."""

    def __init__(self, prefix: str, dir: Path) -> None:
        import tempfile

        self.name = tempfile.mkdtemp(prefix=prefix, dir=dir)

    def __enter__(self) -> str:
        return self.name

    def __exit__(self, *exc: object) -> None:
        return None


def test_plain_sample_lines_read_at_once_give_what_the_general_rules_give(tmp_path, monkeypatch):
    """The plain-line reading (`LinesReader.plain_sample`) is only a faster way to the same
    points: with it turned off, both readers give the same recording and the same bytes."""
    from wmviz.record.job_lines import LinesReader

    lines = tmp_path / "r.json"
    _write(lines, 120, seed=7)
    text = lines.read_text().splitlines()
    text.insert(5, '{"t": 1800000003500, "v": [[2, 77]]}')  # one general line among the plain ones
    lines.write_text("\n".join(text) + "\n")
    whole, _ = read_recording(lines), convert_lines(lines, tmp_path / "plain.arrow")
    monkeypatch.setattr(LinesReader, "plain_sample", lambda self, raw: False)
    general = read_recording(lines)
    convert_lines(lines, tmp_path / "general.arrow")
    _same(whole, general)
    assert (tmp_path / "plain.arrow").read_bytes() == (tmp_path / "general.arrow").read_bytes()
    _same(read_recording(tmp_path / "plain.arrow"), general)


def test_the_upload_box_says_a_large_job_recording_is_read_on_the_command_line():
    from wmviz.store.uploads import UploadError, check_upload

    with pytest.raises(UploadError) as err:
        check_upload("day.json", 1300 * 2**20, limit=200, job_recording=True)
    said = str(err.value)
    assert said.startswith("day.json: 1,300.0 MB is over the upload limit of 200 MB")
    assert "`wmviz blame` and `wmviz lag` read it where it lies" in said
    assert "`wmviz convert day.json day.arrow`" in said and "simulate" not in said
