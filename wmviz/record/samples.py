"""Metric samples of a running job turned into a trace of one operator's inputs.

One builder serves every route that sees the job from outside (the REST recorder, the Prometheus
import): a `Sample` is what the job reported at one moment, and `TraceBuilder` turns a stream of
samples into trace rows, incrementally, so a recording interrupted at any sample is still a
complete trace up to it.

For each subtask of the chosen operator (an instance), the channels are the upstream vertex's
subtasks: all of them on an all-to-all edge (hash, rebalance, broadcast), only the subtask of the
same index on a forward edge. A channel's watermark is the upstream subtask's reported
`currentOutputWatermark`. Its status is not reported by Flink; it is inferred from the upstream
source's `sourceIdleTime` and the idleness timeout the user names (every such row says so in its
`inferred` column). The last row of each (sample, instance) carries the watermark the operator
itself reported (`currentInputWatermark`) in `reported_ms`: the check column that
`wmviz.record.agreement` compares the replay with.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from wmviz.core.errors import BadValue
from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.trace.quote import show
from wmviz.trace.timecells import ascii_float, ascii_int

FORWARD = "forward"
ALL_TO_ALL = "all-to-all"


@dataclass(frozen=True, slots=True)
class Topology:
    """The chosen operator and the vertex feeding it, as the recorder found them."""

    vertex: str
    upstream: str
    parallelism: int
    upstream_parallelism: int
    edge: str = ALL_TO_ALL
    idleness_ms: int | None = None
    """The job's idleness timeout (withIdleness), as the user passed it; None: never infer IDLE."""
    watermark_interval_ms: int = 200
    """pipeline.auto-watermark-interval: how often the source checks idleness."""
    channel_map: tuple[tuple[int, ...], ...] = ()
    """When given, each subtask's channels as keys of the samples' upstream maps (one vertex of a
    job recording: several input edges, or a pointwise edge); it replaces `edge`'s rule."""

    def __post_init__(self) -> None:
        """Flink refuses a forward edge between vertices of different parallelism when it builds
        the job graph: no recording or export of a real job can hold one."""
        if self.edge == FORWARD and not self.channel_map and self.parallelism != self.upstream_parallelism:
            raise BadValue(
                f"a forward edge needs the same parallelism on both sides (Flink refuses to build the "
                f"job otherwise): {self.upstream!r} has {self.upstream_parallelism} subtasks, "
                f"{self.vertex!r} {self.parallelism}; is the edge all-to-all?"
            )

    def channels_of(self, subtask: int) -> list[int]:
        """The upstream subtasks feeding one subtask, in channel order."""
        if self.channel_map:
            return list(self.channel_map[subtask])
        if self.edge == FORWARD:
            return [subtask]
        return list(range(self.upstream_parallelism))

    def channel_of(self, subtask: int, upstream: int) -> int | None:
        """The channel of `subtask` that upstream subtask `upstream` feeds; None if it feeds none."""
        if self.channel_map:
            channels = self.channel_map[subtask]
            return channels.index(upstream) if upstream in channels else None
        if self.edge == FORWARD:
            return 0 if upstream == subtask else None
        return upstream if 0 <= upstream < self.upstream_parallelism else None

    @property
    def channel_count(self) -> int:
        """Channels per instance (the same for every instance)."""
        if self.channel_map:
            return len(self.channel_map[0])
        return 1 if self.edge == FORWARD else self.upstream_parallelism

    @property
    def idle_after_ms(self) -> int | None:
        """The `sourceIdleTime` from which an upstream source is inferred IDLE.

        Flink's idleness countdown starts at the first periodic check that sees no record (one to
        two intervals after the last record) and declares IDLE at the first check more than the
        timeout later, so a source goes idle between timeout + 1 and timeout + 3 intervals after
        its last record; the middle of that window errs by at most one interval either way.
        """
        if self.idleness_ms is None:
            return None
        return self.idleness_ms + 2 * self.watermark_interval_ms


@dataclass(frozen=True, slots=True)
class Sample:
    """What the job reported at one moment. Missing metrics are simply absent from the maps."""

    time_ms: int
    epoch: int
    """How many restarts of the job were seen before this sample (a restart starts the valves afresh)."""
    upstream_watermark: dict[int, int] = field(default_factory=dict)
    upstream_idle_ms: dict[int, int] = field(default_factory=dict)
    reported: dict[int, int] = field(default_factory=dict)
    upstream_finished: frozenset[int] = frozenset()
    """Upstream subtasks whose task has FINISHED: they sent their final MAX watermark, and their
    metrics are gone with them."""


def long_from_metric(value: Any, *, clamp: bool = True) -> int:
    """A watermark metric's value (a string or number) as a Java long; MIN/MAX at the ends.

    Prometheus carries every value as a float, so Long.MIN_VALUE arrives as -9.223372036854776e18:
    anything at or beyond the ends of a long is the end itself. Text is read as the trace readers
    read numbers, in ASCII digits only; anything else is a ValueError. Without `clamp` (a REST
    answer) a value beyond ±2^63 is a ValueError too: Flink's REST API spells a long gauge in its
    digits and a double gauge as Java prints it, so neither is ever past the float image of a
    long's ends ("1e400" is no double Java prints: it would say Infinity, which no gauge the
    recorder reads reports).
    """
    number: Any = value
    if isinstance(value, str):
        try:
            number = ascii_int(value)
        except ValueError:
            number = ascii_float(value)  # a decimal, an exponent or a float's end (+Inf)
    if isinstance(number, bool) or not isinstance(number, int | float):
        raise BadValue(f"{show(value)} is not a number")
    if isinstance(number, float) and number != number:
        raise BadValue(f"{show(value)} is not a number")
    if not clamp and not -(2**63) <= number <= 2**63:
        raise BadValue(f"{show(value)} is beyond any Java long (±2^63), which no Flink gauge reports")
    if isinstance(number, float):
        if number <= MIN_MS:
            return MIN_MS
        if number >= MAX_MS:
            return MAX_MS
        return round(number)
    return min(max(number, MIN_MS), MAX_MS)


def time_cell(ms: int) -> int | str:
    """A watermark as a trace cell: MIN and MAX as the words, anything else the integer."""
    return "MIN" if ms == MIN_MS else "MAX" if ms == MAX_MS else ms


def instance_name(subtask: int, epoch: int) -> str:
    """Subtask 1 is instance "1"; after the job's k-th restart it is "1@r<k>" (fresh valves)."""
    return str(subtask) if epoch == 0 else f"{subtask}@r{epoch}"


class TraceBuilder:
    """Turns samples into trace rows (dicts of trace columns), one sample at a time."""

    PAYLOAD_COLUMNS = ("sample", "reported_ms", "inferred")
    """The columns its rows hold beyond the standard ones (a CSV header names them up front)."""

    def __init__(self, topology: Topology) -> None:
        self.topology = topology
        self.seq = 0
        self.samples = 0
        self._epoch = -1
        self._last_time_ms: int | None = None
        self._watermark: dict[tuple[int, int], int] = {}
        self._idle: set[tuple[int, int]] = set()
        self._finished: set[tuple[int, int]] = set()

    def config(self, name: str, description: str) -> dict[str, Any]:
        """The trace's config: its name, what it was recorded from, and the channel count."""
        return {"name": name, "description": description, "channels": {"0": self.topology.channel_count}}

    def add(self, sample: Sample) -> list[dict[str, Any]]:
        """The rows one sample adds, in arrival order."""
        return list(self.sample_rows(sample))

    def sample_rows(self, sample: Sample) -> Iterator[dict[str, Any]]:
        """The rows one sample adds, instance by instance: a caller with a row budget can stop
        between instances rather than hold 32,768 subtasks times 32,768 channels of rows first."""
        if sample.epoch != self._epoch:
            self.restart(sample.epoch)
        # The processing clock must not go backwards within an instance; a clock step back on the
        # JobManager is folded into the previous time.
        time_ms = sample.time_ms if self._last_time_ms is None else max(sample.time_ms, self._last_time_ms)
        self._last_time_ms = time_ms
        for subtask in range(self.topology.parallelism):
            yield from self.instance_rows(sample, subtask, time_ms)
        self.samples += 1

    def restart(self, epoch: int) -> None:
        """A new attempt of the job: every channel starts again at MIN and ACTIVE."""
        self._epoch = epoch
        self._watermark.clear()
        self._idle.clear()
        self._finished.clear()

    def instance_rows(self, sample: Sample, subtask: int, time_ms: int) -> list[dict[str, Any]]:
        """One instance's rows of a sample: reactivations, watermarks, then idleness, then the check."""
        instance = instance_name(subtask, sample.epoch)
        activated: list[dict[str, Any]] = []
        updated: list[dict[str, Any]] = []
        idled: list[dict[str, Any]] = []
        for channel, upstream in self.reported_channels(sample, subtask):
            key = (subtask, channel)
            if key in self._finished:
                continue
            if upstream in sample.upstream_finished:
                self._finished.add(key)
                idled.append(
                    {"channel": channel, "kind": "status", "status": "FINISHED",
                     "inferred": f"upstream subtask {upstream}'s task state is FINISHED (it sent MAX)"}
                )  # fmt: skip
                continue
            idle = self.inferred_idle(sample, upstream)
            watermark = sample.upstream_watermark.get(upstream)
            if idle is False and key in self._idle:
                self._idle.discard(key)
                activated.append(self.status_row(channel, "ACTIVE", sample, upstream))
            if watermark is not None and watermark > self._watermark.get(key, MIN_MS):
                self._watermark[key] = watermark
                (activated if activated and activated[-1]["channel"] == channel else updated).append(
                    {"channel": channel, "kind": "watermark", "watermark_ms": time_cell(watermark)}
                )
            if idle and key not in self._idle:
                self._idle.add(key)
                idled.append(self.status_row(channel, "IDLE", sample, upstream))
        rows = activated + updated + idled
        if not rows:
            # Nothing changed: a processing-time row still carries this sample's check.
            rows = [{"kind": "proctime"}]
        return self.stamped(rows, instance, time_ms, sample.reported.get(subtask))

    def stamped(
        self, rows: list[dict[str, Any]], instance: str, time_ms: int, reported: int | None
    ) -> list[dict[str, Any]]:
        """`rows` with their instance, processing time and sequence numbers; the last carries the
        sample's number and the watermark the job reported, the check a replay is held to."""
        for row in rows:
            row["instance"] = instance
            row["proc_ms"] = time_ms
        rows[-1]["sample"] = self.samples
        if reported is not None:
            rows[-1]["reported_ms"] = time_cell(reported)
        for row in rows:
            self.seq += 1
            row["seq"] = self.seq
        return rows

    def reported_channels(self, sample: Sample, subtask: int) -> list[tuple[int, int]]:
        """(channel, upstream subtask) of the channels the sample says anything about, in channel
        order: a channel it says nothing of changes nothing, so a subtask costs what the sample
        holds rather than its channel count (32,768 channels times 32,768 subtasks would be 10^9)."""
        told = set(sample.upstream_watermark) | set(sample.upstream_idle_ms) | sample.upstream_finished
        fed = ((self.topology.channel_of(subtask, upstream), upstream) for upstream in told)
        return sorted((channel, upstream) for channel, upstream in fed if channel is not None)

    def inferred_idle(self, sample: Sample, upstream: int) -> bool | None:
        """Whether the upstream source is inferred idle at this sample; None if it cannot be told."""
        threshold = self.topology.idle_after_ms
        idle_ms = sample.upstream_idle_ms.get(upstream)
        if threshold is None or idle_ms is None:
            return None
        return idle_ms >= threshold

    def status_row(self, channel: int, status: str, sample: Sample, upstream: int) -> dict[str, Any]:
        """A status row, marked as inferred and from what."""
        idle_ms = sample.upstream_idle_ms.get(upstream)
        threshold = self.topology.idle_after_ms
        relation = ">=" if status == "IDLE" else "<"
        why = (
            f"inferred: upstream subtask {upstream} sourceIdleTime {idle_ms} ms {relation} "
            f"{threshold} ms (idleness {self.topology.idleness_ms} ms + 2 watermark intervals)"
        )
        return {"channel": channel, "kind": "status", "status": status, "inferred": why}


def rows_of(builder: TraceBuilder, samples: Iterable[Sample]) -> Iterator[dict[str, Any]]:
    """Every row of a whole series of samples (the batch routes)."""
    for sample in samples:
        yield from builder.sample_rows(sample)
