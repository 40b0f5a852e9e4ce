"""Start WmvizRecordJob.java (or WmvizWholeJob.java) on a local MiniCluster (REST on 127.0.0.1) and
hand back its address."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from tools.flink.launcher import Harness, HarnessError

JOB_SOURCE = Path(__file__).with_name("WmvizRecordJob.java")
JOB_CLASS = "WmvizRecordJob"


@dataclass
class RunningJob:
    """A started job: its REST URL, job id and the JVM process (stdin open keeps it alive)."""

    rest: str
    job: str
    process: subprocess.Popen

    def wait_finished(self, timeout_s: float = 60.0) -> str:
        """The job's final status line, once the JVM prints it."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if line.startswith("FINISHED"):
                return line.split(" ", 1)[1].strip()
            if not line and self.process.poll() is not None:
                break
        raise HarnessError("the job did not report its end")

    def stop(self) -> None:
        """Close stdin (the JVM then shuts the cluster down) and wait for it; kill if it hangs."""
        if self.process.stdin is not None:
            self.process.stdin.close()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def start_job(seconds: int, buffer_timeout_ms: int = 100, job_class: str = JOB_CLASS) -> RunningJob:
    """Compile (once) and start the job; return when it is submitted and its REST endpoint is up."""
    source = JOB_SOURCE.with_name(f"{job_class}.java")
    tag = "record-" if job_class == JOB_CLASS else "whole-"
    process = Harness(f"the job {job_class}", (source,), job_class, tag=tag, bench=True).start(
        str(seconds), str(buffer_timeout_ms)
    )
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
