"""Whole-job recording inputs (issue 33): every odd value is a skipped sample with its reason or a
clean exit 2 naming the file and place, never a coerced value, an "internal error" or a slow regex."""

from __future__ import annotations

import json
import sys
import time

import pytest

from tests.record.test_record_hostile import _clean_exit_2, _run
from tests.support.fake_jobmanager import JOB, OP, SRC, FakeJob, Reply
from tests.support.prometheus_shape import write_query_range
from wmviz import cli
from wmviz.record.job import JobFormatError, read_recording, recording_of
from wmviz.record.job_plan import plan_of
from wmviz.record.rest_job import split_metric


def _whole_job(url: str, out, *extra: str) -> list[str]:
    return [sys.executable, "-m", "wmviz", "record", "--rest", url, "--job", JOB,
            "--every", "50ms", "--out", str(out), *extra]  # fmt: skip


def _json(body: object) -> Reply:
    return Reply(json.dumps(body).encode())


def _from_poll(path: str, reply: Reply, poll: int = 3):
    return lambda job, asked, query: reply if asked == path and job.polls >= poll else None


SKIPPED = {
    "subtasks as strings": (f"/jobs/{JOB}/vertices/{OP}", {"subtasks": ["a", "b"]}, "subtasks is not a list"),
    "an attempt as text": (
        f"/jobs/{JOB}/vertices/{OP}",
        {"subtasks": [{"subtask": 0, "attempt": "x"}]},
        'attempt "x" is not a whole number',
    ),
    "a subtask past the parallelism": (
        f"/jobs/{JOB}/vertices/{OP}",
        {"subtasks": [{"subtask": 5, "attempt": 0}]},
        "subtask 5 is larger than 1",
    ),
}


@pytest.mark.parametrize("case", sorted(SKIPPED))
def test_an_odd_subtask_answer_is_a_skipped_sample_with_its_reason(serve, tmp_path, case):
    """Was exit 1, "internal error: AttributeError" / "ValueError: invalid literal for int()"."""
    path, body, reason = SKIPPED[case]
    out = tmp_path / "r.json"
    job = FakeJob(["RUNNING"] * 6 + ["FINISHED"], hook=_from_poll(path, _json(body)))
    proc = _run(_whole_job(serve(job), out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "internal error" not in proc.stderr and "Traceback" not in proc.stderr
    assert "sample skipped" in proc.stderr and reason in proc.stderr
    assert read_recording(out).series


def _metric_value(value: str):
    def hook(job, path, query):
        if path == f"/jobs/{JOB}/vertices/{OP}/metrics" and "get" in query and job.polls >= 3:
            return _json([{"id": i, "value": value} for i in query["get"][0].split(",")])
        return None

    return hook


@pytest.mark.parametrize("value", ["1e400", "Infinity", "1e19", "-9.3e18"])
def test_a_metric_beyond_any_long_is_a_skipped_sample_not_max(serve, tmp_path, value):
    """Was recorded as MAX (or MIN): Flink's REST answers a long gauge in its digits."""
    out = tmp_path / "r.json"
    proc = _run(_whole_job(serve(FakeJob(["RUNNING"] * 6 + ["FINISHED"], hook=_metric_value(value))), out))
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert f'"{value}" is beyond any Java long' in proc.stderr and "sample skipped" in proc.stderr
    series = read_recording(out).series
    values = [v for key, points in series.items() if key[0] == OP for _, v in points]
    assert values and 2**63 - 1 not in values and -(2**63) not in values


def _plan_node_parallelism(value: object) -> dict:
    return {"plan": {"nodes": [
        {"id": OP, "parallelism": value, "inputs": [{"id": SRC, "ship_strategy": "REBALANCE"}]},
        {"id": SRC, "parallelism": 2}]}}  # fmt: skip


@pytest.mark.parametrize("value", ["٢", 2.9, True, "2"], ids=["arabic digit", "a float", "true", "text"])
def test_a_plan_parallelism_that_int_would_coerce_is_refused(serve, tmp_path, value):
    """`int()` made "٢" 2, 2.9 2 and true 1; now exit 2 naming the node and the field."""
    job = FakeJob(["RUNNING"], hook=_from_poll(f"/jobs/{JOB}/plan", _json(_plan_node_parallelism(value)), 0))
    err = _clean_exit_2(_run(_whole_job(serve(job), tmp_path / "r.json")))
    assert f"plan node 0: parallelism: {json.dumps(value, ensure_ascii=False)} is not a whole number" in err
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(_plan_node_parallelism(value)), encoding="utf-8")
    with pytest.raises(JobFormatError, match=r"--plan plan\.json: plan node 0: parallelism: "):
        plan_of(json.loads(plan.read_text()), where="--plan plan.json")


@pytest.mark.parametrize(
    "nodes", [[[1, 2]], [{"id": OP, "parallelism": 2, "inputs": [[SRC]]}], [{"id": OP}], [{"parallelism": 1}]]
)
def test_an_odd_plan_node_is_a_clean_message_naming_it(nodes):
    with pytest.raises(JobFormatError) as err:
        plan_of({"plan": {"nodes": nodes}}, where="--plan p.json")
    message = str(err.value)
    assert message.startswith("--plan p.json: plan node 0 ") and "Error" not in message


def test_a_plan_of_vertices_without_ids_or_not_a_list_is_a_clean_message():
    nodes = {"nodes": [{"id": OP, "parallelism": 1}]}
    assert plan_of({"vertices": [{"name": "x"}], "plan": nodes})[0][0].name
    with pytest.raises(JobFormatError, match="vertices is not a list"):
        plan_of({"vertices": 3, "plan": nodes})


def test_a_recording_missing_a_field_says_which_in_words():
    """Was `r.json: KeyError('vertices') (see ...)`."""
    with pytest.raises(JobFormatError) as err:
        recording_of({"format": "wmviz-job/1", "edges": [], "series": []}, "r.json")
    assert str(err.value).startswith("r.json: missing field `vertices`") and "KeyError" not in str(err.value)


@pytest.mark.parametrize(
    ("field", "value"),
    [("subtask", "1"), ("subtask", True), ("subtask", 1.5)],
)
def test_a_recording_series_subtask_int_would_coerce_is_refused(field, value):
    body = {
        "format": "wmviz-job/1",
        "vertices": [{"id": "v", "name": "v", "parallelism": 2}],
        "edges": [],
        "series": [{"vertex": "v", "subtask": 0, "metric": "m", "points": [[1, 2]]}],
    }
    body["series"][0][field] = value
    with pytest.raises(JobFormatError, match=r"r.json: series\[0\]: subtask: .* is not a whole number"):
        recording_of(body, "r.json")


def test_a_huge_split_metric_id_is_read_in_linear_time():
    """190 KB of `.split.` repeats took the old pattern ~9 s; the answer cap allows 8 MB of ids."""
    mid = "0." + ".split." * 27_000 + "x.watermark.currentWatermark"
    start = time.process_time()
    found = split_metric(mid)
    assert time.process_time() - start < 0.5
    assert found is not None and found[0] == 0 and found[3] == "currentWatermark"
    assert split_metric("0.Source__orders.split.orders-0.watermark.currentWatermark") == (
        0,
        "Source__orders",
        "orders-0",
        "currentWatermark",
    )
    assert split_metric("٢.op.split.s.watermark.currentWatermark") is None


def test_a_forward_edge_between_unequal_parallelism_is_refused(tmp_path, capsys):
    """3 upstream subtasks → 2: Flink refuses to build such a job, so no export of one exists."""
    samples = [
        {"time_ms": 1_000 * i, "epoch": 0, "upstream_watermark": {str(s): 1_000 * i for s in range(3)},
         "upstream_idle_ms": {}, "reported": {str(s): 1_000 * i for s in range(2)}}
        for i in range(3)
    ]  # fmt: skip
    export = tmp_path / "export.json"
    write_query_range(samples, export, upstream="Source: orders", vertex="window", operator="Source__orders")
    out = tmp_path / "t.csv"
    code = cli.main(["import", "prometheus", str(export), "--edge", "forward", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and "a forward edge needs the same parallelism on both sides" in err
    assert "'Source: orders' has 3 subtasks, 'window' 2" in err and not out.exists()
    assert cli.main(["import", "prometheus", str(export), "--out", str(out)]) == 0


def test_whole_job_record_refuses_samples_it_would_never_write(serve, tmp_path):
    samples = tmp_path / "s.jsonl"
    proc = _run(_whole_job(serve(FakeJob(["RUNNING"])), tmp_path / "r.json", "--samples", str(samples)))
    err = _clean_exit_2(proc)
    assert f"--samples {samples}" in err and "--vertex" in err and not samples.exists()
