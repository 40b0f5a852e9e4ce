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
  inferred idle when `sourceIdleTime` reaches the idleness timeout the user named plus two
  watermark intervals (the rule `wmviz.record.samples.Topology.idle_after_ms` states);
- any other subtask is idle when all its input channels are (what its valve would forward).

A subtask whose task has FINISHED (`TASK_FINISHED`, which the REST recorder writes) sent its final
MAX watermark: its output is MAX from then on, so it never holds anything.

A channel's watermark is the upstream subtask's `currentOutputWatermark` (the tail of its chain).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from functools import cache

from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.record.job import (
    SOURCE_IDLE_TIME,
    SPLIT_WATERMARK,
    JobRecording,
    Vertex,
)
from wmviz.record.samples import Topology


@dataclass(frozen=True, slots=True)
class Hop:
    """One hop of the chain: this subtask is held by its `input` (None at a source), at
    `watermark_ms`, `behind_ms` behind the fastest non-idle channel (at a source: the fastest
    non-idle subtask of its vertex, or split of its subtask), and held by it since `since_ms`."""

    vertex: str
    subtask: int
    input: int | None
    split: str | None
    watermark_ms: int
    behind_ms: int
    since_ms: int


@dataclass(frozen=True, slots=True)
class Blame:
    """The chain, root cause last, and why it ends where it ends."""

    at_ms: int
    chain: tuple[Hop, ...]
    ending: str

    def as_json(self) -> dict[str, list[dict[str, object]]]:
        """The `--json` shape: {"chain": [hop, ...]}."""
        return {"chain": [asdict(h) for h in self.chain]}


class BlameError(ValueError):
    """The recording cannot answer (no samples, an unknown vertex, a time outside it)."""


# A choice at one hop: (watermark, input number or None, upstream vertex id, upstream subtask, split).
Choice = tuple[int, int | None, str, int, str | None]


class Walker:
    """Answers, for one recording, what holds what at each sample time."""

    def __init__(self, rec: JobRecording) -> None:
        self.rec = rec
        self.times = rec.times()
        if not self.times:
            raise BlameError("the recording has no samples")
        self._by_id = {v.id: v for v in rec.vertices}
        self.idle = cache(self._idle)
        self._asking: set[tuple[str, int, int]] = set()
        """The subtasks whose idleness is being worked out (a plan with a cycle leads back to one)."""
        self.choose = cache(self._choose)

    def sample_time(self, at_ms: int | None) -> int:
        """The last sample time at or before `at_ms` (default: the last sample)."""
        if at_ms is None:
            return self.times[-1]
        earlier = [t for t in self.times if t <= at_ms]
        if not earlier:
            raise BlameError(f"--at {at_ms} is before the recording's first sample ({self.times[0]})")
        return earlier[-1]

    def previous(self, t: int) -> int | None:
        index = self.times.index(t)
        return self.times[index - 1] if index else None

    def output(self, vid: str, subtask: int, t: int) -> int | None:
        """The subtask's output watermark (its input watermark when it reports no output)."""
        return self.rec.output_at(vid, subtask, t)

    def split_idle(self, vid: str, subtask: int, split: str, t: int) -> bool:
        acc = self.rec.value_at((vid, subtask, "accumulatedIdleTimeMs", split), t)
        before = self.previous(t)
        if acc is not None and before is not None:
            earlier = self.rec.value_at((vid, subtask, "accumulatedIdleTimeMs", split), before)
            if earlier is not None:
                return 2 * (acc - earlier) >= t - before
        per_second = self.rec.value_at((vid, subtask, "idleTimeMsPerSecond", split), t)
        return per_second is not None and per_second >= 500

    def _idle(self, vid: str, subtask: int, t: int) -> bool:
        if self.rec.finished(vid, subtask, t):
            return False  # it sent MAX: it holds nothing, and is no idle channel either
        inputs = self.rec.inputs_of(vid)
        if inputs:
            if (vid, subtask, t) in self._asking:
                return False  # a cycle back to itself: nothing upstream says this channel is idle
            self._asking.add((vid, subtask, t))
            try:
                return all(
                    self.idle(e.source, up, t)
                    for edges in inputs.values()
                    for e in edges
                    for up in self.rec.channels(e, subtask)
                )
            finally:
                self._asking.discard((vid, subtask, t))
        splits = self.rec.splits_of(vid, subtask)
        if splits:
            return all(self.split_idle(vid, subtask, s, t) for s in splits)
        threshold = Topology(
            "",
            "",
            1,
            1,
            idleness_ms=self.rec.idleness_ms,
            watermark_interval_ms=self.rec.watermark_interval_ms,
        ).idle_after_ms
        idle_ms = self.rec.value_at((vid, subtask, SOURCE_IDLE_TIME, None), t)
        return threshold is not None and idle_ms is not None and idle_ms >= threshold

    def candidates(self, vid: str, subtask: int, t: int) -> list[Choice]:
        """Every non-idle channel (or, at a source, split) of the subtask with a known watermark."""
        inputs = self.rec.inputs_of(vid)
        out: list[Choice] = []
        if inputs:
            for number, edges in inputs.items():
                for edge in edges:
                    for up in self.rec.channels(edge, subtask):
                        wm = self.output(edge.source, up, t)
                        if wm is not None and not self.idle(edge.source, up, t):
                            out.append((wm, number, edge.source, up, None))
            return out
        for split in self.rec.splits_of(vid, subtask):
            wm = self.rec.value_at((vid, subtask, SPLIT_WATERMARK, split), t)
            if wm is not None and not self.split_idle(vid, subtask, split, t):
                out.append((wm, None, vid, subtask, split))
        return out

    def _choose(self, vid: str, subtask: int, t: int) -> Choice | None:
        """The channel (or split) holding the subtask at t: the lowest watermark, then the lowest
        input, upstream subtask and split id (as a valve, which takes the minimum, any tie holds)."""
        found = self.candidates(vid, subtask, t)
        return min(found, key=lambda c: (c[0], c[1] or 0, c[2], c[3], c[4] or "")) if found else None

    def held_since(self, vid: str, subtask: int, t: int, choice: Choice) -> int:
        """The first sample of the run, ending at t, in which the same channel held the subtask."""
        since = t
        for earlier in reversed(self.times[: self.times.index(t)]):
            again = self.choose(vid, subtask, earlier)
            if again is None or again[1:] != choice[1:]:
                break
            since = earlier
        return since

    def slowest_peer_since(self, vid: str, subtask: int, t: int) -> int:
        """At a source without split metrics: since when this subtask is its vertex's slowest."""
        since = t
        for earlier in reversed(self.times[: self.times.index(t)]):
            if self.slowest_subtask(vid, earlier) != subtask:
                break
            since = earlier
        return since

    def slowest_subtask(self, vid: str, t: int, *, include_idle: bool = False) -> int | None:
        """The vertex's non-idle subtask with the lowest output watermark at t."""
        outs = [
            (wm, s)
            for s in range(self._by_id[vid].parallelism)
            if (wm := self.output(vid, s, t)) is not None and (include_idle or not self.idle(vid, s, t))
        ]
        return min(outs)[1] if outs else None

    def stands_still(self, vid: str, t: int) -> bool:
        """The vertex's output (its slowest non-idle subtask's) did not advance since the previous
        sample. An idle subtask's frozen watermark holds nothing, so it does not count."""
        before = self.previous(t)
        if before is None:
            return False
        live = [s for s in range(self._by_id[vid].parallelism) if not self.idle(vid, s, t)]
        now = [self.output(vid, s, t) for s in live]
        then = [self.output(vid, s, before) for s in live]
        if not live or None in now or None in then:
            return False
        return min(v for v in now if v is not None) == min(v for v in then if v is not None) < MAX_MS

    def default_vertex(self, t: int) -> Vertex:
        """The most downstream vertex whose output stands still at t; else the most downstream."""
        depth = self.rec.depth()
        order = sorted(self.rec.vertices, key=lambda v: -depth[v.id])
        return next((v for v in order if self.stands_still(v.id, t)), order[0])

    def blame(self, vertex: Vertex | None, at_ms: int | None) -> Blame:
        """The chain from the vertex's slowest subtask at the sample at or before `at_ms`."""
        t = self.sample_time(at_ms)
        vertex = vertex or self.default_vertex(t)
        subtask = self.slowest_subtask(vertex.id, t, include_idle=True)
        if subtask is None:
            raise BlameError(f"{vertex.name!r} reported no watermark by {t}")
        hops: list[Hop] = []
        vid = vertex.id
        seen: set[tuple[str, int]] = set()
        while (vid, subtask) not in seen:
            seen.add((vid, subtask))
            name = self._by_id[vid].name
            choice = self.choose(vid, subtask, t)
            source = not self.rec.inputs_of(vid)
            if choice is None:
                wm = self.output(vid, subtask, t)
                hops.append(Hop(name, subtask, None, None, wm if wm is not None else MIN_MS, 0, t))
                if source and not self.rec.splits_of(vid, subtask):
                    return self._source_root(hops, vid, subtask, t)
                what = "split" if source else "input channel"
                return Blame(t, tuple(hops), f"every {what} of {name!r} subtask {subtask} is idle")
            others = [c[0] for c in self.candidates(vid, subtask, t)]
            if source:
                # A source subtask is also measured against its vertex's other non-idle subtasks.
                peers = range(self._by_id[vid].parallelism)
                others += [
                    w for s in peers if (w := self.output(vid, s, t)) is not None and not self.idle(vid, s, t)
                ]
            behind = _gap(max(others), choice[0])
            hops.append(
                Hop(
                    name,
                    subtask,
                    choice[1],
                    choice[4],
                    choice[0],
                    behind,
                    self.held_since(vid, subtask, t, choice),
                )
            )
            if source:
                return Blame(
                    t, tuple(hops), f"split {choice[4]!r} of source {name!r} subtask {subtask} holds it"
                )
            vid, subtask = choice[2], choice[3]
        return Blame(t, tuple(hops), "the plan has a cycle")

    def _source_root(self, hops: list[Hop], vid: str, subtask: int, t: int) -> Blame:
        """A source subtask without split metrics ends the chain, measured against its peers."""
        name = self._by_id[vid].name
        mine = hops[-1].watermark_ms
        if self.idle(vid, subtask, t):
            return Blame(t, tuple(hops), f"source {name!r} subtask {subtask} is idle")
        peers = [
            w
            for s in range(self._by_id[vid].parallelism)
            if (w := self.output(vid, s, t)) is not None and not self.idle(vid, s, t)
        ]
        hops[-1] = Hop(
            name,
            subtask,
            None,
            None,
            mine,
            _gap(max(peers, default=mine), mine),
            self.slowest_peer_since(vid, subtask, t),
        )
        return Blame(t, tuple(hops), f"source {name!r} subtask {subtask} holds it")


def _gap(high: int, low: int) -> int:
    """high - low, saturated to a Java long (MIN_MS, 'no watermark yet', is far behind)."""
    return max(0, min(high - low, MAX_MS))
