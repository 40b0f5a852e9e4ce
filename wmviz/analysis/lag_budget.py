"""`wmviz lag`: how late a vertex's output is at a moment, and why, as parts that add up.

The total is measured: how far the vertex's output is behind the *reference*, the wall clock (the
sample time) or, when the recording's clock is no wall clock (`config.clock` = `event`), the
newest event time any live source has read. A window's output is only as fresh as its last fired
window, so the total runs to the end of that window, not to the watermark.

The parts follow the blame chain (`Walker.blame`, the one walk): from the vertex's slowest subtask,
hop by hop, to the source subtask or split holding it. Watermarks telescope along it: each hop's
output is the next hop's input, so

    total = window waits + Σ (a hop's input − its output) + (reference − the root's watermark)

and each term is given to its cause:
- **window** (derived): at a window vertex on the chain, how far its watermark is past the end of
  its last fired window (`size_ms`, `slide_ms`, `offset_ms` of its config);
- **join bound** (measured): at an interval join, its input less its output, which Flink holds back
  by max(A, B) (the derived bound is named beside it);
- at the root, in this order, each no larger than what is left of reference − root watermark:
  **out-of-orderness** (derived: the root source's bound, Flink's watermark being the newest
  event time − bound − 1 ms), **idle timeout** (measured: how long the root has read nothing, up
  to the idleness timeout plus two probe intervals, after which Flink would have declared it idle),
  **alignment pause** (measured: the root split's paused time while it held the chain), and the
  rest, **stall** (the root's watermark stood still `LAG_THRESHOLD_MS` or longer) or **backlog**
  (it moves, but behind) — measured;
- **unexplained**: what no cause takes (a hop whose output trails its input without a join, or a
  root closer to the reference than its own bound allows). Never hidden: it is a part like the rest,
  and negative when the derived parts claim more than was measured.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Literal

from wmviz.analysis.blame import Walker
from wmviz.analysis.blame_answer import LAG_THRESHOLD_MS, Blame, BlameError, Hop, gap
from wmviz.core.generator import ChannelGenerator
from wmviz.core.interval_join import IntervalJoin
from wmviz.core.scenario import GeneratorConfig, IntervalJoinConfig, WindowConfig
from wmviz.core.timers import TimerService
from wmviz.core.types import MAX_MS, MIN_MS, is_epoch
from wmviz.core.windows import assigner_offset, max_timestamp, window_start
from wmviz.record.job import OUTPUT_WATERMARK, SOURCE_IDLE_TIME, SPLIT_WATERMARK, JobRecording, Vertex
from wmviz.view.timefmt import TimeFormat, duration

Kind = Literal["measured", "derived"]
CAUSES = (
    "out-of-orderness",
    "idle timeout",
    "window",
    "join bound",
    "alignment pause",
    "backlog",
    "stall",
    "unexplained",
)
"""Every cause, in the order the table and the bars list them."""
PAUSED = "accumulatedPausedTimeMs"


@dataclass(frozen=True, slots=True)
class Part:
    """One cause's share of the total: `ms` of it, `kind` measured or derived, `where` (the vertex,
    subtask and split it is found at) and `why`, in words."""

    cause: str
    ms: int
    kind: Kind
    where: str
    why: str


@dataclass(frozen=True, slots=True)
class Budget:
    """The freshness budget of one vertex at one sample time."""

    at_ms: int
    vertex: str
    subtask: int
    reference: str
    """"wall clock" or "newest event time"."""
    reference_ms: int
    watermark_ms: int
    """The vertex's output watermark (its slowest subtask's)."""
    total_ms: int
    parts: tuple[Part, ...]
    blame: Blame

    def by_cause(self) -> dict[str, int]:
        """Each cause's milliseconds (the causes of `CAUSES` absent here are 0)."""
        out = dict.fromkeys(CAUSES, 0)
        for part in self.parts:
            out[part.cause] += part.ms
        return out

    def as_json(self) -> dict[str, object]:
        """The `--json` shape (docs/lag.md)."""
        return {
            "at_ms": self.at_ms,
            "vertex": self.vertex,
            "subtask": self.subtask,
            "reference": self.reference,
            "reference_ms": self.reference_ms,
            "watermark_ms": self.watermark_ms,
            "total_ms": self.total_ms,
            "parts": [asdict(p) for p in self.parts],
            "blame": self.blame.as_json(),
        }


def bound_ms(generator: GeneratorConfig) -> int | None:
    """How far a source's watermark sits behind the newest event time it read, by its generator's
    own rule (`ChannelGenerator.candidate_watermark_ms`: newest − bound − 1); None for a SQL
    WATERMARK expression, whose distance depends on the expression (not computed here)."""
    if generator.style != "datastream":
        return None
    probe = ChannelGenerator(0, generator)
    probe.max_seen_ms = 0
    return -probe.candidate_watermark_ms()


def fired_end(window: WindowConfig, watermark_ms: int) -> int | None:
    """The end of the window vertex's last fired window at this watermark (a window fires once the
    watermark reaches its max timestamp, end − 1); None for session windows."""
    if window.size_ms is None:
        return None
    slide = window.slide_ms or window.size_ms
    offset = assigner_offset(window.size_ms, window.slide_ms, window.offset_ms)
    end = window_start(watermark_ms + 1, offset + window.size_ms, slide)  # ends sit on this grid
    return max_timestamp((end - window.size_ms, end)) + 1


_ASSIGNER = re.compile(r"\b(Tumbling|Sliding)EventTimeWindows\(([0-9]+)(?:, ([0-9]+))?\)")


def window_in_name(vertex: Vertex) -> WindowConfig | None:
    """The event-time windows a vertex's name shows, for a vertex the config says nothing of.

    Flink 2.3.0 describes a DataStream window operator as `Window(<assigner>, <trigger>, ...)`
    with the assigner as it prints itself, `TumblingEventTimeWindows(<size ms>)` or
    `SlidingEventTimeWindows(<size ms>, <slide ms>)` (no offset: an assigner with one is read as
    offset 0); a plan read without the job's vertex names (`wmviz import prometheus --plan`)
    names vertices by that description. None when the name shows no such assigner."""
    for text in (vertex.name, *vertex.operators):
        if (found := _ASSIGNER.search(text)) is not None:
            size = int(found.group(2))
            slide = int(found.group(3)) if found.group(1) == "Sliding" and found.group(3) else None
            if size >= 1 and (slide is None or slide >= 1):
                return WindowConfig(size_ms=size, slide_ms=slide)
    return None


class LagBudget:
    """Freshness budgets of one recording, over its blame walker."""

    def __init__(self, rec: JobRecording, walker: Walker | None = None) -> None:
        self.rec = rec
        self.walker = walker or Walker(rec)
        self._ids: dict[str, str] = {}
        for v in rec.vertices:
            self._ids.setdefault(v.name, v.id)

    def at(self, vertex: Vertex | None, at_ms: int | None) -> Budget:
        """The budget of the vertex (default: where blame starts) at the sample at or before `at_ms`."""
        w = self.walker
        t = w.sample_time(at_ms)
        blame = w.blame(vertex, t)
        first = blame.chain[0]
        vid = self._ids.get(first.vertex, first.vertex)
        out = w.output(vid, first.subtask, t)
        if out is None:
            raise BlameError(f"{first.vertex!r} reported no watermark by {t}")
        reference, reference_ms = self._reference(t)
        if out == MAX_MS:
            return Budget(t, first.vertex, first.subtask, reference, reference_ms, out, 0, (), blame)
        parts: list[Part] = []
        freshest = out
        for hop in blame.chain:
            freshest -= self._window_wait(hop, t, parts)
            self._hold(hop, t, parts)
        self._root(blame, reference_ms, t, parts)
        total = gap(reference_ms, max(freshest, MIN_MS))
        left = total - sum(p.ms for p in parts)
        if left:
            parts.append(Part("unexplained", left, "measured", first.vertex, "what no cause takes"))
        return Budget(
            t, first.vertex, first.subtask, reference, reference_ms, out, total, tuple(parts), blame
        )

    def over_time(self, vertex: Vertex | None, most: int = 240) -> list[Budget]:
        """Budgets at up to `most` sample times spread over the recording (each of them when fewer),
        the vertex fixed to the one the last sample's blame starts from when none is given."""
        times = self.walker.times
        step = max(1, -(-len(times) // most))
        picked = times[::step] if times[-1] in times[::step] else [*times[::step], times[-1]]
        if vertex is None:
            start = self.walker.blame(None, times[-1]).chain[0].vertex
            vertex = self.walker.vertex(self._ids.get(start, start))
        budgets = []
        for t in picked:
            try:
                budgets.append(self.at(vertex, t))
            except BlameError:
                continue  # nothing reported yet at that sample
        return budgets

    def _vid(self, hop: Hop) -> str:
        return self._ids.get(hop.vertex, hop.vertex)

    def _reference(self, t: int) -> tuple[str, int]:
        """(what the reference is, its time): the sample time, or the newest event time read."""
        clock = self.rec.config.clock
        if clock is None:  # not said: sample times that read as instants are a wall clock
            clock = "wall" if is_epoch(self.walker.times[0]) and is_epoch(self.walker.times[-1]) else "event"
        if clock == "wall":
            return "wall clock", t
        newest = [wm + self._bound_of(vid) for vid, wm in self._source_marks(t) if MIN_MS < wm < MAX_MS]
        if not newest:
            raise BlameError(f"no source reported a watermark by {t}: no newest event time to measure from")
        return "newest event time", max(newest)

    def _source_marks(self, t: int) -> list[tuple[str, int]]:
        """Every live source subtask's (or split's) watermark at t."""
        w, marks = self.walker, []
        for v in self.rec.vertices:
            if w.inputs_of(v.id):
                continue
            idle = w.idle_vector(v.id, t)
            for s in range(v.parallelism):
                splits = w.splits_of(v.id, s)
                for split in splits:
                    wm, idle_split = w.split_mark(v.id, s, split, t)
                    if wm is not None and not idle_split:
                        marks.append((v.id, wm))
                if not splits and not idle[s] and (wm := w.output(v.id, s, t)) is not None:
                    marks.append((v.id, wm))
        return marks

    def _generator(self, vid: str) -> GeneratorConfig | None:
        config = self.rec.config.of(vid)
        return config.generator if config is not None else None

    def _bound_of(self, vid: str) -> int:
        generator = self._generator(vid)
        return (bound_ms(generator) or 0) if generator is not None else 0

    def _window_wait(self, hop: Hop, t: int, parts: list[Part]) -> int:
        """At a window vertex: its watermark past its last fired window's end (0 elsewhere)."""
        vid = self._vid(hop)
        config = self.rec.config.of(vid)
        if config is not None and isinstance(config.operator, WindowConfig):
            window, said = config.operator, "its config"
        elif (named := window_in_name(self.walker.vertex(vid))) is not None:
            window, said = named, "its name in the plan"
        else:
            return 0
        wm = self.walker.output(vid, hop.subtask, t)
        if wm is None or not MIN_MS < wm < MAX_MS or (end := fired_end(window, wm)) is None:
            return 0
        wait = wm + 1 - end
        shape = duration(window.size_ms or 0)
        shape += f" sliding by {duration(window.slide_ms)}" if window.slide_ms else ""
        parts.append(
            Part(
                "window",
                wait,
                "derived",
                f"{hop.vertex} subtask {hop.subtask}",
                f"windows of {shape} ({said}): its watermark is {duration(wait)} past the end of its "
                f"last fired window ({TimeFormat()(end)}); later results wait for the next end",
            )
        )
        return wait

    def _hold(self, hop: Hop, t: int, parts: list[Part]) -> None:
        """A hop's input less its output: a join's bound, or unexplained."""
        vid = self._vid(hop)
        out = self.walker.output(vid, hop.subtask, t)
        if out is None or hop.watermark_ms in (MIN_MS, MAX_MS) or out in (MIN_MS, MAX_MS):
            return
        held = hop.watermark_ms - out
        if not held:
            return
        config = self.rec.config.of(vid)
        where = f"{hop.vertex} subtask {hop.subtask}"
        if config is not None and isinstance(config.operator, IntervalJoinConfig):
            bound = IntervalJoin(config.operator, TimerService()).hold_back_ms
            why = (
                f"its output trails its input by {duration(held)}; "
                f"an interval join holds back max(A, B) = {duration(bound)}"
            )
            parts.append(Part("join bound", held, "measured", where, why))
            return
        parts.append(
            Part(
                "unexplained",
                held,
                "measured",
                where,
                f"its output trails the input holding it by {duration(held)}, and no join is "
                "configured there",
            )
        )

    def _root(self, blame: Blame, reference_ms: int, t: int, parts: list[Part]) -> None:
        """Reference − the root's watermark, split into its causes (see the module)."""
        root = blame.chain[-1]
        vid = self._vid(root)
        where = f"{root.vertex} subtask {root.subtask}" + (f" split {root.split}" if root.split else "")
        left = gap(reference_ms, root.watermark_ms)
        if self.walker.inputs_of(vid):  # the chain ends at idle inputs or a cycle, not at a source
            parts.append(Part("stall", left, "measured", where, blame.ending))
            return
        generator = self._generator(vid)
        bound = bound_ms(generator) if generator is not None else None
        if bound is not None:
            parts.append(
                Part(
                    "out-of-orderness",
                    bound,
                    "derived",
                    where,
                    f"its watermark is the newest event time − "
                    f"{duration(generator.out_of_orderness_ms)} − 1ms"
                    if generator
                    else "",
                )
            )
            left -= bound
        still = t - self._still_since(vid, root, t)
        quiet = self._quiet_ms(vid, root, t) if still else 0  # a moving watermark waits for no timeout
        idle_after = self.walker.idle_after(vid)
        if idle_after is not None and quiet > 0 and left > 0:
            waited = min(quiet, idle_after, left)
            parts.append(
                Part(
                    "idle timeout",
                    waited,
                    "measured" if waited == quiet else "derived",
                    where,
                    f"no record for {duration(quiet)}; the idleness timeout declares it idle after "
                    f"{duration(idle_after)} (timeout + 2 probe intervals)",
                )
            )
            left -= waited
        paused = self._paused_ms(vid, root, t)
        if paused > 0 and left > 0:
            parts.append(
                Part(
                    "alignment pause",
                    min(paused, left),
                    "measured",
                    where,
                    f"paused by watermark alignment for {duration(paused)} while it held the chain",
                )
            )
            left -= min(paused, left)
        if left > 0:
            cause = "stall" if still >= LAG_THRESHOLD_MS else "backlog"
            why = (
                f"its watermark has not moved for {duration(still)} ({blame.ending})"
                if cause == "stall"
                else f"its watermark moves, but its data is behind ({blame.ending})"
            )
            if generator is not None and bound is None:
                why += "; its SQL WATERMARK expression's own distance is not computed, so it is counted here"
            parts.append(Part(cause, left, "measured", where, why))

    def _root_series(self, vid: str, root: Hop) -> tuple[str, int, str, str | None]:
        if root.split is not None:
            return (vid, root.subtask, SPLIT_WATERMARK, root.split)
        return (vid, root.subtask, OUTPUT_WATERMARK, None)

    def _still_since(self, vid: str, root: Hop, t: int) -> int:
        """The first sample of the run, ending at t, over which the root's watermark stood still
        (blame's own walk back, `Walker.same_since`: one pass over the series, then lookups)."""
        return self.walker.same_since(self._root_series(vid, root), t)

    def _quiet_ms(self, vid: str, root: Hop, t: int) -> int:
        """How long the root has read no record: Flink's `sourceIdleTime` of its subtask, else (a
        split) how long its watermark stood still."""
        if root.split is None:
            idle = self.rec.value_at((vid, root.subtask, SOURCE_IDLE_TIME, None), t)
            if idle is not None:
                return max(0, idle)
        return t - self._still_since(vid, root, t)

    def _paused_ms(self, vid: str, root: Hop, t: int) -> int:
        """The root split's paused time (FLIP-513 `accumulatedPausedTimeMs`) since it held the chain."""
        if root.split is None:
            return 0
        key = (vid, root.subtask, PAUSED, root.split)
        now, then = self.rec.value_at(key, t), self.rec.value_at(key, root.since_ms)
        return max(0, now - then) if now is not None and then is not None else 0
