"""Seeded hostile job recordings in all three forms, and the job graph page's links.

`recording`: the orders job's recording (the `blame` target's document, `fuzz_surfaces.py`), cut
and mutated as that target does, then written in one of the three forms a reader meets: the whole
JSON document, the appended lines `record` writes (`wmviz.record.job_lines`: a header line, series
declarations, one line per sample, notes and the input vote; lines dropped, repeated, cut or
replaced), or the columnar Arrow file (`wmviz.record.job_columnar`: its JSON header and index
mutated, columns of other types, nulls, times running back, bytes flipped). It runs through
`wmviz blame`, `wmviz lag` or `wmviz convert` into the other form (what `convert` writes must read
back).

`graph`: the job graph page's link (`?job=…&at=…&vertex=…`, with the valve page's keys beside it)
through what `wmviz.ui.job_view.job_page` does with it, without Streamlit: `job_link`, the built-in
job's recording and blame walker, the moment adopted as `_adopt` adopts it, `graph_at`, the figure,
the chain's rows, and the freshness budget at that moment.
"""

from __future__ import annotations

import copy
import functools
import io
import json
import random
from typing import Any

from fuzz_cli import SurfaceCase, recording_check, run_cli
from fuzz_inputs import REPO, Raw
from fuzz_links import TEXTS, judged
from fuzz_pool import Outcome
from fuzz_surfaces import NUMBERS, _bad, _mutate_recording, _recording, _short, fast_json, mutate_bytes

FORMS = ("json", "lines", "arrow")


def _rng(target: str, seed: int, index: int) -> random.Random:
    return random.Random(f"wmviz-fuzz-{target}:{seed}:{index}")


def _body(rng: random.Random) -> dict[str, Any]:
    keep = rng.choice((1, 5, 20, 50))
    whole = _recording()
    body = copy.deepcopy({key: value for key, value in whole.items() if key != "series"})
    body["series"] = [
        {**{k: v for k, v in s.items() if k != "points"}, "points": [list(p) for p in s["points"][:keep]]}
        for s in whole["series"]
    ]
    return body


# ---- the appended lines ---------------------------------------------------------------------------


def _lines(body: dict[str, Any]) -> list[Any]:
    """The recording as `record` appends it: header, series numbers, samples (before mutation)."""
    header = {k: v for k, v in body.items() if k != "series"}
    header["layout"] = "lines"
    series = body.get("series") if isinstance(body.get("series"), list) else []
    keys: list[Any] = []
    samples: dict[str, tuple[Any, list[Any]]] = {}
    for number, item in enumerate(series):
        if not isinstance(item, dict):
            continue
        keys.append([number, item.get("vertex"), item.get("subtask"), item.get("metric"), item.get("split")])
        points = item.get("points") if isinstance(item.get("points"), list) else []
        for point in points:
            if isinstance(point, list) and len(point) == 2:
                samples.setdefault(fast_json(point[0]), (point[0], []))[1].append([number, point[1]])
    out: list[Any] = [header, {"series": keys}]
    out += [{"t": t, "v": v} for t, v in samples.values()]
    if isinstance(body.get("edges"), list):
        out.append({"inputs": [1] * len(body["edges"])})
    return out


LINE_JUNK: list[Any] = [
    {"t": 5}, {"t": 5, "v": 5}, {"t": 5, "v": [[999, 1]]}, {"t": 5, "v": [[0, 1, 2]]}, {"series": 5},
    {"series": [[0, "a1", 0, "currentInputWatermark", None]]}, {"series": [["0", "a1", 0, "m", None]]},
    {"series": [[10**30, "a1", 0, "m", None]]}, {"note": {"a": 1}}, {"inputs": [1]},
    {"inputs": [0, -1, 2**63]}, {"inputs": "x"}, {}, [], 5, None, Raw("[" * 3000 + "]" * 3000), Raw("1e999"),
    Raw('{"t":' + "9" * 400 + "}"),
    {"t": "x", "v": []}, {"t": None, "v": []}, {"layout": "lines"}, {"note": "x" * 5000},
]  # fmt: skip


def _mutate_lines(rng: random.Random, lines: list[Any]) -> str:
    what = rng.choice(("drop", "repeat", "junk", "junk", "swap", "header", "many"))
    i = rng.randrange(len(lines))
    if what == "drop" and len(lines) > 1:
        del lines[i]
    elif what == "repeat":
        lines.insert(i, copy.deepcopy(lines[i]))
    elif what == "junk":
        lines.insert(max(i, 1), copy.deepcopy(rng.choice(LINE_JUNK)))
        return f"junk line {_short(lines[max(i, 1)])}"
    elif what == "swap":
        j = rng.randrange(len(lines))
        lines[i], lines[j] = lines[j], lines[i]
    elif what == "header" and isinstance(lines[0], dict):
        lines[0][rng.choice(("layout", "format", "vertices", "edges", "notes", "idleness_ms"))] = _bad(rng)
    elif what == "many":
        samples = [line for line in lines if isinstance(line, dict) and "t" in line][:3]
        lines.extend(copy.deepcopy(samples) * rng.randint(1, 200))
    return f"lines {what}@{i}"


def _lines_bytes(rng: random.Random, body: dict[str, Any], mutations: list[str]) -> bytes:
    lines = _lines(body)
    mutations += [_mutate_lines(rng, lines) for _ in range(rng.choice((0, 1, 1, 2)))]
    text = "".join(fast_json(line) + "\n" for line in lines)
    if rng.random() < 0.2:
        text = text[: rng.randrange(max(len(text), 1))]
        mutations.append("cut mid-line")
    return text.encode("utf-8", errors="surrogatepass")


# ---- the columnar file ----------------------------------------------------------------------------


def _arrow_bytes(rng: random.Random, body: dict[str, Any], mutations: list[str]) -> bytes:  # noqa: C901
    """The columnar file of a body, written with pyarrow directly so that its header, index and
    columns can be anything."""
    import pyarrow as pa

    listed = body.get("series")
    series = [s for s in listed if isinstance(s, dict)] if isinstance(listed, list) else []
    header = {k: v for k, v in body.items() if k != "series"}
    header["format"] = "wmviz-job-columnar/1"
    times: list[Any] = []
    values: list[Any] = []
    starts = [0]
    for item in series:
        for point in item.get("points", []) if isinstance(item.get("points"), list) else []:
            if isinstance(point, list) and len(point) == 2:
                times.append(point[0])
                values.append(point[1])
        starts.append(len(times))
    index = {f: [s.get(f) for s in series] for f in ("vertex", "subtask", "metric", "split")}
    index["start"] = starts
    header["index"] = index
    roll = rng.random()
    if roll < 0.3:
        field = rng.choice(("vertex", "subtask", "metric", "split", "start"))
        if index[field] and rng.random() < 0.8:
            index[field][rng.randrange(len(index[field]))] = _bad(rng, *NUMBERS, "a1")
        else:
            index[field] = _bad(rng)
        mutations.append(f"index {field}")
    elif roll < 0.4:
        header[rng.choice(("format", "index", "vertices", "edges"))] = _bad(rng)
        mutations.append("header member")
    columns: dict[str, Any] = {}
    for name, data in (("time", times), ("value", values)):
        clean = [v if type(v) is int and -(2**63) <= v < 2**63 else 0 for v in data]
        columns[name] = pa.array(clean, pa.int64())
    roll = rng.random()
    if roll < 0.1 and len(times) > 1:
        columns["time"] = pa.array(list(reversed(columns["time"].to_pylist())), pa.int64())
        mutations.append("times reversed")
    elif roll < 0.2:
        columns[rng.choice(("time", "value"))] = rng.choice(
            [pa.array([None] * len(times), pa.int64()), pa.array([str(t) for t in times]),
             pa.array([float(t) for t in range(len(times))]), pa.array([1] * (len(times) + 1), pa.int64())]
        )  # fmt: skip
        mutations.append("column replaced")
    elif roll < 0.25:
        columns["extra"] = pa.array([0] * len(times), pa.int64())
        mutations.append("extra column")
    try:
        meta = fast_json(header).encode("utf-8", errors="surrogatepass")
        table = pa.table(columns).replace_schema_metadata({b"wmviz": meta})
    except (pa.ArrowException, ValueError):
        table = pa.table({"time": pa.array(times[:0], pa.int64())})
        mutations.append("unbuildable: columns dropped")
    sink = io.BytesIO()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


# ---- the recording target -------------------------------------------------------------------------


def make_recording(seed: int, index: int) -> SurfaceCase:
    """A recording in one of the three forms, mutated, and a command that reads it."""
    rng = _rng("recording", seed, index)
    body = _body(rng)
    mutations = [_mutate_recording(rng, body) for _ in range(rng.choice((0, 1, 1, 2, 3)))]
    form = rng.choice(FORMS)
    if form == "json":
        data = fast_json(body).encode("utf-8", errors="surrogatepass")
    elif form == "lines":
        data = _lines_bytes(rng, body, mutations)
    else:
        data = _arrow_bytes(rng, body, mutations)
    if rng.random() < 0.1:
        data, what = mutate_bytes(rng, data)
        mutations.append(what)
    name = "rec.arrow" if form == "arrow" else "rec.json"
    command = rng.choice(("blame", "lag", "convert"))
    if command == "convert":
        args = ["convert", name, "out.json" if form == "arrow" else rng.choice(("out.arrow", "out.json"))]
    else:
        args = [command, name]
        vertices = ["Window: revenue", "Join", "a1", "d4", "Source", "", "x" * 300, "<b>"]
        if rng.random() < 0.4:
            args += ["--vertex", rng.choice(vertices)]
        if rng.random() < 0.4:
            args += ["--at", rng.choice([*NUMBERS, "1795600000000", "2026-11-27T10:00:00Z"])]
        if rng.random() < 0.5:
            args.append("--json")
    return SurfaceCase(index, f"recording-{form}", ((name, data),), tuple(args), tuple(mutations))


def run_recording(case: SurfaceCase, folder: str) -> Outcome:
    out = case.args[2] if case.args[0] == "convert" else None
    return run_cli(case, folder, recording_check if out else None, out)


# ---- the job graph page's link --------------------------------------------------------------------

JOB_KEYS = ("job", "at", "vertex", "trace", "instance", "step", "tz", "time")


@functools.cache
def _walker() -> Any:
    """The built-in job's recording and its blame walker, read once (the page caches it too)."""
    from wmviz.analysis.blame import Walker
    from wmviz.record.job import read_recording

    return Walker(read_recording(REPO / "sample_data" / "jobs" / "silent-split-holds-the-whole-job.json"))


def _job_value(rng: random.Random, key: str) -> str:
    walker = _walker()
    times, ids = walker.times, [v.id for v in walker.rec.vertices]
    own = {
        "job": ["silent-split-holds-the-whole-job", "0" * 24, "nope", "a" * 81, "../x", "-x", "a b"],
        "at": [str(rng.choice(times)), str(times[0] - 1), str(times[-1] + 1), str(rng.choice(times) + 1),
               "9223372036854775807", "-9223372036854775808", "9223372036854775808", "1e3", "٣", "-0", "00"],
        "vertex": [*ids, *(v.name for v in walker.rec.vertices), "x" * 128, "x" * 129, "<b>v</b>", "\x01"],
        "step": ["0", "5", "-1", "99999999999"],
        "time": ["utc", "relative", "ms", "x"],
        "tz": ["Europe/Berlin", "UTC", "Europe", "x" * 300],
    }  # fmt: skip
    return rng.choice(own.get(key, []) * 3 + TEXTS)


def make_graph(seed: int, index: int) -> SurfaceCase:
    rng = _rng("graph", seed, index)
    query = {key: _job_value(rng, key) for key in JOB_KEYS if rng.random() < (0.9 if key == "job" else 0.4)}
    data = json.dumps(query, ensure_ascii=False).encode("utf-8", errors="surrogatepass")
    return SurfaceCase(index, "graph", (("query.json", data),), (), (f"query {list(query)}",))


def open_graph(query: dict[str, str]) -> None:
    """What the job page does with a link: the same calls, in order, as `job_view.job_page`."""
    from wmviz.analysis.job_moment import graph_at
    from wmviz.analysis.lag_budget import LagBudget
    from wmviz.view.jobgraph import chain_rows, job_graph_figure
    from wmviz.view.lag_figure import budget_headline, budget_rows, lag_figure
    from wmviz.view.timefmt import TimeFormat
    from wmviz.view.url import job_link, parse_view

    notes: list[str] = []
    view = parse_view(query, ["x"], "x")
    link = job_link(query, notes)
    if link is None or link.job != "silent-split-holds-the-whole-job":
        return
    walker = _walker()
    at = walker.times[-1]
    if link.at_ms is not None:
        at = walker.times[0] if link.at_ms < walker.times[0] else walker.sample_time(link.at_ms)
    ids = {v.id for v in walker.rec.vertices}
    vertex = link.vertex if link.vertex in ids else None
    t = TimeFormat(view.time, view.zone, origin_ms=walker.times[0])
    graph = graph_at(walker, at, vertex)
    json.dumps(job_graph_figure(graph, t, vertex))
    if graph.chain:
        chain_rows(graph, t)
        shown = vertex or graph.chain[0].vertex
        now = LagBudget(walker.rec, walker).at(walker.vertex(shown), at).as_json()
        budget_headline(now, t)
        budget_rows(now)
        json.dumps(lag_figure(_over_time(shown), t, at))


@functools.cache
def _over_time(vertex: str) -> list[dict[str, Any]]:
    """A vertex's budgets over the recording, once per vertex (the page caches them so)."""
    from wmviz.analysis.lag_budget import LagBudget

    walker = _walker()
    return [b.as_json() for b in LagBudget(walker.rec, walker).over_time(walker.vertex(vertex), most=60)]


def run_graph(case: SurfaceCase, folder: str) -> Outcome:
    from wmviz.analysis.blame import BlameError

    query = json.loads(case.files()["query.json"].decode("utf-8", errors="surrogatepass"))
    return judged(lambda: open_graph(query), (BlameError,))
