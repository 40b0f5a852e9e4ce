"""One corpus of traces that every engine must handle alike (after Beam's trigger transcripts).

Valid cases: every valve conformance case (one interleaved multi-instance trace, in three formats),
every interval-join case, every built-in sample, seeded multi-instance traces. Invalid cases: one
file per class of bad input, each with the exact messages a user must see. `tests/timeline/test_engines.py`
runs each case through the local and the Spark engine and compares the outcome with the case's
expectation, so an engine that accepts a bad file, words an error differently, or writes a
different timeline fails.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from tests.conftest import REPO, case_id, valve_cases
from tests.support.join_cases import case_config, case_rows, join_cases
from wmviz.core.types import MAX_MS, MIN_MS, StatusInput, WatermarkInput, parse_input
from wmviz.trace.writers import write_trace

KINDS = "record, watermark, status, proctime, split"


@dataclass(frozen=True)
class Case:
    """A trace file to write, its config file (if any), and what an engine must make of it.

    `issues` None means the trace is valid; otherwise the exact messages, in order, and `total`
    the count when more exist than are kept. `outs` (optional) is the expected `out` of each
    step per instance, in the conformance notation, for cases whose answer is known.
    """

    name: str
    file: str
    write: Callable[[Path], None]
    config: dict[str, Any] | None = None
    issues: tuple[str, ...] | None = None
    total: int | None = None
    outs: dict[str, list[str]] = field(default_factory=dict)

    def materialize(self, folder: Path) -> tuple[Path, Path | None]:
        """Write the trace (and config) into `folder`; their paths."""
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / self.file
        self.write(path)
        config = None
        if self.config is not None:
            config = folder / f"{self.name}.config.json"
            config.write_text(json.dumps(self.config))
        return path, config


def _text(content: str | bytes) -> Callable[[Path], None]:
    data = content.encode() if isinstance(content, str) else content
    return lambda path: path.write_bytes(data)


def _not_utf8(cells: list[bytes | None]) -> pa.Array:
    """A Parquet string column whose bytes are not all UTF-8 (Parquet does not check)."""
    binary = pa.array(cells, pa.binary())
    return pa.Array.from_buffers(pa.string(), len(cells), binary.buffers())


def _parquet(columns: dict[str, pa.Array | list]) -> Callable[[Path], None]:
    return lambda path: pq.write_table(pa.table(columns), path)


# ---- valid cases -----------------------------------------------------------------------------------


def _conformance_rows() -> tuple[list[dict[str, Any]], dict[str, int], dict[str, list[str]]]:
    """Every valve case without an error step, one instance each, interleaved round-robin."""
    queues, channels, outs = [], {}, {}
    for case in valve_cases():
        if any("error" in step for step in case["steps"]):
            continue
        name = case_id(case)
        steps = case["steps"]
        tokens = [parse_input(t) for step in steps for t in step["in"]]
        # A step's expected emissions all belong to its last input; the ones before emit nothing.
        expected = []
        for step in steps:
            expected += [""] * (len(step["in"]) - 1) + [" ".join(step["out"]["flink-1.x-2.x"])]
        queues.append((name, tokens))
        channels[name] = case["channels"]
        outs[name] = expected
    rows: list[dict[str, Any]] = []
    while any(tokens for _, tokens in queues):
        for name, tokens in queues:
            if not tokens:
                continue
            inp = tokens.pop(0)
            if isinstance(inp, WatermarkInput):
                wm = {MAX_MS: "MAX", MIN_MS: "MIN"}.get(inp.watermark_ms, inp.watermark_ms)
                rows.append(
                    {"instance": name, "kind": "watermark", "channel": inp.channel, "watermark_ms": wm}
                )
            else:
                assert isinstance(inp, StatusInput)
                rows.append(
                    {"instance": name, "kind": "status", "channel": inp.channel, "status": inp.status.value}
                )
    return rows, channels, outs


def _conformance_cases() -> list[Case]:
    rows, channels, outs = _conformance_rows()
    # Every case has its own channel count: give each instance its own compact valve instead of a
    # config (a config's channels are per input, shared by all instances).
    compact = []
    for name, count in channels.items():
        compact.append(json.dumps({"channels": count}))
        compact += [
            json.dumps(
                {
                    "ch": r["channel"],
                    **({"wm": r["watermark_ms"]} if "watermark_ms" in r else {"status": r["status"]}),
                }
            )
            for r in rows
            if r["instance"] == name
        ]
    compact_outs = {str(i): outs[name] for i, name in enumerate(channels)}
    widest = max(channels.values())

    def as_csv(path: Path) -> None:
        header = "seq,instance,kind,channel,watermark_ms,status\n"
        body = "".join(
            f"{i},{r['instance']},{r['kind']},{r['channel']},{r.get('watermark_ms', '')},{r.get('status', '')}\n"
            for i, r in enumerate(rows)
        )
        path.write_text(header + body)

    def as_parquet(path: Path) -> None:
        pq.write_table(
            pa.table(
                {
                    "instance": [r["instance"] for r in rows],
                    "kind": [r["kind"] for r in rows],
                    "channel": pa.array([r["channel"] for r in rows], pa.int32()),
                    "watermark_ms": [
                        None if "watermark_ms" not in r else str(r["watermark_ms"]) for r in rows
                    ],
                    "status": [r.get("status") for r in rows],
                }
            ),
            path,
            row_group_size=97,  # several row groups, so several chunks on Spark
        )

    return [
        Case("conformance-compact", "conformance.jsonl", _text("\n".join(compact) + "\n"), outs=compact_outs),
        # One config gives every instance the widest case's channel count, so these two check
        # only that the engines agree (the compact file above checks the cases' own outputs).
        Case("conformance-csv", "conformance.csv", as_csv, {"channels": {"0": widest}}),
        Case("conformance-parquet", "conformance.parquet", as_parquet, {"channels": {"0": widest}}),
    ]


def _join_cases() -> list[Case]:
    cases = []
    for case in join_cases():
        lines = [json.dumps({"config": case_config(case)})]
        lines += [json.dumps(r) for rows in case_rows(case) for r in rows]
        cases.append(Case(f"join-{case_id(case)}", f"{case_id(case)}.jsonl", _text("\n".join(lines) + "\n")))
    return cases


def _samples() -> list[Case]:
    cases = []
    for path in sorted((REPO / "sample_data").iterdir()):
        if path.suffix not in (".jsonl", ".csv"):
            continue
        config_path = path.with_suffix(".json")
        config = json.loads(config_path.read_text()) if config_path.is_file() else None
        cases.append(Case(f"sample-{path.stem}", path.name, _text(path.read_bytes()), config))
    return cases


def _sql() -> list[Case]:
    """SQL's watermark stages (tests/data/sql: pushed down, a separate assigner with idleness and a
    mini-batch assigner, split readers with alignment, a join of two tables with a config each)."""
    folder = REPO / "tests" / "data" / "sql"
    # `*.rows.jsonl` beside them are `wmviz sql replay`'s rows files, `*.flink.jsonl` a real run's
    # output lines (tools/flink/sql/run.py): neither is a trace.
    traces = [
        p for p in sorted(folder.glob("*.jsonl")) if not p.name.endswith((".rows.jsonl", ".flink.jsonl"))
    ]
    return [Case(f"sql-{p.stem}", p.name, _text(p.read_bytes())) for p in traces]


def _seeded() -> list[Case]:
    from tests.timeline.test_timeline import random_valve_trace

    cases = []
    for seed, fmt in ((5, "jsonl"), (6, "parquet"), (7, "csv")):
        trace = random_valve_trace(seed, instances=7, rows=1500)
        cases.append(
            Case(
                f"seeded-{seed}",
                f"seeded-{seed}.{fmt}",
                lambda p, t=trace: write_trace(t.rows, p),
                {"channels": {"0": 4}},
            )
        )
    return cases


def valid_cases() -> list[Case]:
    return [*_conformance_cases(), *_join_cases(), *_samples(), *_seeded(), *_sql()]


# ---- invalid cases: one per class of bad input ------------------------------------------------------

HEADER = "kind,channel,event_ms,watermark_ms,status,proc_ms\n"
_BAD: list[Case] = [
    Case(
        "bad-kind",
        "t.csv",
        _text(HEADER + "bogus,0,,,,\nRecord,0,1,,,\n"),
        issues=(f't.csv:2: column kind: "bogus" is not one of {KINDS}',),
    ),
    Case(
        "no-kind-column",
        "t.csv",
        _text("channel,watermark_ms\n0,1\n0,2\n"),
        issues=("t.csv:1: column kind: missing from the header; every row needs it",),
    ),
    Case(
        "column-some-kinds-need",
        "t.csv",
        _text("kind,watermark_ms,proc_ms\nproctime,,1\nwatermark,5,\nstatus,,\n"),
        issues=(
            "t.csv:1: column channel: missing from the header; required for watermark/status rows (first on line 3)",
            "t.csv:1: column status: missing from the header; required for status rows (first on line 4)",
        ),
    ),
    Case(
        "meaningless-cell",
        "t.csv",
        _text(HEADER + "watermark,0,7,5,IDLE,\n"),
        issues=(
            "t.csv:2: column event_ms: has no meaning for a watermark row; leave it empty",
            "t.csv:2: column status: has no meaning for a watermark row; leave it empty",
        ),
    ),
    Case(
        "required-cell",
        "t.jsonl",
        _text('{"kind": "record", "channel": 0}\n{"kind": "status", "channel": 0}\n'),
        issues=(
            "t.jsonl:1: column event_ms: required for a record row",
            "t.jsonl:2: column status: required for a status row",
        ),
    ),
    Case(
        "times",
        "t.csv",
        _text(
            HEADER
            + "watermark,0,,12:00,,\nrecord,0,MAX,,,\nrecord,0,2026-11-21T10:00:00.0001Z,,,\nwatermark,0,,9223372036854775808,,\n"
        ),
        issues=(
            't.csv:2: column watermark_ms: "12:00" is not an epoch-ms integer, ISO-8601 time or MIN/MAX',
            't.csv:3: column event_ms: "MAX": the MIN/MAX sentinels are only allowed for watermark_ms',
            't.csv:4: column event_ms: "2026-11-21T10:00:00.0001Z" has sub-millisecond digits; times are whole milliseconds',
            't.csv:5: column watermark_ms: "9223372036854775808" is outside the signed 64-bit range of Flink\'s long',
        ),
    ),
    Case(
        "not-ascii-digits",
        "t.csv",
        _text(HEADER + "watermark,٣,,5,,\nwatermark,0,,\u00a07,,\nwatermark,𝟙,,5,,\n"),
        issues=(
            't.csv:2: column channel: "٣" is not an integer',
            't.csv:3: column watermark_ms: "\u00a07" is not an epoch-ms integer, ISO-8601 time or MIN/MAX',
            't.csv:4: column channel: "𝟙" is not an integer',
        ),
    ),
    Case(
        "status-and-channel",
        "t.jsonl",
        _text(
            '{"kind": "status", "channel": 0, "status": "PAUSED"}\n{"kind": "status", "channel": -1, "status": "IDLE"}\n{"kind": "status", "channel": 2147483648, "status": "IDLE"}\n{"kind": "status", "channel": 1.5, "status": "idle"}\n'
        ),
        issues=(
            't.jsonl:1: column status: "PAUSED" is not one of ACTIVE, IDLE, FINISHED',
            "t.jsonl:2: column channel: -1 must be >= 0",
            "t.jsonl:3: column channel: 2147483648 is larger than the largest channel index, 2147483647",
            "t.jsonl:4: column channel: 1.5 is not an integer",
        ),
    ),
    Case(
        "channel-out-of-range",
        "t.csv",
        _text(HEADER + "status,3,,,IDLE,\nstatus,4,,,IDLE,\n"),
        {"channels": {"0": 4}},
        issues=("t.csv:3: column channel: 4 is out of range; input 0 has 4 channels (0..3)",),
    ),
    Case(
        "proc-ms-goes-back",
        "t.csv",
        _text("seq,kind,proc_ms\n2,proctime,9\n1,proctime,5\n3,proctime,4\n"),
        issues=(
            't.csv:4: column proc_ms: 4 is before 9 on line 2; proc_ms must not decrease within instance "0"',
        ),
    ),
    Case(
        "seq-missing-and-reused",
        "t.csv",
        _text("seq,kind,proc_ms\n,proctime,1\n1,proctime,2\n1,proctime,3\n,proctime,4\n"),
        issues=(
            "t.csv:2: column seq: missing, but other rows have it (first on line 3)",
            "t.csv:4: column seq: 1 is also used on line 3",
            "t.csv:5: column seq: missing, but other rows have it (first on line 3)",
        ),
    ),
    Case(
        "instance-and-input",
        "t.jsonl",
        _text(
            '{"instance": "", "kind": "proctime", "proc_ms": 1}\n{"input": "L", "kind": "proctime", "proc_ms": 1}\n'
        ),
        issues=(
            't.jsonl:1: column instance: is empty; leave it out for the default "0"',
            't.jsonl:2: column input: "L" is not an input of operator type none; expected 0',
        ),
    ),
    Case(
        "generated-channel-watermark",
        "t.csv",
        _text(HEADER + "record,0,10,,,\nwatermark,0,,5,,\nwatermark,1,,5,,\n"),
        {"generator": {"out_of_orderness_ms": 0}},
        issues=(
            "t.csv:3: column kind: explicit watermark on channel 0, whose watermarks come from the generator because it carries records (first on line 2)",
        ),
    ),
    Case(
        "periodic-needs-proc-ms",
        "t.csv",
        _text(HEADER + "record,0,10,,,5\nrecord,0,11,,,\n"),
        {"generator": {"emit": "periodic"}},
        issues=("t.csv:3: column proc_ms: required for a record row (the generator emits periodically)",),
    ),
    Case(
        "csv-shape",
        "t.csv",
        _text("kind,proc_ms,,proc_ms\nproctime,1,,1\nproctime,1\n"),
        issues=(
            "t.csv:1: header cell 3 is empty; every column needs a name",
            "t.csv:1: column proc_ms: appears twice in the header",
            "t.csv:3: row has 2 cells but the header has 4",
        ),
    ),
    Case(
        "not-utf8",
        "t.csv",
        _text(b"kind,proc_ms\nproctime,1\nproctime,\xff\nproctime,3\n"),
        issues=("t.csv:3: line is not valid UTF-8 text",),
    ),
    Case(
        "json-lines",
        "t.jsonl",
        _text(
            '{"kind": "proctime", "proc_ms": 1}\n{"kind": \n[1, 2]\n{"a": 1, "a": 2}\n'
            '{"kind": "watermark", "channel": 0, "watermark_ms": 1e999}\n'
            '{"kind": "proctime", "proc_ms": '
            + "9" * 500
            + "}\n"
            + '{"kind": "proctime", "proc_ms": 1, "deep": '
            + "[" * 100
            + "]" * 100
            + "}\n"
            + '{"config": {}}\n'
        ),
        issues=(
            "t.jsonl:2: line is not valid JSON: Expecting value",
            "t.jsonl:3: line is not a JSON object: [1, 2]",
            't.jsonl:4: line is not valid JSON: key "a" appears twice',
            "t.jsonl:5: line is not valid JSON: 1e999 is beyond the range of a double",
            "t.jsonl:6: line is not valid JSON: an integer of 500 digits; the limit is 400",
            "t.jsonl:7: line is not valid JSON: nested 101 deep; the limit is 64",
            't.jsonl:8: a {"config": ...} line must come before every trace line',
        ),
    ),
    Case(
        "compact",
        "v.jsonl",
        _text(
            '{"channels": 2}\n{"ch": 2, "wm": 5}\n{"ch": 0}\n{"ch": 0, "wm": 1, "status": "IDLE"}\n{"ch": 0, "wx": 1}\n{"channels": 0}\n{"channels": 40000}\n'
        ),
        issues=(
            "v.jsonl:2: column ch: 2 is out of range; input 0 has 2 channels (0..1)",
            "v.jsonl:3: a compact line needs wm (a watermark) or status",
            "v.jsonl:4: a compact line has either wm or status, not both",
            "v.jsonl:5: column wx: unknown key; a compact line has ch and either wm or status",
            "v.jsonl:5: a compact line needs wm (a watermark) or status",
            "v.jsonl:6: column channels: 0 is not a positive channel count",
            "v.jsonl:7: column channels: 40,000 channels are more than a valve may have here: 32,768 (Flink's largest parallelism; WMVIZ_MAX_CHANNELS)",
        ),
    ),
    Case(
        "parquet-types",
        "t.parquet",
        _parquet(
            {
                "kind": ["record", "watermark", "record", "status"],
                "channel": pa.array([0, 0, 0, 0], pa.uint64()),
                "event_ms": pa.array([1_000_001, None, 5_000_000, None], pa.timestamp("ns")),
                "watermark_ms": pa.array([None, 2**64 - 1, None, None], pa.uint64()),
                "status": [None, None, None, "gone"],
                "seen": pa.array([None, None, 2932897 * 2, None], pa.date32()),
            }
        ),
        issues=(
            't.parquet:1: column event_ms: "1970-01-01T00:00:00.001000001" has sub-millisecond digits; times are whole milliseconds',
            "t.parquet:2: column watermark_ms: 18446744073709551615 is outside the signed 64-bit range of Flink's long",
            "t.parquet:3: column seen: cannot be read: a Parquet date32[day] value Python cannot hold (OverflowError)",
            't.parquet:4: column status: "gone" is not one of ACTIVE, IDLE, FINISHED',
        ),
    ),
    Case(
        "cap",
        "t.csv",
        _text(HEADER + "".join(f"watermark,0,,bad{i},,\n" for i in range(2500))),
        issues=tuple(
            f't.csv:{i + 2}: column watermark_ms: "bad{i}" is not an epoch-ms integer, ISO-8601 time or MIN/MAX'
            for i in range(1000)
        ),
        total=2500,
    ),
    Case(
        "reserved-column",
        "t.csv",
        _text("kind,proc_ms,config\nproctime,1,x\n"),
        issues=(
            't.csv:1: column config: is a reserved name (a JSON Lines line with a "config" key is the config); rename it',
        ),
    ),
    Case("no-rows", "h.csv", _text("kind,channel\n"), issues=("h.csv: the trace has no rows",)),
    Case(
        "parquet-beyond-python",
        "x.parquet",
        _parquet(
            {
                "kind": ["record", "record", "record", "proctime"],
                "instance": _not_utf8([b"0", b"\xff", b"0", b"0"]),
                "channel": [0, 0, 0, None],
                "event_ms": pa.array([2**62, 5, 5, None], pa.int64()).cast(pa.timestamp("ms")),
                "proc_ms": [None, None, None, 9],
                "took": pa.array([1, 2**62, 3, None], pa.int64()).cast(pa.duration("ms")),
                "note": _not_utf8([b"ok", b"x", b"\xed\xa0\x80", None]),
                "when": pa.array([2**62, 1, 1, 1], pa.int64()).cast(pa.timestamp("us", "UTC")),
            }
        ),
        issues=(
            "x.parquet:1: column when: cannot be read: a Parquet timestamp[us, tz=UTC] value Python cannot hold (OverflowError)",
            "x.parquet:2: column instance: cannot be read: text that is not valid UTF-8",
            "x.parquet:2: column took: cannot be read: a Parquet duration[ms] value Python cannot hold (OverflowError)",
            "x.parquet:3: column note: cannot be read: text that is not valid UTF-8",
        ),
    ),
    Case(
        "json-text-that-is-no-text",
        "t.jsonl",
        _text(
            '{"kind": "proctime", "proc_ms": 1, "instance": "\\ud800"}\n'
            '{"kind": "proctime", "proc_ms": 2, "\\udfff": 1}\n'
            '{"kind": "record", "channel": "\\u0663", "event_ms": 1}\n'
            '{"kind": "record", "channel": "\\u00a05", "event_ms": 1}\n'
            '{"kind": "proctime", "proc_ms": 3, "instance": "\\ud83d\\ude00"}\n'
        ),
        issues=(
            't.jsonl:1: line is not valid JSON: the string "\\ud800" holds \\ud800, half of a UTF-16 surrogate pair, which is not a character',
            't.jsonl:2: line is not valid JSON: the string "\\udfff" holds \\udfff, half of a UTF-16 surrogate pair, which is not a character',
            't.jsonl:3: column channel: "\u0663" is not an integer',
            't.jsonl:4: column channel: "\u00a05" is not an integer',
        ),
    ),
    Case(
        "csv-stray-quote",
        "t.csv",
        _text(
            'kind,proc_ms,note\nproctime,1,"a ""b"" c"\nproctime,2,"x\ny"\nproctime,3,ab"c\n,1,\nproctime,4,z\n'
        ),
        issues=(
            't.csv:5: broken CSV: a quote inside a cell that does not start with one; quote the whole cell and double the quotes in it ("a ""b"" c")',
        ),
    ),
    Case(
        "windows-per-record-budget",
        "t.jsonl",
        _text('{"kind": "record", "channel": 0, "key": "k", "event_ms": 5}\n'),
        {"operator": {"type": "window", "size_ms": 2_000_000, "slide_ms": 1}},
        issues=(
            "windows-per-record-budget.config.json: field operator.slide_ms: size / slide puts each record in 2,000,000 windows, more than wmviz simulates: 1,000 (WMVIZ_MAX_WINDOWS_PER_RECORD)",
        ),
    ),
    Case(
        "channel-budget",
        "t.jsonl",
        _text('{"kind": "status", "channel": 40000, "status": "IDLE"}\n'),
        {"channels": {"0": 2147483647}},
        issues=(
            "channel-budget.config.json: field channels.0: 2,147,483,647 channels are more than a valve may have here: 32,768 (Flink's largest parallelism; WMVIZ_MAX_CHANNELS)",
            "t.jsonl:1: column channel: channel 40000: 40,001 channels are more than a valve may have here: 32,768 (Flink's largest parallelism; WMVIZ_MAX_CHANNELS)",
        ),
    ),
]


def invalid_cases() -> list[Case]:
    return list(_BAD)
