"""`wmviz record` without `--vertex`: every vertex of a job, through the REST API, into a job recording.

The plan comes from `/jobs/<job>` (names, parallelism) and `/jobs/<job>/plan` (edges); each
vertex's metric ids from `/jobs/<job>/vertices/<vertex>/metrics`, read like the one-vertex
recorder does (`wmviz.record.rest`). Metric ids are `<subtask>.<name>` at task scope,
`<subtask>.<operator>.<name>` at operator scope, and
`<subtask>.<operator>.split.<split id>.watermark.<name>` for FLIP-513's split metrics. Every value
of one sample gets the sample's one time.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field

from wmviz.core.budgets import subtasks_reason
from wmviz.core.settings import MAX_SUBTASKS
from wmviz.record.answers import job_state, obj, subtask_states, vertices_of
from wmviz.record.answers import metric_ids as listed_ids
from wmviz.record.job import (
    SPLIT_METRICS,
    TASK_ATTEMPT,
    TASK_FINISHED,
    JobRecording,
    SeriesKey,
    is_operator_metric,
)
from wmviz.record.job_plan import plan_of
from wmviz.record.names import name_key
from wmviz.record.rest import RecordError, RestClient, read_metrics, wall_clock_ms

_TASK = re.compile(r"([0-9]+)\.(currentInput[0-9]*Watermark)", re.ASCII)
_OPERATOR = re.compile(r"([0-9]+)\.(.+)\.(\w+)", re.ASCII)
_NAME = re.compile(r"\w+", re.ASCII)
_FINAL_STATES = {"FINISHED", "FAILED", "CANCELED", "SUSPENDED"}
_IDS_PER_GET = 40


def split_metric(mid: str) -> tuple[int, str, str, str] | None:
    """(subtask, operator, split id, metric) of `<subtask>.<operator>.split.<split id>.watermark.
    <metric>`: the operator is the shortest that leaves a split id, the metric the last segment.
    Read by finding the separators, in time linear in the id (a pattern with a lazy and a greedy
    group took ~9 s on a 190 KB id of `.split.` repeats, and an answer may hold thousands)."""
    subtask, dot, rest = mid.partition(".")
    body, dot2, name = rest.rpartition(".")
    if not (dot and dot2 and subtask.isascii() and subtask.isdigit() and _NAME.fullmatch(name)):
        return None
    if not body.endswith(".watermark"):
        return None
    body = body[: -len(".watermark")]
    at = body.find(".split.", 1)
    if at < 0 or at + len(".split.") >= len(body):
        return None
    return int(subtask), body[:at], body[at + len(".split.") :], name


def metric_ids(rec: JobRecording, vertex_id: str, ids: list[str]) -> dict[str, SeriesKey]:
    """The ids this recording reads from one vertex, each with its series key: the output
    watermark of the chain's last operator, the input watermarks at task scope or else of the
    chain's first operator, `sourceIdleTime` and split metrics of any operator."""
    chain = [name_key(op) for op in rec.vertex(vertex_id).operators]
    best: dict[SeriesKey, tuple[int, str]] = {}
    for mid in ids:
        if task := _TASK.fullmatch(mid):
            key: SeriesKey = (vertex_id, int(task.group(1)), task.group(2), None)
            rank = -1
        elif split := split_metric(mid):
            if split[3] not in SPLIT_METRICS:
                continue
            key, rank = (vertex_id, split[0], split[3], split[2]), 0
        elif (op := _OPERATOR.fullmatch(mid)) and is_operator_metric(op.group(3)):
            place = chain.index(name_key(op.group(2))) if name_key(op.group(2)) in chain else len(chain)
            key = (vertex_id, int(op.group(1)), op.group(3), None)
            rank = -place if op.group(3) == "currentOutputWatermark" else place
        else:
            continue
        if key not in best or rank < best[key][0]:
            best[key] = (rank, mid)
    return {mid: key for key, (_, mid) in best.items()}


def poller_ids(client: RestClient, job: str, vertex_id: str) -> list[str]:
    """The metric ids one vertex lists now."""
    path = f"/jobs/{job}/vertices/{vertex_id}/metrics"
    return listed_ids(client.get(path), path)


@dataclass
class JobPoller:
    """Samples every vertex of one job into its recording."""

    client: RestClient
    rec: JobRecording
    ids: dict[str, dict[str, SeriesKey]] = field(default_factory=dict)
    state: str = "RUNNING"
    samples: int = 0
    _attempts: dict[tuple[str, int], int] = field(default_factory=dict)
    """Each subtask's attempt at the last sample that read it (a point is written when it changes)."""
    _finished_told: set[SeriesKey] = field(default_factory=set)
    """The `TASK_FINISHED` series that have a point (a 0 is written once there is a 1 before it)."""

    @classmethod
    def start(cls, client: RestClient, job: str, idleness_ms: int | None, interval_ms: int) -> JobPoller:
        """Read the plan and the metric ids."""
        details = client.get(f"/jobs/{job}")
        vertices = details["vertices"] if vertices_of(details, f"/jobs/{job}") else []
        if not vertices:
            raise RecordError(f"job {job} has no vertices")
        listed = {v["id"]: poller_ids(client, job, v["id"]) for v in vertices}
        # Tasks register their metrics as they start: wait (a little) until every vertex has some.
        for _ in range(40):
            if all(listed.values()):
                break
            time.sleep(0.25)
            listed = {v["id"]: poller_ids(client, job, v["id"]) for v in vertices}
        try:
            plan = obj(client.get(f"/jobs/{job}/plan"), f"/jobs/{job}/plan")
            names, edges = plan_of({"vertices": vertices, **plan})
        except ValueError as err:
            raise RecordError(str(err)) from None
        for vertex in names:
            if not 1 <= vertex.parallelism <= MAX_SUBTASKS.get():
                raise RecordError(subtasks_reason(f"the plan's vertex {vertex.name!r}", vertex.parallelism))
        rec = JobRecording(job, names, edges, idleness_ms=idleness_ms, watermark_interval_ms=interval_ms)
        poller = cls(client, rec)
        poller.refresh(listed)
        return poller

    def refresh(self, listed: dict[str, list[str]] | None = None) -> None:
        """Look the metric ids up again (tasks register theirs as they start; splits as assigned)."""
        for vertex in self.rec.vertices:
            ids = listed[vertex.id] if listed else None
            if ids is None:
                ids = poller_ids(self.client, self.rec.job, vertex.id)
            self.ids[vertex.id] = metric_ids(self.rec, vertex.id, ids)

    def sample(self) -> bool:
        """Take one sample into `rec` (`take`); False while the job is not running."""
        taken = self.take()
        if taken is None:
            return False
        for key, value in taken[1]:
            self.rec.add(key, taken[0], value)
        return True

    def take(self) -> tuple[int, list[tuple[SeriesKey, int]]] | None:
        """One sample: its time and points; None while the job is not running. The sample is whole
        or not at all: it is returned only once every answer of it has been read and checked (an
        odd answer is a RecordError, a skipped sample). What the poller keeps between samples is
        bounded by the job's subtasks and metric ids, never by how many samples it took (the
        recorder appends each sample to its file and forgets it)."""
        self.state = self.job_state()
        if self.state != "RUNNING":
            return None
        if self.samples % 10 == 0:
            self.refresh()
        taken = wall_clock_ms()
        points: list[tuple[SeriesKey, int]] = []
        for vid, ids in self.ids.items():
            names = list(ids)
            for start in range(0, len(names), _IDS_PER_GET):
                chunk = {i: name for i, name in enumerate(names[start : start + _IDS_PER_GET])}
                for index, value in read_metrics(self.client, self.rec.job, vid, chunk).items():
                    points.append((ids[chunk[index]], value))
        points += self.task_states()
        self.samples += 1
        return taken, points

    def task_states(self) -> list[tuple[SeriesKey, int]]:
        """Each subtask's status and attempt, as points: `TASK_FINISHED` 1 while it reads FINISHED
        (its metrics are gone; it sent MAX), 0 once it runs again (a series only once it has one);
        `TASK_ATTEMPT` whenever its attempt number changes (a restart). Subtasks are checked for
        the shape Flink sends (`answers.subtask_states`); an index past the vertex's is odd too.
        The states are read whole before any is remembered, so a skipped sample changes nothing."""
        points: list[tuple[SeriesKey, int]] = []
        attempts: dict[tuple[str, int], int] = {}
        for vertex in self.rec.vertices:
            path = f"/jobs/{self.rec.job}/vertices/{vertex.id}"
            states = subtask_states(self.client.get(path), path, vertex.parallelism)
            for subtask, attempt in sorted(states.attempts.items()):
                key: SeriesKey = (vertex.id, subtask, TASK_FINISHED, None)
                if subtask in states.finished:
                    points.append((key, 1))
                elif key in self._finished_told:
                    points.append((key, 0))
                if self._attempts.get((vertex.id, subtask)) != attempt:
                    points.append(((vertex.id, subtask, TASK_ATTEMPT, None), attempt))
                attempts[(vertex.id, subtask)] = attempt
        self._attempts |= attempts
        self._finished_told |= {key for key, value in points if key[2] == TASK_FINISHED and value == 1}
        return points

    def job_state(self) -> str:
        """The job's state. A job the endpoint no longer knows (HTTP 404) or a vertex whose
        parallelism changed (a rescale: the plan the recording holds is no longer the job's) ends
        the recording, saying so in its notes."""
        path = f"/jobs/{self.rec.job}"
        try:
            details = self.client.get(path)
        except RecordError as err:
            if err.status == 404:
                raise RecordError(
                    f"job {self.rec.job} is gone from {self.client.base} ({err})", 404, final=True
                ) from None
            raise
        state = job_state(details, path)
        if state != "RUNNING":
            return state
        now = {v.id: v.parallelism for v in vertices_of(details, path)}
        changed = [
            f"{v.name!r} {v.parallelism} → {now.get(v.id)}"
            for v in self.rec.vertices
            if v.id in now and now[v.id] != v.parallelism  # a known vertex at another parallelism
        ]
        if changed:
            note = f"the job was rescaled ({', '.join(changed)} subtasks); the recording ends there"
            self.rec.notes.append(note)
            raise RecordError(note + " (record again for the new layout)", final=True)
        return state

    @property
    def over(self) -> bool:
        """The job reached a final state."""
        return self.state in _FINAL_STATES
