"""Start WmvizRecordJob.java (or WmvizWholeJob.java) on a local MiniCluster (REST on 127.0.0.1) and
hand back its address."""

from __future__ import annotations

import os
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tools.flink.launcher import Harness, HarnessError
from wmviz.record.job import SPLIT_WATERMARK, JobRecording

JOB_SOURCE = Path(__file__).with_name("WmvizRecordJob.java")
JOB_CLASS = "WmvizRecordJob"
WHOLE_JOB_CLASS = "WmvizWholeJob"
WHOLE_JOB_SINKS = ("window -> discard: Writer", "merge -> drop: Writer")
"""WmvizWholeJob's two sinks, each chained after the operator that reads the silent reader."""


@dataclass(frozen=True)
class Silent:
    """The reader WmvizWholeJob silenced, as the job itself tells it: its source, subtask and split,
    and the event time of the last record it emitted (the wall clock then, less its skew)."""

    source: str
    subtask: int
    split: str
    last_event_ms: int

    def frozen_ms(self, bound_ms: int) -> int:
        """The watermark Flink holds the split at from then on: its newest event − bound − 1 ms."""
        return self.last_event_ms - bound_ms - 1

    def holding_alone(self, rec: JobRecording, bound_ms: int) -> list[int]:
        """The sample times of a WmvizWholeJob recording that show what the job was built to make:
        this split alone holds the job. At each, as read: the split stands at `frozen_ms`, so do
        its own subtask's output and every subtask of both sinks, every other source subtask is
        strictly past it (so nothing else could hold them there), and no subtask of the job has
        finished.

        Why each: a whole-job sample is several REST calls, and Flink's metric fetcher caches, so
        on a starved machine a sample can read payments (paced behind the clock, and itself behind
        on a busy machine) at or below the frozen value while the sinks read frozen: there the
        silent split is not alone, and blame rightly names payments. And once the sources end,
        their subtasks finish one by one, each sending MAX that its own metrics never show: the
        sinks' and the split's last reported values then read frozen while the silent subtask is
        done (MAX), and blame rightly names whatever still runs. Its MAX can show in its output
        before REST reports it finished (a CI run beside a CPU hog: the last sample that passed
        every other condition read the silent subtask, one of payments' and two of widen's at MAX,
        and blame named payments). Checks ask blame or the budget only at these samples; an empty
        list is a recording that never showed the job's premise."""
        ids = {v.name: v.id for v in rec.vertices}
        source, frozen = ids[f"Source: {self.source}"], self.frozen_ms(bound_ms)
        split = (source, self.subtask, SPLIT_WATERMARK, self.split)
        sinks = [(ids[name], s) for name in WHOLE_JOB_SINKS for s in range(rec.vertex(ids[name]).parallelism)]
        others = [
            (v.id, s)
            for v in rec.vertices
            if v.name.startswith("Source: ")
            for s in range(v.parallelism)
            if (v.id, s) != (source, self.subtask)
        ]
        everyone = [(v.id, s) for v in rec.vertices for s in range(v.parallelism)]
        return [
            t
            for t in rec.times()
            if rec.value_at(split, t) == frozen
            and rec.output_at(source, self.subtask, t) == frozen
            and all(rec.output_at(v, s, t) == frozen for v, s in sinks)
            and all(_past(rec.output_at(v, s, t), frozen) for v, s in others)
            and not any(rec.finished(v, s, t) for v, s in everyone)
        ]


def _past(watermark_ms: int | None, frozen_ms: int) -> bool:
    """Whether a reported watermark is strictly past the frozen one (None, not reported: not)."""
    return watermark_ms is not None and watermark_ms > frozen_ms


@dataclass
class RunningJob:
    """A started job: its REST URL, job id and the JVM process (stdin open keeps it alive)."""

    rest: str
    job: str
    process: subprocess.Popen
    told: list[str] = field(default_factory=list)
    """The lines the job printed between its job id and its end (WmvizWholeJob's `SILENT ...`),
    read by `wait_finished`."""

    def wait_finished(self, timeout_s: float = 60.0) -> str:
        """The job's final status line, once the JVM prints it (the lines before it kept in `told`)."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if line.startswith("FINISHED"):
                return line.split(" ", 1)[1].strip()
            if not line and self.process.poll() is not None:
                break
            if line.strip():
                self.told.append(line.strip())
        raise HarnessError("the job did not report its end")

    def silent(self) -> Silent:
        """What WmvizWholeJob said of its silent reader (`SILENT ...`, read by `wait_finished`)."""
        lines = [line.split() for line in self.told if line.startswith("SILENT ")]
        if len(lines) != 1 or len(lines[0]) != 5:
            raise HarnessError(f"the job did not say which reader fell silent: {self.told}")
        _, source, subtask, split, last = lines[0]
        return Silent(source, int(subtask), split, int(last))

    def stop(self) -> None:
        """Close stdin (the JVM then shuts the cluster down) and wait for it; kill if it hangs."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_job(
    seconds: int,
    buffer_timeout_ms: int = 100,
    job_class: str = JOB_CLASS,
    scale: int = 1,
    go: Path | None = None,
) -> RunningJob:
    """Compile (once) and start the job; return when it is submitted and its REST endpoint is up.
    `scale` multiplies every vertex's parallelism of WmvizWholeJob (1: the job as it always was).
    With `go`, the readers' time (their silence, their end) starts only once that file exists
    (`record_then_go`); without it, at once, as it always has."""
    if scale != 1 and job_class != WHOLE_JOB_CLASS:
        raise ValueError(f"only {WHOLE_JOB_CLASS} takes a scale, not {job_class}")
    if scale < 1:
        raise ValueError(f"the scale is a whole number >= 1, not {scale}")
    source = JOB_SOURCE.with_name(f"{job_class}.java")
    tag = "record-" if job_class == JOB_CLASS else "whole-"
    args = [str(seconds), str(buffer_timeout_ms)]
    if job_class == WHOLE_JOB_CLASS and (scale != 1 or go is not None):
        args.append(str(scale))
    if go is not None:
        args.append(str(go))
    # A recorded job keeps C2 (a long job wants it), except in the test suite, which sets
    # WMVIZ_JOBS_ON_C1: its jobs are short, and C2's compiles cost more CPU than they save.
    c2 = os.environ.get("WMVIZ_JOBS_ON_C1", "") in ("", "0")
    process = Harness(f"the job {job_class}", (source,), job_class, tag=tag, bench=c2).start(*args)
    assert process.stdout is not None
    found: dict[str, str] = {}
    while len(found) < 2:
        line = process.stdout.readline()
        if not line:
            process.kill()
            raise HarnessError("the job's JVM ended before it printed its REST address and job id")
        key, _, value = line.strip().partition(" ")
        if key in ("REST", "JOB"):
            found[key] = value
    return RunningJob(found["REST"], found["JOB"], process)


def record_then_go(
    command: list[str], out: Path, go: Path, timeout_s: float = 300
) -> subprocess.CompletedProcess:
    """Run `wmviz record` (`command`, writing `out`) against a job started with `go`, and create
    the go file once the recording holds its first sample: the job's phases then start while the
    recorder is sampling, however long a busy machine took to start it. The finished recorder."""
    recorder = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + timeout_s
    while recorder.poll() is None and not holds_a_sample(out):
        if time.monotonic() > deadline:
            recorder.kill()
            recorder.communicate()
            raise HarnessError(f"the recorder wrote no sample in {timeout_s:.0f} s")
        time.sleep(0.05)
    go.touch()
    stdout, stderr = recorder.communicate(timeout=timeout_s)
    return subprocess.CompletedProcess(command, recorder.returncode, stdout, stderr)


def holds_a_sample(out: Path) -> bool:
    """A whole-job recording's sample line (`{"t": ...`) or a trace's sample row (`"sample"`)."""
    try:
        text = out.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return False
    return '\n{"t":' in text or '"sample"' in text
