"""Seeded hostile inputs for the command-line surfaces: `import kafka`, `import prometheus` (with and
without `--plan`), `blame` and `sweep --vary`.

Input `i` of seed `s` is a pure function of (s, i), as for the readers (`fuzz_inputs.py`). Each
starts from a real document (the Kafka dump, the Prometheus exports and plan in `tests/data`, a
job recording imported from them, a built-in sample trace), cut small, and takes a few mutations:
values a number cannot hold (400 digits, `inf`, 10^9, a negative, non-ASCII digits), labels and
fields of the wrong JSON type, structure removed or nested deep, lines repeated, shuffled or
broken, bytes flipped; and the command's options get such values too.
"""

from __future__ import annotations

import copy
import functools
import json
import random
from collections.abc import Callable
from typing import Any

from fuzz_cli import SurfaceCase
from fuzz_inputs import REPO, Raw, dump_json
from fuzz_inputs import _mutate_bytes as mutate_bytes

DATA = REPO / "tests" / "data"
KAFKA_DUMP = DATA / "kafka" / "shop-orders.kcat.txt"
QUERY_RANGES = (
    DATA / "prometheus" / "orders-job-query-range.json",
    DATA / "prometheus" / "skewed-sources-query-range.json",
)
PLAN = DATA / "prometheus" / "orders-job-plan.json"
TRACE_OUTS = ("out.jsonl", "out.csv", "out.parquet")

NUMBERS: list[str] = [
    "0", "1", "2", "5", "-1", "100000", "999999999", "1000000000", "1" * 400, "٣", "𝟙", "²", "inf",
    "-inf", "nan", "1e999", "1e3", "1.5", "9223372036854775807", "9223372036854775808",
    "-9223372036854775809", "2026-11-24T10:05:15Z", "10000-01-01T00:00:00Z", "0x10", "+5", "", "\ud800",
]  # fmt: skip
JSON_BAD: list[Any] = [
    5, -1, 0, 10**9, 2**63, -(2**63) - 1, 1e308, None, True, [], {}, [1, 2], "", "x" * 300, "٣", "-1",
    "1000000000", "inf", "NaN", "1e999", Raw("1" * 400), Raw("1e999"), Raw('"\\ud800"'),
    Raw("[" * 3000 + "]" * 3000), Raw('{"a":' * 200 + "1" + "}" * 200),
]  # fmt: skip
DURATIONS: list[str] = [
    "0ms",
    "1ms",
    "200ms",
    "5s",
    "1m",
    "-5s",
    "1e999s",
    "1" * 400 + "ms",
    "٥s",
    "PT5S",
    "inf",
    "5",
    "",
]


def fast_json(value: Any) -> str:
    """JSON text of `value`: `json.dumps` unless it holds a `Raw` piece (then `dump_json`)."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return dump_json(value)


def _bad(rng: random.Random, *more: Any) -> Any:
    """A value of the wrong kind or size (a fresh copy: a later mutation may change it in place)."""
    return copy.deepcopy(rng.choice([*JSON_BAD, *more]))


def _rng(target: str, seed: int, index: int) -> random.Random:
    return random.Random(f"wmviz-fuzz-{target}:{seed}:{index}")


def _option(rng: random.Random, args: list[str], flag: str, values: list[str], chance: float = 0.5) -> None:
    if rng.random() < chance:
        args += [flag, rng.choice(values)]


# ---- import kafka -----------------------------------------------------------------------------------


@functools.cache
def _kafka_rows() -> list[list[str]]:
    return [line.split() for line in KAFKA_DUMP.read_text().splitlines() if line.strip()]


def _kafka_line(rng: random.Random, style: str, row: list[str]) -> str:
    cells = row + ["0"] * (4 - len(row))
    if style == "console":
        stamp = rng.choice(("CreateTime", "LogAppendTime", "NO_TIMESTAMP"))
        return f"{stamp}:{cells[2]}\tPartition:{cells[0]}\tOffset:{cells[1]}\t{cells[3]}"
    if style == "topic":
        return " ".join([rng.choice(["shop.orders", "shop.orders", "other", "٣x", "t" * 300]), *row[:3]])
    return " ".join(row[:4] if style == "kcat4" else row[:3])


def _mutate_kafka(rng: random.Random, rows: list[list[str]]) -> str:
    what = rng.choice(("cell", "cell", "cell", "duplicate", "drop", "shuffle", "repeat", "extra", "junk"))
    if not rows:
        rows.append(["0", "0", "0", "0"])
    i = rng.randrange(len(rows))
    if what == "cell":
        column = rng.randrange(4)
        rows[i] += ["0"] * (column + 1 - len(rows[i]))
        rows[i][column] = rng.choice(NUMBERS)
        return f"cell {column}={rows[i][column][:40]!r}"
    if what == "duplicate":
        rows.insert(i, list(rows[i]))
    elif what == "drop":
        del rows[i]
    elif what == "shuffle":
        rng.shuffle(rows)
    elif what == "repeat":
        rows.extend([list(r) for r in rows] * rng.randint(1, 30))
    elif what == "extra":
        rows[i].append(rng.choice(NUMBERS))
    else:
        rows.insert(i, [rng.choice(["%", "% Reached end", "", "\x00", "CreateTime:5"])])
    return what


def make_kafka(seed: int, index: int) -> SurfaceCase:
    """A kcat or console-consumer dump of a few lines, mutated, and `import kafka`'s options."""
    rng = _rng("kafka", seed, index)
    source = _kafka_rows()
    start = rng.randrange(len(source))
    rows = [list(r) for r in source[start : start + rng.choice((1, 3, 20, 200))]]
    style = rng.choice(("kcat3", "kcat4", "topic", "console"))
    mutations = [f"style {style}"] + [_mutate_kafka(rng, rows) for _ in range(rng.choice((0, 1, 1, 2, 3)))]
    text = "\n".join(_kafka_line(rng, style, r) if len(r) >= 3 else " ".join(r) for r in rows) + "\n"
    data = text.encode("utf-8", errors="surrogatepass")
    if rng.random() < 0.15:
        data, what = mutate_bytes(rng, data)
        mutations.append(what)
    out = rng.choice(TRACE_OUTS)
    parallelism = ["1", "2", "3", "6", "64", "0", "-1", "1000000000", "٣", "1e3"]
    args = ["import", "kafka", "dump.txt", "--parallelism", rng.choice(parallelism)]
    args += ["--out-of-orderness", rng.choice(DURATIONS), "--out", out]
    _option(rng, args, "--topic", ["shop.orders", "other", "", "x" * 300], 0.8 if style != "topic" else 0.2)
    _option(rng, args, "--idleness", DURATIONS, 0.4)
    _option(rng, args, "--partitions", ["6", "1", "8", "100000", "1000000000", "0"], 0.3)
    _option(rng, args, "--watermark-interval", DURATIONS, 0.2)
    return SurfaceCase(index, "kafka", (("dump.txt", data),), tuple(args), tuple(mutations))


# ---- import prometheus ------------------------------------------------------------------------------


@functools.cache
def _query_ranges() -> tuple[dict[str, Any], ...]:
    return tuple(json.loads(path.read_text()) for path in QUERY_RANGES)


LABELS = ("task_name", "subtask_index", "task_attempt_num", "operator_name", "job_id", "__name__", "split")


def _mutate_series(rng: random.Random, result: list[Any]) -> str:
    """A label, a point, or a series changed, copied or removed."""
    if not result:
        return "series: none"
    i = rng.randrange(len(result))
    series = result[i]
    if not isinstance(series, dict):
        return "series: not an object"
    what = rng.choice(("label", "label", "point", "point", "copy", "drop", "shape"))
    if what == "label" and isinstance(series.get("metric"), dict):
        label = rng.choice(LABELS)
        series["metric"][label] = _bad(rng, *NUMBERS)
        return f"label {label}={_short(series['metric'][label])}"
    if what == "point" and isinstance(series.get("values"), list) and series["values"]:
        point = rng.choice(series["values"])
        slot = rng.randrange(2)
        if not isinstance(point, list) or len(point) != 2:
            return "point: not a pair"
        point[slot] = _bad(rng, *NUMBERS)
        return f"point[{slot}]={_short(point[slot])}"
    if what == "copy":  # another subtask or attempt of the same series
        clone = copy.deepcopy(series)
        if isinstance(clone.get("metric"), dict):
            clone["metric"][rng.choice(("subtask_index", "task_attempt_num"))] = rng.choice(
                ["1", "7", "63", "2"]
            )
        result.insert(i, clone)
        return "series copied"
    if what == "drop":
        del result[i]
        return "series dropped"
    key = rng.choice(("metric", "values"))
    series[key] = _bad(rng)
    return f"{key}={_short(series[key])}"


def _mutate_export(rng: random.Random, body: dict[str, Any]) -> str:
    data = body.get("data")
    result = data.get("result") if isinstance(data, dict) else None
    if isinstance(result, list) and rng.random() < 0.85:
        return _mutate_series(rng, result)
    where = rng.choice(("status", "data", "resultType", "result"))
    if where in ("status", "data"):
        body[where] = _bad(rng, "error")
    elif isinstance(data, dict):
        data[where] = _bad(rng, "vector", "matrix")
    return f"{where} changed"


def _mutate_plan(rng: random.Random, plan: dict[str, Any]) -> str:
    inner = plan.get("plan")
    nodes = inner.get("nodes") if isinstance(inner, dict) else None
    if not isinstance(nodes, list) or not nodes or rng.random() < 0.1:
        plan["plan"] = _bad(rng)
        return "plan replaced"
    node = rng.choice(nodes)
    if not isinstance(node, dict):
        return "plan node not an object"
    field = rng.choice(("parallelism", "id", "description", "inputs", "input id", "ship_strategy"))
    value = _bad(rng, *NUMBERS, *["a1", "c3", "RESCALE", "FORWARD", "Source: x<br/>"])
    inputs = node.get("inputs")
    if field in ("input id", "ship_strategy") and isinstance(inputs, list) and inputs:
        edge = rng.choice(inputs)
        if not isinstance(edge, dict):
            return "plan input not an object"
        edge["id" if field == "input id" else field] = value
    else:
        node[field if field not in ("input id", "ship_strategy") else "inputs"] = value
    return f"plan {field}={_short(value)}"


def _cut_export(rng: random.Random, body: dict[str, Any]) -> dict[str, Any]:
    """A copy with a few points of each series (the imports' cost grows with points, not with
    hostility)."""
    keep = rng.choice((1, 3, 10, 40))
    result = [
        {"metric": dict(s["metric"]), "values": [list(p) for p in s["values"][:keep]]}
        for s in body["data"]["result"]
    ]
    return {"status": body["status"], "data": {"resultType": body["data"]["resultType"], "result": result}}


def make_prometheus(seed: int, index: int) -> SurfaceCase:
    """A query_range export, cut and mutated; with `--plan` half the time (a plan mutated too)."""
    rng = _rng("prometheus", seed, index)
    with_plan = rng.random() < 0.5
    body = _cut_export(rng, _query_ranges()[0 if with_plan else rng.randrange(len(QUERY_RANGES))])
    mutations = [_mutate_export(rng, body) for _ in range(rng.choice((0, 1, 1, 2, 3)))]
    files = [("export.json", fast_json(body).encode("utf-8", errors="surrogatepass"))]
    args = ["import", "prometheus", "export.json"]
    if with_plan:
        plan = json.loads(PLAN.read_text())
        mutations += [_mutate_plan(rng, plan) for _ in range(rng.choice((0, 1, 2)))]
        files.append(("plan.json", fast_json(plan).encode("utf-8", errors="surrogatepass")))
        args += ["--plan", "plan.json", "--out", "out.json"]
    else:
        args += ["--out", rng.choice(TRACE_OUTS)]
        names = ["Source: orders", "Join", "Window: revenue", "skewed", "", "x" * 300, "٣"]
        _option(rng, args, "--vertex", names, 0.4)
        _option(rng, args, "--upstream", names, 0.3)
        _option(rng, args, "--edge", ["all-to-all", "forward"], 0.3)
    _option(rng, args, "--idleness", DURATIONS, 0.3)
    _option(rng, args, "--watermark-interval", DURATIONS, 0.2)
    if rng.random() < 0.1:
        data, what = mutate_bytes(rng, files[0][1])
        files[0] = ("export.json", data)
        mutations.append(what)
    return SurfaceCase(
        index, "prometheus-plan" if with_plan else "prometheus", tuple(files), tuple(args), tuple(mutations)
    )


# ---- blame ------------------------------------------------------------------------------------------


@functools.cache
def _recording() -> dict[str, Any]:
    """The orders job's recording, imported once from its export and plan."""
    from wmviz.record.job import to_json
    from wmviz.record.prometheus import load_series
    from wmviz.record.prometheus_job import job_of

    rec = job_of(load_series(QUERY_RANGES[0]), PLAN, None, 200, "prometheus fuzz seed")
    return to_json(rec)


def _mutate_recording(rng: random.Random, body: dict[str, Any]) -> str:
    part = rng.choice(("vertices", "edges", "series", "series", "series", "top"))
    items = body.get(part)
    if part == "top" or not isinstance(items, list) or not items:
        key = rng.choice(
            ("format", "job", "idleness_ms", "watermark_interval_ms", "notes", "vertices", "series")
        )
        body[key] = _bad(rng)
        return f"{key}={_short(body[key])}"
    item = rng.choice(items)
    if not isinstance(item, dict) or not item:
        return f"{part}: not an object"
    if part == "series" and rng.random() < 0.6 and isinstance(item.get("points"), list) and item["points"]:
        point = rng.choice(item["points"])
        slot = rng.randrange(2)
        if isinstance(point, list) and len(point) == 2:
            point[slot] = _bad(rng, 0, -1, 2**63 - 1, -(2**63))
        return f"point[{slot}]"
    if rng.random() < 0.15:
        items.remove(item)
        return f"{part} item dropped"
    key = rng.choice(sorted(item))
    item[key] = _bad(rng, *NUMBERS, *["a1", "c3", "d4"])
    return f"{part}.{key}={_short(item[key])}"


def make_blame(seed: int, index: int) -> SurfaceCase:
    """A job recording, mutated, and `blame`'s options."""
    rng = _rng("blame", seed, index)
    keep = rng.choice((1, 5, 20, 50))
    whole = _recording()
    body = copy.deepcopy({key: value for key, value in whole.items() if key != "series"})
    body["series"] = [
        {**{k: v for k, v in s.items() if k != "points"}, "points": [list(p) for p in s["points"][:keep]]}
        for s in whole["series"]
    ]
    mutations = [_mutate_recording(rng, body) for _ in range(rng.choice((0, 1, 1, 2, 4)))]
    data = fast_json(body).encode("utf-8", errors="surrogatepass")
    if rng.random() < 0.1:
        data, what = mutate_bytes(rng, data)
        mutations.append(what)
    args = ["blame", "rec.json"]
    _option(rng, args, "--vertex", ["Window: revenue", "Join", "a1", "d4", "Source", "", "x" * 300], 0.4)
    _option(rng, args, "--at", [*NUMBERS, "1795600000000", "2026-11-27T10:00:00Z"], 0.4)
    if rng.random() < 0.5:
        args.append("--json")
    return SurfaceCase(index, "blame", (("rec.json", data),), tuple(args), tuple(mutations))


# ---- sweep --vary ---------------------------------------------------------------------------------

SWEEP_TRACES = (
    "late-data-allowed-lateness.jsonl",
    "order-dependent-final-watermark.jsonl",
    "early-fire-left-join.jsonl",
)
SWEEP_FIELDS = [
    "generator.out_of_orderness_ms", "generator.idle_timeout_ms", "generator.interval_ms", "generator.emit",
    "operator.size_ms", "operator.slide_ms", "operator.allowed_lateness_ms", "operator.lower_ms",
    "operator.upper_ms", "operator.aggregate", "profile", "channels.0", "operator", "", "a..b", "__class__",
    "name", "generator", "operator.type", "x" * 300,
]  # fmt: skip
SWEEP_VALUES = ["0", "1", "5s", "1m", "200ms", "none", "true", "-1", "-5s", "1e999", "9223372036854775807",
                "9223372036854775808", "٥", "٥s", "", "count", "periodic", "flink-master", "x" * 300, "nan",
                "1.5", "1" * 400]  # fmt: skip


def make_sweep(seed: int, index: int) -> SurfaceCase:
    """A built-in trace and one to three `--vary` options of hostile fields and values."""
    rng = _rng("sweep", seed, index)
    name = rng.choice(SWEEP_TRACES)
    args = ["sweep", name, "--out", rng.choice(("out.csv", "out.json", "out.parquet"))]
    mutations = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        pool = SWEEP_VALUES[:5] if rng.random() < 0.5 else SWEEP_VALUES
        values = rng.sample(pool, min(len(pool), rng.choice((1, 2, 3, 8))))
        field = rng.choice(SWEEP_FIELDS[:3] if rng.random() < 0.5 else SWEEP_FIELDS)
        vary = f"{field}={','.join(values)}"
        if rng.random() < 0.1:
            vary = rng.choice(
                [
                    "=",
                    "a",
                    "a=",
                    "=1",
                    "a=1,,2",
                    "generator.out_of_orderness_ms=" + ",".join(map(str, range(300))),
                ]
            )
        args += ["--vary", vary]
        mutations.append(vary[:80])
    _option(rng, args, "--target-late-share", ["0.001", "0", "1", "2", "-1", "nan", "inf", "1e999"], 0.3)
    data = (REPO / "sample_data" / name).read_bytes()
    return SurfaceCase(index, "sweep", ((name, data),), tuple(args), tuple(mutations))


def _short(value: Any) -> str:
    text = value.text if isinstance(value, Raw) else repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


MAKERS: dict[str, Callable[[int, int], SurfaceCase]] = {
    "kafka": make_kafka,
    "prometheus": make_prometheus,
    "blame": make_blame,
    "sweep": make_sweep,
}
