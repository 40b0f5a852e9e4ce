"""Seeded hostile inputs for `bench/fuzz.py`: every trace format and config place, mutated.

Input `i` of seed `s` is a pure function of (s, i): the harness regenerates any input from its
index, so a worker that dies needs to report nothing but where it was, and an example saved to the
folder is exactly what ran. Each input starts from a seed document (a built-in sample, a docs
example, a compact valve file, a Parquet file with typed columns) and takes a few mutations:

* cells replaced by values chosen to break a rule (numbers beyond a long, non-ASCII digits, ISO
  times past year 9999, `1e999`, deep nesting, forged payload tags, text that is not UTF-8),
* columns renamed (internal names such as `row`, `config`, duplicates, empty names),
* rows duplicated, dropped or reordered,
* the config changed field by field (huge channel counts, windows with millions of panes per
  record, deep or malformed JSON), placed in a `--config` file, a leading JSON Lines line or the
  Parquet `wmviz.config` metadata,
* Parquet columns given types a trace never has (timestamps beyond year 9999, durations,
  decimals, binary, unsigned, nested, invalid UTF-8),
* finally, sometimes, raw bytes flipped, inserted or cut.
"""

from __future__ import annotations

import copy
import csv
import functools
import io
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wmviz.trace.columns import STANDARD_COLUMNS

REPO = Path(__file__).resolve().parent.parent
FORMATS = ("csv", "jsonl", "compact", "parquet")
_STANDARD = STANDARD_COLUMNS


@dataclass(frozen=True)
class Raw:
    """JSON text written verbatim (what `json.dumps` cannot produce: `1e999`, 5,000 digits, deep nests,
    a lone surrogate escape)."""

    text: str


@dataclass
class Doc:
    """A trace before rendering: ordered rows of cells, the column order, the config."""

    fmt: str
    rows: list[dict[str, Any]]
    columns: list[str]
    config: Any = None  # a dict, a Raw, or None
    config_file: bool = False  # the config goes into a separate --config file
    typed: dict[str, Any] = field(default_factory=dict)  # Parquet: column -> pyarrow array maker
    bad_name: str | None = None  # Parquet: a column whose name's bytes are made invalid UTF-8


@dataclass(frozen=True)
class FuzzInput:
    """One input: the trace's bytes and file name, the --config file's bytes (or None)."""

    index: int
    fmt: str
    name: str
    data: bytes
    config: bytes | None
    mutations: tuple[str, ...]

    def files(self) -> dict[str, bytes]:
        """The trace file and its --config file, by name (what an example saves)."""
        out = {"input" + Path(self.name).suffix: self.data}
        if self.config is not None:
            out["config.json"] = self.config
        return out

    def note(self) -> str:
        """How the input was made."""
        return f"format: {self.fmt}\nmutations: {'; '.join(self.mutations)}"


# ---- values chosen to break rules --------------------------------------------------------------

TEXT_VALUES: list[Any] = [
    "", " ", "0", "-0", "+5", "1", "-1", "007", "3", "12", "1.5", "1.0", "1e3", " 5 ", "\t7",
    "9223372036854775807", "9223372036854775808", "-9223372036854775808", "-9223372036854775809",
    "1" * 25, "9" * 5000, "٣", "𝟙", "²", "\u00a05", "5\u00a0", "1e999", "NaN", "nan", "inf",
    "-inf", "+inf", "Infinity", "MAX", "MIN", "max", "min", "2026-11-24T10:05:15Z",
    "2026-11-24T10:05:15.0001Z", "2026-11-24T10:05:15.123456789Z", "9999-12-31T23:59:59.999Z",
    "10000-01-01T00:00:00Z", "0001-01-01T00:00:00Z", "-0001-01-01", "2026-13-45", "2026-11-24",
    "12:00", "record", "watermark", "status", "proctime", "RECORD", " kind ", "IDLE", "ACTIVE",
    "FINISHED", "idle", "L", "R", "l", "2", "x" * 3000, '"', ",", "\n", "\r", "\r\n", "a\x00b",
    "=cmd|' /C calc'!A0", "<script>alert(1)</script>", "[text](https://example.com)",
    "config", "row", "__wmviz_type__", "true", "null", "[]", "{}",
]  # fmt: skip
JSON_VALUES: list[Any] = [
    0, -1, 1, 2, 7, 2**31 - 1, 2**31, 2**53 + 1, 2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64,
    10**30, 0.5, 1.0, -0.0, 1e300, 1e-300, 3.0e15, True, False, None, [], {}, [1, [2, [3]]],
    {"a": {"b": 1}}, Raw("1e999"), Raw("-1e999"), Raw("1" * 5000), Raw("1" * 401), Raw("1" * 399),
    Raw('"\\ud800"'), Raw('"\\udfff x"'), Raw("[" * 1000 + "]" * 1000), Raw('{"a":' * 70 + "1" + "}" * 70),
    Raw("[" * 63 + "]" * 63), {"__wmviz_type__": "bytes", "v": "AAEC"},
    {"__wmviz_type__": "nope", "v": 1}, {"__wmviz_type__": "object", "v": [["a", 1]]},
    {"__wmviz_type__": "timedelta", "v": [10**12, 0, 0]}, {"__wmviz_type__": "float", "v": "nan"},
    {"__wmviz_type__": "decimal", "v": "1e999999"}, {"__wmviz_type__": "datetime", "v": "junk"},
    {"__wmviz_type__": "bytes"}, {"__wmviz_type__": 5, "v": [1, 2]},
]  # fmt: skip
NAMES: list[str] = [
    "row", "order", "valid", "seq_bad", "payload_json", "value_json", "config", " note", "note ",
    "", "kind", "seq", "__wmviz_type__", "é", "a,b", 'q"', "line\nbreak", "x" * 300, "channels",
    "ch", "wm", "partition", "v", "0", "\ud800",
]  # fmt: skip
CONFIG_FIELDS: list[tuple[tuple[str, ...], list[Any]]] = [
    (("channels",), [{"0": 2147483647}, {"0": 32768}, {"0": 32769}, {"0": 0}, {"L": 1, "R": 2},
                     {"0": 2, "1": 3}, {"0": "2"}, {"0": 1.0}, 5, [], {"x": 1}, {"0": 10**40}]),
    (("operator",), [{"type": "window", "size_ms": 86_400_000, "slide_ms": 1},
                     {"type": "window", "size_ms": 10_000_000, "slide_ms": 1},
                     {"type": "window", "size_ms": 2_000_000, "slide_ms": 1},
                     {"type": "window", "size_ms": 1_000, "slide_ms": 1},
                     {"type": "window", "size_ms": 1_001, "slide_ms": 1},
                     {"type": "window", "size_ms": 10_000, "slide_ms": 1},
                     {"type": "window", "size_ms": 3_600_000, "slide_ms": 60_000, "aggregate": "count"},
                     {"type": "window", "size_ms": 2**63 - 1, "slide_ms": 10**12},
                     {"type": "window", "size_ms": 2**63 - 1},
                     {"type": "window", "size_ms": 10, "allowed_lateness_ms": 2**63 - 1},
                     {"type": "window", "size_ms": 1000, "aggregate": "sum"},
                     {"type": "window", "size_ms": 1000, "aggregate": "list", "slide_ms": 7},
                     {"type": "interval_join", "lower_ms": -(2**63), "upper_ms": 2**63 - 1},
                     {"type": "interval_join", "lower_ms": 5, "upper_ms": -5},
                     {"type": "interval_join", "join": "full", "lower_ms": -10, "upper_ms": 10,
                      "early_fire_delay_ms": 2**62, "time_mode": "proctime"},
                     {"type": "interval_join", "lower_ms": 0, "upper_ms": 0, "join_time": "proctime"},
                     {"type": "window"}, {"type": "nope"}, {"type": None}, "window"]),
    (("generator",), [{"out_of_orderness_ms": 2**63 - 1}, {"emit": "periodic", "interval_ms": 1},
                      {"emit": "periodic", "interval_ms": 1, "idle_timeout_ms": 1},
                      {"idle_timeout_ms": 0}, {"resume": "flip27-released", "idle_timeout_ms": 3},
                      {"out_of_orderness_ms": -5}, {"emit": "sometimes"}, None, 7]),
    (("profile",), ["flink-master", "flip-38477", "FLINK-1.X-2.X", "nope", 3]),
    (("name",), ["x" * 10000, "<b>hi</b>", 5, Raw('"\\ud800"')]),
    (("description",), ["y" * 200_000, "## What users saw\n![t](http://example.com/x.png)", []]),
    (("unknown_key",), [1]),
]  # fmt: skip


# ---- seeds --------------------------------------------------------------------------------------


def _json_rows(path: Path) -> tuple[list[dict[str, Any]], Any]:
    rows, config = [], None
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        obj = json.loads(line)
        if "config" in obj and len(obj) == 1:
            config = obj["config"]
        else:
            rows.append(obj)
    return rows, config


def _columns(rows: list[dict[str, Any]]) -> list[str]:
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row))
    return list(seen)


@functools.cache
def seed_docs() -> list[Doc]:
    """The documents every input starts from: the built-in samples in each format they fit, a
    compact valve file, and typed Parquet traces."""
    docs: list[Doc] = []
    samples = sorted((REPO / "sample_data").glob("*.jsonl"))
    for path in sorted((REPO / "sample_data").glob("*.csv")):
        with path.open(newline="") as f:
            rows = [{k: v for k, v in r.items() if v != ""} for r in csv.DictReader(f)]
        config_path = path.with_suffix(".json")
        config = json.loads(config_path.read_text()) if config_path.exists() else None
        columns = list(rows[0]) if rows else []
        columns = _columns(rows) or columns
        for fmt in ("csv", "jsonl", "parquet"):
            docs.append(Doc(fmt, rows, columns, config, config_file=True))
    for path in samples:
        rows, config = _json_rows(path)
        for fmt in ("jsonl", "csv", "parquet"):
            docs.append(Doc(fmt, rows, _columns(rows), config, config_file=fmt == "csv"))
    compact = [
        {"channels": 3}, {"ch": 0, "wm": 100}, {"ch": 1, "wm": 50}, {"ch": 2, "wm": 70},
        {"ch": 1, "status": "IDLE"}, {"ch": 2, "wm": "MAX"}, {"channels": 2}, {"ch": 0, "wm": 5},
        {"ch": 1, "wm": 7}, {"ch": 0, "status": "FINISHED"},
    ]  # fmt: skip
    docs.append(Doc("compact", compact, ["channels", "ch", "wm", "status"]))
    docs.append(Doc("compact", compact[:6], ["channels", "ch", "wm", "status"], {"channels": {"0": 3}}))
    timed = [
        {"instance": "0", "channel": 0, "kind": "watermark", "watermark_ms": 1795514715000},
        {"instance": "0", "channel": 1, "kind": "watermark", "watermark_ms": 1795514714000},
        {"instance": "1", "channel": 0, "kind": "record", "event_ms": 1795514716000, "key": "k",
         "value": 3, "note": "n"},
        {"instance": "0", "channel": 1, "kind": "status", "status": "IDLE"},
    ]  # fmt: skip
    docs.append(
        Doc("parquet", timed, _columns(timed), {"channels": {"0": 2}}, typed={"watermark_ms": "ts_ms"})
    )
    return docs


# ---- mutations ----------------------------------------------------------------------------------


def _pick_value(rng: random.Random, fmt: str) -> Any:
    if fmt == "csv" or rng.random() < 0.45:
        return rng.choice(TEXT_VALUES)
    return rng.choice(JSON_VALUES)


def _mutate_cell(rng: random.Random, doc: Doc) -> str:
    if not doc.rows:
        return "cell: no rows"
    row = rng.choice(doc.rows)
    column = rng.choice(doc.columns + list(_STANDARD)) if rng.random() < 0.8 else rng.choice(NAMES)
    value = _pick_value(rng, doc.fmt)
    row[column] = value
    if column not in doc.columns:
        doc.columns.append(column)
    return f"cell {column}={_short(value)}"


def _mutate_column_name(rng: random.Random, doc: Doc) -> str:
    if not doc.columns:
        return "rename: no columns"
    old = rng.choice(doc.columns)
    new = rng.choice(NAMES)
    for row in doc.rows:
        if old in row:
            row[new] = row.pop(old)
    doc.columns = [new if c == old else c for c in doc.columns]
    if doc.fmt == "parquet" and rng.random() < 0.3:
        doc.bad_name = new
    return f"rename {old!r}->{new!r}"


def _mutate_rows(rng: random.Random, doc: Doc) -> str:
    if not doc.rows:
        return "rows: none"
    what = rng.choice(("duplicate", "drop", "shuffle", "repeat", "keys", "empty"))
    i = rng.randrange(len(doc.rows))
    if what == "duplicate":
        doc.rows.insert(i, copy.deepcopy(doc.rows[i]))
    elif what == "drop":
        del doc.rows[i]
    elif what == "shuffle":
        rng.shuffle(doc.rows)
    elif what == "repeat":
        doc.rows.extend(copy.deepcopy(doc.rows) * rng.randint(1, 20))
    elif what == "keys":  # every row its own key: as many panes as rows
        for n, row in enumerate(doc.rows):
            row["key"] = f"k{n}"
    else:
        doc.rows.insert(i, {})
    return f"rows {what}"


def _mutate_config(rng: random.Random, doc: Doc) -> str:
    roll = rng.random()
    if roll < 0.1:
        doc.config = rng.choice(
            [Raw('{"a":' * 5000 + "1" + "}" * 5000), Raw("[1, 2"), Raw('{"name": 1e999}'), Raw("7"),
             Raw('{"channels": {"0": ' + "9" * 5000 + "}}"), Raw('{"name": "a", "name": "b"}'), [], None]
        )  # fmt: skip
        return f"config {_short(doc.config)}"
    config = doc.config if isinstance(doc.config, dict) else {}
    path, values = rng.choice(CONFIG_FIELDS)
    value = copy.deepcopy(rng.choice(values))
    if isinstance(value, dict) and isinstance(config.get(path[0]), dict) and rng.random() < 0.5:
        merged = dict(config[path[0]])
        merged.update(value)
        value = merged
    config = dict(config)
    config[path[0]] = value
    doc.config = config
    if rng.random() < 0.2:
        doc.config_file = not doc.config_file
    return f"config {path[0]}={_short(value)}"


_TYPED = ("ts_ms", "ts_us", "ts_ns", "ts_s", "ts_tz", "ts_huge", "duration", "date", "time",
          "decimal", "binary", "bad_utf8", "large_string", "uint64", "int8", "float", "bool",
          "list", "struct", "dictionary", "null", "map")  # fmt: skip


def _mutate_parquet_type(rng: random.Random, doc: Doc) -> str:
    column = rng.choice([*doc.columns, "event_ms", "watermark_ms", "proc_ms", "value", "note"])
    if column not in doc.columns:
        doc.columns.append(column)
    doc.typed[column] = rng.choice(_TYPED)
    return f"typed {column}:{doc.typed[column]}"


_EXTREME: dict[str, list[Any]] = {
    "event_ms": [-(2**63) + 1, -(2**62), -1, 0, 1, 2**62, 2**63 - 2, 2**63 - 1, "9999-12-31T23:59:59.999Z"],
    "watermark_ms": ["MIN", "MAX", -(2**63) + 1, -1, 0, 2**62, 2**63 - 2, "0001-01-01T00:00:00Z"],
    "proc_ms": [0, 1, 2**40, 2**62, 2**63 - 1, -(2**63)],
    "channel": [0, 1, 3, 255, 32767],
    "key": ["", "k", "é", "a" * 200, "0"],
    "value": [2**63 - 1, -(2**63), 1e308, -0.0, "x", 0],
    "seq": [0, -5, 2**63 - 1, 1, 2],
    "instance": ["0", "1", "²", "٣", "10", "a b"],
    "input": ["0", "1", "L", "R"],
    "kind": ["record", "watermark", "status", "proctime"],
    "status": ["ACTIVE", "IDLE", "FINISHED"],
}


def _mutate_valid_extreme(rng: random.Random, doc: Doc) -> str:
    """A cell set to a value its column accepts, at an edge (MIN/MAX, year 9999, a far channel)."""
    if not doc.rows:
        return "extreme: no rows"
    row = rng.choice(doc.rows)
    column = rng.choice(list(_EXTREME))
    if doc.fmt == "compact":
        column = rng.choice(["ch", "wm"])
        row[column] = rng.choice(_EXTREME["channel" if column == "ch" else "watermark_ms"])
        return f"extreme {column}={row[column]!r}"
    row[column] = rng.choice(_EXTREME[column])
    if column not in doc.columns:
        doc.columns.append(column)
    return f"extreme {column}={_short(row[column])}"


MUTATORS = (
    (_mutate_cell, 5),
    (_mutate_valid_extreme, 4),
    (_mutate_column_name, 1),
    (_mutate_rows, 1),
    (_mutate_config, 2),
)


# ---- rendering ---------------------------------------------------------------------------------


def dump_json(value: Any) -> str:
    """JSON text of `value`, `Raw` pieces verbatim."""
    if isinstance(value, Raw):
        return value.text
    if isinstance(value, dict):
        return "{" + ", ".join(f"{json.dumps(str(k))}: {dump_json(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(dump_json(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def _cell_text(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    return dump_json(value)


def _render_csv(doc: Doc) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(doc.columns)
    for row in doc.rows:
        writer.writerow([_cell_text(row.get(c)) for c in doc.columns])
    return out.getvalue().encode("utf-8", errors="surrogatepass")


def _render_jsonl(doc: Doc, with_config: bool) -> bytes:
    lines = []
    if with_config and doc.config is not None:
        lines.append('{"config": ' + dump_json(doc.config) + "}")
    lines.extend(dump_json(row) for row in doc.rows)
    return ("\n".join(lines) + "\n").encode("utf-8", errors="surrogatepass")


def _typed_array(kind: str, n: int, rng: random.Random) -> Any:
    import decimal

    import pyarrow as pa

    def pick(values: list[Any]) -> list[Any]:
        return [rng.choice(values) for _ in range(n)]

    big = [None, 0, 1_795_514_715_000, 2**62, -(2**62), 2**63 - 1, -(2**63)]
    plain = {  # kind -> (the values drawn from, the Arrow type)
        "decimal": ([None, decimal.Decimal("1.5"), decimal.Decimal("9" * 37 + ".5")], pa.decimal128(38, 1)),
        "binary": ([None, b"", b"\xff\xfe", b"abc"], pa.binary()),
        "large_string": (["1", "x", None, "٣"], pa.large_string()),
        "uint64": ([None, 0, 2**63 - 1, 2**63, 2**64 - 1], pa.uint64()),
        "int8": ([None, -128, 0, 127], pa.int8()),
        "float": ([None, 0.5, float("nan"), float("inf"), -float("inf"), 1e300, 3.0, 2.0**60], pa.float64()),
        "bool": ([None, True, False], pa.bool_()),
        "list": ([None, [1, 2], []], pa.list_(pa.int64())),
        "struct": ([None, {"a": 1}], pa.struct([("a", pa.int64())])),
        "map": ([None, [("k", 1)]], pa.map_(pa.string(), pa.int64())),
    }
    if kind in plain:
        values, arrow_type = plain[kind]
        return pa.array(pick(values), arrow_type)
    if kind.startswith("ts_"):
        unit = {"ts_ms": "ms", "ts_us": "us", "ts_ns": "ns", "ts_s": "s", "ts_tz": "ms", "ts_huge": "ms"}[
            kind
        ]
        tz = "Europe/Berlin" if kind == "ts_tz" else rng.choice([None, "UTC"])
        values = pick(
            big if kind == "ts_huge" else [None, 0, 1_795_514_715_000, 1_795_514_715_001, 253_402_300_800_000]
        )
        return pa.array(values, pa.int64()).cast(pa.timestamp(unit, tz))
    if kind == "duration":
        return pa.array(pick(big), pa.int64()).cast(pa.duration(rng.choice(["s", "ms", "us", "ns"])))
    if kind == "date":
        return pa.array(pick([None, 0, 2**31 - 1, -(2**31)]), pa.int32()).cast(pa.date32())
    if kind == "time":
        return pa.array(pick([None, 0, 86_399_999]), pa.int32()).cast(pa.time32("ms"))
    if kind == "bad_utf8":
        binary = pa.array(pick([b"ok", b"\xff", b"\xed\xa0\x80", None]), pa.binary())
        return pa.Array.from_buffers(pa.string(), n, binary.buffers())
    if kind == "dictionary":
        return pa.array(pick(["record", "watermark", "0", None]), pa.string()).dictionary_encode()
    return pa.nulls(n)


def _python_array(values: list[Any], text: bool) -> Any:
    """A column of Python values as pyarrow infers it (as text when `text`, or when it cannot)."""
    import pyarrow as pa

    plain = [v.text if isinstance(v, Raw) else v for v in values]
    if not text:
        try:
            return pa.array(plain)
        except (pa.ArrowException, OverflowError, TypeError, ValueError):
            pass
    return pa.array([None if v is None else _cell_text(v) for v in plain], pa.string())


def _render_parquet(doc: Doc, rng: random.Random, with_config: bool) -> bytes:
    import pyarrow as pa

    try:
        return _parquet_bytes(doc, rng, with_config, text=False)
    except pa.ArrowException:  # a type Parquet cannot store (an empty struct): every column as text
        doc.typed.clear()
        return _parquet_bytes(doc, rng, with_config, text=True)


def _parquet_bytes(doc: Doc, rng: random.Random, with_config: bool, text: bool) -> bytes:
    import pyarrow as pa
    import pyarrow.parquet as pq

    names = list(dict.fromkeys(doc.columns))
    n = len(doc.rows)
    arrays = []
    for name in names:
        if name in doc.typed:
            arrays.append(_typed_array(doc.typed[name], n, rng))
        else:
            arrays.append(_python_array([row.get(name) for row in doc.rows], text))
    placeholder = {}
    fields = []
    for i, name in enumerate(names):
        safe = name.encode("utf-8", errors="surrogatepass").decode("utf-8", errors="replace")
        if name == doc.bad_name and len(name.encode("utf-8", "replace")) >= 2:
            safe = f"zq{i:03d}" + "q" * max(0, len(name.encode("utf-8", "replace")) - 5)
            placeholder[safe] = name
        fields.append(pa.field(safe, arrays[i].type))
    metadata = None
    if with_config and doc.config is not None:
        stored = dump_json(doc.config).encode("utf-8", errors="surrogatepass")
        if rng.random() < 0.1:
            stored = _mutate_bytes(rng, stored)[0]
        metadata = {b"wmviz.config": stored}
    table = pa.Table.from_arrays(arrays, schema=pa.schema(fields, metadata=metadata))
    buffer = io.BytesIO()
    pq.write_table(table, buffer, row_group_size=rng.choice([2, 1000]))
    data = buffer.getvalue()
    for safe in placeholder:
        bad = b"\xff" + safe.encode()[1:]  # same length, not UTF-8
        data = data.replace(safe.encode(), bad)
    return data


def _mutate_bytes(rng: random.Random, data: bytes) -> tuple[bytes, str]:
    if not data:
        return data, "bytes: empty"
    buf = bytearray(data)
    what = rng.choice(("flip", "insert", "cut", "truncate", "splice", "zero"))
    i = rng.randrange(len(buf))
    if what == "flip":
        for _ in range(rng.randint(1, 8)):
            buf[rng.randrange(len(buf))] = rng.randrange(256)
    elif what == "insert":
        buf[i:i] = rng.choice([b"\xff", b"\x00", b'"', b"\r", b"\n", b"{", b"[" * 100, b",", b"\xe2\x80"])
    elif what == "cut":
        del buf[i : i + rng.randint(1, 64)]
    elif what == "truncate":
        del buf[i:]
    elif what == "splice":
        j = rng.randrange(len(buf))
        buf[i:i] = buf[j : j + rng.randint(1, 200)]
    else:
        buf[i : i + rng.randint(1, 64)] = bytes(min(64, len(buf) - i))
    return bytes(buf), f"bytes {what}@{i}"


def make_input(seed: int, index: int, docs: list[Doc] | None = None) -> FuzzInput:
    """Input `index` of the run seeded `seed` (a pure function of the two)."""
    rng = random.Random(f"wmviz-fuzz:{seed}:{index}")
    docs = docs if docs is not None else seed_docs()
    doc = copy.deepcopy(rng.choice(docs))
    mutations: list[str] = []
    total = sum(weight for _, weight in MUTATORS)
    for _ in range(rng.choice((0, 1, 1, 2, 3, 5))):
        roll = rng.uniform(0, total)
        for mutate, weight in MUTATORS:
            roll -= weight
            if roll <= 0:
                mutations.append(mutate(rng, doc))
                break
    if doc.fmt == "parquet" and rng.random() < 0.5:
        mutations.append(_mutate_parquet_type(rng, doc))
    config_bytes = None
    embedded = not doc.config_file
    if doc.config_file and doc.config is not None:
        config_bytes = dump_json(doc.config).encode("utf-8", errors="surrogatepass")
    if doc.fmt == "csv":
        data = _render_csv(doc)
    elif doc.fmt == "parquet":
        data = _render_parquet(doc, rng, embedded)
    else:
        data = _render_jsonl(doc, embedded)
    if rng.random() < 0.25:
        data, what = _mutate_bytes(rng, data)
        mutations.append(what)
    if config_bytes is not None and rng.random() < 0.1:
        config_bytes, what = _mutate_bytes(rng, config_bytes)
        mutations.append(f"config {what}")
    ext = {"csv": ".csv", "jsonl": ".jsonl", "compact": ".jsonl", "parquet": ".parquet"}[doc.fmt]
    return FuzzInput(index, doc.fmt, f"fuzz{index}{ext}", data, config_bytes, tuple(mutations))


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:59] + "…"
