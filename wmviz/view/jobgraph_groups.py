"""The job graph's words beside the figure: each vertex's subtasks as one group, and the blame
chain short enough to read at a glance.

At a thousand subtasks a vertex cannot show each one; what a person needs is the group: the
lowest live output (the vertex's own, what its downstream valves take), the subtask that has it
(the culprit), the highest, how far apart they are and how many are idle. `group_rows` gives one
row per vertex; `group_line` the same for one vertex, as a sentence.

A blame chain through a long pipeline has a hop per vertex, and most say the same thing: "held by
input 1 at 10:04:55". `chain_lines` folds every run of `FOLD_AT` or more hops that hold the same
subtask by the same input at the same watermark into one line naming the run's ends and how
many it covers; the first hop and the root (the last) always keep a line of their own. Plain text:
the page escapes it (`wmviz.view.plain.literal`).
"""

from __future__ import annotations

from dataclasses import dataclass

from wmviz.view.jobgraph import GraphHop, GraphVertex, JobGraph
from wmviz.view.timefmt import TimeFormat, duration

FOLD_AT = 3
"""The shortest run of alike hops folded into one line: two alike hops read as well as one."""


@dataclass(frozen=True, slots=True)
class ChainLine:
    """One line of the chain as the page lists it: which vertices (one, or a run's ends and its
    length) and what holds them."""

    vertices: str
    detail: str
    hops: int = 1


def group_rows(graph: JobGraph, t: TimeFormat) -> list[dict[str, str | int]]:
    """One row per vertex: its subtasks as a group at the moment (see the module's words)."""
    return [
        {
            "vertex": v.name,
            "subtasks": v.parallelism,
            "idle": v.idle_subtasks,
            "lowest (its output)": _time(v.output_ms, t) if not v.idle else "idle",
            "culprit subtask": "" if v.culprit is None else v.culprit,
            "highest": _time(v.high_ms, t),
            "spread": "" if v.spread_ms is None else duration(v.spread_ms),
            "behind the leading": "" if v.behind_ms is None else duration(v.behind_ms),
        }
        for v in graph.vertices
    ]


def group_line(vertex: GraphVertex, t: TimeFormat) -> str:
    """The vertex's group as a sentence: subtasks, idle ones, lowest (and its culprit subtask),
    highest and spread."""
    idle = f", {vertex.idle_subtasks:,} idle" if vertex.idle_subtasks else ""
    head = f"{vertex.parallelism:,} subtasks{idle}"
    if vertex.output_ms is None:
        return f"{head}: no watermark reported"
    if vertex.idle:
        return f"{head}: every subtask idle, last output {t(vertex.output_ms)}"
    low = f"min {t(vertex.output_ms)}"
    if vertex.culprit is not None:
        low += f" (culprit: subtask {vertex.culprit})"
    if vertex.high_ms is None:
        return f"{head} · {low}"
    return f"{head} · {low} · max {t(vertex.high_ms)} · spread {duration(vertex.spread_ms or 0)}"


def chain_lines(graph: JobGraph, t: TimeFormat) -> list[ChainLine]:
    """The chain, first hop first and root last, runs of alike hops folded (the module's rule)."""
    names = {v.id: v.name for v in graph.vertices}
    hops = list(graph.chain)
    lines: list[ChainLine] = []
    i = 0
    while i < len(hops):
        end = i + 1
        if 0 < i < len(hops) - 1:  # the first hop and the root are never folded
            while end < len(hops) - 1 and _alike(hops[end], hops[i]):
                end += 1
        run = hops[i:end]
        if len(run) < FOLD_AT:
            run, end = run[:1], i + 1
        lines.append(_line(run, names, t, graph.first_ms))
        i = end
    return lines


def _alike(hop: GraphHop, first: GraphHop) -> bool:
    return (hop.subtask, hop.held_by, hop.watermark_ms) == (first.subtask, first.held_by, first.watermark_ms)


def _line(run: list[GraphHop], names: dict[str, str], t: TimeFormat, first_ms: int | None) -> ChainLine:
    hop = run[0]
    earliest = min(h.since_ms for h in run)
    latest = max(h.since_ms for h in run)
    since = t(earliest) + (" or earlier" if earliest == first_ms else "")
    if latest != earliest:
        since += f" to {t(latest)}"
    held = f"subtask {hop.subtask} held by {hop.held_by} at {t(hop.watermark_ms)}"
    held += f", {duration(hop.behind_ms)} behind"
    if len(run) == 1:
        return ChainLine(names.get(hop.vertex, hop.vertex), f"{held}, since {since}")
    ends = f"{names.get(hop.vertex, hop.vertex)} → … → {names.get(run[-1].vertex, run[-1].vertex)}"
    return ChainLine(f"{ends} ({len(run)} vertices alike)", f"each {held}, since {since}", len(run))


def _time(ms: int | None, t: TimeFormat) -> str:
    return "" if ms is None else t(ms)
