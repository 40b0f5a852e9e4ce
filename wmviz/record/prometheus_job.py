"""`wmviz import prometheus FILE --plan PLAN.json`: a whole job from a query_range export.

The plan (`/jobs/:jid/plan`, or `/jobs/:jid` whose `vertices` carry the names) gives the
vertices and edges; each series is matched to its vertex by `task_name` (as the reporter filters
it, `wmviz.record.names`) and to its place in the chain by `operator_name`:
- `currentOutputWatermark`: the chain's last operator reporting it (the watermark that leaves);
- `currentInputWatermark` and `currentInput{N}Watermark`: the task-scope series when there is
  one, else the chain's first operator reporting it (the watermark that enters);
- `sourceIdleTime` and the split metrics: any operator of the vertex (the source is its head).
Where two attempts of a subtask overlap, the newer attempt's point wins.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from wmviz.record.job import JobFormatError, JobRecording
from wmviz.record.job_plan import plan_of
from wmviz.record.names import chain_parts, name_key
from wmviz.record.prometheus import PrometheusError, Series, tasks_by_metric
from wmviz.trace.jsonline import JsonLineError, loads_strict

_TAIL_METRICS = ("currentOutputWatermark",)


def read_plan(path: Path) -> JobRecording:
    """An empty recording of the plan in `path`."""
    try:
        body = loads_strict(path.read_text(encoding="utf-8"))
    except (OSError, JsonLineError, UnicodeDecodeError) as err:
        raise JobFormatError(f"--plan {path.name}: cannot be read as JSON ({err})") from None
    # plan_of judges every node (a JobFormatError naming it), each parallelism within the channel budget.
    vertices, edges = plan_of(body, where=f"--plan {path.name}")
    job = body.get("jid") or (body.get("plan") or {}).get("jid") or ""
    return JobRecording(job=str(job), vertices=vertices, edges=edges)


def job_of(
    series: list[Series], plan: Path, idleness_ms: int | None, interval_ms: int, source: str
) -> JobRecording:
    """Every vertex of the plan, per subtask, input and split, from the series."""
    rec = read_plan(plan)
    rec.source, rec.idleness_ms, rec.watermark_interval_ms = source, idleness_ms, interval_ms
    by_key = {name_key(v.name): v for v in rec.vertices}
    unmatched = sorted({s.task for s in series if name_key(s.task) not in by_key})
    if len(unmatched) == len({s.task for s in series}):
        raise PrometheusError(
            f"no task_name in the export is a vertex of the plan: the plan has "
            f"{[v.name for v in rec.vertices]}; the file has {tasks_by_metric(series)}"
        )
    if unmatched:
        rec.notes.append(f"series of tasks not in the plan were left out: {unmatched}")
    # (vertex, subtask, metric, split) -> the series that may give it, with a rank: lower wins.
    chosen: dict[tuple, list[tuple[int, Series]]] = defaultdict(list)
    for s in series:
        vertex = by_key.get(name_key(s.task))
        if vertex is None:
            continue
        chosen[(vertex.id, s.subtask, s.name, s.split)].append((_rank(vertex.name, s), s))
    for key, candidates in chosen.items():
        rec.series[key] = _best_points(candidates)
    missing = [v.name for v in rec.vertices if not any(k[0] == v.id for k in rec.series)]
    if missing:
        rec.notes.append(f"no series for {missing}")
    return rec


def _rank(vertex_name: str, s: Series) -> int:
    """The rank of a series among those for one (vertex, subtask, metric, split); the lowest wins.
    A task-scope series ranks -1; an operator's ranks by its place in the vertex's chain, for a
    tail metric (the chain's output) the last place best, else the first."""
    chain = [name_key(part) for part in chain_parts(vertex_name)]
    place = chain.index(name_key(s.operator)) if name_key(s.operator) in chain else len(chain)
    if s.scope == "task":
        return -1
    if s.name in _TAIL_METRICS:
        return -place
    return place


def _best_points(candidates: list[tuple[int, Series]]) -> list[tuple[int, int]]:
    """The points of the best-ranked series, by time; at one time the latest attempt's value."""
    best = min(rank for rank, _ in candidates)
    points: dict[int, tuple[int, int]] = {}
    for rank, s in candidates:
        if rank != best:
            continue
        for t, value in s.points:
            held = points.get(t)
            if held is None or held[0] <= s.attempt:
                points[t] = (s.attempt, value)
    return [(t, v) for t, (_, v) in sorted(points.items())]
