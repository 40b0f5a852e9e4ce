"""Reading and writing traces: every format, round trips, config precedence and time values."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wmviz.core.scenario import IntervalJoinConfig, Kind, ScenarioConfig, Trace, TraceRow
from wmviz.core.types import MAX_MS, MIN_MS, Profile, Status
from wmviz.trace import (
    TraceValidationError,
    format_time_ms,
    parse_time_ms,
    read_trace,
    read_trace_bytes,
    write_compact,
    write_config,
    write_trace,
    write_trace_bytes,
)
from wmviz.trace.rowtable import decode_rows, encode_rows, row_from_record

FORMATS = {"csv": "t.csv", "jsonl": "t.jsonl", "parquet": "t.parquet"}


def _unnumbered(rows) -> list[TraceRow]:
    return [dataclasses.replace(r, row=0) for r in rows]


def _write_text(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _sample_rows() -> list[TraceRow]:
    return [
        TraceRow(0, Kind.RECORD, "0", "0", 0, event_ms=1_700_000_000_250, proc_ms=10, key="k1", value="five"),
        TraceRow(0, Kind.RECORD, "1", "0", 1, event_ms=-5, proc_ms=11, key="k2", value="text, with comma"),
        TraceRow(
            0,
            Kind.RECORD,
            "0",
            "0",
            1,
            event_ms=7,
            value="2.5 apples",
            payload=(("host", "a"), ("note", "n1")),
        ),
        TraceRow(0, Kind.WATERMARK, "0", "0", 0, watermark_ms=MIN_MS, payload=(("note", "line\nbreak"),)),
        TraceRow(0, Kind.WATERMARK, "1", "0", 2, watermark_ms=MAX_MS, proc_ms=20),
        TraceRow(0, Kind.STATUS, "0", "0", 2, status=Status.IDLE),
        TraceRow(0, Kind.STATUS, "1", "0", 0, status=Status.FINISHED),
        TraceRow(0, Kind.PROCTIME, "0", "0", proc_ms=30),
    ]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_every_format_round_trips_sentinels_payload_and_all_kinds(tmp_path: Path, fmt: str) -> None:
    rows = _sample_rows()
    path = tmp_path / FORMATS[fmt]
    write_trace(rows, path)
    trace = read_trace(path)
    assert _unnumbered(trace.rows) == rows
    assert trace.valve_channels == {("0", "0"): 3, ("1", "0"): 3}
    assert trace.instances == ["0", "1"]


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "parquet"])
def test_thousand_instances_round_trip_in_file_order(tmp_path: Path, fmt: str) -> None:
    rows = [
        TraceRow(0, Kind.WATERMARK, str(i % 1000), "0", i % 4, seq=10_000 - i, watermark_ms=i)
        for i in range(3000)
    ]
    path = tmp_path / FORMATS[fmt]
    write_trace(rows, path)
    trace = read_trace(path)
    # seq descends in file order, so arrival order is the reverse of the file.
    assert _unnumbered(trace.rows) == rows[::-1]
    assert len(trace.instances) == 1000
    assert set(trace.valve_channels.values()) == {4}


def test_compact_round_trip_keeps_instances_sentinels_and_header_counts(tmp_path: Path) -> None:
    rows = [
        TraceRow(0, Kind.WATERMARK, "0", "0", 0, watermark_ms=5),
        TraceRow(0, Kind.STATUS, "0", "0", 1, status=Status.IDLE),
        TraceRow(0, Kind.WATERMARK, "0", "0", 2, watermark_ms=MAX_MS),
        TraceRow(0, Kind.WATERMARK, "1", "0", 0, watermark_ms=MIN_MS),
        TraceRow(0, Kind.STATUS, "1", "0", 0, status=Status.ACTIVE),
    ]
    trace = Trace("x", tuple(rows), ScenarioConfig(), {("0", "0"): 3, ("1", "0"): 5})
    path = tmp_path / "v.jsonl"
    write_compact(trace, path)
    lines = path.read_text().splitlines()
    assert lines[0] == '{"channels": 3}'
    assert '{"ch": 2, "wm": "MAX"}' in lines and '{"ch": 0, "wm": "MIN"}' in lines
    back = read_trace(path)
    assert _unnumbered(back.rows) == rows
    assert back.valve_channels == {("0", "0"): 3, ("1", "0"): 5}


def test_compact_writer_refuses_rows_the_format_cannot_hold(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="only watermark/status rows"):
        write_compact([TraceRow(0, Kind.RECORD, channel=0, event_ms=1)], tmp_path / "v.jsonl")
    with pytest.raises(ValueError, match="no seq, proc_ms or payload"):
        write_compact(
            [TraceRow(0, Kind.WATERMARK, channel=0, watermark_ms=1, proc_ms=3)], tmp_path / "v.jsonl"
        )


def test_compact_reader_numbers_instances_and_rows_by_file_line_and_skips_comments(tmp_path: Path) -> None:
    text = (
        '{"config": {"name": "valve demo"}}\n'
        "# a comment\n"
        '{"channels": 3}\n'
        '{"ch": 0, "wm": 5}\n'
        "\n"
        '// another comment\n{"ch": 1, "status": "idle"}\n'
        '{"channels": 2}\n'
        '{"ch": 1, "wm": "+inf"}\n'
    )
    trace = read_trace(_write_text(tmp_path, "v.ndjson", text))
    assert trace.config.name == "valve demo"
    assert [(r.row, r.instance, r.kind, r.channel) for r in trace.rows] == [
        (4, "0", Kind.WATERMARK, 0),
        (7, "0", Kind.STATUS, 1),
        (9, "1", Kind.WATERMARK, 1),
    ]
    assert trace.rows[1].status is Status.IDLE and trace.rows[2].watermark_ms == MAX_MS
    assert trace.valve_channels == {("0", "0"): 3, ("1", "0"): 2}


def test_csv_row_numbers_follow_quoted_multiline_fields_and_keep_payload_strings(tmp_path: Path) -> None:
    text = 'kind,channel,event_ms,note\nrecord,0,1,"two\nlines"\n\nrecord,0,2,7\n'
    trace = read_trace(_write_text(tmp_path, "t.csv", text))
    assert [r.row for r in trace.rows] == [2, 5]
    assert trace.rows[0].payload == (("note", "two\nlines"),)
    assert trace.rows[1].payload == (("note", "7"),)


def test_csv_value_cells_become_numbers_only_when_written_canonically(tmp_path: Path) -> None:
    text = "kind,channel,event_ms,value\nrecord,0,1,12\nrecord,0,2,1.5\nrecord,0,3,007\nrecord,0,4, 12\n"
    trace = read_trace(_write_text(tmp_path, "t.csv", text))
    assert [r.value for r in trace.rows] == [12, 1.5, "007", " 12"]


def test_csv_with_byte_order_mark_crlf_and_spaces_around_typed_cells(tmp_path: Path) -> None:
    data = "\ufeffkind, channel ,event_ms\r\n Record , 1 , 2026-11-21T10:00:00Z \r\n".encode()
    trace = read_trace_bytes(data, "upload.csv")
    assert trace.rows[0].channel == 1 and trace.rows[0].kind is Kind.RECORD
    assert trace.rows[0].event_ms == 1_795_255_200_000
    assert trace.source == "upload.csv"


def test_jsonl_numbers_become_strings_for_instance_input_and_key(tmp_path: Path) -> None:
    text = (
        '{"kind": "record", "instance": 7, "channel": 0, "event_ms": 1, "key": 42, "value": 3.5, "x": [1]}\n'
    )
    trace = read_trace(_write_text(tmp_path, "t.jsonl", text))
    row = trace.rows[0]
    assert (row.instance, row.key, row.value, row.payload) == ("7", "42", 3.5, (("x", [1]),))


def test_parquet_float_columns_with_nulls_and_timestamp_columns_are_read_exactly(tmp_path: Path) -> None:
    table = pa.table(
        {
            "kind": ["record", "proctime", "watermark"],
            "channel": pa.array([1.0, None, 0.0], pa.float64()),
            "event_ms": pa.array([1_000, None, None], pa.timestamp("ms", tz="UTC")),
            "watermark_ms": pa.array([None, None, float("inf")], pa.float64()),
            "proc_ms": pa.array([None, 5.0, float("nan")], pa.float64()),
        }
    )
    pq.write_table(table, tmp_path / "t.pq")
    trace = read_trace(tmp_path / "t.pq")
    assert [(r.row, r.channel, r.event_ms, r.watermark_ms, r.proc_ms) for r in trace.rows] == [
        (1, 1, 1_000, None, None),
        (2, None, None, None, 5),
        (3, 0, None, MAX_MS, None),
    ]


def test_parquet_nanosecond_timestamps_with_sub_millisecond_parts_are_rejected(tmp_path: Path) -> None:
    table = pa.table(
        {"kind": ["record"], "channel": [0], "event_ms": pa.array([1_000_001], pa.timestamp("ns"))}
    )
    pq.write_table(table, tmp_path / "t.parquet")
    with pytest.raises(TraceValidationError) as err:
        read_trace(tmp_path / "t.parquet")
    assert str(err.value).startswith("t.parquet:1: column event_ms: ")
    assert "sub-millisecond" in str(err.value)


@pytest.mark.parametrize(
    ("values", "arrow_type", "expected"),
    [
        ([1, None, MAX_MS], pa.int64(), [1, None, MAX_MS]),
        ([1, 2.5], pa.float64(), [1.0, 2.5]),
        (["a", None], pa.string(), ["a", None]),
        ([1, "a"], pa.string(), ["1", "a"]),  # a column mixing numbers and text is written as text
    ],
)
def test_parquet_value_column_takes_the_narrowest_type_holding_every_value(
    tmp_path: Path, values: list[object], arrow_type: pa.DataType, expected: list[object]
) -> None:
    rows = [TraceRow(0, Kind.RECORD, channel=0, event_ms=i, value=v) for i, v in enumerate(values)]  # type: ignore[arg-type]
    write_trace(rows, tmp_path / "t.parquet")
    assert pq.read_schema(tmp_path / "t.parquet").field("value").type == arrow_type
    back = [r.value for r in read_trace(tmp_path / "t.parquet").rows]
    assert back == expected
    assert [type(v) for v in back] == [type(v) for v in expected]


def test_parquet_writer_uses_int64_for_times_and_the_extremes_for_sentinels(tmp_path: Path) -> None:
    write_trace([TraceRow(0, Kind.WATERMARK, channel=0, watermark_ms=MAX_MS)], tmp_path / "t.parquet")
    table = pq.read_table(tmp_path / "t.parquet")
    for column in ("seq", "channel", "event_ms", "watermark_ms", "proc_ms"):
        assert table.schema.field(column).type == pa.int64()
    assert table.schema.field("kind").type == pa.string()
    assert table.column("watermark_ms").to_pylist() == [2**63 - 1]


def test_config_travels_in_jsonl_first_line_and_parquet_metadata(tmp_path: Path) -> None:
    config = ScenarioConfig(name="n", profile=Profile.FLIP_38477, channels={"0": 4})
    rows = [TraceRow(0, Kind.WATERMARK, channel=3, watermark_ms=1)]
    for name in ("t.jsonl", "t.parquet"):
        write_trace(rows, tmp_path / name, config=config)
        trace = read_trace(tmp_path / name)
        assert trace.config == config
        assert trace.valve_channels == {("0", "0"): 4}
    assert json.loads((tmp_path / "t.jsonl").read_text().splitlines()[0]) == {
        "config": {"name": "n", "profile": "flip-38477", "channels": {"0": 4}}
    }
    with pytest.raises(ValueError, match="CSV file cannot hold a config"):
        write_trace(rows, tmp_path / "t.csv", config=config)


def test_config_file_replaces_the_in_file_config_line_entirely(tmp_path: Path) -> None:
    trace_path = _write_text(
        tmp_path,
        "t.jsonl",
        '{"config": {"name": "in-file", "channels": {"0": 9}}}\n'
        '{"kind": "watermark", "channel": 0, "watermark_ms": 1}\n',
    )
    config_path = tmp_path / "scenario.json"
    write_config(ScenarioConfig(name="outside"), config_path)
    trace = read_trace(trace_path, config_path)
    assert trace.config == ScenarioConfig(name="outside")
    assert trace.valve_channels == {("0", "0"): 1}
    assert read_trace(trace_path).config.name == "in-file"
    assert read_trace(trace_path, config=ScenarioConfig(name="object")).config.name == "object"
    with pytest.raises(ValueError, match="not both"):
        read_trace(trace_path, config_path, config=ScenarioConfig())


def test_interval_join_inputs_zero_and_one_are_read_as_left_and_right(tmp_path: Path) -> None:
    config = ScenarioConfig(operator=IntervalJoinConfig(lower_ms=-5, upper_ms=5))
    text = "input,kind,channel,event_ms\n0,record,0,1\nR,record,1,2\nl,record,0,3\n"
    trace = read_trace(_write_text(tmp_path, "t.csv", text), config=config)
    assert [r.input for r in trace.rows] == ["L", "R", "L"]
    assert trace.valve_channels == {("0", "L"): 1, ("0", "R"): 2}


def test_write_trace_bytes_matches_the_file_writer_and_reads_back(tmp_path: Path) -> None:
    rows = _sample_rows()
    for fmt, name in FORMATS.items():
        data = write_trace_bytes(rows, fmt)
        write_trace(rows, tmp_path / name)
        assert data == (tmp_path / name).read_bytes()
        assert _unnumbered(read_trace_bytes(data, name).rows) == rows


@pytest.mark.parametrize(
    ("text", "sentinels", "expected"),
    [
        (0, False, 0),
        ("-42", False, -42),
        ("+42", False, 42),
        (" 1700000000000 ", False, 1_700_000_000_000),
        (1.7e12, False, 1_700_000_000_000),
        ("2026-11-21T10:00:00.250Z", False, 1_795_255_200_250),
        ("2026-11-21T10:00:00.250", False, 1_795_255_200_250),
        ("2026-11-21T11:00:00.250+01:00", False, 1_795_255_200_250),
        ("2026-11-21T10:00:00.250000000Z", False, 1_795_255_200_250),
        ("1969-12-31T23:59:59.999Z", False, -1),
        ("min", True, MIN_MS),
        (" -INF ", True, MIN_MS),
        ("MAX", True, MAX_MS),
        ("+inf", True, MAX_MS),
        ("Inf", True, MAX_MS),
        (float("-inf"), True, MIN_MS),
        (str(MAX_MS), False, MAX_MS),
        (str(MIN_MS), False, MIN_MS),
    ],
)
def test_parse_time_ms_accepts_epoch_iso_and_sentinels(text: object, sentinels: bool, expected: int) -> None:
    assert parse_time_ms(text, sentinels=sentinels) == expected


@pytest.mark.parametrize(
    ("value", "sentinels", "reason"),
    [
        ("12:00", True, '"12:00" is not an epoch-ms integer, ISO-8601 time or MIN/MAX'),
        ("12:00", False, '"12:00" is not an epoch-ms integer or ISO-8601 time'),
        ("MAX", False, '"MAX": the MIN/MAX sentinels are only allowed for watermark_ms'),
        ("2026-11-21T10:00:00.2501Z", False, "has sub-millisecond digits"),
        ("2026-11-21T10:00:00.2500001Z", False, "has sub-millisecond digits"),
        (str(MAX_MS + 1), True, "outside the signed 64-bit range"),
        (MIN_MS - 1, True, "outside the signed 64-bit range"),
        (1.5, False, "1.5 is not a whole number of milliseconds"),
        (2.0**60, False, "too large to be exact as a float"),
        (float("nan"), True, "is not a whole number"),
        (True, True, "true is not an epoch-ms integer"),
        ("1e3", False, '"1e3" is not an epoch-ms integer'),
    ],
)
def test_parse_time_ms_rejects_with_a_reason(value: object, sentinels: bool, reason: str) -> None:
    with pytest.raises(ValueError) as err:
        parse_time_ms(value, sentinels=sentinels)
    assert reason in str(err.value)


def test_format_time_ms_writes_sentinels_as_words_and_other_times_as_integers() -> None:
    assert [format_time_ms(v) for v in (MIN_MS, MAX_MS, -3, 0)] == ["MIN", "MAX", "-3", "0"]


# --- Hypothesis: any valid trace survives a write and a read in every format -------------------------

_TEXT = st.text(st.characters(codec="utf-8", exclude_characters="\x00"), min_size=1, max_size=8)
_LONG = st.integers(MIN_MS, MAX_MS)
_VALUES = st.one_of(
    st.lists(st.none() | st.integers(MIN_MS, MAX_MS)),
    st.lists(st.none() | st.floats(allow_nan=False, allow_infinity=False)),
    # "v" first: CSV reads a canonical number as a number, so a string must not look like one.
    st.lists(st.none() | _TEXT.map(lambda s: "v" + s)),
)
_PAYLOAD_NAMES = ("host", "note")


@st.composite
def _rows(draw: st.DrawFn) -> list[TraceRow]:
    """Valid rows in file order: unique `seq` (if any) and `proc_ms` non-decreasing in arrival order."""
    count = draw(st.integers(1, 12))
    values = draw(_VALUES.filter(lambda v: len(v) >= count))
    use_seq, use_proc = draw(st.booleans()), draw(st.booleans())
    seqs = draw(st.permutations(range(-3, count - 3)))
    procs = sorted(draw(st.lists(_LONG, min_size=count, max_size=count)))
    all_fields: list[dict[str, object]] = []
    for i in range(count):
        kind = draw(st.sampled_from(Kind))
        fields: dict[str, object] = {
            "kind": kind,
            "instance": draw(st.sampled_from(["0", "1", "sub-2", " x "])),
        }
        if use_seq:
            fields["seq"] = seqs[i]
        if kind is not Kind.PROCTIME:
            fields["channel"] = draw(st.integers(0, 5))
        if kind is Kind.RECORD:
            names = draw(st.lists(st.sampled_from(_PAYLOAD_NAMES), unique=True))
            fields.update(
                event_ms=draw(_LONG),
                key=draw(st.none() | _TEXT),
                value=values[i],
                payload=tuple((n, draw(_TEXT)) for n in _PAYLOAD_NAMES if n in names),
            )
        elif kind is Kind.WATERMARK:
            fields["watermark_ms"] = draw(st.sampled_from([MIN_MS, MAX_MS]) | _LONG)
        elif kind is Kind.STATUS:
            fields["status"] = draw(st.sampled_from(Status))
        all_fields.append(fields)
    arrival = sorted(range(count), key=lambda i: seqs[i]) if use_seq else range(count)
    for rank, i in enumerate(arrival):
        if use_proc or all_fields[i]["kind"] is Kind.PROCTIME:
            all_fields[i]["proc_ms"] = procs[rank]
    return [TraceRow(row=0, **fields) for fields in all_fields]  # type: ignore[arg-type]


@settings(derandomize=True, deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_rows(), fmt=st.sampled_from(["csv", "jsonl", "parquet"]))
def test_any_valid_trace_survives_write_then_read_in_every_format(rows: list[TraceRow], fmt: str) -> None:
    expected = sorted(rows, key=lambda r: r.seq) if rows[0].seq is not None else rows
    trace = read_trace_bytes(write_trace_bytes(rows, fmt), FORMATS[fmt])
    assert _unnumbered(trace.rows) == expected


@settings(derandomize=True, deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(rows=_rows(), split=st.integers(0, 12), dictionary=st.booleans())
def test_decoding_a_row_table_column_by_column_equals_decoding_each_record(
    rows: list[TraceRow], split: int, dictionary: bool
) -> None:
    """`decode_rows` converts whole columns (text once per distinct value); it must give exactly the
    rows `row_from_record` gives record by record, whatever the chunking or dictionary encoding."""
    table = encode_rows([dataclasses.replace(r, row=i + 1) for i, r in enumerate(rows)])
    if dictionary:
        table = table.set_column(6, "kind", pc.dictionary_encode(table.column("kind")))
    chunked = pa.concat_tables([table.slice(0, split), table.slice(split)])
    expected = [row_from_record(record) for record in table.to_pylist()]
    assert decode_rows(chunked) == expected
    assert decode_rows(table.to_batches()[0] if table.num_rows else table) == expected


@settings(derandomize=True, deadline=None, max_examples=40)
@given(
    valves=st.lists(
        st.tuples(
            st.integers(1, 4),
            st.lists(
                st.tuples(
                    st.integers(0, 3), st.sampled_from([MIN_MS, MAX_MS, 0]) | _LONG | st.sampled_from(Status)
                )
            ),
        ),
        min_size=1,
        max_size=4,
    )
)
def test_any_valve_trace_survives_the_compact_format(
    valves: list[tuple[int, list[tuple[int, object]]]],
) -> None:
    rows: list[TraceRow] = []
    counts = {}
    for index, (count, inputs) in enumerate(valves):
        counts[(str(index), "0")] = count
        inputs = inputs or [(0, 1)]
        for channel, what in inputs:
            channel %= count
            if isinstance(what, Status):
                rows.append(TraceRow(0, Kind.STATUS, str(index), "0", channel, status=what))
            else:
                rows.append(TraceRow(0, Kind.WATERMARK, str(index), "0", channel, watermark_ms=what))  # type: ignore[arg-type]
    trace = Trace("v", tuple(rows), ScenarioConfig(), counts)
    back = read_trace_bytes(write_trace_bytes(trace, "compact"), "v.jsonl")
    assert _unnumbered(back.rows) == rows
    assert back.valve_channels == counts


def test_csv_keeps_a_lone_carriage_return_and_each_rows_payload_order(tmp_path):
    # Two shapes the round-trip property found: a CR inside a cell must be quoted (a lone CR ends
    # a CSV record), and payload columns must be ordered so every row keeps its own order.
    rows = [
        TraceRow(1, Kind.RECORD, channel=0, event_ms=0, payload=(("host", "\r0"),)),
        TraceRow(2, Kind.RECORD, channel=0, event_ms=0, payload=(("note", "n"),)),
        TraceRow(3, Kind.RECORD, channel=0, event_ms=0, payload=(("host", "h"), ("note", "n"))),
    ]
    trace = read_trace_bytes(write_trace_bytes(rows, "csv"), "t.csv")
    assert [r.payload for r in trace.rows] == [r.payload for r in rows]
    assert [r.row for r in trace.rows] == [2, 4, 5]  # the CR inside the quoted cell is a line too


def test_a_payload_name_with_spaces_survives_every_format(tmp_path):
    # Spaces around a standard name are a spreadsheet's; around a payload name they are the name.
    pq.write_table(pa.table({"kind": ["proctime"], "proc_ms": [1], " note ": ["n"]}), tmp_path / "t.parquet")
    trace = read_trace(tmp_path / "t.parquet")
    for fmt in ("csv", "jsonl", "parquet"):
        back = read_trace_bytes(write_trace_bytes(trace, fmt), FORMATS[fmt])
        assert back.rows[0].payload == ((" note ", "n"),), fmt
    assert read_trace_bytes(b" kind , proc_ms\nproctime,1\n", "t.csv").rows[0].proc_ms == 1
