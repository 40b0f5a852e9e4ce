"""The Spark reader's fast path: native expressions that accept a row only if the pure validator would.

Every standard cell is described by a `Raw`: which Python type the pure reader would hand the
validator (static for CSV, always `str`, and Parquet, the column's type; per row for JSON) and its
text or number. `row_model` turns a row's cells into its typed columns plus one boolean, `_fast`: the
row is certainly valid exactly as `TraceBuilder.add_row` would accept it, with these very values.
Every test is conservative: a value it cannot decide (a time with surrounding tabs, `+007`, a float
written `1e3`, a status spelled `iDLE`…) makes the row slow, never wrong; slow rows are re-validated by
the pure code on the executors (`wmviz.spark.pyrows`).

Performance notes, measured on 2 cores:

* Expressions are Spark SQL text, one `F.expr` per column: the Column API costs a py4j round trip
  per node, seconds per file.
* Under ANSI mode `TRY_CAST('x' AS BIGINT)` parses with an exception, ~3 µs a cell; numbers are only
  cast after cheap character checks, and regexes only run after cheap shape checks.
* Staged columns are computed for every row, so only what many expressions share is staged.

`value_json` and `payload_json` are byte for byte what `json.dumps` writes, including its `\\uXXXX`
escapes; Python's float formatting (`repr`) is not reproducible natively, so floats read from Parquet
are formatted by a vectorized Python UDF (only run when those columns are used).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace

import pandas as pd
from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from wmviz.core.scenario import Kind, ScenarioConfig
from wmviz.core.types import MAX_MS, MIN_MS, Status
from wmviz.trace.config import MAX_CHANNELS
from wmviz.trace.validate import STANDARD_COLUMNS

ALWAYS = ("seq", "instance", "input", "kind")
MEANINGFUL = {
    Kind.RECORD.value: ("channel", "event_ms", "proc_ms", "key", "value"),
    Kind.WATERMARK.value: ("channel", "watermark_ms", "proc_ms"),
    Kind.STATUS.value: ("channel", "status", "proc_ms"),
    Kind.PROCTIME.value: ("proc_ms",),
}
TIME_COLUMNS = ("event_ms", "watermark_ms", "proc_ms")
NULL_STRING, NULL_LONG, NULL_INT = "CAST(NULL AS STRING)", "CAST(NULL AS BIGINT)", "CAST(NULL AS INT)"


def _spellings(names: list[str]) -> dict[str, str]:
    """The exact spellings the fast path reads as `names` (lower, UPPER, Capitalized); others go slow."""
    return {spelled: name for name in names for spelled in (name.lower(), name.upper(), name.capitalize())}


KIND_SPELLINGS = _spellings([k.value for k in Kind])
KIND_CODES = {k.value: i + 1 for i, k in enumerate(Kind)}
STATUS_SPELLINGS = _spellings([s.value for s in Status])
# `_parse_text` lower-cases, then looks the word up; these spellings lower-case to those words.
SENTINELS = {
    **{s: MIN_MS for s in ("MIN", "min", "Min", "-inf", "-INF", "-Inf")},
    **{s: MAX_MS for s in ("MAX", "max", "Max", "inf", "INF", "Inf", "+inf", "+INF", "+Inf")},
}
# A fixed-layout ISO-8601 time: the one form the fast path converts (Python accepts many more).
_ISO = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,3})?(Z|[+-][0-9]{2}:[0-9]{2})?$"
# `text_value` returns a number only for cells made of these characters (Python's \d is Unicode's Nd;
# Java 17 lacks the Tangsa digits of Unicode 14, hence the explicit range).
_NOT_NUMBER_CHAR = r"[^0-9.e+\-\p{Nd}\x{16AC0}-\x{16AC9}]"
# A decimal fraction with no superfluous zero: what `repr(float)` writes for 1e-4 <= |x| < 1e16.
_REPR_DECIMAL = r"^-?(0|[1-9][0-9]*)\.([0-9]*[1-9]|0)$"
_TINY_DECIMAL = r"^-?0\.0000"  # repr switches to exponent notation below 1e-4
_FRACTION = r"\.([0-9]{1,3})"
CONTROL = r"[\x00-\x08\x0e-\x1b]"  # trimmed by Spark's string-to-number cast, kept by Python's strip
# Characters `json.dumps` writes escaped: quote, backslash, controls and DEL (non-ASCII is checked apart).
_JSON_SPECIAL = '"\\' + "".join(chr(c) for c in range(32)) + "\x7f"
_JSON_ESCAPES = {
    "0009": "\\t",
    "0022": '\\"',
    "005C": "\\\\",
    "0008": "\\b",
    "000C": "\\f",
    "000A": "\\n",
    "000D": "\\r",
}


def q(text: str) -> str:
    """A Spark SQL string literal holding exactly `text` (non-printable and non-ASCII as \\u escapes)."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in "'\\":
            out.append("\\" + ch)
        elif 0x20 <= code < 0x7F:
            out.append(ch)
        elif code > 0xFFFF:
            code -= 0x10000
            out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
        else:
            out.append(f"\\u{code:04x}")
    return "'" + "".join(out) + "'"


def c(name: str) -> str:
    """A column reference."""
    return "`" + name.replace("`", "``") + "`"


def long_literal(value: object) -> str:
    """A BIGINT literal (Long.MIN_VALUE has none: its digits alone overflow)."""
    return f"({MIN_MS + 1}L - 1L)" if value == MIN_MS else f"{value}L"


def case(value: str, mapping: Mapping[str, object], default: str = "NULL") -> str:
    """`mapping[value]` for exact keys (a CASE, not a map: a map lookup fails on a missing key in ANSI)."""
    if not mapping:
        return default
    arms = " ".join(
        f"WHEN {q(k)} THEN {q(v) if isinstance(v, str) else long_literal(v)}" for k, v in mapping.items()
    )
    return f"(CASE {value} {arms} ELSE {default} END)"


@dataclass(frozen=True)
class Raw:
    """One cell as the pure reader would pass it to the validator, as Spark SQL expressions.

    `type` is the Python type when present: `s` str, `i` int, `f` float, `t` datetime (Parquet
    timestamps), `x` anything the fast path never accepts (bool, list, an unusual JSON float); `dyn`
    when it varies by row and `tag` (one of those letters) says. `text` is the string (`s`),
    `str(int)` (`i`) or `json.dumps(float)` (`f`); `lng` the value as a long where it is one exactly
    (`i` within range, `f` integral with |v| <= 2**53, `t` whole milliseconds); `inf` is +1/-1 for an
    infinite float. `clean` says the text has none of the control characters \\x00-\\x08 and
    \\x0e-\\x1b (Spark's cast trims them, Python's `strip` does not).
    """

    present: str
    type: str
    text: str = NULL_STRING
    lng: str = NULL_LONG
    inf: str = NULL_INT
    tag: str = NULL_STRING
    clean: bool = True


ABSENT = Raw("FALSE", "x")


def by_type(raw: Raw, arms: Mapping[str, str]) -> str:
    """The arm for the cell's Python type (null for other types)."""
    if raw.type != "dyn":
        return arms.get(raw.type, "NULL")
    whens = " ".join(f"WHEN {q(t)} THEN {sql}" for t, sql in arms.items())
    return f"(CASE {raw.tag} {whens} END)" if arms else "NULL"


def canonical_long(s: str) -> str:
    """The long an integer text holds, as the pure validator reads it (surrounding whitespace
    stripped), else null; only for text free of the control characters Spark's cast would trim but
    Python's `strip` keeps (`Raw.clean`).

    Only byte comparisons before the cast: `left()`/`right()` count characters, and a failed ANSI cast
    costs an exception (microseconds). A string starts with 1-9 exactly when '1' <= s < ':' (':'
    follows '9'); a leading `+`, `0` or space goes the slow way.
    """
    lead = f"(({s} >= '1' AND {s} < ':') OR ({s} >= '-1' AND {s} < '-:'))"
    shaped = f"{lead} AND octet_length({s}) <= 19 AND NOT contains({s}, ':') AND NOT contains({s}, '.')"
    return f"(CASE WHEN {s} = '0' THEN 0L WHEN {shaped} THEN TRY_CAST({s} AS BIGINT) END)"


def is_ascii(s: str) -> str:
    return f"(length({s}) = octet_length({s}))"


def json_string(s: str) -> str:
    """`json.dumps(s)` (ensure_ascii): plain ASCII natively and cheaply, anything else unit by unit."""
    plain = f"({is_ascii(s)} AND length(translate({s}, {q(_JSON_SPECIAL)}, '')) = length({s}))"
    arms = " ".join(f"WHEN _u = {q(u)} THEN {q(t)}" for u, t in _JSON_ESCAPES.items())
    escape = (
        f"CASE {arms} WHEN _u >= '0020' AND _u <= '007E' THEN char(CAST(conv(_u, 16, 10) AS BIGINT)) "
        f"ELSE concat({q(chr(92) + 'u')}, lower(_u)) END"
    )
    units = f"regexp_extract_all(hex(encode({s}, 'UTF-16BE')), '(.{{4}})', 1)"
    slow = f"""concat('"', array_join(transform({units}, _u -> {escape}), ''), '"')"""
    return f"""(CASE WHEN {plain} THEN concat('"', {s}, '"') ELSE {slow} END)"""


def repr_decimal(s: str) -> str:
    """Whether `s` is exactly `repr(float(s))`, proven without computing repr.

    A decimal with at most 15 significant digits is the only such decimal naming its double, so the
    shortest repr has those digits; repr writes it this way when 1e-4 <= |x| < 1e16.
    """
    digits = f"regexp_replace(regexp_replace({s}, '[-.]', ''), '^0+', '')"
    return (
        f"(contains({s}, '.') AND {s} RLIKE {q(_REPR_DECIMAL)} AND length({digits}) <= 15 "
        f"AND NOT ({s} RLIKE {q(_TINY_DECIMAL)}))"
    )


def iso_text(raw: Raw) -> str:
    """The cell's text if it has the fast ISO layout (staged on its own, as `iso_ms` reads it a lot)."""
    s = raw.text
    shaped = f"octet_length({s}) >= 19 AND contains({s}, 'T') AND {s} RLIKE {q(_ISO)}"
    return by_type(raw, {"s": f"(CASE WHEN {shaped} THEN {s} END)"})


def iso_ms(x: str) -> str:
    """Epoch ms of a staged `iso_text` column `x` (`2026-11-21T10:00:00.250+01:00`), null if invalid.

    `x` has the fixed layout, so every part is digits at a known place; `try_make_timestamp` checks the
    date and time (proleptic Gregorian, as Python's) and the zone offset is applied by hand.
    """

    def num(start: int, length: int) -> str:
        return f"CAST(substring({x}, {start}, {length}) AS INT)"

    tail = f"right({x}, 6)"
    zoned = f"left({tail}, 1) IN ('+', '-')"
    zone_minutes = f"(CAST(substring({tail}, 2, 2) AS INT) * 60 + CAST(substring({tail}, 5, 2) AS INT))"
    offset = f"(CASE WHEN left({tail}, 1) = '+' THEN {zone_minutes} WHEN left({tail}, 1) = '-' THEN -{zone_minutes} ELSE 0 END)"
    digits = f"regexp_extract({x}, {q(_FRACTION)}, 1)"
    local = (
        f"try_make_timestamp({num(1, 4)}, {num(6, 2)}, {num(9, 2)}, {num(12, 2)}, {num(15, 2)}, "
        f"{num(18, 2)}, 'UTC')"
    )
    ms = f"(unix_millis({local}) + CAST(rpad({digits}, 3, '0') AS BIGINT) - CAST({offset} AS BIGINT) * 60000)"
    # Python accepts offsets below 24 hours and no year 0.
    valid = (
        f"left({x}, 4) <> '0000' "
        f"AND (NOT {zoned} OR (substring({tail}, 2, 2) <= '23' AND substring({tail}, 5, 2) <= '59'))"
    )
    return f"(CASE WHEN {x} IS NOT NULL AND {valid} THEN {ms} END)"


# --- typed readings of one cell: each is null where the fast path cannot vouch for the value ---------


def _text_long(raw: Raw) -> str:
    parsed = canonical_long(raw.text)
    return parsed if raw.clean else f"(CASE WHEN NOT {raw.text} RLIKE {q(CONTROL)} THEN {parsed} END)"


def integer(raw: Raw) -> str:
    """`RowCells.integer` (without its range checks)."""
    return by_type(raw, {"i": raw.lng, "f": raw.lng, "s": _text_long(raw)})


def text(raw: Raw) -> str:
    """`RowCells.text`: a string, an int's digits, an integral float's digits."""
    return by_type(raw, {"s": raw.text, "i": raw.text, "f": f"CAST({raw.lng} AS STRING)"})


def time(raw: Raw, iso: str, sentinels: bool = False) -> str:
    """`RowCells.time`: epoch ms from an int, an integral float, a timestamp or a text time.

    `iso` is the cell's staged `iso_text` column.
    """
    words = ", ".join(q(w) for w in SENTINELS)
    sentinel = f"WHEN {raw.text} IN ({words}) THEN {case(raw.text, SENTINELS)} " if sentinels else ""
    # Integers first: they are the common case and the cheapest test.
    as_long = _text_long(raw)
    from_text = f"coalesce({as_long}, (CASE WHEN {iso} IS NOT NULL THEN {iso_ms(iso)} {sentinel}END))"
    from_float = raw.lng
    if sentinels:
        from_float = (
            f"(CASE {raw.inf} WHEN 1 THEN {long_literal(MAX_MS)} WHEN -1 THEN {long_literal(MIN_MS)} "
            f"ELSE {raw.lng} END)"
        )
    return by_type(raw, {"i": raw.lng, "t": raw.lng, "f": from_float, "s": from_text})


def enum(raw: Raw, spellings: Mapping[str, str]) -> str:
    """`RowCells.enum` for the exact spellings in `spellings` (a CASE of byte comparisons: an IN list
    of this size becomes a hash set, and `lower` goes through collation support, both slower)."""
    return by_type(raw, {"s": case(raw.text, spellings)})


@dataclass(frozen=True)
class Value:
    """The `value` cell: its JSON text, whether it is a string, and whether the fast path vouches for it."""

    json: str
    is_str: str
    ok: str


def value(raw: Raw, csv: bool) -> Value:
    """`TraceBuilder._value`; for CSV also `text_value`, which reads number-shaped text as a number.

    For CSV, `classify_csv_value` stages `_pvs` (certainly a string); the rest proves a number written
    canonically.
    """
    if csv:
        as_number = classify_csv_value(raw)["_pvn_expr"]
        json_text = f"(CASE WHEN _pvs THEN {json_string(raw.text)} WHEN {as_number} THEN {raw.text} END)"
        return Value(json_text, "_pvs", f"(_pvs OR {as_number})")
    json_text = by_type(raw, {"s": json_string(raw.text), "i": raw.text, "f": raw.text})
    return Value(
        json_text, by_type(raw, {"s": "TRUE"}), by_type(raw, {"s": "TRUE", "i": "TRUE", "f": "TRUE"})
    )


def classify_csv_value(raw: Raw) -> dict[str, str]:
    """The parts of a CSV `value` (see `value`): `_pvs` is staged, `_pvn_expr` reads it.

    A cell with any character but digits (Unicode's, as Python's `\\d`), `.`, `e`, `+` and `-` is
    text for certain; otherwise it is a number if written canonically. No whitespace can be left
    then, so the int test's tolerance of surrounding whitespace does not matter.
    """
    s = raw.text
    return {
        "_pvs": f"({s} RLIKE {q(_NOT_NUMBER_CHAR)})",
        "_pvn_expr": f"(NOT _pvs AND ({canonical_long(s)} IS NOT NULL OR {repr_decimal(s)}))",
    }


def payload_json(pieces: list[tuple[str, str, str]]) -> str:
    """`payload_json` from per-column (name, value text or null when absent, whether it is a string).

    One lambda escapes every string, so the expression stays small however many columns there are.
    """
    if not pieces:
        return "'[]'"
    items = ", ".join(
        f"named_struct('n', {q(json.dumps(name))}, 'v', {text}, 's', {is_str})"
        for name, text, is_str in pieces
    )
    piece = f"concat('[', p.n, ', ', CASE WHEN p.s THEN {json_string('p.v')} ELSE p.v END, ']')"
    kept = f"filter(array({items}), p -> p.v IS NOT NULL)"
    return f"concat('[', array_join(transform({kept}, p -> {piece}), ', '), ']')"


def float_json_udf():
    """A vectorized UDF: `json.dumps(float)` of a double column (null stays null)."""

    @F.pandas_udf("string")
    def float_json(values: pd.Series) -> pd.Series:
        return values.map(lambda v: None if pd.isna(v) else json.dumps(float(v)))

    return float_json


# --- the whole row -------------------------------------------------------------------------------


def _input(raw: Raw, op_type: str) -> str:
    """`TraceBuilder._input` (config valid): the canonical input name, null if not certainly valid."""
    name = text(raw)
    if op_type == "interval_join":
        return (
            f"(CASE WHEN NOT {raw.present} THEN 'L' WHEN {name} IN ('L', 'l', '0') THEN 'L' "
            f"WHEN {name} IN ('R', 'r', '1') THEN 'R' END)"
        )
    return f"(CASE WHEN NOT {raw.present} OR {name} = '0' THEN '0' END)"


def _required(config: ScenarioConfig) -> dict[str, list[str]]:
    """The cells each kind needs (`TraceBuilder._require_for_kind`)."""
    required = {
        Kind.RECORD.value: ["channel", "event_ms"],
        Kind.WATERMARK.value: ["channel", "watermark_ms"],
        Kind.STATUS.value: ["channel", "status"],
        Kind.PROCTIME.value: ["proc_ms"],
    }
    gen, op = config.generator, config.operator
    if gen is not None and gen.emit == "periodic":
        required[Kind.RECORD.value].append("proc_ms")  # periodic emission runs on the proc_ms clock
    if op.type == "interval_join":
        proc_join = op.join_time == "proctime"
        if proc_join or op.time_mode == "proctime":
            required[Kind.RECORD.value].append("proc_ms")  # the row's time or timer reads the clock
        if proc_join and gen is None:
            required[Kind.RECORD.value].remove("event_ms")
    return required


def _stage_dynamic(cells: Mapping[str, Raw]) -> tuple[dict[str, str], dict[str, Raw]]:
    """Per-row typed (JSON) cells are staged: their tag and text feed many expressions."""
    staged, raw = {}, {}
    for i, column in enumerate(STANDARD_COLUMNS):
        given = cells.get(column, ABSENT)
        if given.type == "dyn":
            names = {part: f"_r{i}{part}" for part in ("tag", "text", "lng")}
            staged.update({names["tag"]: given.tag, names["text"]: given.text, names["lng"]: given.lng})
            given = replace(
                given,
                tag=c(names["tag"]),
                text=c(names["text"]),
                lng=c(names["lng"]),
                present=f"({c(names['tag'])} IS NOT NULL)",
            )
        raw[column] = given
    return staged, raw


def row_model(
    df: DataFrame,
    cells: Mapping[str, Raw],
    config: ScenarioConfig,
    config_ok: bool,
    *,
    csv: bool,
    payload_ok: str = "TRUE",
    structure_ok: str = "TRUE",
    compact_limit: str | None = None,
    inline: Mapping[str, str] | None = None,
) -> DataFrame:
    """`df` plus each row's typed columns and `_fast`: whether `add_row` would certainly accept it
    unchanged.

    `cells` maps standard column names to their `Raw` (missing names are absent); `structure_ok` says
    the row was split into cells exactly as the pure reader would; `payload_ok` that every payload
    value has a native JSON text. `inline` defines cell columns (name → SQL) computed in the first
    projection rather than before it. The typed columns are only meaningful where `_fast` is true.

    Two projections: the first stages what several expressions read (per-row JSON types, the ISO
    candidate text, the CSV value's class); the second computes the typed columns and `_fast`
    together. In the second, every typed expression also appears as the first operand of its check
    and `_fast` is a `least` of all checks (no short circuit), so Spark's subexpression elimination
    evaluates each once; a projection per step would copy every row again.
    """
    staged, raw = _stage_dynamic(cells)
    staged.update({"_pstructure": structure_ok, "_ppayload": payload_ok})
    if compact_limit is not None:
        staged["_plimit"] = compact_limit
    for i, column in enumerate(STANDARD_COLUMNS):
        if column in TIME_COLUMNS and raw[column].type in ("s", "dyn"):
            staged[f"_iso{i}"] = iso_text(raw[column])
    if csv and "value" in cells:
        staged["_pvs"] = classify_csv_value(raw["value"])["_pvs"]
    for name, sql in (inline or {}).items():
        # Same-level columns cannot refer to each other: spell the cell out (Spark computes it once).
        staged = {k: v.replace(c(name), f"({sql})") for k, v in staged.items()}
    df = _with(df, {**(inline or {}), **staged})
    iso = {
        column: (c(f"_iso{i}") if f"_iso{i}" in staged else NULL_STRING)
        for i, column in enumerate(STANDARD_COLUMNS)
        if column in TIME_COLUMNS
    }
    val = value(raw["value"], csv) if "value" in cells else Value(NULL_STRING, "FALSE", "TRUE")
    if "value" in cells and raw["value"].type == "dyn":
        # A JSON float is accepted only written as `repr` writes it (elsewhere any float goes slow).
        val = replace(
            val, ok=f"({val.ok} AND ({raw['value'].tag} <> 'f' OR {repr_decimal(raw['value'].text)}))"
        )
    # The kind as a small code: the checks compare it many times, cheaper as ints than as strings.
    codes = {spelled: KIND_CODES[name] for spelled, name in KIND_SPELLINGS.items()}
    parsed = {
        "_pkind": by_type(raw["kind"], {"s": case(raw["kind"].text, codes)}),
        "seq": integer(raw["seq"]),
        "_pinstance": text(raw["instance"]),
        "channel": integer(raw["channel"]),
        "event_ms": time(raw["event_ms"], iso["event_ms"]),
        "watermark_ms": time(raw["watermark_ms"], iso["watermark_ms"], sentinels=True),
        "status": enum(raw["status"], STATUS_SPELLINGS),
        "proc_ms": time(raw["proc_ms"], iso["proc_ms"]),
        "key": text(raw["key"]),
        "value_json": val.json,
    }
    # An absent cell is null, whatever its text (a CSV cell's is "").
    source = {"_pinstance": "instance", "value_json": "value", "_pkind": "kind"}
    typed = {}
    for name, sql in parsed.items():
        column = source.get(name, name)
        typed[name] = f"(CASE WHEN {raw[column].present} THEN {sql} END)" if column in cells else "NULL"
    typed["input"] = _input(raw["input"], config.operator.type)

    def given(column: str) -> str:
        return raw[column].present

    def ok_or_absent(name: str, column: str) -> str:
        return f"({typed[name]} IS NOT NULL OR NOT {given(column)})"

    kind = typed.pop("_pkind")
    names = " ".join(f"WHEN {code} THEN {q(name)}" for name, code in KIND_CODES.items())
    typed["kind"] = f"(CASE {kind} {names} END)"

    def kind_in(names: list[str]) -> str:
        return f"{kind} IN ({', '.join(str(KIND_CODES[n]) for n in names)})"

    checks = [
        "_pstructure",
        "_ppayload",
        f"{kind} IS NOT NULL",
        ok_or_absent("seq", "seq"),
        f"(coalesce({typed['_pinstance']} <> '', FALSE) OR NOT {given('instance')})",
        f"{typed['input']} IS NOT NULL",
        f"(coalesce({typed['channel']} BETWEEN 0 AND {MAX_CHANNELS}, FALSE) OR NOT {given('channel')})",
        ok_or_absent("event_ms", "event_ms"),
        ok_or_absent("watermark_ms", "watermark_ms"),
        ok_or_absent("status", "status"),
        ok_or_absent("proc_ms", "proc_ms"),
        ok_or_absent("key", "key"),
        f"(NOT {given('value')} OR {val.ok})",
    ]
    for column in STANDARD_COLUMNS:  # `_drop_meaningless`: a cell the kind has no use for is an error
        if column not in ALWAYS and column in cells:
            users = [k for k, names in MEANINGFUL.items() if column in names]
            checks.append(f"(NOT {given(column)} OR {kind_in(users)})")
    for k, required in _required(config).items():  # `_require_for_kind`
        have = " AND ".join(given(column) for column in required)
        checks.append(f"({kind} <> {KIND_CODES[k]} OR ({have}))")
    op = config.operator
    if op.type == "window" and op.aggregate in ("sum", "min", "max"):
        checks.append(f"({kind} <> {KIND_CODES['record']} OR NOT {given('value')} OR NOT {val.is_str})")
    # `TraceBuilder._limit`: the configured count of the row's input, else the compact header's.
    limit = case(typed["input"], config.channels, "_plimit" if compact_limit is not None else "NULL")
    if limit != "NULL":
        checks.append(f"(NOT {given('channel')} OR {limit} IS NULL OR {typed['channel']} < {limit})")
    fast = f"least({', '.join(f'coalesce({check}, FALSE)' for check in checks)})" if config_ok else "FALSE"
    typed["instance"] = f"(CASE WHEN {given('instance')} THEN {typed['_pinstance']} ELSE '0' END)"
    del typed["_pinstance"]
    return _with(df, {**typed, "_fast": fast})


def _with(df: DataFrame, columns: Mapping[str, str]) -> DataFrame:
    return df.withColumns({name: F.expr(sql) for name, sql in columns.items()}) if columns else df
