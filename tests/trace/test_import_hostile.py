"""Issue 24: `import kafka|prometheus` and `record` on tiny hostile inputs. Each ends in exit 2 with a
message (a budget names its limit and variable), or in exit 0 with a trace `validate` accepts;
never exit 1, a MemoryError, or a trace the importer's own reader refuses."""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import paths
from wmviz import cli
from wmviz.core.errors import BudgetExceeded
from wmviz.record.output import duration_option_ms, write_rows
from wmviz.record.samples import Sample, Topology, TraceBuilder, rows_of
from wmviz.trace import read_trace
from wmviz.trace.errors import TraceValidationError
from wmviz.trace.timecells import parse_duration_ms

REPO = paths.REPO
EXPORT = REPO / "tests/data/prometheus/skewed-sources-query-range.json"


def _run(capsys, *argv: str) -> tuple[int, str]:
    try:
        code = cli.main(list(argv))
    except SystemExit as exit_:  # argparse refusing an argument: exit 2 with its usage
        code = int(exit_.code or 0)
    out, err = capsys.readouterr()
    return code, out + err


def _outcome(capsys, out: Path, *argv: str) -> tuple[int, str]:
    """Exit 2 with a one-line error, or exit 0 and a trace that validates; never anything else."""
    code, text = _run(capsys, *argv, "--out", str(out))
    assert code in (0, 2), text
    assert "internal error" not in text and "Traceback" not in text
    if code == 0:
        read_trace(out)  # raises if the import wrote what its own reader refuses
    else:
        assert text.startswith(("error:", "usage:")), text
        assert not out.exists(), "a refused import wrote its output"
    return code, text


def _kafka(capsys, tmp_path, dump: str, *options: str) -> tuple[int, str]:
    path = tmp_path / "dump.txt"
    path.write_text(dump, encoding="utf-8")
    argv = ["--parallelism", "2", "--out-of-orderness", "1s", *options]
    return _outcome(capsys, tmp_path / "out.jsonl", "import", "kafka", str(path), *argv)


@pytest.mark.parametrize(
    "dump, options, message",
    [
        ("t 0 0 1000\nt 999999999 0 2000\n", (), "WMVIZ_MAX_SPLITS"),
        ("t 100000 0 1000\n", (), "WMVIZ_MAX_SPLITS"),
        ("t 0 0 1000\n", ("--parallelism", "1000000000"), "WMVIZ_MAX_CHANNELS"),
        ("t 0 0 1000\n", ("--partitions", "1000000000"), "WMVIZ_MAX_SPLITS"),
        ("t 0 0 1000\n", ("--out-of-orderness", "9" * 400 + "s"), "signed 64-bit range"),
        ("t 0 0 1000\n", ("--idleness", "400d"), "WMVIZ_MAX_DURATION_DAYS"),
        ("t 0 0 1000 inf\n", (), "event time"),
        ("t 0 0 9223372036854775807\n", ("--idleness", "1s"), "Long.MAX_VALUE"),
        ("t 0 0 9223372036854775808\n", (), "signed 64-bit range"),
        ("t 0 " + "9" * 400 + " 1000\n", (), "must be integers"),
        ("t ٣ 0 1000\n", (), "ASCII digits"),
        ("CreateTime:٣٠٠ Partition:٣ Offset:0\n", ("--topic", "t"), "console-consumer line without"),
        ("t 0 0 1000\n", ("--parallelism", "٣"), "ASCII digits"),
        ("t 0 0 1000\n", ("--out-of-orderness", "٥s"), "expected a duration"),
        ("0 0 1000\n", ("--topic", "t\udc80"), "not a Kafka topic name"),
        ("other 0 0 1000\n", ("--topic", "t"), "no records of topic"),
    ],
)
def test_a_hostile_dump_or_option_is_a_clean_error(capsys, tmp_path, dump, options, message):
    code, text = _kafka(capsys, tmp_path, dump, *options)
    assert code == 2 and message in text, text


def test_a_topic_with_more_partitions_than_a_config_holds_is_refused_before_writing(capsys, tmp_path):
    # 30,000 partitions are within the split budget, but their config is over 256 KB: the import
    # reads what it built before writing, so the config's own limit stops it, and nothing is written.
    code, text = _kafka(capsys, tmp_path, "t 0 0 1000\nt 29999 0 2000\n")
    assert code == 2 and "WMVIZ_MAX_CONFIG_KB" in text and "nothing was written" in text, text


def test_a_budget_is_set_by_its_variable(tmp_path):
    dump = tmp_path / "d.txt"
    dump.write_text("t 0 0 1000\nt 4 0 2000\n")
    command = [sys.executable, "-m", "wmviz", "import", "kafka", str(dump), "--parallelism", "2",
               "--out-of-orderness", "1s", "--out", str(tmp_path / "o.jsonl")]  # fmt: skip
    env = {**os.environ, "WMVIZ_MAX_SPLITS": "4"}
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert (
        proc.returncode == 2 and "5 partitions are more than wmviz reads: 4 (WMVIZ_MAX_SPLITS)" in proc.stderr
    )


def _export() -> dict:
    return json.loads(EXPORT.read_text(encoding="utf-8"))


def _labels(body: dict, **labels) -> dict:
    body["data"]["result"][0]["metric"].update(labels)
    return body


def _first_point(body: dict, point) -> dict:
    body["data"]["result"][0]["values"][0] = point
    return body


def _deep(body: dict) -> str:
    return json.dumps(body)[:-1] + ', "extra": ' + "[" * 100_000 + "]" * 100_000 + "}"


HOSTILE_EXPORTS = {
    "metric is a list": lambda b: _replace(b, 0, {"metric": [1, 2], "values": []}),
    "result is a number": lambda b: {**b, "data": {"resultType": "matrix", "result": 5}},
    "task_name is a number": lambda b: _labels(b, task_name=7),
    "subtask_index of 10^9": lambda b: _labels(b, subtask_index="1000000000"),
    "negative subtask_index": lambda b: _labels(b, subtask_index="-1"),
    "subtask_index in Arabic digits": lambda b: _labels(b, subtask_index="٣"),
    "a lone surrogate in task_name": lambda b: _labels(b, task_name="Source: \ud800"),
    "a time of inf": lambda b: _first_point(b, ["inf", "5"]),
    "a time of 400 digits": lambda b: _first_point(b, [10**399, "5"]),
    "a time past Long.MAX": lambda b: _first_point(b, [1e17, "5"]),
    "a value that is a list": lambda b: _first_point(b, [1795633028.61, [5]]),
    "a value in Arabic digits": lambda b: _first_point(b, [1795633028.61, "٣"]),
    "a point that is a number": lambda b: _first_point(b, 5),
}


def _replace(body: dict, index: int, item) -> dict:
    body["data"]["result"][index] = item
    return body


@pytest.mark.parametrize("case", [*HOSTILE_EXPORTS, "deep JSON"])
def test_a_hostile_prometheus_export_is_a_clean_error(capsys, tmp_path, case):
    path = tmp_path / "export.json"
    if case == "deep JSON":
        path.write_text(_deep(_export()))
    else:
        path.write_text(json.dumps(HOSTILE_EXPORTS[case](copy.deepcopy(_export()))))
    code, text = _outcome(
        capsys, tmp_path / "out.jsonl", "import", "prometheus", str(path), "--vertex", "downstream"
    )
    assert code == 2 and "export.json" in text, text


def test_the_untouched_export_still_imports(capsys, tmp_path):
    code, _ = _outcome(
        capsys, tmp_path / "out.jsonl", "import", "prometheus", str(EXPORT), "--vertex", "downstream"
    )
    assert code == 0


def test_a_hostile_plan_is_a_clean_error(capsys, tmp_path):
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"plan": {"nodes": [{"id": "a", "parallelism": 10**9, "inputs": []}]}}))
    code, text = _run(
        capsys, "import", "prometheus", str(EXPORT), "--plan", str(plan), "--out", str(tmp_path / "r.json")
    )
    assert code == 2 and "WMVIZ_MAX_CHANNELS" in text, text


def test_a_subtask_costs_what_its_sample_holds_not_its_channel_count():
    # 32,768 subtasks fed all-to-all by 32,768 upstream subtasks: 10^9 channels if each were visited.
    topology = Topology("op", "up", parallelism=32_768, upstream_parallelism=32_768)
    builder = TraceBuilder(topology)
    rows = builder.add(Sample(time_ms=1, epoch=0, upstream_watermark={5: 100}))
    assert len(rows) == 32_768 and all(r["channel"] == 5 for r in rows)


@pytest.mark.parametrize(
    "argv",
    [
        ("--rest", "http://localhost:1/ x", "--job", "j", "--vertex", "v"),
        ("--rest", "http://localhost:1", "--job", "a b", "--vertex", "v"),
        ("--rest", "http://localhost:1/ x", "--job", "j"),
        ("--rest", "http://localhost:1", "--job", "j", "--vertex", "v", "--every", "٥s"),
        ("--rest", "http://localhost:1", "--job", "j", "--vertex", "v", "--for", "9" * 400 + "s"),
    ],
)
def test_record_refuses_a_bad_url_or_duration_in_one_line(capsys, tmp_path, argv):
    code, text = _run(
        capsys,
        "record",
        *argv,
        "--out",
        str(tmp_path / "r.jsonl" if "--vertex" in argv else tmp_path / "r.json"),
    )
    assert code == 2 and text.startswith("error:") and "internal error" not in text, text


def test_durations_are_exact_ascii_and_within_their_budget():
    assert parse_duration_ms("1.5s", "--every") == 1500
    assert parse_duration_ms("1h30m", "--for") == 5_400_000
    assert parse_duration_ms("9223372036854775807", "value") == 2**63 - 1
    for bad in ("٥s", "٣", "𝟙s", "9223372036854775808", "9" * 400 + "s", "1e400s"):
        with pytest.raises(ValueError):
            parse_duration_ms(bad, "--every")
    assert duration_option_ms("366d", "--idleness") == 366 * 86_400_000
    with pytest.raises(BudgetExceeded, match=r"366 days \(WMVIZ_MAX_DURATION_DAYS\)"):
        duration_option_ms("367d", "--idleness")


def test_an_export_over_the_row_budget_is_refused_by_its_variable(tmp_path):
    command = [sys.executable, "-m", "wmviz", "import", "prometheus", str(EXPORT), "--vertex", "downstream",
               "--out", str(tmp_path / "o.jsonl")]  # fmt: skip
    env = {**os.environ, "WMVIZ_MAX_IMPORT_ROWS": "50"}
    proc = subprocess.run(command, capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert (
        proc.returncode == 2 and "more than 50 rows" in proc.stderr and "WMVIZ_MAX_IMPORT_ROWS" in proc.stderr
    )
    assert not (tmp_path / "o.jsonl").exists()


def test_a_json_lines_import_is_read_back_before_it_is_written(tmp_path):
    out = tmp_path / "o.jsonl"
    out.write_text("the earlier output\n")
    rows = [{"seq": 1, "instance": "0", "kind": "proctime", "proc_ms": 2**63}]
    with pytest.raises(TraceValidationError, match="signed 64-bit range"):
        write_rows(out, {"channels": {"0": 1}}, rows)
    assert out.read_text() == "the earlier output\n"


def test_an_import_stops_at_its_row_budget_between_subtasks_not_after_a_whole_sample():
    # One sample of 600 upstream watermarks into 600 subtasks is 360,000 rows: a budget must be able
    # to stop after the first subtask's 600, not after all of them are held.
    builder = TraceBuilder(Topology("op", "up", parallelism=600, upstream_parallelism=600))
    rows = rows_of(builder, [Sample(time_ms=1, epoch=0, upstream_watermark=dict.fromkeys(range(600), 7))])
    first = next(iter(rows))
    assert first["channel"] == 0 and builder.seq == 600
