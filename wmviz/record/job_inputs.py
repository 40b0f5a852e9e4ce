"""Which logical input of a vertex each of its input edges feeds, read from the watermarks.

The plan cannot say it. `/jobs/:jid/plan` lists a vertex's input edges in the order of its input
gates (`num` 0, 1, ...), and that order is not the order of its logical inputs: on a real Flink
2.3.0 job, a multiple-input operator given payments as input 1 and orders as input 2 lists orders'
edge first (`num` 0), and a two-input operator built `payments.connect(orders)` does the same
(docs/whole-job.md, Limits). The plan's other fields (`id`, `exchange`, `ship_strategy`) say
nothing about inputs either.

The values can, where the vertex reports each input's watermark (`currentInput{N}Watermark`; a
multiple-input task does, Flink 2.3.0's two-input task reports only their minimum). Input N's
watermark is its valve's: the output of the slowest non-idle channel of the edges feeding it. So
at a sample where input N's reported value is the output of a channel of exactly one edge (a
subtask of that edge's upstream vertex this subtask reads), that edge is a vote for input N. Each
edge takes the input with the most votes (at least `MIN_VOTES`, and strictly more than any other
input). Where the votes cannot decide every edge, or leave a reported input with no edge (a union
whose faster edge never holds its input, values too alike to tell apart), the vertex's edges are
all read as one input, as for a vertex that reports no per-input watermarks, and the recording's
notes say so: the minimum over all its non-idle channels is still its watermark.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from wmviz.record.job import Edge, JobRecording, input_metric, input_number

MIN_VOTES = 2
MAX_TIMES = 240
"""Votes are counted at up to this many sample times, spread evenly over the recording: a few
agreeing samples decide, and a long recording of a wide vertex stays quick to read."""


def reported_inputs(rec: JobRecording, vertex_id: str) -> list[int]:
    """The input numbers the vertex reports a watermark for (`currentInput{N}Watermark`)."""
    found = {input_number(key[2]) for key in rec.series if key[0] == vertex_id and key[3] is None}
    return sorted(n for n in found if n is not None)


def _spread(times: list[int]) -> list[int]:
    if len(times) <= MAX_TIMES:
        return times
    return [times[i * (len(times) - 1) // (MAX_TIMES - 1)] for i in range(MAX_TIMES)]


def votes(rec: JobRecording, vertex_id: str, edges: list[Edge], numbers: list[int]) -> list[Counter[int]]:
    """For each edge (in the order given), how many samples name it as holding each input."""
    counts: list[Counter[int]] = [Counter() for _ in edges]
    for t in _spread(rec.times()):
        outputs = {
            up: [rec.output_at(up, s, t) for s in range(rec.vertex(up).parallelism)]
            for up in {e.source for e in edges}
        }
        # An all-to-all edge gives every subtask the same channels: their values are taken once.
        taken: dict[tuple[str, tuple[int, ...]], set[int | None]] = {}
        for subtask in range(rec.vertex(vertex_id).parallelism):
            carried = []
            for edge in edges:
                read = (edge.source, tuple(rec.channels(edge, subtask)))
                if read not in taken:
                    taken[read] = {outputs[edge.source][up] for up in read[1]} - {None}
                carried.append(taken[read])
            for number in numbers:
                value = rec.value_at((vertex_id, subtask, input_metric(number), None), t)
                holders = [i for i, values in enumerate(carried) if value in values]
                if value is not None and len(holders) == 1:
                    counts[holders[0]][number] += 1
    return counts


def _winner(count: Counter[int]) -> int | None:
    ranked = count.most_common(2)
    if not ranked or ranked[0][1] < MIN_VOTES or (len(ranked) > 1 and ranked[1][1] == ranked[0][1]):
        return None
    return ranked[0][0]


def assign_inputs(rec: JobRecording) -> None:
    """Set the input of every edge into a vertex that reports per-input watermarks, from the votes;
    read the edges of a vertex the votes cannot decide as one input, with a note (once)."""
    edges = list(rec.edges)
    for vertex in rec.vertices:
        mine = [i for i, e in enumerate(edges) if e.target == vertex.id]
        numbers = reported_inputs(rec, vertex.id)
        if len(mine) < 2 or len(numbers) < 2:
            continue
        picks = [_winner(c) for c in votes(rec, vertex.id, [edges[i] for i in mine], numbers)]
        decided = None not in picks and set(picks) == set(numbers)
        for i, pick in zip(mine, picks, strict=True):
            edges[i] = replace(edges[i], input=pick if decided and pick is not None else 1)
        note = (
            f"{vertex.name!r} reports {len(numbers)} input watermarks, but its values do not tell "
            "which input each of its edges feeds: its edges are read as one input"
        )
        if not decided and note not in rec.notes:
            rec.notes.append(note)
        if decided and note in rec.notes:
            rec.notes.remove(note)
    rec.edges = tuple(edges)
