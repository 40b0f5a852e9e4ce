"""A job recording: every vertex of a Flink job, per subtask (and split), over time.

The plan is what `/jobs/:jid/plan` says: vertices (with their parallelism and chained operators)
and edges (with their ship strategy). Each edge also names the *logical input* of its target it
feeds: a two-input operator has two (a multiple-input task reports `currentInput1Watermark`,
`currentInput2Watermark`, ...), a union feeds several edges into one input (one valve over all
their channels). The plan does not say which; `wmviz.record.job_inputs` reads it from the values
where the vertex reports each input's watermark, else every edge feeds input 1.

The samples are series of Flink's own metrics, keyed by (vertex, subtask, metric, split):
`currentInputWatermark`, `currentInput{N}Watermark`, `currentOutputWatermark` (the vertex's
chain tail, the watermark that leaves it), `sourceIdleTime`, and FLIP-513's per-split
`currentWatermark`, `idleTimeMsPerSecond`, `pausedTimeMsPerSecond`, `activeTimeMsPerSecond` and
`accumulated{Idle,Paused,Active}TimeMs` (Flink >= 2.1; their metric group is
`<operator>.split.<split id>.watermark`). A value holds from its sample until the next one.

On disk the recording is one JSON object, `{"format": "wmviz-job/1", ...}` (see `to_json`), the
readable export, or the same members in columnar form (`wmviz.record.job_columnar`: an Arrow file
read lazily, for jobs of thousands of subtasks). `read_recording` tells them apart by their bytes;
both read into a `JobRecording`, whose `series` is a dict or a `ColumnarSeries`.
A recording `record` appends is the same header followed by one line per sample
(`wmviz.record.job_lines`).
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from collections.abc import MutableMapping
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from wmviz.core.types import MAX_MS
from wmviz.disk.atomic import write_file
from wmviz.record.job_checks import JobFormatError as JobFormatError
from wmviz.record.job_checks import SeriesKey as SeriesKey
from wmviz.record.job_checks import long_of, optional_long, split_of, what, whole
from wmviz.record.job_checks import parallelism_of as parallelism_of
from wmviz.record.job_columnar import (
    ColumnarSeries,
    is_columnar_file,
    read_columnar,
    write_columnar,
)
from wmviz.record.job_config import JobConfig, JobConfigError, job_config_json, job_config_of
from wmviz.record.job_lines import LinesError, body_of_lines, header_of
from wmviz.record.job_sniff import SNIFF_BYTES as SNIFF_BYTES
from wmviz.record.job_sniff import is_recording_bytes as is_recording_bytes
from wmviz.trace.jsonline import loads_strict

FORMAT = "wmviz-job/1"
INPUT_WATERMARK = "currentInputWatermark"
OUTPUT_WATERMARK = "currentOutputWatermark"
SOURCE_IDLE_TIME = "sourceIdleTime"
SPLIT_WATERMARK = "currentWatermark"
TASK_FINISHED = "taskFinished"
"""Not a Flink metric: 1 from the sample at which the subtask's status (`/jobs/:jid/vertices/:vid`)
reads FINISHED, 0 when it runs again. A finished subtask sent its final MAX watermark and its
metrics are gone with it, so its output is MAX from then on (its last reported values are stale)."""
TASK_ATTEMPT = "taskAttempt"
"""Not a Flink metric either: the subtask's attempt number, a point whenever it changes. Any change
is a restart of the job: the valves start afresh (an epoch, as for one operator)."""
SPLIT_METRICS = (
    SPLIT_WATERMARK,
    "idleTimeMsPerSecond",
    "pausedTimeMsPerSecond",
    "activeTimeMsPerSecond",
    "accumulatedIdleTimeMs",
    "accumulatedPausedTimeMs",
    "accumulatedActiveTimeMs",
)
_INPUT_N = re.compile(r"currentInput([0-9]+)Watermark", re.ASCII)
# Ship strategies whose channels are Flink's POINTWISE distribution pattern; every other one
# (HASH, REBALANCE, BROADCAST, GLOBAL, SHUFFLE, CUSTOM, ...) connects all to all.
POINTWISE_STRATEGIES = frozenset({"FORWARD", "RESCALE"})
MAX_FILE_BYTES = 512 << 20


def input_metric(number: int) -> str:
    """Flink's metric of one logical input's watermark (numbered from 1, as Flink does)."""
    return f"currentInput{number}Watermark"


def input_number(metric: str) -> int | None:
    """N of `currentInput{N}Watermark`; None for any other metric."""
    match = _INPUT_N.fullmatch(metric)
    return int(match.group(1)) if match else None


def is_operator_metric(metric: str) -> bool:
    """A per-subtask metric this recording keeps (split metrics are kept under their split)."""
    return metric in (INPUT_WATERMARK, OUTPUT_WATERMARK, SOURCE_IDLE_TIME) or bool(_INPUT_N.fullmatch(metric))


@dataclass(frozen=True, slots=True)
class Vertex:
    """One job vertex: a chain of operators run by `parallelism` subtasks."""

    id: str
    name: str
    parallelism: int
    operators: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Edge:
    """One input edge of `target`, from `source`, feeding its logical input `input` (from 1)."""

    source: str
    target: str
    strategy: str
    input: int = 1

    def channels(self, subtask: int, upstream_parallelism: int, parallelism: int) -> list[int]:
        """The upstream subtasks one subtask of the target reads over this edge, in order.

        POINTWISE edges (forward, rescale) connect as Flink's EdgeManagerBuildUtil.connectPointwise
        does with S upstream and T downstream subtasks: S == T one to one; S > T downstream j reads
        the contiguous range [j*S/T, (j+1)*S/T); S < T upstream i feeds downstream
        [ceil(i*T/S), ceil((i+1)*T/S)), so downstream j reads the one i whose range holds j.
        """
        if self.strategy.upper() not in POINTWISE_STRATEGIES:
            return list(range(upstream_parallelism))
        up, down = upstream_parallelism, parallelism
        if up == down:
            return [subtask]
        if up > down:
            return list(range(subtask * up // down, (subtask + 1) * up // down))
        return [subtask * up // down]  # the one i with ceil(i*T/S) <= j < ceil((i+1)*T/S)


@dataclass
class JobRecording:
    """The plan and the metric series of one job."""

    job: str
    vertices: tuple[Vertex, ...]
    edges: tuple[Edge, ...]
    series: MutableMapping[SeriesKey, list[tuple[int, int]]] = field(default_factory=dict)
    """A dict while recording; a `ColumnarSeries` when read from the columnar form."""
    source: str = ""
    idleness_ms: int | None = None
    """The sources' idleness timeout the user named; None: never infer IDLE from sourceIdleTime."""
    watermark_interval_ms: int = 200
    notes: list[str] = field(default_factory=list)
    config: JobConfig = field(default_factory=JobConfig)
    """What the metrics cannot say (bounds, windows, joins, the clock): `wmviz.record.job_config`."""

    def vertex(self, vertex_id: str) -> Vertex:
        """A vertex by id."""
        return next(v for v in self.vertices if v.id == vertex_id)

    def inputs_of(self, vertex_id: str) -> dict[int, list[Edge]]:
        """The vertex's input edges by logical input number (empty for a source)."""
        out: dict[int, list[Edge]] = {}
        for edge in self.edges:
            if edge.target == vertex_id:
                out.setdefault(edge.input, []).append(edge)
        return dict(sorted(out.items()))

    def channels(self, edge: Edge, subtask: int) -> list[int]:
        """The upstream subtasks one subtask of the edge's target reads over it."""
        return edge.channels(
            subtask, self.vertex(edge.source).parallelism, self.vertex(edge.target).parallelism
        )

    def depth(self) -> dict[str, int]:
        """Each vertex's longest distance from a source: the most downstream have the largest.
        Walked with a stack, not recursion (a chain of hundreds of vertices is a plan too); an
        edge back to a vertex on the path being walked (a cycle) is not followed."""
        ups: dict[str, list[str]] = {v.id: [] for v in self.vertices}
        for e in self.edges:
            ups.setdefault(e.target, []).append(e.source)
        found: dict[str, int] = {}
        for root in ups:
            if root in found:
                continue
            stack, path, best = [(root, iter(ups[root]))], {root}, {root: -1}
            while stack:
                vid, rest = stack[-1]
                up = next((u for u in rest if u not in path), None)
                if up is None:
                    stack.pop()
                    path.discard(vid)
                    found.setdefault(vid, 1 + best.pop(vid))
                    if stack:
                        best[stack[-1][0]] = max(best[stack[-1][0]], found[vid])
                elif up in found:
                    best[vid] = max(best[vid], found[up])
                else:
                    path.add(up)
                    best[up] = -1
                    stack.append((up, iter(ups[up])))
        return {v.id: found[v.id] for v in self.vertices}

    def add(self, key: SeriesKey, time_ms: int, value: int) -> None:
        """Append one point; a point at the same time as the last one replaces it."""
        points = self.series.setdefault(key, [])
        if points and points[-1][0] >= time_ms:
            if points[-1][0] == time_ms:
                points[-1] = (time_ms, value)
            return
        points.append((time_ms, value))

    def value_at(self, key: SeriesKey, time_ms: int) -> int | None:
        """The series' value at a time: its last point at or before it; None before its first."""
        return self.values_over(key, [time_ms])[0]

    def values_over(self, key: SeriesKey, times: list[int]) -> list[int | None]:
        """The series' value (as `value_at`) at each of the sorted times, in one pass over its
        points from the first time's place: a column costs its points and times, not their product."""
        if isinstance(self.series, ColumnarSeries):
            return self.series.values_over(key, times)
        points = self.series.get(key)
        if not points or not times:
            return [None] * len(times)
        index, last = bisect_right(points, (times[0], MAX_MS)) - 1, len(points) - 1
        out: list[int | None] = []
        for time_ms in times:
            while index < last and points[index + 1][0] <= time_ms:
                index += 1
            out.append(points[index][1] if index >= 0 else None)
        return out

    def restarts(self) -> list[int]:
        """The times at which any subtask's attempt changed (a restart), in order."""
        found: set[int] = set()
        for key in [k for k in self.series if k[2] == TASK_ATTEMPT]:
            found |= {t for (_, before), (t, now) in pairwise(self.series[key]) if now != before}
        return sorted(found)

    def epoch_at(self, time_ms: int) -> int:
        """How many restarts happened at or before the time (0: the first attempt)."""
        return sum(1 for t in self.restarts() if t <= time_ms)

    def finished(self, vertex_id: str, subtask: int, time_ms: int) -> bool:
        """Whether the subtask's task had FINISHED by the time (`TASK_FINISHED`)."""
        return self.value_at((vertex_id, subtask, TASK_FINISHED, None), time_ms) == 1

    def output_at(self, vertex_id: str, subtask: int, time_ms: int) -> int | None:
        """The subtask's output watermark at a time (`outputs_over` at one time)."""
        return self.outputs_over(vertex_id, subtask, [time_ms])[0]

    def outputs_over(self, vertex_id: str, subtask: int, times: list[int]) -> list[int | None]:
        """The subtask's output watermark at each of the sorted times: MAX once it has FINISHED,
        else its `currentOutputWatermark`, or its input watermark when it reports no output (what
        its channels downstream carry)."""
        finished = self.values_over((vertex_id, subtask, TASK_FINISHED, None), times)
        outputs = self.values_over((vertex_id, subtask, OUTPUT_WATERMARK, None), times)
        inputs = self.values_over((vertex_id, subtask, INPUT_WATERMARK, None), times)
        return [
            MAX_MS if done == 1 else out if out is not None else into
            for done, out, into in zip(finished, outputs, inputs, strict=True)
        ]

    def times(self) -> list[int]:
        """Every sample time of the recording, in order."""
        if isinstance(self.series, ColumnarSeries):
            return self.series.sample_times()
        return sorted({t for points in self.series.values() for t, _ in points})

    def splits_of(self, vertex_id: str, subtask: int) -> list[str]:
        """The split ids a source subtask reported split metrics for."""
        return sorted(
            {k[3] for k in self.series if k[0] == vertex_id and k[1] == subtask and k[3] is not None}
        )


def to_json(rec: JobRecording) -> dict[str, Any]:
    """The recording as one JSON object."""
    return {
        **header_json(rec),
        "series": [
            {
                "vertex": k[0],
                "subtask": k[1],
                "metric": k[2],
                "split": k[3],
                "points": [list(p) for p in rec.series[k]],
            }
            for k in series_order(rec)
        ],
    }


def series_order(rec: JobRecording) -> list[SeriesKey]:
    """The series keys in the order both forms write them: by vertex, subtask, metric, split."""
    return sorted(rec.series, key=lambda k: (k[:3], k[3] or ""))


def header_json(rec: JobRecording) -> dict[str, Any]:
    """Every member of the JSON form but its series: the plan, the configuration, the notes."""
    return {
        "format": FORMAT,
        "job": rec.job,
        "source": rec.source,
        "idleness_ms": rec.idleness_ms,
        "watermark_interval_ms": rec.watermark_interval_ms,
        "notes": rec.notes,
        **({"config": job_config_json(rec.config)} if not rec.config.empty else {}),
        "vertices": [
            {"id": v.id, "name": v.name, "parallelism": v.parallelism, "operators": list(v.operators)}
            for v in rec.vertices
        ],
        "edges": [
            {"source": e.source, "target": e.target, "ship_strategy": e.strategy, "input": e.input}
            for e in rec.edges
        ],
    }


def write_recording(rec: JobRecording, path: Path, columnar: bool = False) -> None:
    """Write the recording whole (`wmviz.disk`: beside it, then renamed over it), so a reader or an
    interrupted recorder never sees half a file, and a killed run's work file is cleared later.
    `columnar`: as an Arrow file (`wmviz.record.job_columnar`), else as one JSON object."""
    if columnar:
        header = header_json(rec)
        recording_of({**header, "series": []}, path.name)  # the plan as its reader will judge it
        write_columnar(header, rec.series, series_order(rec), path)
        return
    body = to_json(rec)
    recording_of(body, path.name)  # JobFormatError: what would be written is no recording its reader takes
    write_file(path, json.dumps(body, separators=(",", ":")).encode("utf-8"))


def read_recording(path: Path) -> JobRecording:
    """A job recording written by `write_recording` (or by hand, in the same shape), in either form,
    or appended line by line by `record` (`wmviz.record.job_lines`)."""
    if is_columnar_file(path):
        header, series = read_columnar(path)
        rec = recording_of({**header, "format": FORMAT, "series": []}, path.name)
        ids = {v.id for v in rec.vertices}
        for index, key in enumerate(series):
            if key[0] not in ids:
                raise JobFormatError(
                    f"{path.name}: header index: series {index}: vertex {key[0]!r} is not in the plan"
                )
        rec.series = series
        return rec
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise JobFormatError(too_large(path, size))
    try:
        text = path.read_text(encoding="utf-8")
        # The appended form (`job_lines`, what `record` writes as it samples), else one document.
        # The trace readers' bounded decoder: nesting depth, sizes of numbers, no half surrogates.
        body = body_of_lines(text, path.name) if header_of(text) else loads_strict(text)
    except LinesError as err:
        raise JobFormatError(str(err)) from None
    except (ValueError, UnicodeDecodeError) as err:
        raise JobFormatError(f"{path.name}: not JSON ({err})") from None
    return recording_of(body, path.name)


def too_large(path: Path, size: int) -> str:
    """Why a JSON recording is not read, and what reads it: the columnar form, read in place
    (`wmviz convert` writes it from an appended recording line by line, `wmviz.record.job_stream`)."""
    bound = MAX_FILE_BYTES >> 20
    said = (
        f"{path.name}: {size / (1 << 20):,.0f} MB is larger than the {bound} MB a JSON job recording may be"
    )
    with path.open("rb") as stream:
        appended = '"layout"' in stream.readline(1 << 20).decode("utf-8", errors="replace")
    if appended:
        return (
            f"{said}; convert it to the columnar form, which is read in place, and open that: "
            f"wmviz convert {path.name} {path.with_suffix('.arrow').name}"
        )
    return f"{said}; write it in the columnar form (.arrow) where it is made"


def recording_of(body: Any, name: str) -> JobRecording:
    """The recording a decoded JSON body holds, judged as `read_recording` judges a file (`name`
    names it in messages); what `write_recording` writes is judged the same way first."""
    if not isinstance(body, dict) or body.get("format") != FORMAT:
        raise JobFormatError(f'{name}: not a job recording (expected {{"format": "{FORMAT}", ...}})')
    try:
        vertices = tuple(
            Vertex(
                str(v["id"]),
                str(v["name"]),
                parallelism_of(v["parallelism"], name),
                tuple(v.get("operators", ())),
            )
            for v in body["vertices"]
        )
        edges = tuple(
            Edge(
                str(e["source"]),
                str(e["target"]),
                str(e["ship_strategy"]),
                whole(e.get("input", 1), name, 1),
            )
            for e in body["edges"]
        )
        rec = JobRecording(
            job=str(body.get("job", "")),
            vertices=vertices,
            edges=edges,
            source=str(body.get("source", "")),
            idleness_ms=optional_long(body.get("idleness_ms"), f"{name}: idleness_ms"),
            watermark_interval_ms=whole(
                body.get("watermark_interval_ms", 200), f"{name}: watermark_interval_ms"
            ),
            notes=list(body.get("notes", [])),
        )
        ids = {v.id for v in vertices}
        for index, item in enumerate(body["series"]):
            where = f"{name}: series[{index}]"
            if item["vertex"] not in ids:
                raise JobFormatError(f"{where}: vertex {item['vertex']!r} is not in the plan")
            split = split_of(item.get("split"), where)
            key = (
                str(item["vertex"]),
                whole(item["subtask"], f"{where}: subtask"),
                str(item["metric"]),
                split,
            )
            rec.series[key] = sorted((long_of(t, where), long_of(v, where)) for t, v in item["points"])
    except (KeyError, TypeError, ValueError) as err:
        if isinstance(err, JobFormatError):
            raise
        raise JobFormatError(f"{name}: {what(err)} (see docs/whole-job.md for the format)") from None
    try:
        rec.config = job_config_of(body.get("config"), name, ids)
    except JobConfigError as err:
        raise JobFormatError(str(err)) from None
    for edge in rec.edges:
        if edge.source not in ids or edge.target not in ids:
            raise JobFormatError(
                f"{name}: edge {edge.source} -> {edge.target} names a vertex not in the plan"
            )
    return rec
