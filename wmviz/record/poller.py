"""Sampling one resolved vertex over time: restarts, rescales and the end of the job noticed.

A restart is told per subtask index: the attempt number of each subtask of both vertices, keyed by
its index, changed since the last sample (answers list subtasks in no promised order, so comparing
them in answer order saw a "restart" on every poll), or the job passed through RESTARTING. A
rescale (a vertex's parallelism changed, typically across a restart) re-resolves the vertex and
starts fresh instances at the new parallelism, and says so in `notes`; a rescale that changes the
channels of each subtask ends the recording, since one trace has one channel count per input.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from wmviz.record.answers import job_state, subtask_states, vertices_of
from wmviz.record.rest import JobView, RecordError, RestClient, read_metrics, refresh_metric_ids, resolve
from wmviz.record.samples import Sample, Topology

_FINAL_STATES = {"FINISHED", "FAILED", "CANCELED", "SUSPENDED"}
_RESTARTING = {"RESTARTING", "CREATED", "INITIALIZING", "RECONCILING"}


def layout(topology: Topology) -> str:
    """A topology's parallelism as the notes spell it."""
    return (
        f"{topology.vertex!r} × {topology.parallelism} fed by {topology.upstream!r} × "
        f"{topology.upstream_parallelism} ({topology.edge}, {topology.channel_count} channels per subtask)"
    )


@dataclass
class Poller:
    """Takes samples of one resolved job, noticing restarts, rescales and the end of the job."""

    client: RestClient
    view: JobView
    epoch: int = 0
    state: str = "RUNNING"
    unsettled: int = 0
    notes: list[str] = field(default_factory=list)
    """What changed under the recording (rescales), in order; the CLI prints each as it comes."""
    _attempts: dict[tuple[str, int], int] | None = None
    _passed_restart: bool = False

    def job_state(self) -> str:
        """The job's state; a job the endpoint no longer knows (HTTP 404) ends the recording."""
        path = f"/jobs/{self.view.job}"
        try:
            details = self.client.get(path)
        except RecordError as err:
            if err.status == 404:
                raise RecordError(
                    f"job {self.view.job} is gone from {self.client.base} ({err})", 404, final=True
                ) from None
            raise
        self.state = job_state(details, path)
        if self.state == "RUNNING":
            self.check_parallelism(details, path)
        return self.state

    def check_parallelism(self, details: object, path: str) -> None:
        """A vertex whose parallelism changed: re-resolve (new instances) or end the recording."""
        now = {v.id: v.parallelism for v in vertices_of(details, path)}
        old = self.view.topology
        if (now.get(self.view.vertex_id), now.get(self.view.upstream_id)) == (
            old.parallelism,
            old.upstream_parallelism,
        ):
            return
        view = resolve(
            self.client, self.view.job, self.view.vertex_id, old.idleness_ms, old.watermark_interval_ms
        )
        new = view.topology
        if new.channel_count != old.channel_count or new.edge != old.edge:
            raise RecordError(
                f"the job was rescaled: it is now {layout(new)}, was {layout(old)}; one trace holds "
                "one channel count, so the recording ends here (record again for the new layout)",
                final=True,
            )
        self.view = view
        self.epoch += 1
        self._attempts = None
        self.notes.append(
            f"rescaled before sample {self.epoch}: now {layout(new)}, was {layout(old)}; the vertex "
            f"was resolved again and its subtasks start as fresh instances (@r{self.epoch})"
        )

    def subtask_states(self) -> tuple[dict[tuple[str, int], int], frozenset[int]]:
        """Every subtask's attempt number in both vertices, by (vertex, index), and the upstream
        subtasks that have FINISHED (a finished task's metrics are gone; it sent MAX)."""
        attempts: dict[tuple[str, int], int] = {}
        finished: frozenset[int] = frozenset()
        for vid in (self.view.upstream_id, self.view.vertex_id):
            path = f"/jobs/{self.view.job}/vertices/{vid}"
            states = subtask_states(self.client.get(path), path)
            attempts |= {(vid, index): attempt for index, attempt in states.attempts.items()}
            if vid == self.view.upstream_id:
                finished = states.finished
        return attempts, finished

    def restarted(self, attempts: dict[tuple[str, int], int]) -> bool:
        """Whether any subtask index runs another attempt than at the last sample."""
        before = self._attempts
        if before is None:
            return False
        return self._passed_restart or any(
            before.get(key, attempt) != attempt for key, attempt in attempts.items()
        )

    def sample(self, now_ms: Callable[[], int]) -> Sample | None:
        """One sample, or None while the job is not running (restarting, or over)."""
        epoch = self.epoch
        if self.job_state() != "RUNNING":
            self._passed_restart |= self.state in _RESTARTING
            return None
        attempts, finished = self.subtask_states()
        view = self.view
        restarted = self.restarted(attempts)
        if restarted:
            self.epoch += 1
        self._attempts = attempts
        self._passed_restart = False
        if restarted or self.epoch != epoch or not view.complete:
            refresh_metric_ids(self.client, view)
        for _ in range(3):
            before = read_metrics(self.client, view.job, view.vertex_id, view.reported_ids)
            taken = now_ms()
            watermarks = read_metrics(self.client, view.job, view.upstream_id, view.watermark_ids)
            idle = read_metrics(self.client, view.job, view.upstream_id, view.idle_ids)
            after = read_metrics(self.client, view.job, view.vertex_id, view.reported_ids)
            if before == after:
                break
        else:
            self.unsettled += 1
        return Sample(taken, self.epoch, watermarks, idle, after, finished)

    @property
    def over(self) -> bool:
        """The job reached a final state."""
        return self.state in _FINAL_STATES
