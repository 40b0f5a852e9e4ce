"""`wmviz lag` on a real Flink 2.3.0 job recorded whole through REST (issue 32, Deliver 5).

The job is tools/flink/record/WmvizWholeJob.java, the one `tests/flink/test_blame_flink.py` records: two
FLIP-27 sources with `forBoundedOutOfOrderness(200 ms)` and a record every 100 ms stamped with the
wall clock, payments' subtask 0 stamped `PAYMENTS_SKEW_MS` = 1.5 s behind it, orders' subtask 1
silent from 8 s on (no idleness); a join, then keyed 1 s tumbling windows. What the job was built
with is what the budget must find in what it reports:

- the out-of-orderness part is the bound Flink applies, 200 ms + 1 ms, at every moment;
- while payments' subtask 0 holds the job, the backlog it is blamed for is its 1.5 s skew (give or
  take a record interval, an emission interval and the sampling: ±500 ms, plus however much longer
  than its period the sample took to read: see below);
- the window part stays under the window's 1 s;
- once orders' subtask 1 is silent, it is blamed at the split and watermark the job itself names
  (`SILENT orders 1 <split> <last event ms>` on its standard output: the watermark is that event
  time − 200 ms − 1 ms), and the part it is blamed for is exactly the time since that event;
- what is left unexplained is the sampling's own skew: a whole-job sample is several REST calls,
  so a hop is sometimes read one watermark emission (200 ms) after the hop it reads — a few hundred
  ms on a quiet machine, more when a sample takes longer to read (a busy machine). How long a sample
  took is bounded by when the next began: the allowance grows by that much past the period, so the
  checks hold however many samples a busy machine lets the recorder take.

The config the budget needs (the bounds, the window) is written into the recording by hand, as a
person would (docs/lag.md): the REST API cannot say it. One JVM for the module, ~30 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import pairwise
from pathlib import Path

import pytest

from tests.conftest import require_flink
from tools.flink.record.job import Silent
from wmviz.analysis.lag_budget import Budget, LagBudget
from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.record.job import JobRecording, read_recording

pytestmark = pytest.mark.flink

JOB_SECONDS = 18
EVERY_MS = 250
BOUND_MS = 200
SKEW_MS = 1500  # WmvizWholeJob.PAYMENTS_SKEW_MS
SOURCE = {"generator": {"preset": "flip27", "out_of_orderness_ms": 200}}  # the job's strategy
WINDOW = {"operator": {"type": "window", "size_ms": 1000}}  # TumblingEventTimeWindows.of(1 s)


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> tuple[Path, Silent]:
    require_flink("real Flink {version}", "the freshness budget's Flink test")
    from tools.flink.record.job import record_then_go, start_job

    folder = tmp_path_factory.mktemp("lag")
    out, go = folder / "job.json", folder / "go"
    # The job's time starts once the recorder samples (record_then_go); the recording ends with it.
    job = start_job(JOB_SECONDS, job_class="WmvizWholeJob", go=go)
    try:
        command = [sys.executable, "-m", "wmviz", "record", "--rest", job.rest, "--job", job.job,
                   "--every", f"{EVERY_MS}ms", "--for", "90s", "--out", str(out)]  # fmt: skip
        proc = record_then_go(command, out, go)
        job.wait_finished(120)
    finally:
        job.stop()
    assert proc.returncode == 0, proc.stderr
    return with_config(out), job.silent()


def with_config(path: Path) -> Path:
    """The recording with the job's configuration added, as docs/lag.md says to."""
    from wmviz.record.job_lines import body_of_lines, header_of

    text = path.read_text()
    # `record` appends a sample a line (wmviz.record.job_lines): made one document to edit.
    body = body_of_lines(text, path.name) if header_of(text) else json.loads(text)
    ids = {v["name"]: v["id"] for v in body["vertices"]}
    body["config"] = {
        "vertices": {
            ids["Source: orders"]: SOURCE,
            ids["Source: payments"]: SOURCE,
            ids["window -> discard: Writer"]: WINDOW,
        }
    }
    path.write_text(json.dumps(body))
    return path


def budgets(path: Path) -> tuple[list[Budget], JobRecording]:
    """The window's budget at every sample while the job runs: once every reader has emitted (the
    window past MIN) and before the sources end (then the window is at MAX: nothing is late)."""
    rec = read_recording(path)
    window = next(v for v in rec.vertices if v.name == "window -> discard: Writer")
    found = LagBudget(rec).over_time(window)
    return [b for b in found if MIN_MS < b.watermark_ms < MAX_MS], rec


def overrun_ms(rec: JobRecording) -> dict[int, int]:
    """By sample time: how much longer than its period the sample may have taken to read (until
    the next sample began; the last one as long as the longest)."""
    times = rec.times()
    gaps = [max(0, b - a - EVERY_MS) for a, b in pairwise(times)]
    return dict(zip(times, [*gaps, max(gaps, default=0)], strict=True))


def held_by_the_silent_split(found: list[Budget], rec: JobRecording, silent: Silent) -> list[Budget]:
    """The budgets at samples where the silent split alone holds the job, as read
    (`Silent.holding_alone`: from its silence until the sources begin to finish)."""
    held = set(silent.holding_alone(rec, BOUND_MS))
    found = [b for b in found if b.at_ms in held]
    assert found, f"no sample shows {silent} alone holding the job (frozen, both sinks there, the rest past)"
    return found


def check_against_the_job(found: list[Budget], rec: JobRecording, silent: Silent) -> None:
    """Everything the module's docstring says the budget must find (a function, so a planted bug
    can be shown to fail it on a saved recording)."""
    held_by_payments = [b for b in found if b.blame.chain[-1].vertex == "Source: payments"]
    assert held_by_payments, [b.blame.ending for b in found]
    # Orders' silent split holds the window where the job froze it until that subtask finishes; it
    # then sends MAX, which its own metrics never show, so what holds the window for the last few
    # samples is another subtask (CI once found orders' subtask 0, 1.25 s behind, at the last), and
    # a starved machine may read payments at or below the frozen value at a sample: only the
    # samples at which the silent split alone holds the job, as read, are asked about it.
    held_by_orders = held_by_the_silent_split(found, rec, silent)
    overrun = overrun_ms(rec)
    kept_up = 0
    # Up to the last sample held where the job froze the silent split: after it the sources finish
    # one by one, and a finished subtask's MAX never shows in its metrics (CI once found the budget
    # 8.6 s over the lag there: the split's frozen value, read after its subtask had finished).
    end = max(b.at_ms for b in held_by_orders)
    for budget in [b for b in found if b.at_ms <= end]:
        causes = budget.by_cause()
        assert sum(p.ms for p in budget.parts) == budget.total_ms
        assert causes["out-of-orderness"] == BOUND_MS + 1, budget
        assert 0 <= causes["window"] < 1000, budget
        slack = overrun[budget.at_ms]
        # More attributed than the lag is a wrong budget, whatever the load.
        assert -300 - slack <= causes["unexplained"], (budget, slack)
        kept_up += causes["unexplained"] <= 600 + slack
        assert causes["idle timeout"] == causes["join bound"] == causes["alignment pause"] == 0
    # Less attributed than the lag is the job behind its own clock, which a starved machine makes
    # happen (CI beside a CPU hog: 8.4 s unexplained at one sample): the budget must explain the
    # lag to within 600 ms where the job kept up, and a missing cause would leave none such.
    assert kept_up, [b.by_cause()["unexplained"] for b in found]
    # Payments' subtask 0 runs 1.5 s behind: it is the root at (nearly) every such sample. On a busy
    # machine subtask 1 is starved behind it now and then (CI under the suite: one sample); a wrong
    # subtask would be named at most samples.
    by_subtask = [b.blame.chain[-1].subtask for b in held_by_payments]
    assert by_subtask.count(0) >= 0.8 * len(by_subtask), by_subtask
    for budget in held_by_payments:
        if budget.blame.chain[-1].subtask != 0:
            continue
        backlog = budget.by_cause()["backlog"] + budget.by_cause()["stall"]
        # At least the skew the job was built with; more on a busy machine, where the paced source
        # itself falls behind its clock (CI: 2,186 ms, then 3,122 ms, for a 1,500 ms skew), so no
        # upper bound here: more attributed than the lag is refused above, at every sample.
        over = overrun[budget.at_ms]
        assert SKEW_MS - 500 - over <= backlog, (budget.at_ms, backlog)
    assert (silent.source, silent.subtask) == ("orders", 1)
    for budget in held_by_orders:
        root = budget.blame.chain[-1]
        where = (root.vertex, root.subtask, root.split)
        assert where == ("Source: orders", silent.subtask, silent.split), budget.blame
        assert root.watermark_ms == silent.frozen_ms(BOUND_MS), (root, silent)
        # Frozen at its last event: its part is exactly the time since that event.
        held = budget.by_cause()["backlog"] + budget.by_cause()["stall"]
        assert held == budget.at_ms - silent.last_event_ms, (held, budget.at_ms, silent)


def test_the_budget_finds_what_the_job_was_built_with(recording):
    path, silent = recording
    check_against_the_job(*budgets(path), silent)


def test_the_cli_says_the_same_at_the_last_sample_the_silent_split_holds(recording):
    """At the last sample the silent split alone holds the job (then that subtask finishes, and
    soon the job's watermark is MAX, nothing late)."""
    path, silent = recording
    found, rec = budgets(path)
    at = held_by_the_silent_split(found, rec, silent)[-1].at_ms
    proc = subprocess.run(
        [sys.executable, "-m", "wmviz", "lag", str(path), "--vertex", "window", "--at", str(at), "--json"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    assert body["vertex"] == "window -> discard: Writer" and body["reference"] == "wall clock"
    top = max(body["parts"], key=lambda p: p["ms"])
    assert top["cause"] in ("backlog", "stall")
    assert top["where"] == f"Source: orders subtask {silent.subtask} split {silent.split}", top
    assert sum(p["ms"] for p in body["parts"]) == body["total_ms"]
