"""The Spark reader (`read_trace_spark`) gives exactly the pure reader's (`read_trace`) outcome.

For a valid file: the same rows (the Spark DataFrame's rows turned back into `TraceRow`s by
`trace_row_from_step`), the same `valve_channels`, instances and config. For an invalid file: a
`TraceValidationError` with the same issues, in the same order, the same text, the same total and the
same cap.

A Spark read of even a tiny file takes seconds (several jobs, code generation), so cases are grouped
into a few files per format (*bundles*), each read once by both readers. Every bundle has one test
comparing the whole outcome; every case in it has its own test comparing its rows (or its rows'
issues) and checking what the pure reader made of them, so a case cannot silently test something
else than its name says. Cases that need a file of their own (file-level problems, a config) are
single tests.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.conftest import REPO
from wmviz.core.scenario import ScenarioConfig, TraceRow
from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.spark.reader import read_trace_spark
from wmviz.timeline.records import trace_row_from_step
from wmviz.trace.errors import MAX_ISSUES, TraceIssue, TraceValidationError
from wmviz.trace.readers import read_trace

KINDS = "record, watermark, status, proctime"
FORMATS = ("csv", "jsonl", "parquet")


# --- the two outcomes and their comparison -------------------------------------------------------


@dataclass(frozen=True)
class Valid:
    rows: list[TraceRow]
    valve_channels: dict[tuple[str, str], int]
    instances: list[str]
    config: ScenarioConfig


@dataclass(frozen=True)
class Invalid:
    text: str
    issues: list[TraceIssue]
    total: int


Outcome = Valid | Invalid


def pure_outcome(path: Path, config_path: Path | None = None) -> Outcome:
    try:
        trace = read_trace(path, config_path)
    except TraceValidationError as exc:
        return Invalid(str(exc), list(exc.issues), exc.total)
    return Valid(sorted(trace.rows, key=lambda r: r.row), trace.valve_channels, trace.instances, trace.config)


def spark_outcome(spark, path: Path, config_path: Path | None = None) -> Outcome:
    try:
        trace = read_trace_spark(spark, path, config_path)
    except TraceValidationError as exc:
        return Invalid(str(exc), list(exc.issues), exc.total)
    rows = sorted((trace_row_from_step(r.asDict()) for r in trace.rows.collect()), key=lambda r: r.row)
    assert trace.row_count == len(rows)
    return Valid(rows, trace.valve_channels, trace.instances, trace.config)


def _typed(payload: tuple[tuple[str, Any], ...]) -> list[tuple[str, str, Any]]:
    """Payload values with their types. A zoned datetime is compared by instant and UTC offset: the
    Spark rows carry payload as JSON (`wmviz.trace.payload`), which keeps the offset, not the zone
    object (pyarrow's `ZoneInfo('Europe/Berlin')` comes back as a fixed `+01:00`)."""
    out = []
    for name, value in payload:
        if isinstance(value, dt.datetime):
            out.append((name, type(value).__name__, (value, value.utcoffset())))
        else:
            out.append((name, type(value).__name__, repr(value)))
    return out


def assert_same_rows(got: list[TraceRow], pure: list[TraceRow]) -> None:
    assert [r.row for r in got] == [r.row for r in pure]
    for mine, theirs in zip(got, pure, strict=True):
        assert mine == theirs, f"row {theirs.row}"
        # `==` holds for 12 == 12.0 and 0.0 == -0.0: the value's and payload's types must agree too.
        assert repr(mine.value) == repr(theirs.value), f"row {theirs.row}"
        assert _typed(mine.payload) == _typed(theirs.payload), f"row {theirs.row}"


def assert_same(got: Outcome, pure: Outcome) -> None:
    """The Spark reader's outcome `got` is the pure reader's `pure`, in every detail."""
    assert type(got) is type(pure), f"pure reader: {pure}\nspark reader: {got}"
    if isinstance(pure, Invalid):
        assert isinstance(got, Invalid)
        assert got.text == pure.text
        assert got.issues == pure.issues
        assert got.total == pure.total
    else:
        assert isinstance(got, Valid)
        assert_same_rows(got.rows, pure.rows)
        assert got.valve_channels == pure.valve_channels
        assert got.instances == pure.instances
        assert got.config == pure.config


def assert_parity(spark, path: Path, config_path: Path | None = None) -> Outcome:
    """Read `path` with both readers, assert they agree, and return the pure reader's outcome."""
    pure = pure_outcome(path, config_path)
    assert_same(spark_outcome(spark, path, config_path), pure)
    return pure


def expect_valid(outcome: Outcome, rows: int | None = None) -> Valid:
    assert isinstance(outcome, Valid), outcome.text if isinstance(outcome, Invalid) else outcome
    assert rows is None or len(outcome.rows) == rows
    return outcome


def expect_invalid(outcome: Outcome, *fragments: str) -> Invalid:
    assert isinstance(outcome, Invalid), f"expected an error, the pure reader read {outcome}"
    for fragment in fragments:
        assert fragment in outcome.text
    return outcome


# --- bundles: many cases in one file per format ----------------------------------------------------


@dataclass(frozen=True)
class Case:
    """Rows of one case; `lines` are raw lines per format (`csv`, `jsonl`), written after the rows.

    In an invalid bundle, `expected` is a fragment of the issues of the case's rows (None: the case's
    rows have no issue at all). In a valid bundle, `check(rows)` looks at the pure reader's rows.
    """

    id: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    expected: str | None = None
    formats: tuple[str, ...] = FORMATS
    lines: dict[str, list[str | bytes]] = field(default_factory=dict)
    check: Callable[[list[TraceRow]], None] | None = None


@dataclass(frozen=True)
class Bundle:
    """Cases read together; `seq` numbers every row in reverse file order (so arrival order differs),
    `own_instances` gives each case's rows its id as instance unless they name one, `preamble` are
    JSON Lines lines written first (a config line), `config` an external config file."""

    name: str
    cases: list[Case]
    formats: tuple[str, ...] = FORMATS
    valid: bool = False
    seq: bool = False
    own_instances: bool = False
    preamble: tuple[str, ...] = ()
    config: dict[str, Any] | None = None


def _csv_cell(value: Any) -> str:
    if value is None:
        return ""
    text = value if isinstance(value, str) else json.dumps(value)
    return '"' + text.replace('"', '""') + '"' if any(ch in text for ch in ',"\n') else text


def _arrow(values: list[Any]) -> pa.Array:
    try:
        return pa.array(values)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # mixed types: a string column, as in a CSV file
        return pa.array([None if v is None else v if isinstance(v, str) else json.dumps(v) for v in values])


def _bundle_rows(bundle: Bundle, fmt: str) -> list[tuple[str, dict[str, Any] | str | bytes]]:
    """(case id, logical row or raw line) in file order."""
    items: list[tuple[str, dict[str, Any] | str | bytes]] = []
    for case in bundle.cases:
        if fmt not in case.formats:
            continue
        for row in case.rows:
            if bundle.own_instances and "instance" not in row:
                row = {"instance": case.id, **row}
            items.append((case.id, row))
        items += [(case.id, line) for line in case.lines.get(fmt, [])]
    if bundle.seq:
        n = sum(isinstance(item, dict) for _, item in items)
        numbered, k = [], 0
        for case_id, item in items:
            if isinstance(item, dict):
                item, k = {"seq": n - k, **item}, k + 1
            numbered.append((case_id, item))
        items = numbered
    return items


def write_bundle(directory: Path, bundle: Bundle, fmt: str) -> tuple[Path, dict[str, list[int]]]:
    """The bundle as one file, and the row numbers (as the readers number them) of each case."""
    path = directory / f"{bundle.name}.{fmt}"
    items = _bundle_rows(bundle, fmt)
    names = list(dict.fromkeys(n for _, item in items if isinstance(item, dict) for n in item))
    rows_of: dict[str, list[int]] = {case.id: [] for case in bundle.cases}
    if fmt == "parquet":
        assert all(isinstance(item, dict) for _, item in items), "raw lines are for text formats"
        table = pa.table({n: _arrow([item.get(n) for _, item in items]) for n in names})  # type: ignore[union-attr]
        pq.write_table(table, path)
        for i, (case_id, _) in enumerate(items, start=1):
            rows_of[case_id].append(i)
        return path, rows_of
    lines: list[bytes] = []
    if fmt == "csv":
        lines.append(",".join(names).encode())
    else:
        lines += [line.encode() for line in bundle.preamble]
    for case_id, item in items:
        if isinstance(item, dict):
            text = ",".join(_csv_cell(item.get(n)) for n in names) if fmt == "csv" else json.dumps(item)
            item = text.encode("utf-8")
        elif isinstance(item, str):
            item = item.encode("utf-8")
        lines.append(item)
        rows_of[case_id].append(len(lines))
    path.write_bytes(b"".join(line + b"\n" for line in lines))
    return path, rows_of


def write_config(directory: Path, config: dict[str, Any] | None, name: str = "scenario.json") -> Path | None:
    if config is None:
        return None
    path = directory / name
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


@dataclass
class BundleRead:
    pure: Outcome
    spark: Outcome | BaseException
    rows_of: dict[str, list[int]]


_READS: dict[tuple[str, str], BundleRead] = {}


@pytest.fixture(scope="module")
def read_bundle(spark, tmp_path_factory):
    """`read_bundle(bundle, fmt)`: both readers' outcomes for the bundle's file (read once)."""

    def read(bundle: Bundle, fmt: str) -> BundleRead:
        key = (bundle.name, fmt)
        if key not in _READS:
            directory = tmp_path_factory.mktemp(f"{bundle.name}-{fmt}")
            path, rows_of = write_bundle(directory, bundle, fmt)
            config = write_config(directory, bundle.config)
            pure = pure_outcome(path, config)
            try:
                got: Outcome | BaseException = spark_outcome(spark, path, config)
            except Exception as exc:  # reported by every test of the bundle, read only once
                got = exc
            _READS[key] = BundleRead(pure, got, rows_of)
        result = _READS[key]
        if isinstance(result.spark, BaseException):
            raise result.spark
        return result

    return read


def bundle_params(bundles: list[Bundle]) -> list[Any]:
    return [pytest.param(b, fmt, id=f"{b.name}-{fmt}") for b in bundles for fmt in b.formats]


def case_params(bundles: list[Bundle]) -> list[Any]:
    return [
        pytest.param(b, fmt, case, id=f"{case.id}-{fmt}")
        for b in bundles
        for case in b.cases
        for fmt in b.formats
        if fmt in case.formats
    ]


def check_whole_bundle(read: BundleRead, bundle: Bundle) -> None:
    assert isinstance(read.spark, Valid | Invalid)
    assert_same(read.spark, read.pure)
    if bundle.valid:
        expect_valid(read.pure)
    else:
        expect_invalid(read.pure)


def check_case(read: BundleRead, case: Case) -> None:
    rows = set(read.rows_of[case.id])
    assert rows, "the case wrote no rows"
    got = read.spark
    assert isinstance(got, Valid | Invalid) and type(got) is type(read.pure)
    if isinstance(read.pure, Valid):
        assert isinstance(got, Valid)
        mine = [r for r in got.rows if r.row in rows]
        theirs = [r for r in read.pure.rows if r.row in rows]
        assert len(theirs) == len(rows), "every row of the case is read"
        assert_same_rows(mine, theirs)
        if case.check is not None:
            case.check(theirs)
    else:
        assert isinstance(got, Invalid)
        mine = [i for i in got.issues if i.row in rows]
        theirs = [i for i in read.pure.issues if i.row in rows]
        assert mine == theirs
        if case.expected is None:
            assert theirs == []
        else:
            assert case.expected in "\n".join(str(i) for i in theirs)


# --- valid traces in every format ----------------------------------------------------------------


def rec(**cells: Any) -> dict[str, Any]:
    return {"kind": "record", "channel": 0, "event_ms": 1, **cells}


def wm(**cells: Any) -> dict[str, Any]:
    return {"kind": "watermark", "channel": 0, "watermark_ms": 1, **cells}


def values_are(*expected: Any) -> Callable[[list[TraceRow]], None]:
    def check(rows: list[TraceRow]) -> None:
        assert [repr(r.value) for r in rows] == [repr(v) for v in expected]

    return check


def _check_every_kind(rows: list[TraceRow]) -> None:
    assert [r.watermark_ms for r in rows if r.watermark_ms in (MIN_MS, MAX_MS)] == [
        MIN_MS,
        MAX_MS,
        MIN_MS,
        MAX_MS,
    ]
    at = dt.datetime(2026, 11, 21, 9, 0, 0, 250000, tzinfo=dt.UTC)
    assert rows[5].event_ms == int(at.timestamp()) * 1000 + 250


def _check_quoted(rows: list[TraceRow]) -> None:
    assert [(r.key, r.value) for r in rows] == [("a,b", 'say "hi"')]


def _check_json_payload(rows: list[TraceRow]) -> None:
    assert rows[0].payload == (
        ("i", 12),
        ("f", 12.0),
        ("e", 1000.0),
        ("neg0", 0),
        ("big", 123456789012345678901),
    )
    assert [r.watermark_ms for r in rows if r.watermark_ms is not None] == [MAX_MS]


def _check_payload(rows: list[TraceRow]) -> None:
    assert rows[0].payload == (("zeta", "z1"), ("note", 'quote " and, comma'))
    assert rows[2].payload == (("zeta", "🙂"),)


# CSV `value` cells: a number only when the text is how Python writes that number (`text_value`).
CSV_VALUES = [
    ("12", 12),
    ("12.0", 12.0),
    ("1e3", "1e3"),
    (" 12 ", " 12 "),
    ("007", "007"),
    ("-0", 0),
    ("+12", "+12"),
    ("1.5", 1.5),
    ("0.0001", 0.0001),
    ("0.00001", "0.00001"),
    ("1e-05", 1e-05),
    ("1e+16", 1e16),
    ("1234567890123456.0", 1234567890123456.0),
    ("10000000000000000.0", "10000000000000000.0"),
    ("1.0000000000000002", 1.0000000000000002),
    ("99999999999999999999", 99999999999999999999),
    ("NaN", "NaN"),
    ("inf", "inf"),
    ("1_000", "1_000"),
    ("1٢", 12),  # Python's \d is any Unicode digit
    ("١٢", "١٢"),
    ("12.", "12."),
    ("-0.0", -0.0),
]

VALID = Bundle(
    "valid",
    valid=True,
    seq=True,  # reverse file order
    preamble=('{"config": {"name": "in-file"}}',),
    cases=[
        Case(
            "every-kind-with-sentinels-iso-times-and-case-insensitive-names",
            [
                rec(instance="a", channel=1, event_ms=10, key="k1", value="v"),
                wm(instance="a", watermark_ms="MIN"),
                wm(instance="b", kind="Watermark", channel=2, watermark_ms="max"),
                {"instance": "a", "kind": "status", "channel": 0, "status": "idle"},
                {"instance": "b", "kind": "PROCTIME", "proc_ms": 1},
                rec(instance="a", event_ms="2026-11-21T10:00:00.250+01:00"),
                wm(instance="b", channel=1, watermark_ms="2026-11-21T10:00:00Z"),
                {"instance": "b", "kind": "status", "channel": 1, "status": "FINISHED"},
                rec(instance="a", event_ms=-3, value=2.5),
                wm(instance="a", watermark_ms="-inf"),
                wm(instance="a", watermark_ms="+Inf"),
                rec(instance="a", event_ms="2026-11-21T10:00:00.1-05:30"),
                rec(instance="a", event_ms="2026-11-21"),
                rec(instance="a", event_ms="2026-01-01 10:00:00"),
                rec(instance="a", event_ms="9999-12-31T23:59:59.999Z"),
                rec(instance="a", event_ms="-0"),
                {"instance": "a", "kind": "status", "channel": 0, "status": "Active"},
            ],
            check=_check_every_kind,
        ),
        Case(
            "payload-columns-in-file-order-and-unicode-text-everywhere",
            [
                {
                    "zeta": "z1",
                    "instance": "Zürich",
                    "kind": "record",
                    "channel": 0,
                    "event_ms": 1,
                    "key": "日本語",
                    "value": "naïve 🙂",
                    "note": 'quote " and, comma',
                },
                {
                    "zeta": None,
                    "instance": "Zürich",
                    "kind": "record",
                    "channel": 0,
                    "event_ms": 2,
                    "key": "tab\there",
                    "value": "DEL\x7f and é",
                    "note": "\u00e9\u0301 ∑ \\ back",
                },
                {"zeta": "🙂", "instance": "ünï", "kind": "watermark", "channel": 0, "watermark_ms": 3},
            ],
            check=_check_payload,
        ),
        Case(
            "channel-count-inferred-from-the-largest-index-over-all-instances",
            [wm(instance="x", channel=6), wm(instance="y", channel=0)],
        ),
        Case(
            "proc-ms-order-follows-seq-not-file-order",
            [{"instance": "p", "kind": "proctime", "proc_ms": t} for t in (30, 20, 20, 10)],
        ),
        *[
            Case(
                f"csv-value-{cell!r}",
                [rec(instance="v", value=cell)],
                formats=("csv",),
                check=values_are(value),
            )
            for cell, value in CSV_VALUES
        ],
        Case(
            "csv-typed-cells-with-spaces-tabs-signs-and-leading-zeros",
            [
                {"instance": "t", "kind": " proctime ", "proc_ms": "\t8"},
                {
                    "instance": "t",
                    "kind": "watermark",
                    "channel": "00",
                    "watermark_ms": "  MAX ",
                    "proc_ms": "007",
                },
                {"instance": "t", "kind": "record ", "channel": " 0 ", "event_ms": " 12 ", "proc_ms": "+7"},
            ],
            formats=("csv",),
        ),
        Case(
            "csv-quoted-cells-with-commas-and-doubled-quotes",
            [rec(instance="q", key="a,b", value='say "hi"')],
            formats=("csv",),
            check=_check_quoted,
        ),
        Case(
            "json-payload-of-every-json-type-escapes-and-unusual-numbers",
            lines={
                "jsonl": [
                    '{"seq": 101, "instance": "j", "kind": "proctime", "proc_ms": 1, "i": 12, "f": 12.0, '
                    '"e": 1e3, "neg0": -0, "big": 123456789012345678901}',
                    '{"seq": 102, "instance": "j", "kind": "proctime", "proc_ms": 2, "t": true, "n": null, '
                    '"obj": {"a": [1, 2]}, "arr": [1, "x"]}',
                    '{"seq": 103, "instance": "j", "kind": "proctime", "proc_ms": 3, '
                    '"esc": "a\\"b\\\\c\\u00e9\\n", "u": "\\ud83d\\ude42", "tiny": 1e-7}',
                    '{"seq": 104, "instance": "j", "kind": "record", "channel": 0, "event_ms": 4, '
                    '"key": "\\u006b", "value": 0.1}',
                    '  {"seq":105,"instance":"j","kind":"record","channel":0,"event_ms":5,'
                    '"value":1.0000000000000002}',
                    '{"seq": 106, "instance": "j", "kind": "record", "channel": 0, "event_ms": 6, '
                    '"value": 1E400}',
                    '{"seq": "107", "instance": 7, "kind": "record", "channel": "0", "event_ms": "7", '
                    '"value": -0.0, "key": 8}',
                    '{"seq": 108, "instance": "j", "kind": "watermark", "channel": 0, "watermark_ms": 1E400, '
                    '"proc_ms": 4.0}',
                    '{"seq": 109, "instance": "j", "kind": "record", "channel": 0.0, '
                    '"event_ms": 9007199254740992.0}',
                ]
            },
            formats=("jsonl",),
            check=_check_json_payload,
        ),
    ],
)


def _check_inputs(rows: list[TraceRow]) -> None:
    assert [r.input for r in rows] == ["L", "L", "L", "R", "R", "R", "R"]


JOIN = {"type": "interval_join", "lower_ms": 0, "upper_ms": 5}
JOIN_INPUTS = Bundle(
    "join-inputs",
    valid=True,
    formats=("jsonl",),
    # An external config replaces the in-file line entirely: that line is not even validated.
    preamble=('{"config": {"operator": {"type": "windoe"}}}',),
    config={"name": "outside", "operator": JOIN, "channels": {"L": 3}},
    cases=[
        Case(
            "interval-join-inputs-written-l-r-0-1-in-any-case-map-to-two-valves",
            [
                rec(input=name, event_ms=i, key="k")
                for i, name in enumerate(["L", "l", "0", "R", "r", "1", " R "])
            ],
            check=_check_inputs,
        ),
    ],
)

VALID_BUNDLES = [VALID, JOIN_INPUTS]


@pytest.mark.parametrize(("bundle", "fmt"), bundle_params(VALID_BUNDLES))
def test_valid_files_read_to_the_same_rows_channels_instances_and_config(read_bundle, bundle, fmt):
    read = read_bundle(bundle, fmt)
    check_whole_bundle(read, bundle)
    pure = expect_valid(read.pure)
    if bundle is VALID:
        # Arrival order follows seq: the last row of the file comes first.
        assert pure.instances[0] == {"csv": "q", "jsonl": "p", "parquet": "p"}[fmt]
        if fmt == "jsonl":
            assert pure.instances[-2:] == ["j", "7"]  # the raw lines' seq numbers come last
        assert pure.valve_channels[("y", "0")] == 7  # 1 + the largest channel, 6 on instance x
        assert pure.config.name == ("in-file" if fmt == "jsonl" else "")
    else:
        assert pure.config.name == "outside"
        assert pure.valve_channels == {("0", "L"): 3, ("0", "R"): 1}


@pytest.mark.parametrize(("bundle", "fmt", "case"), case_params(VALID_BUNDLES))
def test_each_valid_case_reads_to_the_same_rows(read_bundle, bundle, fmt, case):
    check_case(read_bundle(bundle, fmt), case)


SAMPLES = REPO / "sample_data"


def test_a_built_in_sample_with_a_generator_and_a_window_in_its_config_line_reads_identically(spark):
    outcome = expect_valid(assert_parity(spark, SAMPLES / "late-data-allowed-lateness.jsonl"))
    assert outcome.config.generator is not None and outcome.config.operator.type == "window"


def test_parquet_typed_columns_timestamps_payload_and_row_groups_read_identically_on_the_fast_path(
    spark, tmp_path
):
    when = dt.datetime(2026, 11, 21, 10, 0, 0, 250000)
    n = 5
    table = pa.table(
        {
            "seq": pa.array([5, 4, 3, 2, 1], pa.int32()),
            "kind": pa.array(["record", "record", "watermark", "Status", "proctime"]).dictionary_encode(),
            "channel": pa.array([0.0, 1.0, 0.0, 0.0, None]),  # pandas: an int column with nulls is float64
            "event_ms": pa.array(
                [when, when + dt.timedelta(milliseconds=1), None, None, None], pa.timestamp("ms")
            ),
            "watermark_ms": pa.array([None, None, float("inf"), None, None]),
            "status": [None, None, None, "IDLE", None],
            "proc_ms": pa.array([None, None, None, None, when], pa.timestamp("us", tz="UTC")),
            "key": pa.array([1, None, None, None, None], pa.int16()),
            "value": pa.array([0.1, 1e20, float("nan"), None, None]),
            "seen_at": pa.array([when, None, when, None, None], pa.timestamp("ms")),
            "seen_us": pa.array([when] * n, pa.timestamp("us")),
            "seen_utc": pa.array([None, when, when, None, None], pa.timestamp("ms", tz="UTC")),
            "f32": pa.array([0.1, None, 3.5, 1.0, None], pa.float32()),
            "flag": [True, False, None, True, False],
            "n": pa.array([2**62, -1, None, 0, 1], pa.int64()),
            "text": ["Zürich 🙂", '\x7f"\\', None, "", "tab\t"],
        }
    )
    metadata = {b"wmviz.config": json.dumps({"name": "meta", "channels": {"0": 3}}).encode()}
    pq.write_table(table.replace_schema_metadata(metadata), tmp_path / "t.parquet", row_group_size=2)
    outcome = expect_valid(assert_parity(spark, tmp_path / "t.parquet"), n)
    assert outcome.config.name == "meta" and outcome.valve_channels == {("0", "0"): 3}
    assert outcome.rows[0].payload[:2] == (("seen_at", when), ("seen_us", when))
    assert outcome.rows[2].watermark_ms == MAX_MS


def test_parquet_types_spark_reads_differently_take_the_pyarrow_path_and_read_identically(spark, tmp_path):
    when = dt.datetime(2026, 11, 21, 10, 0, 0, 250000)
    table = pa.table(
        {
            "kind": ["record", "record", "proctime"],
            "KIND": ["x", None, "y"],  # Spark matches names case-insensitively
            "channel": pa.array([0, 1, None], pa.uint64()),
            "event_ms": pa.array([when, when, None], pa.timestamp("ns")),
            "proc_ms": pa.array([None, None, when], pa.timestamp("ms", tz="Europe/Berlin")),
            "dec": pa.array([Decimal("1.50"), None, Decimal("-2")], pa.decimal128(5, 2)),
            "u64": pa.array([2**63, 0, None], pa.uint64()),
            "day": pa.array([dt.date(2026, 1, 2), None, None], pa.date32()),
            "berlin": pa.array([when, None, when], pa.timestamp("ms", tz="Europe/Berlin")),
            "nanos": pa.array([when, when, None], pa.timestamp("ns")),
        }
    )
    pq.write_table(table, tmp_path / "t.parquet")
    outcome = expect_valid(assert_parity(spark, tmp_path / "t.parquet"), 3)
    assert outcome.rows[0].payload[:3] == (("KIND", "x"), ("dec", Decimal("1.50")), ("u64", 2**63))


# --- the compact valve format --------------------------------------------------------------------


def test_compact_format_with_comments_several_headers_and_sentinels_reads_identically(spark, tmp_path):
    text = (
        '{"config": {"name": "compact", "channels": {"0": 2}}}\n'
        "# two valves\n"
        '{"channels": 2}\n'
        '{"ch": 0, "wm": 10}\n'
        "\n"
        "// the second\n"
        '{"ch": 1, "status": "idle"}\n'
        '{"channels": 2}\n'
        '{"ch": 1, "wm": "MAX"}\n'
        '{"ch": 0, "wm": -9223372036854775808}\n'
        '{"ch": 1, "status": "FINISHED", "wm": null}\n'
        '  {"ch":0,"wm":"2026-11-21T10:00:00Z"}  \n'
    )
    (tmp_path / "v.jsonl").write_text(text, encoding="utf-8")
    outcome = expect_valid(assert_parity(spark, tmp_path / "v.jsonl"), 6)
    assert outcome.valve_channels == {("0", "0"): 2, ("1", "0"): 2}


COMPACT_CASES = [
    (
        "unknown-key-on-a-compact-line",
        "column proc: unknown key; a compact line has ch and either wm or status",
        ['{"channels": 2}', '{"ch": 0, "wm": 1, "proc": 5}'],
    ),
    (
        "both-wm-and-status",
        "a compact line has either wm or status, not both",
        ['{"channels": 2}', '{"ch": 0, "wm": 1, "status": "IDLE"}'],
    ),
    (
        "neither-wm-nor-status",
        "a compact line needs wm (a watermark) or status",
        ['{"channels": 2}', '{"ch": 0}', '{"ch": 0, "wm": null, "status": null}'],
    ),
    ("missing-ch", "column ch: required for a watermark row", ['{"channels": 2}', '{"wm": 3}']),
    (
        "unknown-status",
        'column status: "PAUSED" is not one of',
        ['{"channels": 2}', '{"ch": 1, "status": "PAUSED"}'],
    ),
    (
        "bad-ch-and-wm-values-named-by-their-compact-keys",
        'column wm: "soon" is not an epoch-ms integer',
        ['{"channels": 2}', '{"ch": "x", "wm": "soon"}', '{"ch": 1.5, "wm": 1.5}', '{"ch": -1, "wm": true}'],
    ),
    (
        "bad-header-counts",
        "column channels: 0 is not a positive channel count",
        [
            '{"channels": 0}',
            '{"ch": 0, "wm": 1}',
            '{"channels": "3"}',
            '{"channels": true}',
            '{"channels": 1.5}',
            '{"ch": 5, "wm": 1}',
        ],
    ),
    (
        "header-with-an-extra-key",
        'column name: unknown key; a header line is only {"channels": N}',
        ['{"channels": 2, "name": "x"}', '{"ch": 0, "wm": 1}'],
    ),
    (
        "ch-out-of-the-header-range",
        "column ch: 3 is out of range; input 0 has 3 channels (0..2)",
        [
            '{"channels": 3}',
            '{"ch": 2, "wm": 1}',
            '{"ch": 3, "wm": 1}',
            '{"channels": 5}',
            '{"ch": 3, "wm": 1}',
        ],
    ),
    (
        "late-config-broken-json-duplicate-keys-and-bad-utf8",
        'a {"config": ...} line must come before every trace line',
        [
            '{"channels": 2}',
            '{"config": {}}',
            '{"ch": 0 "wm": 2}',
            "[1]",
            '{"ch": 0, "ch": 1}',
            b'{"ch": "\xff"}',
        ],
    ),
    (
        "a-regular-row-inside-a-compact-file",
        "column kind: unknown key; a compact line has ch and either wm",
        ['{"channels": 2}', '{"kind": "watermark", "channel": 0, "watermark_ms": 1}'],
    ),
]

COMPACT = Bundle(
    "compact",
    formats=("jsonl",),
    cases=[
        Case(case_id, lines={"jsonl": lines}, formats=("jsonl",), expected=expected)
        for case_id, expected, lines in COMPACT_CASES
    ],
)


def test_compact_header_disagreeing_with_the_config_channel_count_is_the_same_error(spark, tmp_path):
    text = (
        '{"config": {"channels": {"0": 4}}}\n'
        '{"channels": 3}\n{"ch": 0, "wm": 1}\n{"channels": 4}\n{"ch": 3, "wm": 1}\n'
    )
    (tmp_path / "v.jsonl").write_text(text, encoding="utf-8")
    outcome = expect_invalid(assert_parity(spark, tmp_path / "v.jsonl"))
    assert [str(i) for i in outcome.issues] == [
        "v.jsonl:2: column channels: 3 disagrees with the config's channels.0 = 4"
    ]


# --- row-level validation errors, in CSV, JSON Lines and Parquet ---------------------------------

PLAIN = Bundle(
    "row-errors",
    own_instances=True,  # the proc_ms order is checked per instance
    cases=[
        Case(
            "unknown-kind",
            [wm(), wm(kind="Record", event_ms=1, watermark_ms=None), wm(kind="bogus")],
            f'column kind: "bogus" is not one of {KINDS}',
        ),
        Case("kind-missing-on-a-row", [wm(kind=None)], f"column kind: required; expected one of {KINDS}"),
        Case(
            "unknown-status",
            [{"kind": "status", "channel": 0, "status": s} for s in ("iDLE", "PAUSED", " active ")],
            'column status: "PAUSED" is not one of ACTIVE, IDLE, FINISHED',
        ),
        Case(
            "channel-not-an-integer",
            [wm(channel="x"), wm(channel="0x1")],
            'column channel: "x" is not an integer',
        ),
        Case("channel-negative", [wm(channel=-1)], "column channel: -1 must be >= 0"),
        Case(
            "channel-beyond-a-java-int",
            [wm(channel=2**31)],
            "column channel: 2147483648 is larger than the largest channel index, 2147483647",
        ),
        Case(
            "channel-beyond-a-long",
            [wm(channel=2**63), wm(channel=-(2**63) - 1)],
            "column channel: 9223372036854775808 is outside the signed 64-bit range of Flink's long",
        ),
        Case(
            "time-not-a-time",
            [wm(watermark_ms="soon"), rec(event_ms="12:00"), rec(event_ms="1e3"), rec(event_ms="12.0")],
            'column watermark_ms: "soon" is not an epoch-ms integer, ISO-8601 time or MIN/MAX',
        ),
        Case(
            "sentinel-outside-watermark-ms",
            [rec(event_ms="MAX"), rec(event_ms="-inf", proc_ms="min")],
            'column event_ms: "MAX": the MIN/MAX sentinels are only allowed for watermark_ms',
        ),
        Case(
            "sub-millisecond-iso-time",
            [rec(event_ms="2026-11-21T10:00:00.0001Z"), rec(event_ms="2026-11-21T10:00:00.123400+01:00")],
            "has sub-millisecond digits; times are whole milliseconds",
        ),
        Case(
            "impossible-iso-dates-and-offsets",
            [
                rec(event_ms="2026-02-30T00:00:00Z"),
                rec(event_ms="2026-01-01T00:00:00+24:00"),
                rec(event_ms="0000-01-01T00:00:00Z"),
                rec(event_ms="2026-01-01T24:00:00Z"),
                rec(event_ms="2026-01-01T10:00:00+05:60"),
                rec(event_ms="2026-1-01T10:00:00Z"),
            ],
            'column event_ms: "2026-02-30T00:00:00Z" is not an epoch-ms integer or ISO-8601 time',
        ),
        Case(
            "time-outside-a-long",
            [
                wm(watermark_ms="9223372036854775808"),
                rec(event_ms="-9223372036854775809"),
                rec(event_ms="292278994-08-17T07:12:55.808Z"),
            ],
            'column watermark_ms: "9223372036854775808" is outside the signed 64-bit range of Flink\'s long',
        ),
        Case(
            "meaningless-cell-for-each-kind",
            [
                rec(watermark_ms="oops"),
                wm(status="IDLE"),
                {"kind": "status", "channel": 0, "status": "IDLE", "event_ms": 3},
                {"kind": "proctime", "channel": 0, "proc_ms": 7},
                wm(key="k", value="v"),
            ],
            "column watermark_ms: has no meaning for a record row; leave it empty",
        ),
        Case(
            "required-cell-missing-for-each-kind",
            [
                rec(channel=None),
                rec(event_ms=None),
                wm(watermark_ms=None),
                {"kind": "status", "channel": 0, "status": None},
                {"kind": "proctime", "proc_ms": None},
            ],
            "column channel: required for a record row",
        ),
        Case(
            "empty-instance-or-input",
            [
                {"kind": "proctime", "instance": "", "proc_ms": 1},
                {"kind": "proctime", "input": "", "proc_ms": 2},
            ],
            'column instance: is empty; leave it out for the default "0"',
            formats=("jsonl", "parquet"),
        ),
        Case(
            "unknown-input",
            [
                {"kind": "proctime", "input": "L", "proc_ms": 2},
                {"kind": "proctime", "input": " 0", "proc_ms": 3},
            ],
            'column input: "L" is not an input of operator type none; expected 0',
        ),
        Case(
            "proc-ms-decreasing-within-an-instance",
            [
                wm(proc_ms=1000),
                wm(instance="other", proc_ms=10),
                wm(proc_ms=900),
                wm(proc_ms=950),
                wm(proc_ms=2000),
            ],
            "column proc_ms: 900 is before 1000 on ",
        ),
        Case(
            "csv-row-with-the-wrong-number-of-cells",
            expected="row has 3 cells but the header has",
            lines={"csv": ["proctime,1,extra", "proctime"]},
            formats=("csv",),
        ),
        Case(
            "json-lines-that-are-not-json-objects",
            expected="line is not valid JSON: Expecting value",
            lines={
                "jsonl": [
                    '{"kind": ',
                    "[1, 2]",
                    '{"a": 1, "a": 2}',
                    '{"kind": "proctime", "proc_ms": NaN}',
                    '"text"',
                    b'{"key": "\xff"}',
                    b'\xef\xbb\xbf{"kind": "proctime", "proc_ms": 1}',
                ]
            },
            formats=("jsonl",),
        ),
        Case(
            "json-values-of-the-wrong-type",
            expected="column channel: true is not an integer",
            lines={
                "jsonl": [
                    '{"kind": "record", "channel": true, "event_ms": 1.5, "key": {"a": 1}, "value": true}',
                    '{"kind": "record", "channel": 1.0, "event_ms": 1e17, "key": 2.5, "value": [1]}',
                    '{"kind": "watermark", "channel": 0, "watermark_ms": 9223372036854775808, '
                    '"proc_ms": -1E400}',
                    '{"kind": "status", "channel": 0, "status": 1, "instance": 1.5, "input": false}',
                ]
            },
            formats=("jsonl",),
        ),
        # More than MAX_ISSUES bad rows: the cap keeps the first 1000 (the cases above) and counts all.
        Case("cap-filler", [wm(watermark_ms=f"bad{i}") for i in range(MAX_ISSUES + 100)], "bad0"),
    ],
)

CONFIG_A = {
    "channels": {"L": 2},
    "generator": {"out_of_orderness_ms": 5},
    "operator": {**JOIN, "early_fire_delay_ms": 5, "time_mode": "proctime"},
}
JOIN_ERRORS = Bundle(
    "join-errors",
    formats=("csv", "jsonl"),
    own_instances=True,
    config=CONFIG_A,
    cases=[
        Case(
            "interval-join-input-not-left-or-right",
            [
                {"input": "X", "kind": "proctime", "proc_ms": 1},
                {"input": "2", "kind": "proctime", "proc_ms": 2},
            ],
            'column input: "X" is not an input of operator type interval_join; expected L, R (or 0/1)',
        ),
        Case(
            "interval-join-with-proctime-early-fire-records-need-proc-ms",
            [rec(input="L", proc_ms=5), rec(input="R", event_ms=2), rec(input="r", event_ms=3, proc_ms=6)],
            "column proc_ms: required for a record row",
        ),
        Case(
            "explicit-watermark-on-a-generated-channel",
            [
                rec(input="L", event_ms=10, proc_ms=1),
                wm(input="L", channel=1, watermark_ms=3),
                wm(input="L", watermark_ms=3),
                rec(instance="b", input="L", channel=1, proc_ms=1),
                wm(input="R", watermark_ms=3),
            ],
            "column kind: explicit watermark on channel 0, whose watermarks come from the generator",
        ),
        Case(
            "channel-out-of-the-configured-range",
            [wm(input="L", channel=1), wm(input="L", channel=2), wm(input="R", channel=5)],
            "column channel: 2 is out of range; input L has 2 channels (0..1)",
        ),
    ],
)

WINDOW_ERRORS = Bundle(
    "window-errors",
    formats=("csv", "jsonl"),
    own_instances=True,
    config={
        "channels": {"0": 2},
        "generator": {"emit": "periodic", "interval_ms": 100},
        "operator": {"type": "window", "size_ms": 5, "aggregate": "sum"},
    },
    cases=[
        Case(
            "window-sum-of-a-text-value",
            [rec(value="abc", proc_ms=1), rec(value=3, proc_ms=1), rec(value="4", proc_ms=2)],
            'column value: "abc" is not a number, so it cannot be aggregated with sum',
        ),
        Case(
            "periodic-generator-records-need-proc-ms",
            [rec(proc_ms=5), rec(event_ms=11)],
            "column proc_ms: required for a record row (the generator emits periodically)",
        ),
        Case(
            "channel-out-of-the-configured-range-of-a-window",
            [rec(channel=1, proc_ms=1), rec(channel=2, proc_ms=1)],
            "column channel: 2 is out of range; input 0 has 2 channels (0..1)",
        ),
    ],
)

PROCTIME_JOIN_ERRORS = Bundle(
    "proctime-join-errors",
    formats=("csv", "jsonl"),
    own_instances=True,
    config={"operator": {**JOIN, "join_time": "proctime"}},
    cases=[
        Case(
            "processing-time-join-records-need-proc-ms-but-no-event-ms",
            [
                {"input": "L", "kind": "record", "channel": 0, "proc_ms": 5},
                {"input": "R", "kind": "record", "channel": 0, "event_ms": 2},
                {"input": "R", "kind": "record", "channel": 0, "event_ms": 2, "proc_ms": 6},
            ],
            "column proc_ms: required for a record row",
        ),
    ],
)

SEQ_ERRORS = Bundle(
    "seq-errors",
    formats=("csv", "jsonl"),
    cases=[
        Case("seq-not-an-integer", [wm(seq="first"), wm(seq="2.0")], 'column seq: "first" is not an integer'),
        Case(
            "seq-missing-on-some-rows",
            [wm(seq=None), wm(seq=3), wm(seq=None)],
            "column seq: missing, but other rows have it (first on ",
        ),
        Case(
            "seq-reused",
            [wm(seq=10), wm(seq=11), wm(seq=10), wm(seq=10, kind="bogus")],
            "column seq: 10 is also used on ",
        ),
        Case(
            "broken-seq-disables-the-proc-ms-order-check",
            [{"seq": 20, "kind": "proctime", "proc_ms": 5}, {"seq": 21, "kind": "proctime", "proc_ms": 1}],
        ),
        Case(
            "several-errors-on-one-row-keep-the-validators-order",
            [
                {
                    "seq": "x",
                    "kind": "watermark",
                    "channel": "y",
                    "event_ms": "z",
                    "watermark_ms": "w",
                    "status": "s",
                    "proc_ms": "p",
                    "key": "k",
                },
                {"seq": 30, "kind": "record", "channel": -1, "proc_ms": 3},
                {"seq": 30, "kind": "proctime", "proc_ms": 2},
            ],
            "column event_ms: has no meaning for a watermark row",
        ),
    ],
)

SEQ_ORDER_ERRORS = Bundle(
    "seq-order-errors",
    formats=("parquet",),
    cases=[
        Case(
            "proc-ms-order-follows-seq-not-file-order",
            [
                {"seq": 2, "kind": "proctime", "proc_ms": 5},
                {"seq": 1, "kind": "proctime", "proc_ms": 9},
                {"seq": 3, "kind": "proctime", "proc_ms": 5},
                {"seq": 4, "kind": "proctime", "proc_ms": 10},
            ],
            "column proc_ms: 5 is before 9 on row 2",
        ),
        Case(
            "proc-ms-decreasing-in-another-instance-names-that-instance",
            [
                {"seq": 6, "instance": "b", "kind": "proctime", "proc_ms": 3},
                {"seq": 5, "instance": "b", "kind": "proctime", "proc_ms": 4},
            ],
            'column proc_ms: 3 is before 4 on row 6; proc_ms must not decrease within instance "b"',
        ),
    ],
)

ERROR_BUNDLES = [
    COMPACT,
    PLAIN,
    JOIN_ERRORS,
    WINDOW_ERRORS,
    PROCTIME_JOIN_ERRORS,
    SEQ_ERRORS,
    SEQ_ORDER_ERRORS,
]


@pytest.mark.parametrize(("bundle", "fmt"), bundle_params(ERROR_BUNDLES))
def test_invalid_files_give_the_same_issues_text_order_total_and_cap(read_bundle, bundle, fmt):
    read = read_bundle(bundle, fmt)
    check_whole_bundle(read, bundle)
    pure = expect_invalid(read.pure)
    if bundle is PLAIN:
        assert len(pure.issues) == MAX_ISSUES
        assert pure.total > MAX_ISSUES + 100
        assert pure.text.endswith(f"\n... and {pure.total - MAX_ISSUES} more")
    if bundle is SEQ_ERRORS:
        assert "is before" not in pure.text  # a broken seq leaves the arrival order unknown


@pytest.mark.parametrize(("bundle", "fmt", "case"), case_params(ERROR_BUNDLES))
def test_each_class_of_row_error_gives_the_same_issues_on_its_rows(read_bundle, bundle, fmt, case):
    check_case(read_bundle(bundle, fmt), case)


def test_parquet_typed_columns_with_wrong_values_give_the_same_errors(spark, tmp_path):
    table = pa.table(
        {
            "kind": ["record", "record", "watermark", "status", "record"],
            "channel": pa.array([-1, 2**31, 0, 2**63 - 1, 0], pa.int64()),
            "event_ms": pa.array([1.5, 1e17, None, None, -(2.0**53)]),
            "watermark_ms": pa.array([None, None, float("-inf"), None, None]),
            "status": [None, None, None, "PAUSED", None],
            "key": pa.array([2.5, None, None, None, 1.0]),
            "value": pa.array([True, None, None, None, False]),
        }
    )
    pq.write_table(table, tmp_path / "t.parquet")
    outcome = expect_invalid(
        assert_parity(spark, tmp_path / "t.parquet"), "t.parquet:1: column channel: -1 must be >= 0"
    )
    assert "t.parquet:5: column value: false is not a string or number" in outcome.text


def test_parquet_nanosecond_sub_millisecond_times_and_unsigned_overflow_give_the_same_errors(spark, tmp_path):
    table = pa.table(
        {
            "kind": ["record", "record", "watermark"],
            "channel": pa.array([0, 2**64 - 1, 0], pa.uint64()),
            "event_ms": pa.array([1_000_000_001, 2_000_000, None], pa.timestamp("ns")),
            "watermark_ms": pa.array([None, None, 3], pa.int64()),
            "key": pa.array([None, Decimal("2.5"), None], pa.decimal128(3, 1)),
        }
    )
    pq.write_table(table, tmp_path / "t.parquet")
    outcome = expect_invalid(assert_parity(spark, tmp_path / "t.parquet"), "has sub-millisecond digits")
    assert "outside the signed 64-bit range" in outcome.text


# --- whole-file and file-level errors --------------------------------------------------------------


def test_a_csv_header_without_kind_is_one_file_level_error_on_its_line(spark, tmp_path):
    (tmp_path / "t.csv").write_text("\n\nchannel,watermark_ms\n0,1\n0,2\n", encoding="utf-8")
    outcome = expect_invalid(assert_parity(spark, tmp_path / "t.csv"))
    assert outcome.text == "t.csv:3: column kind: missing from the header; every row needs it"


def test_a_parquet_schema_without_a_column_some_kinds_require_is_one_file_level_error(spark, tmp_path):
    rows = [
        {"kind": "proctime", "proc_ms": 5},
        {"kind": "record", "event_ms": 1},
        {"kind": "watermark", "watermark_ms": 2},
        {"kind": "bogus", "event_ms": 3},
    ]
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "t.parquet")
    outcome = expect_invalid(assert_parity(spark, tmp_path / "t.parquet"))
    assert outcome.issues[0] == TraceIssue(
        "t.parquet",
        None,
        "channel",
        "missing from the schema; required for record/watermark rows (first on row 2)",
    )


def test_a_csv_header_with_an_empty_or_repeated_name_is_reported_with_the_rows_errors(spark, tmp_path):
    text = "kind,proc_ms,,proc_ms\nproctime,1,,1\nbogus,2,x,2\nproctime,1\n"
    (tmp_path / "t.csv").write_text(text, encoding="utf-8")
    expect_invalid(
        assert_parity(spark, tmp_path / "t.csv"),
        "t.csv:1: header cell 3 is empty; every column needs a name",
        "t.csv:1: column proc_ms: appears twice in the header",
    )


def test_invalid_utf8_after_the_first_8192_bytes_stops_the_csv_file_where_the_pure_reader_stops(
    spark, tmp_path
):
    # The pure reader decodes 8192-byte chunks and stops at the last line complete before the chunk
    # with the bad byte: the rows between that line and the bad one are never judged.
    data = (
        b"kind,proc_ms\n"
        + b"bogus,0\n"
        + b"proctime,1\n" * 900
        + b"bogus,1\n"
        + b"proctime,\xff\n"
        + b"bogus,2\n"
    )
    (tmp_path / "t.csv").write_bytes(data)
    outcome = expect_invalid(assert_parity(spark, tmp_path / "t.csv"))
    assert [i.row for i in outcome.issues] == [2, 745]
    assert outcome.issues[1].reason == "file is not valid UTF-8 text"


def test_a_csv_field_over_the_csv_module_limit_stops_the_file_with_the_same_error(spark, tmp_path):
    text = "kind,proc_ms,note\nbogus,1,x\nproctime,2," + "y" * 140_000 + "\nbogus,3,z\n"
    (tmp_path / "t.csv").write_text(text, encoding="utf-8")
    expect_invalid(
        assert_parity(spark, tmp_path / "t.csv"), "t.csv:3: broken CSV: field larger than field limit"
    )


def test_an_empty_csv_file_and_a_json_lines_file_of_comments_have_no_rows(spark, tmp_path):
    (tmp_path / "t.csv").write_text("", encoding="utf-8")
    assert expect_invalid(assert_parity(spark, tmp_path / "t.csv")).text == (
        "t.csv: file is empty; expected a header line naming the columns"
    )
    (tmp_path / "t.jsonl").write_text("# only a comment\n\n// and another\n", encoding="utf-8")
    assert expect_invalid(assert_parity(spark, tmp_path / "t.jsonl")).text == "t.jsonl: the trace has no rows"


def test_misplaced_malformed_and_invalid_json_lines_config_lines_give_the_same_errors(spark, tmp_path):
    text = (
        '{"config": {"operator": {"type": "windoe"}, "idle_timout_ms": 5}}\n'
        '{"config": {"name": "b"}, "extra": 1}\n'
        '{"config": {"name": "c"}}\n'
        '{"kind": "proctime", "proc_ms": 1}\n'
        '{"config": {"name": "d"}}\n'
        '{"kind": "bogus"}\n'
    )
    (tmp_path / "t.jsonl").write_text(text, encoding="utf-8")
    expect_invalid(
        assert_parity(spark, tmp_path / "t.jsonl"),
        't.jsonl:1: field operator.type: "windoe" is not one of none, window, interval_join',
        't.jsonl:2: a {"config": ...} line holds nothing else; found extra',
        't.jsonl:3: only one {"config": ...} line is allowed',
        't.jsonl:5: a {"config": ...} line must come before every trace line',
    )


def test_parquet_duplicate_columns_and_bad_config_metadata_give_the_same_errors(spark, tmp_path):
    columns = [pa.array(["proctime", "bogus"]), pa.array([1, 2]), pa.array([2, 3])]
    table = pa.table(columns, ["kind", "proc_ms", "proc_ms"])
    pq.write_table(table.replace_schema_metadata({b"wmviz.config": b"{nope"}), tmp_path / "a.parquet")
    expect_invalid(
        assert_parity(spark, tmp_path / "a.parquet"),
        "a.parquet: column proc_ms: appears twice in the schema",
        "a.parquet: the wmviz.config metadata is not valid JSON",
    )


def test_an_empty_or_unreadable_parquet_file_gives_the_same_error(spark, tmp_path):
    pq.write_table(pa.table({"kind": pa.array([], pa.string())}), tmp_path / "empty.parquet")
    assert expect_invalid(assert_parity(spark, tmp_path / "empty.parquet")).text == (
        "empty.parquet: the trace has no rows"
    )
    (tmp_path / "garbage.parquet").write_bytes(b"not parquet at all")
    expect_invalid(
        assert_parity(spark, tmp_path / "garbage.parquet"), "garbage.parquet: not a readable Parquet file: "
    )


@pytest.mark.parametrize(
    ("fmt", "config_text", "expected"),
    [
        ("csv", '{"profile": "flink-3", "idle_timout_ms": 5}', 'scenario.json: field profile: "flink-3"'),
        ("jsonl", '{"channels": {"0": 2},', "scenario.json:1: file is not valid JSON"),
    ],
)
def test_config_file_errors_come_before_the_trace_errors_identically(
    spark, tmp_path, fmt, config_text, expected
):
    config = tmp_path / "scenario.json"
    config.write_text(config_text, encoding="utf-8")
    path, rows_of = write_bundle(
        tmp_path, Bundle("t", [Case("c", [wm(), wm(kind="bogus"), wm(channel=5)])]), fmt
    )
    bogus = f't.{fmt}:{rows_of["c"][1]}: column kind: "bogus"'
    outcome = expect_invalid(assert_parity(spark, path, config), expected, bogus)
    assert outcome.issues[0].file == "scenario.json"
