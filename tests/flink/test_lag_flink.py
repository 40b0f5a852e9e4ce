"""`wmviz lag` on a real Flink 2.3.0 job recorded whole through REST (issue 32, Deliver 5).

The job is tools/flink/record/WmvizWholeJob.java, the one `tests/flink/test_blame_flink.py` records: two
FLIP-27 sources with `forBoundedOutOfOrderness(200 ms)` and a record every 100 ms stamped with the
wall clock, payments' subtask 0 stamped `PAYMENTS_SKEW_MS` = 1.5 s behind it, orders' subtask 1
silent from 8 s on (no idleness); a join, then keyed 1 s tumbling windows. What the job was built
with is what the budget must find in what it reports:

- the out-of-orderness part is the bound Flink applies, 200 ms + 1 ms, at every moment;
- while payments' subtask 0 holds the job, the backlog it is blamed for is its 1.5 s skew (give or
  take a record interval, an emission interval and the sampling: ±500 ms);
- the window part stays under the window's 1 s;
- once orders' subtask 1 is silent, the part it is blamed for grows with the time since its
  split's watermark froze;
- what is left unexplained is the sampling's own skew: a whole-job sample is several REST calls,
  so a hop is sometimes read one watermark emission (200 ms) after the hop it reads — never more
  than a few hundred ms.

The config the budget needs (the bounds, the window) is written into the recording by hand, as a
person would (docs/lag.md): the REST API cannot say it. One JVM for the module, ~30 s.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import require_flink
from wmviz.analysis.lag_budget import Budget, LagBudget
from wmviz.record.job import JobRecording, read_recording

pytestmark = pytest.mark.flink

JOB_SECONDS = 18
SKEW_MS = 1500  # WmvizWholeJob.PAYMENTS_SKEW_MS
SOURCE = {"generator": {"preset": "flip27", "out_of_orderness_ms": 200}}  # the job's strategy
WINDOW = {"operator": {"type": "window", "size_ms": 1000}}  # TumblingEventTimeWindows.of(1 s)


@pytest.fixture(scope="module")
def recording(tmp_path_factory) -> Path:
    require_flink("real Flink {version}", "the freshness budget's Flink test")
    from tools.flink.record.job import start_job

    out = tmp_path_factory.mktemp("lag") / "job.json"
    job = start_job(JOB_SECONDS, job_class="WmvizWholeJob")
    try:
        command = [sys.executable, "-m", "wmviz", "record", "--rest", job.rest, "--job", job.job,
                   "--every", "250ms", "--for", "14s", "--out", str(out)]  # fmt: skip
        proc = subprocess.run(command, capture_output=True, text=True, timeout=90)
    finally:
        job.stop()
    assert proc.returncode == 0, proc.stderr
    return with_config(out)


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
    rec = read_recording(path)
    window = next(v for v in rec.vertices if v.name == "window -> discard: Writer")
    return LagBudget(rec).over_time(window), rec


def check_against_the_job(found: list[Budget], rec: JobRecording) -> None:
    """Everything the module's docstring says the budget must find (a function, so a planted bug
    can be shown to fail it on a saved recording)."""
    held_by_payments = [b for b in found if b.blame.chain[-1].vertex == "Source: payments"]
    held_by_orders = [b for b in found if b.blame.chain[-1].vertex == "Source: orders"]
    assert len(held_by_payments) >= 5 and len(held_by_orders) >= 5, [b.blame.ending for b in found]
    for budget in found:
        causes = budget.by_cause()
        assert sum(p.ms for p in budget.parts) == budget.total_ms
        assert causes["out-of-orderness"] == 201, budget
        assert 0 <= causes["window"] < 1000, budget
        assert -300 <= causes["unexplained"] <= 600, budget
        assert causes["idle timeout"] == causes["join bound"] == causes["alignment pause"] == 0
    for budget in held_by_payments:
        root = budget.blame.chain[-1]
        assert root.subtask == 0
        backlog = budget.by_cause()["backlog"] + budget.by_cause()["stall"]
        assert abs(backlog - SKEW_MS) <= 500, (budget.at_ms, backlog)
    silent = held_by_orders[-1]
    root = silent.blame.chain[-1]
    assert root.subtask == 1 and root.split is not None
    orders = next(v.id for v in rec.vertices if v.name == "Source: orders")
    points = rec.series[(orders, 1, "currentWatermark", root.split)]
    froze = next(t for t, wm in points if wm == root.watermark_ms)  # the first sample reading it
    held = silent.by_cause()["backlog"] + silent.by_cause()["stall"]
    # Frozen since `froze`: its part is the time since then, plus how far behind it already was.
    assert 0 <= held - (silent.at_ms - froze) <= 800, (held, silent.at_ms - froze)
    assert held >= 3000


def test_the_budget_finds_what_the_job_was_built_with(recording):
    check_against_the_job(*budgets(recording))


def test_the_cli_says_the_same_at_the_end(recording):
    proc = subprocess.run(
        [sys.executable, "-m", "wmviz", "lag", str(recording), "--vertex", "window", "--json"],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    assert body["vertex"] == "window -> discard: Writer" and body["reference"] == "wall clock"
    top = max(body["parts"], key=lambda p: p["ms"])
    assert top["cause"] in ("backlog", "stall") and top["where"].startswith("Source: orders subtask 1 split ")
    assert sum(p["ms"] for p in body["parts"]) == body["total_ms"]
