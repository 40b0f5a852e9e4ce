"""Start WmvizRecordJob.java (or WmvizWholeJob.java) on a local MiniCluster (REST on 127.0.0.1) and
hand back its address."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from tools.flink.launcher import Harness, HarnessError

JOB_SOURCE = Path(__file__).with_name("WmvizRecordJob.java")
JOB_CLASS = "WmvizRecordJob"
WHOLE_JOB_CLASS = "WmvizWholeJob"


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
    process = Harness(f"the job {job_class}", (source,), job_class, tag=tag, bench=True).start(*args)
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
