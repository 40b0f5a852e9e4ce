"""`wmviz late TRACE [--json] [--fate F] [--late-only]`: the late-row ledger on the command line."""

from __future__ import annotations

import json

from wmviz.cli import commands as cli


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_table_of_the_eleven_events_reads_fate_rule_metric_and_where_each_ended(capsys):
    code, out, err = run_cli(capsys, "late", "late-data-allowed-lateness")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split() == [
        "step", "row", "input", "event", "time", "watermark", "behind", "fate", "operator", "rule", "metric",
    ]  # fmt: skip
    dropped = next(line for line in lines if "numLateRecordsDropped" in line and not line.startswith(" "))
    assert dropped.split()[:7] == ["9", "11", "0/0", "3", "6", "3ms", "dropped"]
    late = lines.index(next(line for line in lines if " added late " in line))
    assert lines[late + 1].startswith("    why: late but within allowed lateness 1: added to [0, 5)")
    assert lines[late + 2] == "    → step 7: late firing of window [0, 5)"
    assert lines[0 + 1].split()[4] == "NULL"  # the first record: no watermark yet
    assert lines[-1] == "11 of 11 records shown: 9 kept, 1 added late, 1 dropped"


def test_json_lines_filtered_by_fate_and_late_only(capsys):
    code, out, _ = run_cli(capsys, "late", "late-data-allowed-lateness", "--json", "--fate", "added-late")
    assert code == 0
    (only,) = [json.loads(line) for line in out.splitlines()]
    assert (only["event_ms"], only["watermark_ms"], only["lateness_ms"]) == (3, 4, 1)
    assert (only["fate"], only["rule"], only["metric"]) == ("added late", "Firing", None)
    assert only["ended_in"] == [{"step": 7, "what": "late firing of window [0, 5)"}]
    code, out, _ = run_cli(capsys, "late", "late-data-allowed-lateness", "--json", "--late-only")
    assert [json.loads(line)["fate"] for line in out.splitlines()] == ["added late", "dropped"]


def test_readable_times_on_an_epoch_trace(capsys, tmp_path):
    t0 = 1_795_514_700_000  # 2026-11-24 10:05:00Z
    trace = tmp_path / "epoch.jsonl"
    rows = [{"config": {"operator": {"type": "window", "size_ms": 60_000}}}]
    rows += [{"kind": "watermark", "channel": 0, "watermark_ms": t0 + 61_000}]
    rows += [{"kind": "record", "channel": 0, "event_ms": t0 + 1_500}]
    trace.write_text("\n".join(map(json.dumps, rows)) + "\n")
    code, out, _ = run_cli(capsys, "late", str(trace))
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "# times are UTC on 2026-11-24 unless dated"
    assert lines[2].split()[3:8] == ["10:05:01.500Z", "10:06:01.000Z", "59.500s", "dropped", "tumbling"]


def test_a_bad_fate_and_a_bad_cell_are_one_line_naming_what_exit_2(capsys, tmp_path):
    code, out, err = run_cli(capsys, "late", "late-data-allowed-lateness", "--fate", "lost")
    assert (code, out) == (2, "")
    assert err == "error: --fate 'lost' is not a fate; choose one of: kept, added-late, dropped\n"
    bad = tmp_path / "bad.jsonl"
    config = {"operator": {"type": "window", "size_ms": 5}}
    bad.write_text(
        json.dumps({"config": config}) + '\n{"kind": "record", "channel": 0, "event_ms": "soon"}\n'
    )
    code, out, err = run_cli(capsys, "late", str(bad))
    assert (code, out) == (2, "")
    assert err.splitlines()[0].startswith("bad.jsonl:2: column event_ms: ")
    assert "Traceback" not in err
    code, _, err = run_cli(capsys, "late", str(tmp_path / "missing.jsonl"))
    assert code == 2 and "no such file" in err


def test_a_run_without_an_operator_says_so(capsys):
    code, out, _ = run_cli(capsys, "late", "flink-38477-zero-output")
    assert code == 0
    assert out.startswith("no ledger: this run has no operator (operator.type none)")


def test_a_sql_replay_trace_out_opens(capsys, tmp_path):
    from tests.conftest import REPO

    data = REPO / "tests" / "data" / "sql"
    trace = tmp_path / "replay.jsonl"
    args = ["sql", "replay", str(data / "incident_silent_partition.sql")]
    code, _, err = run_cli(
        capsys, *args, str(data / "incident_silent_partition.rows.jsonl"), "--trace-out", str(trace)
    )
    assert code == 0, err
    code, out, err = run_cli(capsys, "late", str(trace))
    assert (code, err) == (0, "")
    # The replay's window aggregate holds every click in its local pre-aggregator: the watermark
    # never passes the first window's end (the incident's story), so no fate is decided.
    assert "the operator decided no record's fate by the end of the input" in out
