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

The cost is linear in what is read: a vertex's idleness at a moment is worked out once for all its
subtasks, upstream first, with a stack rather than recursion; an all-to-all edge's channels are
summed up once per upstream vertex and moment (its lowest and highest live output), not once per
downstream subtask; a sample's place is a dict lookup.
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
from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.record.job import (
    POINTWISE_STRATEGIES,
    SOURCE_IDLE_TIME,
    SPLIT_WATERMARK,
    Edge,
    JobRecording,
    Vertex,
)
from wmviz.record.samples import Topology

# A choice at one hop: (watermark, input number or None, upstream vertex id, upstream subtask, split).
Choice = tuple[int, int | None, str, int, str | None]
# A vertex's live (non-idle) outputs at a moment: the lowest (watermark, subtask), the highest below MAX.
Spread = tuple[tuple[int, int] | None, int | None]


def all_to_all(edge: Edge) -> bool:
    """Whether every downstream subtask reads every upstream one (not Flink's pointwise pattern)."""
    return edge.strategy.upper() not in POINTWISE_STRATEGIES


class Walker:
    """Answers, for one recording, what holds what at each sample time."""

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
        self._idle: dict[tuple[str, int], bytes] = {}
        self._idle_after: dict[str, int | None] = {}
        self._columns: dict[str, list[list[int | None]]] = {}
        self._outputs: dict[tuple[str, int], list[int | None]] = {}
        self._spread: dict[tuple[str, int], Spread] = {}
        self._chosen: dict[tuple[str, int, int], Choice | None] = {}
        self._leading: dict[int, int | None] = {}

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
        """Every subtask's output watermark at t, from the vertex's columns (each subtask's output
        at every sample, `JobRecording.outputs_over`, read once in one pass over its series)."""
        key = (vid, t)
        if key not in self._outputs:
            if vid not in self._columns:
                self._columns[vid] = [
                    self.rec.outputs_over(vid, s, self.times) for s in range(self._by_id[vid].parallelism)
                ]
            index = self._place[t]
            self._outputs[key] = [column[index] for column in self._columns[vid]]
        return self._outputs[key]

    def output(self, vid: str, subtask: int, t: int) -> int | None:
        """The subtask's output watermark (its input watermark when it reports no output)."""
        return self.outputs(vid, t)[subtask]

    def channels(self, edge: Edge, subtask: int) -> list[int]:
        """The upstream subtasks one subtask of the edge's target reads over it."""
        return edge.channels(
            subtask, self._by_id[edge.source].parallelism, self._by_id[edge.target].parallelism
        )

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

    def split_idle(self, vid: str, subtask: int, split: str, t: int) -> bool:
        acc = self.rec.value_at((vid, subtask, "accumulatedIdleTimeMs", split), t)
        before = self.previous(t)
        if acc is not None and before is not None:
            earlier = self.rec.value_at((vid, subtask, "accumulatedIdleTimeMs", split), before)
            if earlier is not None:
                return 2 * (acc - earlier) >= t - before
        per_second = self.rec.value_at((vid, subtask, "idleTimeMsPerSecond", split), t)
        return per_second is not None and per_second >= 500

    def idle(self, vid: str, subtask: int, t: int) -> bool:
        """Whether the subtask is idle at t (see the module's rules)."""
        return bool(self.idle_vector(vid, t)[subtask])

    def idle_vector(self, vid: str, t: int) -> bytes:
        """Every subtask's idleness at t (1: idle), upstream vertices first, walked with a stack. A
        vertex reached again while its own idleness is being worked out (a plan with a cycle) counts
        as not idle there: nothing upstream says that channel is idle."""
        stack, asking = [vid], set()
        while stack:
            top = stack[-1]
            if (top, t) in self._idle:
                stack.pop()
                continue
            ups = [
                e.source
                for edges in self._inputs[top].values()
                for e in edges
                if (e.source, t) not in self._idle and e.source not in asking
            ]
            if ups and top not in asking:
                asking.add(top)
                stack.extend(ups)
                continue
            self._idle[(top, t)] = self._idle_of(top, t)
            asking.discard(top)
            stack.pop()
        return self._idle[(vid, t)]

    def _idle_of(self, vid: str, t: int) -> bytes:
        """One vertex's idleness vector, its upstream vertices' known (or being worked out)."""
        parallelism = self._by_id[vid].parallelism
        inputs = self._inputs[vid]
        if inputs:
            idle = bytearray(b"\x01") * parallelism
            for edge in (e for edges in inputs.values() for e in edges):
                up = self._idle.get((edge.source, t))
                if up is None or (all_to_all(edge) and not all(up)):
                    return bytes(parallelism)  # a cycle, or a live channel every subtask reads
                if not all_to_all(edge):
                    for s in range(parallelism):
                        idle[s] = idle[s] and all(up[u] for u in self.channels(edge, s))
        else:
            idle = bytearray(parallelism)
            for s in range(parallelism):
                splits = self.splits_of(vid, s)
                if splits:
                    idle[s] = all(self.split_idle(vid, s, split, t) for split in splits)
                else:
                    idle_ms = self.rec.value_at((vid, s, SOURCE_IDLE_TIME, None), t)
                    after = self.idle_after(vid)
                    idle[s] = after is not None and idle_ms is not None and idle_ms >= after
        for s in range(parallelism):
            if idle[s] and self.rec.finished(vid, s, t):
                idle[s] = 0  # it sent MAX: it holds nothing, and is no idle channel either
        return bytes(idle)

    def spread(self, vid: str, t: int) -> Spread:
        """The vertex's live outputs at t: the lowest (watermark, subtask) and the highest below MAX."""
        key = (vid, t)
        if key not in self._spread:
            idle = self.idle_vector(vid, t)
            live = [(w, s) for s, w in enumerate(self.outputs(vid, t)) if w is not None and not idle[s]]
            high = max((w for w, _ in live if w < MAX_MS), default=None)
            self._spread[key] = (min(live) if live else None, high)
        return self._spread[key]

    def leading(self, t: int) -> int | None:
        """The job's leading watermark at t, the mark every "behind" is measured from: the highest
        below MAX of every live subtask's output and every live split's watermark."""
        if t not in self._leading:
            marks = [high for vid in self._by_id if (high := self.spread(vid, t)[1]) is not None]
            for (vid, s), splits in self._splits.items():
                for split in splits:
                    wm = self.rec.value_at((vid, s, SPLIT_WATERMARK, split), t)
                    if wm is not None and wm < MAX_MS and not self.split_idle(vid, s, split, t):
                        marks.append(wm)
            self._leading[t] = max(marks, default=None)
        return self._leading[t]

    def choose(self, vid: str, subtask: int, t: int) -> Choice | None:
        """The channel (or split) holding the subtask at t: the lowest watermark, then the lowest
        input, upstream subtask and split id (as a valve, which takes the minimum, any tie holds).
        An all-to-all edge offers its upstream vertex's lowest live output (`spread`)."""
        key = (vid, subtask, t)
        if key in self._chosen:
            return self._chosen[key]
        found: list[Choice] = []
        for number, edges in self._inputs[vid].items():
            for edge in edges:
                if all_to_all(edge):
                    low = self.spread(edge.source, t)[0]
                    found += [(low[0], number, edge.source, low[1], None)] if low is not None else []
                    continue
                idle, outs = self.idle_vector(edge.source, t), self.outputs(edge.source, t)
                for up in self.channels(edge, subtask):
                    if (wm := outs[up]) is not None and not idle[up]:
                        found.append((wm, number, edge.source, up, None))
        if not self._inputs[vid]:
            for split in self.splits_of(vid, subtask):
                wm = self.rec.value_at((vid, subtask, SPLIT_WATERMARK, split), t)
                if wm is not None and not self.split_idle(vid, subtask, split, t):
                    found.append((wm, None, vid, subtask, split))
        best = min(found, key=lambda c: (c[0], c[1] or 0, c[2], c[3], c[4] or "")) if found else None
        self._chosen[key] = best
        return best

    def held_since(self, vid: str, subtask: int, t: int, choice: Choice) -> int:
        """The first sample of the run, ending at t, in which the same channel held the subtask."""
        index = self._place[t]
        while index and (again := self.choose(vid, subtask, self.times[index - 1])) is not None:
            if again[1:] != choice[1:]:
                break
            index -= 1
        return self.times[index]

    def slowest_peer_since(self, vid: str, subtask: int, t: int) -> int:
        """At a source without split metrics: since when this subtask is its vertex's slowest."""
        index = self._place[t]
        while index and self.slowest_subtask(vid, self.times[index - 1]) == subtask:
            index -= 1
        return self.times[index]

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
        before = self.previous(t)
        if before is None:
            return False
        idle = self.idle_vector(vid, t)
        live = [s for s in range(self._by_id[vid].parallelism) if not idle[s]]
        now, then = self.outputs(vid, t), self.outputs(vid, before)
        if not live or any(now[s] is None or then[s] is None for s in live):
            return False
        return min(now[s] or 0 for s in live) == min(then[s] or 0 for s in live) < MAX_MS

    def still_since(self, vid: str, t: int) -> int:
        """The sample from which the vertex's output stood still up to t (t itself if it moved)."""
        index = self._place[t]
        while index and self.stands_still(vid, self.times[index]):
            index -= 1
        return self.times[index]

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
            since = self.held_since(vid, subtask, t, choice)
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
