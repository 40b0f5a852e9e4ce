"""The samples → trace builder, replay agreement and the Prometheus import, without a JVM."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace

import pytest

from tests.support.prometheus_shape import write_query_range
from wmviz.core.simulate import simulate
from wmviz.core.types import MAX_MS, MIN_MS
from wmviz.record.agreement import END_OF_INPUT, IN_FLIGHT, INFERRED_STATUS, UNEXPLAINED, ReplayCheck
from wmviz.record.output import parse_duration_ms
from wmviz.record.rest import RecordError, edge_of, metric_name, resolve_vertex, tail_operator_ids
from wmviz.record.samples import FORWARD, Sample, Topology, TraceBuilder, long_from_metric
from wmviz.trace.readers import read_trace

T0 = 1_795_600_000_000


def _samples() -> list[Sample]:
    """Two upstream sources; source 1 is 5 s behind, goes quiet, then comes back; a restart.

    What the job reports: the minimum until source 1 is idle (its sourceIdleTime reaches 1.9 s at
    i = 5), then source 0's watermark, also after source 1 is back, since it comes back below the
    output and stays unaligned.
    """
    out = []
    for i in range(12):
        quiet = 4 <= i < 8
        idle_ms = 0 if not quiet else (i - 3) * 1000
        w0, w1 = T0 + i * 1000, (T0 - 5000 + (3 if quiet else i) * 1000)
        reported = min(w0, w1) if i < 5 else w0
        out.append(Sample(T0 + i * 1000, 0, {0: w0, 1: w1}, {0: 0, 1: idle_ms}, {0: reported, 1: reported}))
    out.append(Sample(T0 + 13_000, 1, {0: T0 + 100}, {0: 0, 1: 0}, {0: MIN_MS, 1: MIN_MS}))
    return out


def _topology(**kw) -> Topology:
    base = dict(vertex="op", upstream="Source: s", parallelism=2, upstream_parallelism=2,
                idleness_ms=1500, watermark_interval_ms=200)  # fmt: skip
    return Topology(**{**base, **kw})


def _write(rows, config, path):
    path.write_text("\n".join(json.dumps(r) for r in [{"config": config}, *rows]) + "\n")
    return read_trace(path)


def _check(trace) -> ReplayCheck:
    check = ReplayCheck()
    for result in simulate(trace):
        check.observe(result)
    return check


def test_samples_become_a_trace_whose_replay_agrees(tmp_path):
    builder = TraceBuilder(_topology())
    rows = [row for s in _samples() for row in builder.add(s)]
    trace = _write(rows, builder.config("t", ""), tmp_path / "t.jsonl")
    assert trace.instances == ["0", "1", "0@r1", "1@r1"]
    check = _check(trace)
    assert len(check.checks) == 13 * 2
    assert check.share == 1.0, [c for c in check.checks if not c.agrees]
    statuses = [(r.instance, r.channel, r.status.value) for r in trace.rows if r.status is not None]
    assert statuses == [("0", 1, "IDLE"), ("1", 1, "IDLE"), ("0", 1, "ACTIVE"), ("1", 1, "ACTIVE")]
    # IDLE at sourceIdleTime ≥ 1500 + 2·200 ms: the sample with 2000 ms, not the one with 1000 ms.
    idle_row = next(r for r in trace.rows if r.status is not None)
    assert idle_row.proc_ms == T0 + 5000
    assert "sourceIdleTime 2000 ms >= 1900 ms" in dict(idle_row.payload)["inferred"]


def test_a_wrong_channel_mapping_is_flagged(tmp_path):
    """Recorded as a forward edge (one channel), the slow source 1 is lost to instance 0: flagged."""
    builder = TraceBuilder(_topology(edge=FORWARD))
    rows = [row for s in _samples() for row in builder.add(s)]
    check = _check(_write(rows, builder.config("t", ""), tmp_path / "t.jsonl"))
    assert check.share < 0.8
    assert any(c.replay_ms > c.reported_ms for c in check.checks if c.instance == "0")


def test_a_missed_sample_is_flagged_not_hidden(tmp_path):
    builder = TraceBuilder(_topology(idleness_ms=None))
    samples = _samples()
    rows = [row for s in samples for row in builder.add(s)]
    check = _check(_write(rows, builder.config("t", ""), tmp_path / "t.jsonl"))
    # Without the idleness timeout nothing is inferred idle: the seven samples (i = 5..11) where
    # the job had moved on past the quiet source disagree in both instances, the replay behind.
    wrong = [c for c in check.checks if not c.agrees]
    assert len(wrong) == 14
    assert all(c.replay_ms < c.reported_ms for c in wrong)


def test_metric_values_read_as_java_longs():
    assert long_from_metric("-9223372036854775808") == MIN_MS
    assert long_from_metric(-9.223372036854776e18) == MIN_MS
    assert long_from_metric("1795600000000") == 1795600000000
    assert long_from_metric("1.7956e12") == 1_795_600_000_000
    with pytest.raises(ValueError):
        long_from_metric("NaN")


def test_durations():
    assert parse_duration_ms("250ms", "--every") == 250
    assert parse_duration_ms("1m30s", "--for") == 90_000
    assert parse_duration_ms("1.5s", "--every") == 1500
    for bad in ("", "1x", "s", "1s2"):
        with pytest.raises(ValueError, match="expected a duration"):
            parse_duration_ms(bad, "--every")


def test_vertices_edges_and_metric_ids_as_flink_names_them():
    vertices = [{"id": "a1", "name": "Source: orders"}, {"id": "b2", "name": "window -> Sink: out"}]
    assert resolve_vertex(vertices, "window")["id"] == "b2"
    assert resolve_vertex(vertices, "a1")["id"] == "a1"
    with pytest.raises(RecordError, match="not a vertex of the job"):
        resolve_vertex(vertices, "join")
    plan = {"plan": {"nodes": [{"id": "b2", "inputs": [{"id": "a1", "ship_strategy": "HASH"}]}]}}
    assert edge_of(plan, "b2") == ("a1", "all-to-all")
    plan["plan"]["nodes"][0]["inputs"][0]["ship_strategy"] = "RESCALE"
    with pytest.raises(RecordError, match="RESCALE"):
        edge_of(plan, "b2")
    assert metric_name("Source: orders") == "Source__orders"
    ids = ["0.Source__orders.currentOutputWatermark", "0.Map.currentOutputWatermark",
           "1.Map.currentOutputWatermark", "1.Source__orders.currentOutputWatermark",
           "0.currentInputWatermark"]  # fmt: skip
    assert tail_operator_ids(ids, "Source: orders -> Map", "currentOutputWatermark") == {
        0: "0.Map.currentOutputWatermark",
        1: "1.Map.currentOutputWatermark",
    }


def test_the_prometheus_fixture_imports_and_agrees(tmp_path):
    fixture = "tests/data/prometheus/skewed-sources-query-range.json"
    out = tmp_path / "p.jsonl"
    command = [sys.executable, "-m", "wmviz", "import", "prometheus", fixture, "--vertex", "downstream",
               "--idleness", "1500ms", "--out", str(out)]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    trace = read_trace(out)
    check = _check(trace)
    assert len(check.checks) >= 80 and check.share >= 0.95
    assert any(r.status is not None and r.status.value == "IDLE" for r in trace.rows)


def test_prometheus_restarts_start_fresh_valves(tmp_path):
    samples = [json.loads(json.dumps(_as_json(s))) for s in _samples()]
    matrix = tmp_path / "q.json"
    write_query_range(samples, matrix, upstream="Source: s", vertex="op", operator="Source: s")
    out = tmp_path / "p.jsonl"
    command = [sys.executable, "-m", "wmviz", "import", "prometheus", str(matrix), "--idleness", "1500ms",
               "--out", str(out)]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert read_trace(out).instances == ["0", "1", "0@r1", "1@r1"]


def _as_json(s: Sample) -> dict:
    return {"time_ms": s.time_ms, "epoch": s.epoch, "upstream_watermark": s.upstream_watermark,
            "upstream_idle_ms": s.upstream_idle_ms, "reported": s.reported}  # fmt: skip


@pytest.mark.parametrize(
    "body, message",
    [
        ("not json", "not JSON"),
        ('{"status": "success", "data": {"resultType": "vector", "result": []}}', "expected a query_range"),
        ('{"status": "success", "data": {"resultType": "matrix", "result": []}}', "none of"),
    ],
)
def test_bad_prometheus_files_exit_2_with_the_file_named(tmp_path, body, message):
    bad = tmp_path / "bad.json"
    bad.write_text(body)
    proc = subprocess.run([sys.executable, "-m", "wmviz", "import", "prometheus", str(bad), "--out",
                           str(tmp_path / "o.jsonl")], capture_output=True, text=True)  # fmt: skip
    assert proc.returncode == 2
    assert "bad.json" in proc.stderr and message in proc.stderr


def test_disagreements_are_named_by_their_cause(tmp_path):
    """A report between the previous and the current replay output is a watermark in flight; a
    report the replay passed because of a status inferred in that sample is the inference; a
    report below even the previous replay output is unexplained."""
    builder = TraceBuilder(_topology())
    samples = _samples()
    samples[2] = replace(samples[2], reported={0: T0 - 3500, 1: T0 - 3000})  # instance 0 in flight
    samples[5] = replace(samples[5], reported={0: T0 - 2000, 1: T0 + 5000})  # 0 not yet idle
    samples[9] = replace(samples[9], reported={0: T0, 1: T0 + 9000})  # 0 far behind
    samples[11] = replace(samples[11], reported={0: MAX_MS, 1: T0 + 11000})  # 0 got its sources' final MAX
    rows = [row for s in samples for row in builder.add(s)]
    check = _check(_write(rows, builder.config("t", ""), tmp_path / "t.jsonl"))
    causes = {(c.instance, c.step): c.cause for c in check.checks if not c.agrees}
    by_cause = sorted(causes.values())
    assert by_cause == [END_OF_INPUT, IN_FLIGHT, INFERRED_STATUS, UNEXPLAINED], causes
