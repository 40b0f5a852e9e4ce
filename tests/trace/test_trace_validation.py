"""Trace validation: one test per error class, each pinning file, row, column and reason."""

from __future__ import annotations

import pickle
from dataclasses import fields
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from wmviz.core.fieldrules import rule_of
from wmviz.core.scenario import GeneratorConfig, IntervalJoinConfig, Kind, ScenarioConfig
from wmviz.trace import MAX_ISSUES, TraceIssue, TraceValidationError, read_trace, read_trace_bytes

HEADER = "kind,channel,event_ms,watermark_ms,status,proc_ms\n"
KINDS = "record, watermark, status, proctime, split"


def _issues(tmp_path: Path, name: str, text: str | bytes, **kwargs: object) -> list[str]:
    """Every issue the reader reports for a file holding `text`, as the user sees them."""
    path = tmp_path / name
    path.write_bytes(text.encode() if isinstance(text, str) else text)
    with pytest.raises(TraceValidationError) as err:
        read_trace(path, **kwargs)  # type: ignore[arg-type]
    assert err.value.total == len(err.value.issues)
    return [str(issue) for issue in err.value.issues]


# --- the error type itself ----------------------------------------------------------------------


def test_trace_issue_text_names_file_row_and_column_or_field() -> None:
    assert (
        str(TraceIssue("orders.csv", 17, "watermark_ms", "bad")) == "orders.csv:17: column watermark_ms: bad"
    )
    assert str(TraceIssue("orders.csv", None, "kind", "missing")) == "orders.csv: column kind: missing"
    assert (
        str(TraceIssue("s.json", None, None, "bad", field="operator.type"))
        == "s.json: field operator.type: bad"
    )
    assert (
        str(TraceIssue("t.jsonl", 5, None, "line is not valid JSON")) == "t.jsonl:5: line is not valid JSON"
    )


def test_validation_error_lists_kept_issues_and_counts_the_rest() -> None:
    err = TraceValidationError([TraceIssue("a", 1, "x", "r1"), TraceIssue("a", 2, "x", "r2")], total=7)
    assert str(err) == "a:1: column x: r1\na:2: column x: r2\n... and 5 more"
    assert err.total == 7 and len(err.issues) == 2
    copy = pickle.loads(pickle.dumps(err))  # e.g. handed across processes by a web framework
    assert (copy.issues, copy.total, str(copy)) == (err.issues, err.total, str(err))


# --- whole-file behaviour ------------------------------------------------------------------------


def test_bad_channel_on_line_3_and_unknown_status_on_line_4_are_both_reported(tmp_path: Path) -> None:
    config_path = tmp_path / "scenario.json"
    config_path.write_text('{"channels": {"0": 2}}')
    text = HEADER + "watermark,0,,5,,\nwatermark,7,,6,,\nstatus,1,,,PAUSED,\n"
    assert _issues(tmp_path, "t.csv", text, config_path=config_path) == [
        "t.csv:3: column channel: 7 is out of range; input 0 has 2 channels (0..1)",
        't.csv:4: column status: "PAUSED" is not one of ACTIVE, IDLE, FINISHED',
    ]


def test_every_error_of_every_row_is_reported_in_row_order_not_just_the_first(tmp_path: Path) -> None:
    text = HEADER + "record,x,,,,\nbogus,0,,,,\nwatermark,0,,soon,IDLE,\n"
    assert _issues(tmp_path, "t.csv", text) == [
        't.csv:2: column channel: "x" is not an integer',
        "t.csv:2: column event_ms: required for a record row",
        f't.csv:3: column kind: "bogus" is not one of {KINDS}',
        "t.csv:4: column status: has no meaning for a watermark row; leave it empty",
        't.csv:4: column watermark_ms: "soon" is not an epoch-ms integer, ISO-8601 time or MIN/MAX',
    ]


def test_issue_cap_keeps_the_first_thousand_rows_and_counts_every_issue(tmp_path: Path) -> None:
    text = HEADER + "".join(f"watermark,0,,bad{i},,\n" for i in range(2500))
    path = tmp_path / "t.csv"
    path.write_text(text)
    with pytest.raises(TraceValidationError) as err:
        read_trace(path)
    assert err.value.total == 2500
    assert len(err.value.issues) == MAX_ISSUES
    assert [i.row for i in err.value.issues] == list(range(2, 2 + MAX_ISSUES))
    assert str(err.value).splitlines()[-1] == "... and 1500 more"


def test_unknown_columns_are_kept_as_payload_in_file_order_not_rejected(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text(
        "zeta,kind,channel,watermark_ms,alpha\nz1,watermark,0,5,a1\n,watermark,0,6,\n"
    )
    rows = read_trace(tmp_path / "t.csv").rows
    assert rows[0].payload == (("zeta", "z1"), ("alpha", "a1"))
    assert rows[1].payload == ()
    # A payload column named like the compact header does not turn a JSON Lines trace compact.
    (tmp_path / "t.jsonl").write_text('{"channels": 9, "kind": "proctime", "proc_ms": 1, "note": null}\n')
    assert read_trace(tmp_path / "t.jsonl").rows[0].payload == (("channels", 9),)


def test_issues_of_a_config_file_and_of_the_trace_come_together(tmp_path: Path) -> None:
    config_path = tmp_path / "scenario.json"
    config_path.write_text('{"profile": "flink-3"}')
    issues = _issues(tmp_path, "t.csv", HEADER + "bogus,0,,,,\n", config_path=config_path)
    assert issues == [
        'scenario.json: field profile: "flink-3" is not one of flink-1.x-2.x, flink-master, flip-38477',
        f't.csv:2: column kind: "bogus" is not one of {KINDS}',
    ]


# --- one test per error class --------------------------------------------------------------------


def test_unknown_kind_names_the_valid_kinds_and_kind_is_case_insensitive(tmp_path: Path) -> None:
    assert _issues(tmp_path, "t.csv", HEADER + "Record,0,1,,,\nrec,0,1,,,\n") == [
        f't.csv:3: column kind: "rec" is not one of {KINDS}'
    ]


def test_missing_kind_cell_is_an_error(tmp_path: Path) -> None:
    assert _issues(tmp_path, "t.jsonl", '{"channel": 0, "watermark_ms": 1}\n') == [
        f"t.jsonl:1: column kind: required; expected one of {KINDS}"
    ]


def test_csv_header_without_kind_is_one_file_level_error_on_line_1(tmp_path: Path) -> None:
    assert _issues(tmp_path, "t.csv", "channel,watermark_ms\n0,1\n0,2\n0,3\n") == [
        "t.csv:1: column kind: missing from the header; every row needs it"
    ]


def test_csv_header_without_a_column_some_rows_require_is_one_error(tmp_path: Path) -> None:
    text = "kind,event_ms,watermark_ms,proc_ms\nproctime,,,5\nrecord,1,,\nwatermark,,2,\nrecord,3,,\n"
    assert _issues(tmp_path, "t.csv", text) == [
        "t.csv:1: column channel: missing from the header; "
        "required for record/watermark rows (first on line 3)"
    ]


def test_parquet_schema_without_kind_is_one_file_level_error(tmp_path: Path) -> None:
    pq.write_table(pa.table({"channel": [0, 1]}), tmp_path / "t.parquet")
    with pytest.raises(TraceValidationError) as err:
        read_trace(tmp_path / "t.parquet")
    assert [str(i) for i in err.value.issues] == [
        "t.parquet: column kind: missing from the schema; every row needs it"
    ]


@pytest.mark.parametrize(
    ("row", "column", "reason"),
    [
        ("record,,1,,,", "channel", "required for a record row"),
        ("record,0,,,,", "event_ms", "required for a record row"),
        ("watermark,0,,,,", "watermark_ms", "required for a watermark row"),
        ("status,0,,,,", "status", "required for a status row"),
        ("proctime,,,,,", "proc_ms", "required for a proctime row"),
    ],
)
def test_required_cell_of_each_kind_is_reported_when_empty(
    tmp_path: Path, row: str, column: str, reason: str
) -> None:
    assert _issues(tmp_path, "t.csv", HEADER + row + "\n") == [f"t.csv:2: column {column}: {reason}"]


@pytest.mark.parametrize(
    ("row", "column", "kind"),
    [
        ("record,0,1,oops,,", "watermark_ms", "record"),  # one error: the value itself is not judged
        ("watermark,0,,5,IDLE,", "status", "watermark"),
        ("status,0,3,,IDLE,", "event_ms", "status"),
        ("proctime,0,,,,7", "channel", "proctime"),
    ],
)
def test_cell_with_no_meaning_for_the_rows_kind_is_an_error_not_ignored(
    tmp_path: Path, row: str, column: str, kind: str
) -> None:
    assert _issues(tmp_path, "t.csv", HEADER + row + "\n") == [
        f"t.csv:2: column {column}: has no meaning for a {kind} row; leave it empty"
    ]


def test_key_and_value_on_a_watermark_row_are_errors(tmp_path: Path) -> None:
    text = '{"kind": "watermark", "channel": 0, "watermark_ms": 1, "key": "k", "value": 2}\n'
    assert _issues(tmp_path, "t.jsonl", text) == [
        "t.jsonl:1: column key: has no meaning for a watermark row; leave it empty",
        "t.jsonl:1: column value: has no meaning for a watermark row; leave it empty",
    ]


def test_watermark_that_is_not_a_time_uses_the_spec_message(tmp_path: Path) -> None:
    assert _issues(tmp_path, "orders.csv", HEADER + "watermark,0,,12:00,,\n") == [
        'orders.csv:2: column watermark_ms: "12:00" is not an epoch-ms integer, ISO-8601 time or MIN/MAX'
    ]


def test_the_reported_ms_check_column_is_judged_by_the_watermark_rule_in_every_format(tmp_path: Path) -> None:
    reason = (
        '"abc" is not an epoch-ms integer, ISO-8601 time or MIN/MAX '
        "(the job's reported watermark, a replay is checked against it)"
    )
    csv = (
        "kind,channel,watermark_ms,proc_ms,reported_ms\nwatermark,0,5,,abc\nproctime,,,6,MAX\nproctime,,,7,\n"
    )
    assert [i.split(": column ")[1] for i in _issues(tmp_path, "r.csv", csv)] == [f"reported_ms: {reason}"]
    jsonl = (
        '{"kind": "proctime", "proc_ms": 5, "reported_ms": "abc"}\n'
        '{"kind": "proctime", "proc_ms": 6, "reported_ms": [1]}\n'
    )
    issues = _issues(tmp_path, "r.jsonl", jsonl)
    assert (
        issues[0] == f"r.jsonl:1: column reported_ms: {reason}"
        and "r.jsonl:2: column reported_ms" in issues[1]
    )
    pq.write_table(
        pa.table({"kind": ["proctime"], "proc_ms": [5], "reported_ms": ["abc"]}), tmp_path / "r.parquet"
    )
    assert _issues(tmp_path, "r.parquet", (tmp_path / "r.parquet").read_bytes())[0].endswith(f"{reason}")
    # Valid cells stay payload, as they were: integers, ISO times and the sentinels.
    good = "kind,proc_ms,reported_ms\nproctime,5,MIN\nproctime,6,1970-01-01T00:00:01Z\nproctime,7,9\n"
    (tmp_path / "g.csv").write_text(good)
    assert [r.payload for r in read_trace(tmp_path / "g.csv").rows] == [
        (("reported_ms", "MIN"),),
        (("reported_ms", "1970-01-01T00:00:01Z"),),
        (("reported_ms", "9"),),
    ]


def test_sentinel_outside_watermark_ms_is_an_error(tmp_path: Path) -> None:
    assert _issues(tmp_path, "t.csv", HEADER + "record,0,MAX,,,\n") == [
        't.csv:2: column event_ms: "MAX": the MIN/MAX sentinels are only allowed for watermark_ms'
    ]


def test_sub_millisecond_iso_time_is_an_error_not_truncated(tmp_path: Path) -> None:
    assert _issues(tmp_path, "t.csv", HEADER + "record,0,2026-11-21T10:00:00.0001Z,,,\n") == [
        't.csv:2: column event_ms: "2026-11-21T10:00:00.0001Z" has sub-millisecond digits; '
        "times are whole milliseconds"
    ]


def test_time_outside_signed_64_bit_is_an_error(tmp_path: Path) -> None:
    assert _issues(tmp_path, "t.csv", HEADER + "watermark,0,,9223372036854775808,,\n") == [
        't.csv:2: column watermark_ms: "9223372036854775808" '
        "is outside the signed 64-bit range of Flink's long"
    ]


def test_unknown_status_names_the_valid_statuses_and_status_is_case_insensitive(tmp_path: Path) -> None:
    assert _issues(tmp_path, "t.csv", HEADER + "status,0,,,idle,\nstatus,0,,,PAUSED,\n") == [
        't.csv:3: column status: "PAUSED" is not one of ACTIVE, IDLE, FINISHED'
    ]


def test_channel_that_is_not_a_non_negative_integer_is_an_error(tmp_path: Path) -> None:
    text = (
        '{"kind": "status", "channel": -1, "status": "IDLE"}\n'
        '{"kind": "status", "channel": 1.5, "status": "IDLE"}\n'
    )
    assert _issues(tmp_path, "t.jsonl", text) == [
        "t.jsonl:1: column channel: -1 must be >= 0",
        "t.jsonl:2: column channel: 1.5 is not an integer",
    ]


def test_channel_beyond_a_java_int_is_an_error(tmp_path: Path) -> None:
    assert _issues(tmp_path, "t.csv", HEADER + "status,2147483648,,,IDLE,\n") == [
        "t.csv:2: column channel: 2147483648 is larger than the largest channel index, 2147483647"
    ]


def test_channel_at_or_above_the_configured_count_is_out_of_range(tmp_path: Path) -> None:
    config = ScenarioConfig(channels={"0": 4})
    assert _issues(tmp_path, "t.csv", HEADER + "status,3,,,IDLE,\nstatus,4,,,IDLE,\n", config=config) == [
        "t.csv:3: column channel: 4 is out of range; input 0 has 4 channels (0..3)"
    ]


def test_compact_channel_at_or_above_the_header_count_is_out_of_range(tmp_path: Path) -> None:
    text = '{"channels": 3}\n{"ch": 2, "wm": 1}\n{"ch": 3, "wm": 1}\n{"channels": 5}\n{"ch": 3, "wm": 1}\n'
    assert _issues(tmp_path, "v.jsonl", text) == [
        "v.jsonl:3: column ch: 3 is out of range; input 0 has 3 channels (0..2)"
    ]


def test_compact_line_errors_unknown_key_both_or_neither_value_and_bad_header(tmp_path: Path) -> None:
    text = (
        '{"channels": 2}\n'
        '{"ch": 0, "wm": 1, "proc": 5}\n'
        '{"ch": 0, "wm": 1, "status": "IDLE"}\n'
        '{"ch": 0}\n'
        '{"wm": 3}\n'
        '{"ch": 1, "status": "PAUSED"}\n'
        '{"channels": 0}\n'
        '{"channels": 2, "name": "x"}\n'
    )
    assert _issues(tmp_path, "v.jsonl", text) == [
        "v.jsonl:2: column proc: unknown key; a compact line has ch and either wm or status",
        "v.jsonl:3: a compact line has either wm or status, not both",
        "v.jsonl:4: a compact line needs wm (a watermark) or status",
        "v.jsonl:5: column ch: required for a watermark row",
        'v.jsonl:6: column status: "PAUSED" is not one of ACTIVE, IDLE, FINISHED',
        "v.jsonl:7: column channels: 0 is not a positive channel count",
        'v.jsonl:8: column name: unknown key; a header line is only {"channels": N}',
    ]


def test_compact_header_disagreeing_with_the_configured_channel_count_is_an_error(tmp_path: Path) -> None:
    text = '{"config": {"channels": {"0": 4}}}\n{"channels": 3}\n{"ch": 0, "wm": 1}\n'
    assert _issues(tmp_path, "v.jsonl", text) == [
        "v.jsonl:2: column channels: 3 disagrees with the config's channels.0 = 4"
    ]


def test_proc_ms_going_back_within_an_instance_names_the_earlier_row(tmp_path: Path) -> None:
    text = (
        "instance,kind,channel,watermark_ms,proc_ms\n"
        "0,watermark,0,1,1000\n1,watermark,0,1,10\n0,watermark,0,2,900\n"
    )
    assert _issues(tmp_path, "t.csv", text) == [
        't.csv:4: column proc_ms: 900 is before 1000 on line 2; proc_ms must not decrease within instance "0"'
    ]


def test_proc_ms_going_back_in_iso_times_is_said_in_iso_times(tmp_path: Path) -> None:
    """Issue 30 (5): a file written in ISO times was told its proc_ms in epoch milliseconds."""
    text = (
        "kind,channel,watermark_ms,proc_ms\n"
        "watermark,0,1,2026-11-21T10:00:05Z\nwatermark,0,2,2026-11-21T10:00:04.500Z\n"
    )
    assert _issues(tmp_path, "t.csv", text) == [
        "t.csv:3: column proc_ms: 2026-11-21T10:00:04.500Z is before 2026-11-21T10:00:05Z on line 2; "
        'proc_ms must not decrease within instance "0"'
    ]


def test_proc_ms_order_follows_seq_not_file_order(tmp_path: Path) -> None:
    text = "seq,kind,proc_ms\n2,proctime,5\n1,proctime,9\n"
    assert _issues(tmp_path, "t.csv", text) == [
        't.csv:2: column proc_ms: 5 is before 9 on line 3; proc_ms must not decrease within instance "0"'
    ]


def test_seq_that_is_not_an_integer_is_an_error(tmp_path: Path) -> None:
    assert _issues(tmp_path, "t.csv", "seq,kind,proc_ms\nfirst,proctime,1\n") == [
        't.csv:2: column seq: "first" is not an integer'
    ]


def test_seq_on_some_rows_but_not_others_is_an_error_on_the_rows_missing_it(tmp_path: Path) -> None:
    text = "seq,kind,proc_ms\n,proctime,1\n1,proctime,2\n,proctime,3\n"
    assert _issues(tmp_path, "t.csv", text) == [
        "t.csv:2: column seq: missing, but other rows have it (first on line 3)",
        "t.csv:4: column seq: missing, but other rows have it (first on line 3)",
    ]


def test_duplicate_seq_names_both_rows(tmp_path: Path) -> None:
    text = "seq,kind,proc_ms\n1,proctime,1\n2,proctime,2\n1,proctime,3\n"
    assert _issues(tmp_path, "t.csv", text) == ["t.csv:4: column seq: 1 is also used on line 2"]


def test_empty_instance_or_unknown_input_is_an_error(tmp_path: Path) -> None:
    text = (
        '{"kind": "proctime", "instance": "", "proc_ms": 1}\n'
        '{"kind": "proctime", "input": "L", "proc_ms": 2}\n'
    )
    assert _issues(tmp_path, "t.jsonl", text) == [
        't.jsonl:1: column instance: is empty; leave it out for the default "0"',
        't.jsonl:2: column input: "L" is not an input of operator type none; expected 0',
    ]


def test_interval_join_input_must_be_left_or_right(tmp_path: Path) -> None:
    config = ScenarioConfig(operator=IntervalJoinConfig(lower_ms=0, upper_ms=1))
    assert _issues(tmp_path, "t.csv", "input,kind,proc_ms\nX,proctime,1\n", config=config) == [
        't.csv:2: column input: "X" is not an input of operator type interval_join; expected L, R (or 0/1)'
    ]


def test_key_that_is_not_a_string_and_value_that_is_not_a_string_or_number_are_errors(tmp_path: Path) -> None:
    text = '{"kind": "record", "channel": 0, "event_ms": 1, "key": {"a": 1}, "value": true}\n'
    assert _issues(tmp_path, "t.jsonl", text) == [
        't.jsonl:1: column key: {"a": 1} is not a string',
        "t.jsonl:1: column value: true is not a string or number",
    ]


def test_explicit_watermark_on_a_generated_channel_is_an_error(tmp_path: Path) -> None:
    config = ScenarioConfig(generator=GeneratorConfig(out_of_orderness_ms=5))
    text = HEADER + "record,0,10,,,\nwatermark,1,,3,,\nwatermark,0,,3,,\n"
    assert _issues(tmp_path, "t.csv", text, config=config) == [
        "t.csv:4: column kind: explicit watermark on channel 0, whose watermarks come from the generator "
        "because it carries records (first on line 2)"
    ]


def test_periodic_generator_needs_proc_ms_on_records(tmp_path: Path) -> None:
    config = ScenarioConfig(generator=GeneratorConfig(emit="periodic"))
    assert _issues(tmp_path, "t.csv", HEADER + "record,0,10,,,5\nrecord,0,11,,,\n", config=config) == [
        "t.csv:3: column proc_ms: required for a record row (the generator emits periodically)"
    ]


def test_broken_json_lines_are_reported_and_reading_continues(tmp_path: Path) -> None:
    text = '{"kind": "proctime", "proc_ms": 1}\n{"kind": \n[1, 2]\n{"a": 1, "a": 2}\n{"kind": "nope"}\n'
    assert _issues(tmp_path, "t.jsonl", text) == [
        "t.jsonl:2: line is not valid JSON: Expecting value",
        "t.jsonl:3: line is not a JSON object: [1, 2]",
        't.jsonl:4: line is not valid JSON: key "a" appears twice',
        f't.jsonl:5: column kind: "nope" is not one of {KINDS}',
    ]


def test_invalid_utf8_is_reported_per_line_in_json_lines_and_csv(tmp_path: Path) -> None:
    assert _issues(tmp_path, "t.jsonl", b'{"kind": "proctime", "proc_ms": 1}\n{"key": "\xff"}\n') == [
        "t.jsonl:2: line is not valid UTF-8 text"
    ]
    text = b"kind,proc_ms\nproctime,1\nproctime,\xff\nproctime,2\nbogus,\xfe\n"
    assert _issues(tmp_path, "t.csv", text) == [
        "t.csv:3: line is not valid UTF-8 text",
        "t.csv:5: line is not valid UTF-8 text",
    ]


def test_csv_row_with_the_wrong_number_of_cells_is_an_error(tmp_path: Path) -> None:
    assert _issues(tmp_path, "t.csv", "kind,proc_ms\nproctime,1,extra\nproctime\n") == [
        "t.csv:2: row has 3 cells but the header has 2",
        "t.csv:3: row has 1 cells but the header has 2",
    ]


def test_csv_header_with_a_repeated_or_empty_column_name_is_an_error(tmp_path: Path) -> None:
    assert _issues(tmp_path, "t.csv", "kind,proc_ms,,proc_ms\nproctime,1,,1\n") == [
        "t.csv:1: header cell 3 is empty; every column needs a name",
        "t.csv:1: column proc_ms: appears twice in the header",
    ]


def test_empty_file_and_file_without_rows_are_errors(tmp_path: Path) -> None:
    assert _issues(tmp_path, "t.csv", "") == [
        "t.csv: file is empty; expected a header line naming the columns"
    ]
    assert _issues(tmp_path, "h.csv", "kind,channel\n") == ["h.csv: the trace has no rows"]
    assert _issues(tmp_path, "t.jsonl", "# only a comment\n\n") == ["t.jsonl: the trace has no rows"]


def test_misplaced_or_malformed_config_lines_are_errors(tmp_path: Path) -> None:
    text = (
        '{"config": {"name": "a"}, "extra": 1}\n'
        '{"config": {"name": "b"}}\n'
        '{"config": {"name": "c"}}\n'
        '{"kind": "proctime", "proc_ms": 1}\n'
        '{"config": {"name": "d"}}\n'
    )
    assert _issues(tmp_path, "t.jsonl", text) == [
        't.jsonl:1: a {"config": ...} line holds nothing else; found extra',
        't.jsonl:3: only one {"config": ...} line is allowed',
        't.jsonl:5: a {"config": ...} line must come before every trace line',
    ]


def test_bad_in_file_config_is_reported_on_its_line_with_the_field_path(tmp_path: Path) -> None:
    text = '{"config": {"operator": {"type": "windoe"}}}\n{"kind": "proctime", "proc_ms": 1}\n'
    # Every operator type, in the order the config section declares them (one list to keep).
    operator = next(f for f in fields(ScenarioConfig) if f.name == "operator")
    types = ", ".join(kind.type_name for kind in rule_of(operator).sections)
    assert types.startswith("none, window, interval_join, ")
    assert _issues(tmp_path, "t.jsonl", text) == [
        f't.jsonl:1: field operator.type: "windoe" is not one of {types}'
    ]


def test_unreadable_parquet_and_unknown_extension_are_file_level_errors() -> None:
    with pytest.raises(TraceValidationError) as err:
        read_trace_bytes(b"not parquet at all", "t.parquet")
    assert str(err.value).startswith("t.parquet: not a readable Parquet file: ")
    with pytest.raises(TraceValidationError) as err:
        read_trace_bytes(b"kind\n", "trace.txt")
    assert str(err.value) == (
        'trace.txt: unknown trace format ".txt"; expected one of .csv, .jsonl, .ndjson, .json, .parquet, .pq'
    )


def test_a_valid_row_after_invalid_ones_is_not_returned_because_nothing_is_simulated(tmp_path: Path) -> None:
    (tmp_path / "t.csv").write_text(HEADER + "bogus,0,,,,\nproctime,,,,,5\n")
    with pytest.raises(TraceValidationError):
        read_trace(tmp_path / "t.csv")
    (tmp_path / "ok.csv").write_text(HEADER + "proctime,,,,,5\n")
    assert read_trace(tmp_path / "ok.csv").rows[0].kind is Kind.PROCTIME
