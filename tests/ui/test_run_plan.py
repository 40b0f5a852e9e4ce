"""One run plan (`wmviz.store.plan`): the engine as an `Engine`, decided by one rule for the page,
the run cache and the command line, and a small file read and validated once, its trace the one
simulated."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import paths
from wmviz.store import plan as plan_module
from wmviz.store import runs
from wmviz.store.plan import RunPlan, engine_for, plan_run
from wmviz.store.runs import RunRequest, run_timeline
from wmviz.timeline.engine import Engine
from wmviz.trace.errors import TraceValidationError
from wmviz.trace.readers import read_trace

DATA = paths.DATA
TRACE, CONFIG = DATA / "kafka-rebalance.csv", DATA / "kafka-rebalance.json"


@pytest.mark.parametrize(
    ("asked", "large", "runs_on"),
    [
        (Engine.AUTO, False, Engine.LOCAL),
        (Engine.AUTO, True, Engine.SPARK),
        (Engine.LOCAL, True, Engine.LOCAL),
        (Engine.SPARK, False, Engine.SPARK),
    ],
)
def test_auto_goes_by_size_and_a_named_engine_is_kept(asked: Engine, large: bool, runs_on: Engine) -> None:
    assert engine_for(asked, large) is runs_on


def test_an_unknown_engine_names_the_valid_ones() -> None:
    with pytest.raises(ValueError, match="unknown engine 'SPARK' \\(one of auto, spark, local\\)"):
        Engine.parse("SPARK")
    assert RunRequest(TRACE, CONFIG, None, "local").engine is Engine.LOCAL  # type: ignore[arg-type]


def test_a_small_file_is_read_once_and_its_trace_is_the_one_simulated(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path))
    reads: list[Path] = []

    def counted(path: Path, config: Path | None = None, **kw: object) -> object:
        reads.append(path)
        return read_trace(path, config, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(plan_module, "read_trace", counted)
    monkeypatch.setattr(runs, "read_trace", counted)
    plan = plan_run(TRACE, CONFIG, Engine.AUTO, upload=True)
    assert plan.engine is Engine.LOCAL and not plan.large and plan.trace is not None
    assert not plan.moved_to_spark and plan.without_trace().trace is None
    timeline = run_timeline(RunRequest(TRACE, CONFIG, None, plan.engine), plan=plan)
    assert reads == [TRACE] and timeline.meta.engine == "local"
    run_timeline(RunRequest(TRACE, CONFIG, None, Engine.AUTO), root=tmp_path / "other")  # no plan: read
    assert reads == [TRACE, TRACE]


def test_a_large_file_is_left_to_spark_and_an_upload_goes_there_whatever_was_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("WMVIZ_SPARK_UPLOAD_MB", "0.0001")  # ~100 bytes: the trace is large
    assert plan_run(TRACE, CONFIG, Engine.AUTO) == RunPlan(Engine.SPARK, Engine.AUTO, True, None)
    assert plan_run(TRACE, CONFIG, Engine.LOCAL).engine is Engine.LOCAL  # asked for: kept
    upload = plan_run(TRACE, CONFIG, Engine.LOCAL, upload=True)
    assert upload.engine is Engine.SPARK and upload.moved_to_spark and upload.trace is None


def test_an_invalid_small_file_is_refused_by_the_plan(tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text(TRACE.read_text().replace("\n", "\nnot,a,row\n", 1))
    with pytest.raises(TraceValidationError) as caught:
        plan_run(bad, CONFIG, Engine.AUTO, upload=True)
    assert "bad.csv" in str(caught.value)
