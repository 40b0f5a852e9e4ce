"""Seeded hostile inputs for the SQL surfaces, the late-row ledger and session/alignment configs.

`plan`: the plans in `tests/data/sql` and `tests/data/sqlplan` in every spelling `wmviz plan`
reads (COMPILE PLAN JSON, EXPLAIN text, a REST plan or job answer; never a `.sql` script, which
would start a JVM per input), JSON plans with a member anywhere in the tree set to a value of the
wrong kind or size, text plans with lines dropped, repeated, cut or with a token replaced; through
`wmviz plan [--json] [--out] [--partitions] [--parallelism]`.

`sqlreplay`: a plan that has a rows file beside it (one of the incidents), plain or lightly
mutated, and its rows file mutated: cells set to values a column cannot take (timestamps out of
range or misspelt, 400 digits, nested JSON), tables and partitions that do not exist or are huge,
`partitions` lines, `proc_ms`, lines repeated, shuffled, cut, or thousands of them; through
`wmviz sql replay [--json] [--out job.json] [--trace-out t.jsonl] [--profile]` (what `--out` and
`--trace-out` write must read back).

`late`: the reader target's mutated traces (`fuzz_inputs.make_input`) through `wmviz late` with
its filters, and the step page's "Late rows" box (`wmviz.ui.late_view.ledger_html`) drawn from the
same ledger under a hostile link: its HTML must hold only the table's own tags and same-page links.

`configs`: the session-window and watermark-alignment samples with their config's fields set to
values at or past an edge (gaps of 1 ms and 2^63−1, `buffer_size` 0 and 2^31−1, drifts and
intervals of every size, splits named by hostile text); through `wmviz late` (the whole run, every
fate) and `wmviz explain`.
"""

from __future__ import annotations

import copy
import functools
import json
import random
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from fuzz_cli import SurfaceCase, run_cli, trace_check
from fuzz_inputs import REPO, make_input
from fuzz_jobs import _rng
from fuzz_links import TEXTS, ZONES
from fuzz_pool import ACCEPTED, INJECTED, UNREADABLE, Outcome
from fuzz_surfaces import DURATIONS, NUMBERS, _bad, _short, fast_json, mutate_bytes

SQL = REPO / "tests" / "data" / "sql"
SQLPLAN = REPO / "tests" / "data" / "sqlplan"
INCIDENTS = ("incident_cumulate_late", "incident_over_drops", "incident_quiet_rates", "window_rank",
             "orders_payments_window", "incident_silent_partition")  # fmt: skip


@functools.cache
def _plans() -> tuple[Path, ...]:
    kinds = ("*.plan.json", "*.explain.txt", "*.rest-plan.json", "*.rest-job.json")
    return tuple(sorted(p for folder in (SQL, SQLPLAN) for kind in kinds for p in folder.glob(kind)))


def _walk_json(rng: random.Random, value: Any) -> tuple[Any, Any] | None:
    """A random (container, key) inside a JSON value, found by a random walk down from the top."""
    where = None
    for _ in range(rng.randint(1, 12)):
        if isinstance(value, dict) and value:
            key = rng.choice(sorted(value))
        elif isinstance(value, list) and value:
            key = rng.randrange(len(value))
        else:
            break
        where = (value, key)
        value = value[key]
    return where


def mutate_json(rng: random.Random, body: Any, more: tuple[Any, ...] = ()) -> str:
    where = _walk_json(rng, body)
    if where is None:
        return "json: nothing to change"
    container, key = where
    roll = rng.random()
    if roll < 0.15 and isinstance(container, dict):
        del container[key]
        return f"json drop {_short(key)}"
    if roll < 0.25 and isinstance(container, list):
        container.insert(key, copy.deepcopy(container[key]))
        return "json repeat"
    container[key] = _bad(rng, *NUMBERS, *more)
    return f"json {_short(key)}={_short(container[key])}"


TOKENS = ["0", "-1", "1" * 400, "9223372036854775807", "<b>x</b>", "٣", "", "(", ")", "[", "]", ",",
          "$f0", "rowtime", "WATERMARK", "INTERVAL '5' SECOND", "1e999", "\x00", "x" * 3000]  # fmt: skip


def mutate_text(rng: random.Random, lines: list[str]) -> str:
    if not lines:
        lines.append("")
    i = rng.randrange(len(lines))
    what = rng.choice(("drop", "repeat", "token", "token", "token", "cut", "indent"))
    if what == "drop":
        del lines[i]
    elif what == "repeat":
        lines[i:i] = [lines[i]] * rng.choice((1, 2, 500))
    elif what == "token":
        words = lines[i].split(" ")
        j = rng.randrange(len(words))
        words[j] = rng.choice(TOKENS)
        lines[i] = " ".join(words)
    elif what == "cut":
        lines[i] = lines[i][: rng.randrange(len(lines[i]) + 1)]
    else:
        lines[i] = " " * rng.choice((1, 3, 200)) + lines[i].lstrip()
    return f"text {what}@{i}"


def _plan_bytes(rng: random.Random, path: Path, rounds: int, mutations: list[str]) -> bytes:
    text = path.read_text()
    if path.suffix == ".json":
        body = json.loads(text)
        mutations += [mutate_json(rng, body, ("a", "HASH", "FORWARD")) for _ in range(rounds)]
        data = fast_json(body).encode("utf-8", errors="surrogatepass")
    else:
        lines = text.split("\n")
        mutations += [mutate_text(rng, lines) for _ in range(rounds)]
        data = "\n".join(lines).encode("utf-8", errors="surrogatepass")
    if rng.random() < 0.1:
        data, what = mutate_bytes(rng, data)
        mutations.append(what)
    return data


def make_plan(seed: int, index: int) -> SurfaceCase:
    rng = _rng("plan", seed, index)
    path = rng.choice(_plans())
    mutations = [path.name]
    data = _plan_bytes(rng, path, rng.choice((0, 1, 1, 2, 4)), mutations)
    name = "plan.txt" if path.suffix == ".txt" else "plan.json"
    args = ["plan", name]
    if rng.random() < 0.5:
        args.append("--json")
    if rng.random() < 0.3:
        args += ["--out", "out.json"]
    for _ in range(rng.choice((0, 0, 1, 2))):
        table = rng.choice(["orders", "payments", "rates", "clicks", "", "x" * 300, "=", "a=b"])
        args += ["--partitions", f"{table}={rng.choice(NUMBERS)}" if rng.random() < 0.9 else table]
    if rng.random() < 0.2:
        args += ["--parallelism", rng.choice(NUMBERS)]
    return SurfaceCase(index, "plan", ((name, data),), tuple(args), tuple(mutations))


def run_plan(case: SurfaceCase, folder: str) -> Outcome:
    outcome = run_cli(case, folder)
    if outcome[0] == ACCEPTED and "--out" in case.args:
        written = Path(folder, "out.json")
        try:
            body = json.loads(written.read_text())
        except (OSError, ValueError) as err:
            return UNREADABLE, f"plan --out wrote no JSON: {err}"
        if not isinstance(body, dict) or body.get("format") != "wmviz-sqljob/1":
            return UNREADABLE, "plan --out wrote no wmviz-sqljob/1 object"
    return outcome


# ---- sql replay -----------------------------------------------------------------------------------

CELLS: list[Any] = [
    "2026-11-24 10:00:99.000", "9999-12-31 23:59:59.999", "0000-01-01 00:00:00", "2026-11-24T10:00:01Z",
    "2026-11-24 10:00:01.0000000001", "1970-01-01 00:00:00", "+292278994-08-17 07:12:55.807",
    "2026-13-01 00:00:00", "2026-11-24 10:00:01.000 Europe/Berlin", " 2026-11-24 10:00:01", "NaN", "", "o1",
    "\ud800", "<b>x</b>", 0, -1, 1.5, 1e308, 2**63 - 1, 2**63, -(2**63) - 1, True, None, [], {}, [1, [2]],
    {"a": {"b": 1}}, "x" * 5000,
]  # fmt: skip


def _mutate_rows(rng: random.Random, rows: list[Any]) -> str:  # noqa: C901
    if not rows:
        rows.append({"table": "orders", "partition": 0, "row": {}})
    i = rng.randrange(len(rows))
    line = rows[i]
    what = rng.choice(("cell", "cell", "cell", "cell", "field", "partitions", "proc", "drop", "repeat",
                       "shuffle", "many", "junk"))  # fmt: skip
    if what == "cell" and isinstance(line, dict) and isinstance(line.get("row"), dict) and line["row"]:
        column = rng.choice([*sorted(line["row"]), "extra", "ts", "$rowtime"])
        line["row"][column] = copy.deepcopy(rng.choice(CELLS))
        return f"cell {column}={_short(line['row'][column])}"
    if what == "field" and isinstance(line, dict):
        key = rng.choice(("table", "partition", "row", "partitions", "proc_ms", "extra"))
        line[key] = _bad(rng, *NUMBERS, "orders", "rates", "payments", 4096, 4097, 2**31)
        return f"field {key}={_short(line[key])}"
    if what == "partitions":
        table = line.get("table") if isinstance(line, dict) else "orders"
        rows.insert(i, {"table": table, "partitions": rng.choice([0, 1, 2, 4096, 4097, 10**9, -1, "3"])})
    elif what == "proc":
        if isinstance(line, dict):
            line["proc_ms"] = rng.choice([0, 1, 10**12, 2**63 - 1, -(2**63), -1, "1", 1.5, 2**64])
    elif what == "drop":
        del rows[i]
    elif what == "repeat":
        rows.insert(i, copy.deepcopy(line))
    elif what == "shuffle":
        rng.shuffle(rows)
    elif what == "many" and len(rows) < 1000:
        rows.extend(copy.deepcopy(rows[:50]) * rng.choice((10, 40, 100)))  # at most ~5,000 lines
    else:
        rows.insert(i, rng.choice([5, None, [], "x", {"table": "orders"}, {"row": {}}, {}]))
    return f"rows {what}"


def make_sqlreplay(seed: int, index: int) -> SurfaceCase:
    rng = _rng("sqlreplay", seed, index)
    name = rng.choice(INCIDENTS)
    kinds = [k for k in (".plan.json", ".explain.txt") if (SQL / f"{name}{k}").is_file()]
    plan_path = SQL / f"{name}{rng.choice(kinds)}"
    mutations = [plan_path.name]
    plan = _plan_bytes(rng, plan_path, 1 if rng.random() < 0.15 else 0, mutations)
    rows = [
        json.loads(line) for line in (SQL / f"{name}.rows.jsonl").read_text().splitlines() if line.strip()
    ]
    mutations += [_mutate_rows(rng, rows) for _ in range(rng.choice((0, 1, 1, 2, 3, 5)))]
    data = "".join(fast_json(row) + "\n" for row in rows).encode("utf-8", errors="surrogatepass")
    if rng.random() < 0.1:
        data, what = mutate_bytes(rng, data)
        mutations.append(what)
    plan_name = "plan.txt" if plan_path.suffix == ".txt" else "plan.json"
    args = ["sql", "replay", plan_name, "rows.jsonl"]
    if rng.random() < 0.5:
        args.append("--json")
    if rng.random() < 0.3:
        args += ["--out", "job.json"]
    if rng.random() < 0.3:
        args += ["--trace-out", "t.jsonl"]
    if rng.random() < 0.2:
        args += ["--profile", rng.choice(("flink-1.x-2.x", "flink-master", "flip-38477"))]
    files = ((plan_name, plan), ("rows.jsonl", data))
    return SurfaceCase(index, "sqlreplay", files, tuple(args), tuple(mutations))


def run_sqlreplay(case: SurfaceCase, folder: str) -> Outcome:
    from fuzz_cli import recording_check

    outcome = run_cli(case, folder)
    if outcome[0] != ACCEPTED:
        return outcome
    if "--out" in case.args:
        problem = recording_check(Path(folder, "job.json"))
        if problem:
            return UNREADABLE, problem
    if "--trace-out" in case.args and Path(folder, "t.jsonl").exists():
        problem = trace_check(Path(folder, "t.jsonl"))
        if problem:
            return UNREADABLE, problem
    return outcome


# ---- wmviz late, and the page's Late rows box -----------------------------------------------------

ALLOWED_TAGS = frozenset({"table", "thead", "tbody", "tr", "th", "td", "a", "colgroup", "col"})


class _Tags(HTMLParser):
    """Every tag and link the Late rows box's HTML holds."""

    def __init__(self) -> None:
        super().__init__()
        self.bad: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in ALLOWED_TAGS:
            self.bad.append(f"<{tag}>")
        for name, value in attrs:
            if name.startswith("on") or name == "style":
                self.bad.append(f"{tag} {name}=")
            if name == "href" and not (value or "").startswith("?"):
                self.bad.append(f"href={(value or '')[:60]}")


def late_box(trace_path: Path, config_path: Path | None, query: dict[str, str]) -> str | None:
    """The box's HTML for the trace under the link, or None when the page would draw no table;
    why the HTML is markup beyond the table's own when it is."""
    from wmviz.analysis.late_ledger import PAGE_FILTERS, build_ledger, operator_name, page_selection
    from wmviz.core.simulate import simulate
    from wmviz.trace.readers import read_trace
    from wmviz.ui.late_view import ledger_html
    from wmviz.view.timefmt import TimeFormat
    from wmviz.view.url import parse_view

    trace = read_trace(trace_path, config_path)
    ledger = build_ledger(simulate(trace, trace.config.profile), operator_name(trace.config))
    view = parse_view(query, ["x"], "x")
    t = TimeFormat(view.time, view.zone, origin_ms=0)
    instances = sorted({row.instance for row in ledger}) or ["0"]
    for choice in PAGE_FILTERS:
        chosen = page_selection(ledger, query.get("instance") or instances[0], choice)
        if chosen:
            parser = _Tags()
            parser.feed(ledger_html(chosen[:200], view, view.step, t))
            if parser.bad:
                return f"markup in the Late rows box: {', '.join(parser.bad[:5])}"
    return None


def make_late(seed: int, index: int) -> SurfaceCase:
    rng = _rng("late", seed, index)
    made = make_input(seed, 1_000_003 + index)
    files = [(made.name, made.data)]
    args = ["late", made.name]
    if made.config is not None:
        files.append(("config.json", made.config))
        args += ["--config", "config.json"]
    if rng.random() < 0.5:
        args.append("--json")
    if rng.random() < 0.3:
        args += ["--fate", rng.choice(("kept", "added-late", "dropped", "x", "", "<b>"))]
    if rng.random() < 0.3:
        args.append("--late-only")
    if rng.random() < 0.2:
        args += ["--instance", rng.choice(("0", "1", "", "x" * 300, "٣"))]
    if rng.random() < 0.3:
        args += ["--time", rng.choice(("utc", "relative", "ms"))]
    query = {
        "tz": rng.choice(ZONES + TEXTS),
        "step": rng.choice(["0", "3", "-1", "x"]),
        "instance": rng.choice(["0", "1", "<b>", "\"'><script>"]),
        "time": rng.choice(["utc", "ms"]),
    }
    files.append(
        ("query.json", json.dumps(query, ensure_ascii=False).encode("utf-8", errors="surrogatepass"))
    )
    return SurfaceCase(
        index, f"late-{made.fmt}", tuple(files), tuple(args), (*made.mutations, f"query {query}")
    )


def run_late(case: SurfaceCase, folder: str) -> Outcome:
    outcome = run_cli(case, folder)
    if outcome[0] != ACCEPTED:
        return outcome
    config = Path(folder, "config.json") if "--config" in case.args else None
    query = json.loads(case.files()["query.json"].decode("utf-8", errors="surrogatepass"))
    problem = late_box(Path(folder, case.args[1]), config, query)
    return (INJECTED, problem) if problem else outcome


# ---- session and alignment configs ----------------------------------------------------------------

CONFIG_SAMPLES = ("late-click-merges-sessions.jsonl", "fast-partition-paused-by-alignment.jsonl")
EDGES_MS: list[Any] = [0, 1, 2, 999, 1000, 30_000, 2**31 - 1, 2**31, 2**62, 2**63 - 1, -1, -(2**63), 1.5,
                       "5s", None, True, [], {}]  # fmt: skip
SESSION_FIELDS = ("session_gap_ms", "allowed_lateness_ms", "size_ms", "slide_ms", "aggregate", "type")
ALIGNMENT_FIELDS = ("group", "max_drift_ms", "update_interval_ms", "buffer_size", "allow_unaligned_splits")
GENERATOR_FIELDS = ("out_of_orderness_ms", "interval_ms", "idle_timeout_ms", "emit", "resume", "splits")


def _config_value(rng: random.Random, field: str) -> Any:
    if field in ("aggregate", "type", "group", "emit", "resume"):
        return rng.choice(["list", "count", "sum", "window", "session", "g", "", "x" * 300, "<b>", 5, None])
    if field == "splits":
        splits = [{"0": ["a", "a"]}, {"0": []}, {"0": ["<b>"] * 3}, {"0": ["s"] * 5000}, {"9": ["a"]},
                  {"0": "a"}, [], {"0": ["x" * 5000]}, {"0": ["a"], "1": ["a"]}]  # fmt: skip
        return copy.deepcopy(rng.choice(splits))
    if field == "buffer_size":
        return rng.choice([0, 1, 3, 10_000, 10_001, 2**31 - 1, 2**31, -1, 10**9, "3", 1.0])
    return copy.deepcopy(rng.choice(EDGES_MS))


def make_configs(seed: int, index: int) -> SurfaceCase:
    rng = _rng("configs", seed, index)
    name = rng.choice(CONFIG_SAMPLES)
    lines = (REPO / "sample_data" / name).read_text().splitlines()
    config = json.loads(lines[0])["config"]
    mutations = [name]
    for _ in range(rng.choice((1, 1, 2, 3))):
        section = rng.choice(("operator", "alignment", "generator"))
        if section == "operator":
            target, field = config.setdefault("operator", {}), rng.choice(SESSION_FIELDS)
        elif section == "alignment":
            generator = config.setdefault("generator", {})
            target = generator.setdefault("alignment", {}) if isinstance(generator, dict) else {}
            field = rng.choice(ALIGNMENT_FIELDS)
        else:
            target, field = config.setdefault("generator", {}), rng.choice(GENERATOR_FIELDS)
        if isinstance(target, dict):
            target[field] = _config_value(rng, field)
            mutations.append(f"{section}.{field}={_short(target[field])}")
    if rng.random() < 0.2:
        config.setdefault("operator", {})["session_gap_ms"] = rng.choice([1, 2**63 - 1])
        mutations.append("session gap at an edge")
    lines[0] = fast_json({"config": config})
    if rng.random() < 0.3:
        rows = lines[1:]
        lines += rows * rng.choice((5, 50))
        mutations.append("rows repeated")
    data = ("\n".join(lines) + "\n").encode("utf-8", errors="surrogatepass")
    command = rng.choice((["late", "t.jsonl", "--json"], ["late", "t.jsonl"], ["explain", "t.jsonl"]))
    if rng.random() < 0.2:
        command += ["--profile", rng.choice(("flink-master", "flip-38477"))]
    return SurfaceCase(index, "configs", (("t.jsonl", data),), tuple(command), tuple(mutations))


def run_configs(case: SurfaceCase, folder: str) -> Outcome:
    return run_cli(case, folder)


__all__ = ["DURATIONS", "make_configs", "make_late", "make_plan", "make_sqlreplay"]
