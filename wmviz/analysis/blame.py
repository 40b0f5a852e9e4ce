"""`wmviz blame`: from a stalled vertex back, hop by hop, to the source subtask (and split) holding it.

At each hop the subtask's watermark is its valve's: the minimum over the channels of its inputs
that are not idle (an idle channel does not hold a valve back; when every channel is idle the
valve is idle and nothing upstream holds it). The hop follows the channel with that minimum to the
upstream subtask, until a source. A source subtask with FLIP-513 split metrics names its split
holding it the same way (the minimum over its non-idle splits).

Idleness is read where Flink reports it and inferred only where it must be:
- a split is idle when its `accumulatedIdleTimeMs` grew by at least half the time since the
  previous sample, or (without that series) when `idleTimeMsPerSecond` is at least 500;
- a source subtask with split metrics is idle when all its splits are; one without them is
  inferred idle when `sourceIdleTime` reaches the idleness timeout (the source's own, from the
  recording's `config`, else the one the user named) plus two watermark intervals (the rule
  `wmviz.record.samples.Topology.idle_after_ms` states);
- any other subtask is idle when all its input channels are (what its valve would forward).

A subtask whose task has FINISHED (`TASK_FINISHED`, which the REST recorder writes) sent its final
MAX watermark: its output is MAX from then on, so it never holds anything.

A channel's watermark is the upstream subtask's `currentOutputWatermark` (the tail of its chain).
Every hop is measured against one mark, the job's leading watermark at that moment (`leading`), so
one watermark reads as one "behind" everywhere, on every hop and on the graph.

Blame always finds the slowest path; it calls it a stall only past `LAG_THRESHOLD_MS`
(docs/whole-job.md says why that much): when the first hop is that far behind the leading
watermark, or the starting vertex's output has stood still that long. Under it the answer is
"nothing is stalled; the slowest path is ...".

The cost is linear in what is read, once: what a hop reads (a vertex's outputs and idleness, its
live spread, a subtask's choice of channel) is worked out for every sample time at once, a vertex
at a time, in `wmviz.analysis.blame_columns.Columns`; a question at one moment is a lookup there,
and a walk back in time ("held since", "still since", the budget's "stood still since") reads the
start of its run from an array made in one pass (`run_starts`), not by asking every earlier sample.
"""

from __future__ import annotations

from bisect import bisect_right

from wmviz.analysis.blame_answer import (
    LAG_THRESHOLD_MS,
    Blame,
    BlameError,
    Hop,
    gap,
    healthy_ending,
)
from wmviz.analysis.blame_columns import Columns
from wmviz.analysis.blame_columns import all_to_all as all_to_all
from wmviz.core.types import MIN_MS
from wmviz.record.job import Edge, JobRecording, SeriesKey, Vertex
from wmviz.record.samples import Topology

# A choice at one hop: (watermark, input number or None, upstream vertex id, upstream subtask, split).
Choice = tuple[int, int | None, str, int, str | None]
# A vertex's live (non-idle) outputs at a moment: the lowest (watermark, subtask), the highest below MAX.
Spread = tuple[tuple[int, int] | None, int | None]


class Walker:
    """Answers, for one recording, what holds what at each sample time (read from `Columns`,
    which works each reading out for every sample time at once)."""

    def __init__(self, rec: JobRecording) -> None:
        self.rec = rec
        self.times = rec.times()
        if not self.times:
            raise BlameError("the recording has no samples")
        self._place = {t: i for i, t in enumerate(self.times)}
        self._by_id: dict[str, Vertex] = {}
        for v in rec.vertices:
            self._by_id.setdefault(v.id, v)  # as `rec.vertex`: the first of an id
        self._inputs = {vid: rec.inputs_of(vid) for vid in self._by_id}
        self._splits: dict[tuple[str, int], list[str]] = {}
        for vid, subtask, _, split in rec.series:
            if split is not None:
                self._splits.setdefault((vid, subtask), []).append(split)
        for key, splits in self._splits.items():
            self._splits[key] = sorted(set(splits))  # `rec.splits_of`, for every subtask at once
        self._idle_after: dict[str, int | None] = {}
        self.columns = Columns(rec, self.times, self._splits, self.idle_after)

    def vertex(self, vid: str) -> Vertex:
        """A vertex by id."""
        return self._by_id[vid]

    def inputs_of(self, vid: str) -> dict[int, list[Edge]]:
        """The vertex's input edges by logical input number (`JobRecording.inputs_of`, read once)."""
        return self._inputs[vid]

    def splits_of(self, vid: str, subtask: int) -> list[str]:
        """The split ids a source subtask reported split metrics for."""
        return self._splits.get((vid, subtask), [])

    def sample_time(self, at_ms: int | None) -> int:
        """The last sample time at or before `at_ms` (default: the last sample)."""
        if at_ms is None:
            return self.times[-1]
        index = bisect_right(self.times, at_ms)
        if not index:
            raise BlameError(f"--at {at_ms} is before the recording's first sample ({self.times[0]})")
        return self.times[index - 1]

    def previous(self, t: int) -> int | None:
        index = self._place[t]
        return self.times[index - 1] if index else None

    def outputs(self, vid: str, t: int) -> list[int | None]:
        """Every subtask's output watermark at t (`Columns.outputs`: its output, else its input
        watermark, MAX once FINISHED)."""
        values, present = self.columns.outputs(vid)
        index = self._place[t]
        return [
            v if p else None
            for v, p in zip(values[:, index].tolist(), present[:, index].tolist(), strict=True)
        ]

    def output(self, vid: str, subtask: int, t: int) -> int | None:
        """The subtask's output watermark (its input watermark when it reports no output)."""
        values, present = self.columns.outputs(vid)
        index = self._place[t]
        return int(values[subtask, index]) if present[subtask, index] else None

    def channels(self, edge: Edge, subtask: int) -> list[int]:
        """The upstream subtasks one subtask of the edge's target reads over it."""
        return self.columns.channels(edge, subtask)

    def idle_after(self, vid: str) -> int | None:
        """After how long without records (`sourceIdleTime`) a source subtask is idle: its own
        config's idleness timeout and probe interval where the recording gives one (docs/lag.md),
        else the recording's `idleness_ms`; by the one rule, `Topology.idle_after_ms`."""
        if vid not in self._idle_after:
            config = self.rec.config.of(vid)
            generator = config.generator if config is not None else None
            if generator is not None:
                timeout, interval = generator.idle_timeout_ms, generator.interval_ms
            else:
                timeout, interval = self.rec.idleness_ms, self.rec.watermark_interval_ms
            topology = Topology("", "", 1, 1, idleness_ms=timeout, watermark_interval_ms=interval)
            self._idle_after[vid] = topology.idle_after_ms
        return self._idle_after[vid]

    def split_mark(self, vid: str, subtask: int, split: str, t: int) -> tuple[int | None, bool]:
        """(the split's watermark at t, whether it is idle then), `Columns.split_rows`'s rule."""
        _, (marks, said), idle = self.columns.split_rows(vid)
        row, index = self.columns.split_row(vid, subtask, split), self._place[t]
        if row is None:
            return None, False
        return (int(marks[row, index]) if said[row, index] else None), bool(idle[row, index])

    def split_idle(self, vid: str, subtask: int, split: str, t: int) -> bool:
        """Whether the split is idle at t (see the module's rules)."""
        return self.split_mark(vid, subtask, split, t)[1]

    def idle(self, vid: str, subtask: int, t: int) -> bool:
        """Whether the subtask is idle at t (see the module's rules)."""
        return bool(self.columns.idle(vid)[subtask, self._place[t]])

    def idle_vector(self, vid: str, t: int) -> bytes:
        """Every subtask's idleness at t (1: idle): `Columns.idle`, worked out for every sample."""
        return self.columns.idle(vid)[:, self._place[t]].tobytes()

    def spread(self, vid: str, t: int) -> Spread:
        """The vertex's live outputs at t: the lowest (watermark, subtask) and the highest below MAX."""
        low_w, low_s, any_live, high, has_high = self.columns.spread(vid)
        i = self._place[t]
        low = (int(low_w[i]), int(low_s[i])) if any_live[i] else None
        return low, (int(high[i]) if has_high[i] else None)

    def leading(self, t: int) -> int | None:
        """The job's leading watermark at t, the mark every "behind" is measured from: the highest
        below MAX of every live subtask's output and every live split's watermark."""
        values, found = self.columns.leading()
        i = self._place[t]
        return int(values[i]) if found[i] else None

    def choose(self, vid: str, subtask: int, t: int) -> Choice | None:
        """The channel (or split) holding the subtask at t: the lowest watermark, then the lowest
        input, upstream subtask and split id (as a valve, which takes the minimum, any tie holds).
        An all-to-all edge offers its upstream vertex's lowest live output (`Columns.choices`)."""
        mark, number, source, up, split, has = self.columns.choices(vid, subtask)
        i = self._place[t]
        if not has[i]:
            return None
        name = self.columns.split_names[int(split[i])]
        return (
            int(mark[i]),
            int(number[i]) if self._inputs[vid] else None,
            self.columns.vertex_ids[int(source[i])],
            int(up[i]),
            name or None,
        )

    def held_since(self, vid: str, subtask: int, t: int) -> int:
        """The first sample of the run, ending at t, in which the same channel held the subtask
        (a lookup: `Columns.held_from` found every run's start in one pass)."""
        return self.times[int(self.columns.held_from(vid, subtask)[self._place[t]])]

    def slowest_peer_since(self, vid: str, subtask: int, t: int) -> int:
        """At a source without split metrics: since when this subtask is its vertex's slowest."""
        return self.times[int(self.columns.peer_from(vid, subtask)[self._place[t]])]

    def slowest_subtask(self, vid: str, t: int, *, include_idle: bool = False) -> int | None:
        """The vertex's non-idle subtask with the lowest output watermark at t."""
        if include_idle:
            outs = [(w, s) for s, w in enumerate(self.outputs(vid, t)) if w is not None]
            return min(outs)[1] if outs else None
        low = self.spread(vid, t)[0]
        return low[1] if low else None

    def stands_still(self, vid: str, t: int) -> bool:
        """The vertex's output (its slowest non-idle subtask's) did not advance since the previous
        sample. An idle subtask's frozen watermark holds nothing, so it does not count."""
        return bool(self.columns.stands_still(vid)[self._place[t]])

    def still_since(self, vid: str, t: int) -> int:
        """The sample from which the vertex's output stood still up to t (t itself if it moved)."""
        return self.times[int(self.columns.still_from(vid)[self._place[t]])]

    def same_since(self, key: SeriesKey, t: int) -> int:
        """The first sample of the run, ending at t, over which the series read the same."""
        return self.times[int(self.columns.same_from(key)[self._place[t]])]

    def default_vertex(self, t: int) -> Vertex:
        """The most downstream vertex whose output stands still at t; else the most downstream."""
        depth = self.rec.depth()
        order = sorted(self._by_id.values(), key=lambda v: -depth[v.id])
        return next((v for v in order if self.stands_still(v.id, t)), order[0])

    def blame(self, vertex: Vertex | None, at_ms: int | None) -> Blame:
        """The chain from the vertex's slowest subtask at the sample at or before `at_ms`, and
        whether it is a stall (`LAG_THRESHOLD_MS`)."""
        t = self.sample_time(at_ms)
        vertex = vertex or self.default_vertex(t)
        subtask = self.slowest_subtask(vertex.id, t, include_idle=True)
        if subtask is None:
            raise BlameError(f"{vertex.name!r} reported no watermark by {t}")
        hops, ending, held = self._walk(vertex.id, subtask, t)
        lag = hops[0].behind_ms
        still = t - self.still_since(vertex.id, t)
        stalled = held and (lag >= LAG_THRESHOLD_MS or still >= LAG_THRESHOLD_MS)
        if held and not stalled:
            ending = healthy_ending(hops, lag)
        return Blame(t, tuple(hops), ending, stalled, lag, self.times[0])

    def _walk(self, vid: str, subtask: int, t: int) -> tuple[list[Hop], str, bool]:
        """(the hops, why the walk ends, whether a source or split holds it)."""
        lead = self.leading(t)
        hops: list[Hop] = []
        seen: set[tuple[str, int]] = set()
        while (vid, subtask) not in seen:
            seen.add((vid, subtask))
            name = self._by_id[vid].name
            choice = self.choose(vid, subtask, t)
            source = not self._inputs[vid]
            if choice is None:
                wm = self.output(vid, subtask, t)
                wm = wm if wm is not None else MIN_MS
                if source and not self.splits_of(vid, subtask):
                    return self._source_root(hops, vid, subtask, t, wm, lead)
                what = "split" if source else "input channel"
                hops.append(
                    Hop(name, subtask, None, None, wm, gap(lead, wm), t, f"nothing: every {what} is idle")
                )
                return hops, f"every {what} of {name!r} subtask {subtask} is idle", False
            since = self.held_since(vid, subtask, t)
            held_by = f"split {choice[4]!r}" if source else f"input {choice[1]}"
            hops.append(
                Hop(name, subtask, choice[1], choice[4], choice[0], gap(lead, choice[0]), since, held_by)
            )
            if source:
                return hops, f"split {choice[4]!r} of source {name!r} subtask {subtask} holds it", True
            vid, subtask = choice[2], choice[3]
        return hops, "the plan has a cycle", False

    def _source_root(
        self, hops: list[Hop], vid: str, subtask: int, t: int, wm: int, lead: int | None
    ) -> tuple[list[Hop], str, bool]:
        """A source subtask without split metrics ends the chain: its own reading holds it."""
        name = self._by_id[vid].name
        if self.idle(vid, subtask, t):
            hops.append(Hop(name, subtask, None, None, wm, gap(lead, wm), t, "nothing: it is idle"))
            return hops, f"source {name!r} subtask {subtask} is idle", False
        since = self.slowest_peer_since(vid, subtask, t)
        hops.append(
            Hop(name, subtask, None, None, wm, gap(lead, wm), since, "its own reading (no split metrics)")
        )
        return hops, f"source {name!r} subtask {subtask} holds it", True
