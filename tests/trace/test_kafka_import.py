"""`wmviz import kafka`: the dump, KafkaSourceEnumerator's assignment, the per-split stage it feeds,
and the page drawing that stage; the lagging-partition incident of tests/support/kafka_dump.py."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from itertools import takewhile

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO
from tests.support.html_tables import CHANNEL_TABLE_CLASS, read_tables, walk
from tests.support.kafka_dump import FILE, lines
from wmviz.core.scenario import ScenarioConfig, Trace
from wmviz.core.simulate import Simulation
from wmviz.core.story import explain_step
from wmviz.core.types import EmittedWatermark
from wmviz.record.kafka import KafkaDumpError, java_string_hash, parse_line, split_owner
from wmviz.store import uploads
from wmviz.trace.readers import read_trace
from wmviz.ui import import_views
from wmviz.view.timefmt import TimeFormat

# Java's own String.hashCode() and KafkaSourceEnumerator's start index for 3 and 7 readers,
# printed by a JVM (javac'd one-liner) for these names, including non-Latin ones and a surrogate pair.
JAVA_HASHES = {
    "orders": (-1008770331, 0, 3),
    "clicks": (-1357714453, 0, 0),
    "événements": (-1479837150, 2, 6),
    "a-very-long-topic-name-with-many-characters-0123456789": (2016328611, 2, 0),
    "日本語": (25921943, 2, 1),
    "𝄞music": (1496085755, 2, 2),
}


@pytest.mark.parametrize("topic", JAVA_HASHES)
def test_partitions_go_to_the_subtasks_kafka_source_enumerator_picks(topic):
    java_hash, start3, start7 = JAVA_HASHES[topic]
    assert java_string_hash(topic) == java_hash
    assert [split_owner(topic, p, 3) for p in range(4)] == [(start3 + p) % 3 for p in range(4)]
    assert split_owner(topic, 0, 7) == start7


def test_the_committed_dump_is_exactly_what_its_generator_writes():
    assert FILE.read_text(encoding="utf-8").splitlines() == lines()


@pytest.mark.parametrize(
    "text, expected",
    [
        ("5 1042 1795514715000", (None, 5, 1042, 1795514715000, None)),
        (
            "shop.orders 5 1042 1795514715000 1795514700000",
            ("shop.orders", 5, 1042, 1795514715000, 1795514700000),
        ),
        ("CreateTime:1795514715000\tPartition:5\tOffset:1042\t{}", (None, 5, 1042, 1795514715000, None)),
        ("5 1042 2026-11-24T10:05:15Z", (None, 5, 1042, 1795514715000, None)),
    ],
)
def test_dump_lines_in_the_formats_kcat_and_the_console_consumer_write(text, expected):
    r = parse_line(text, 1, "d.txt")
    assert (r.topic, r.partition, r.offset, r.timestamp_ms, r.event_ms) == expected


@pytest.mark.parametrize(
    "text, message",
    [
        ("5 1042", "expected `partition offset timestamp"),
        ("5 x 1795514715000", "must be integers"),
        ("5 1 -1", "has no timestamp"),
        ("5 1 soon", "timestamp 'soon'"),
        ("CreateTime:1\tOffset:3", "without partition"),
    ],
)
def test_bad_dump_lines_name_the_file_and_line(text, message):
    with pytest.raises(KafkaDumpError, match=message) as err:
        parse_line(text, 7, "d.txt")
    assert str(err.value).startswith("d.txt:7:")


def _import(tmp_path, *extra) -> tuple[subprocess.CompletedProcess, Trace | None]:
    out = tmp_path / "orders.jsonl"
    command = [sys.executable, "-m", "wmviz", "import", "kafka", str(FILE), "--parallelism", "3",
               "--out-of-orderness", "5s", "--idleness", "1m", "--topic", "shop.orders", "--out", str(out),
               *extra]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True)
    return proc, (read_trace(out) if proc.returncode == 0 else None)


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    proc, trace = _import(tmp_path_factory.mktemp("kafka"))
    assert proc.returncode == 0, proc.stderr
    return trace


def test_six_partitions_become_six_splits_over_three_subtasks(imported):
    assert imported.config.generator.splits == (
        (0, ("shop.orders-1", "shop.orders-4")),
        (1, ("shop.orders-2", "shop.orders-5")),
        (2, ("shop.orders-0", "shop.orders-3")),
    )
    assert imported.valve_channels == {("0", "0"): 3}
    records = [r for r in imported.rows if r.kind.value == "record"]
    assert len(records) == 2700
    proc = [r.proc_ms for r in imported.rows]
    assert proc == sorted(proc)


def _run(trace):
    sim = Simulation(trace)
    return sim, list(sim.run(explain=True))


def test_partition_5_resumes_ten_minutes_behind_and_holds_subtask_1(imported):
    times = TimeFormat("utc", short=True)
    _, results = _run(imported)
    text = [explain_step(r, times) for r in results]
    resumed = [line for line in text if "split shop.orders-5 of subtask 1 resumed" in line]
    assert len(resumed) == 1
    behind = "9m 57.742s behind the subtask's output 2026-11-24 10:11:53.306Z, and holds subtask 1"
    assert behind in resumed[0]
    idle = [line for line in text if "split shop.orders-5 of subtask 1 went idle" in line]
    assert len(idle) == 2  # after the producer goes down, and at the end of the dump


def _output_at(results, proc_ms: int) -> int:
    out = None
    for r in results:
        if r.row.proc_ms is not None and r.row.proc_ms > proc_ms:
            break
        for e in r.out:
            if isinstance(e, EmittedWatermark):
                out = e.watermark_ms
    return out


def test_the_lagging_split_stalls_everything_downstream_and_the_collapsed_model_misses_it(imported):
    at = 1795514400000 + 12 * 60_000  # 10:12:00, when partition 5's backlog starts
    _, results = _run(imported)
    # From the moment partition 5 is back, the output stays at what subtask 1 last sent
    # (10:11:53.306) for 25 s, while partition 5 catches up.
    held = 1795514400000 + 11 * 60_000 + 53_306
    assert _output_at(results, at + 2_000) == _output_at(results, at + 25_000) == held
    assert _output_at(results, at + 60_000) - _output_at(results, at) > 50_000
    # One generator per subtask (the partitions collapsed into channels) sees no stall at all.
    generator = replace(imported.config.generator, splits=())
    collapsed = replace(imported, config=replace(imported.config, generator=generator))
    _, flat = _run(collapsed)
    assert _output_at(flat, at + 25_000) - _output_at(flat, at) > 20_000


def test_the_split_table_shows_who_holds_the_subtask(imported):
    sim = Simulation(imported)
    at = 1795514400000 + 12 * 60_000 + 10_000
    for _ in takewhile(lambda r: r.row.proc_ms <= at, sim.run()):
        pass
    table = import_views.split_table(sim.pipelines["0"], TimeFormat("utc", short=True))
    row = table[table["split"] == "shop.orders-5"].iloc[0]
    assert row["subtask"] == 1 and row["status"] == "ACTIVE" and row["holds"] == "holds subtask 1"
    assert row["subtask sent"] == "2026-11-24 10:11:53.306Z"
    assert set(table["split"]) == {f"shop.orders-{p}" for p in range(6)}
    assert import_views.split_table(Simulation(_valve_only()).pipeline("0"), TimeFormat("utc")) is None


def test_the_split_table_never_shows_min_as_a_raw_long(imported):
    """Issue 30 (5): a split that has sent nothing read -9223372036854775808 in its raw column; the
    raw column now says MIN and MAX by name, as the channel table does, and is left out in ms mode."""
    sim = Simulation(imported)
    next(iter(sim.run()))
    table = import_views.split_table(sim.pipelines["0"], TimeFormat("utc", short=True))
    assert str(-(2**63)) not in table.to_string() and "MIN" in set(table["watermark"])
    raw_mode = import_views.split_table(sim.pipelines["0"], TimeFormat("ms"))
    assert "raw (ms)" not in raw_mode.columns


def _valve_only() -> Trace:
    return Trace("v", (), ScenarioConfig(channels={"0": 2}), {("0", "0"): 2})


def test_a_missing_topic_and_a_record_without_its_split_are_clear_errors(tmp_path):
    out = tmp_path / "o.jsonl"
    command = [sys.executable, "-m", "wmviz", "import", "kafka", str(FILE), "--parallelism", "3",
               "--out-of-orderness", "5s", "--out", str(out)]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True)
    assert proc.returncode == 2 and "pass --topic" in proc.stderr
    _import(tmp_path)
    text = out.with_name("orders.jsonl").read_text().replace('"split": "shop.orders-2", ', "", 1)
    broken = tmp_path / "broken.jsonl"
    broken.write_text(text)
    proc = subprocess.run(
        [sys.executable, "-m", "wmviz", "explain", str(broken)], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert "column split: channel 1 reads splits, so a record needs its split" in proc.stderr


def test_the_page_draws_the_split_stage_above_the_channels(imported, tmp_path, monkeypatch):
    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path / "timelines"))
    _, trace = _import(tmp_path)
    stored = uploads.store_upload("shop-orders.jsonl", (tmp_path / "orders.jsonl").read_bytes(), None)
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    step = next(i for i, r in enumerate(trace.rows) if r.proc_ms > 1795514400000 + 12 * 60_000 + 10_000)
    for key, value in {"trace": stored.digest, "engine": "local", "step": str(step)}.items():
        app.query_params[key] = value
    app.run()
    assert not app.exception, app.exception
    drawn = list(walk(app.main))  # every element in page order
    # The split stage is an HTML table that wraps (issue 30: nothing cut at 1440 px), not a grid.
    first_splits, splits = next(
        (i, table.frame)
        for i, e in enumerate(drawn)
        if e.type == "html"
        for table in read_tables(e.value)
        if "split" in table.frame.columns
    )
    assert splits.loc[splits["split"] == "shop.orders-5", "holds"].iloc[0] == "holds subtask 1"
    first_channels = next(
        i
        for i, e in enumerate(drawn)
        if e.type == "html" and any(t.css_class == CHANNEL_TABLE_CLASS for t in read_tables(e.value))
    )
    assert first_splits < first_channels


def test_a_split_reader_survives_its_keyframe(tmp_path):
    """The timeline's keyframes hold split readers like any core state: a pipeline restored at
    the step partition 5 resumes goes on exactly as the original."""
    from wmviz.timeline import keyframe
    from wmviz.timeline.local import build_timeline_local
    from wmviz.timeline.store import Timeline

    _, trace = _import(tmp_path)
    build_timeline_local(trace, tmp_path / "timeline", keyframe_every=500)
    timeline = Timeline(tmp_path / "timeline")
    for at in (1859, 1861, 2000):
        original = timeline.state_at("0", at).pipeline
        blob = keyframe.encode(original, timeline.meta.refs())
        restored = keyframe.decode(blob, timeline.meta.refs())
        assert restored.snapshot() == original.snapshot()
        rows = list(trace.rows)[at + 1 : at + 200]
        for step, row in enumerate(rows, start=at + 1):
            assert repr(restored.process(step, row, explain=True)) == repr(
                original.process(step, row, explain=True)
            )


@pytest.mark.parametrize(
    "splits, generator, message",
    [
        ({"0": ["a", "b"]}, {}, "split readers model a FLIP-27 source: they need resume flip27-released"),
        ({"x": ["a"]}, {"emit": "periodic", "resume": "flip27-released"}, 'generator.splits.x: "x" is not a'),
        (
            {"0": "a"},
            {"emit": "periodic", "resume": "flip27-released"},
            "expected a list of split ids",
        ),
        ({"0": ["a", "a"]}, {"emit": "periodic", "resume": "flip27-released"}, "a split is listed twice"),
    ],
)
def test_bad_split_configs_are_named(tmp_path, splits, generator, message):
    trace = tmp_path / "t.jsonl"
    config = {"generator": {**generator, "splits": splits}}
    trace.write_text(json.dumps({"config": config}) + "\n" + '{"kind": "proctime", "proc_ms": 1}\n')
    proc = subprocess.run(
        [sys.executable, "-m", "wmviz", "validate", str(trace)], capture_output=True, text=True
    )
    assert proc.returncode == 2
    assert message in proc.stderr, proc.stderr


def test_a_split_config_round_trips_through_the_config_writer():
    from wmviz.trace.config import parse_config
    from wmviz.trace.config_write import config_to_dict

    raw = {"generator": {"emit": "periodic", "resume": "flip27-released", "splits": {"1": ["p1", "p4"]}}}
    config = parse_config(raw, "c.json")
    assert config.generator.splits == ((1, ("p1", "p4")),)
    assert parse_config(config_to_dict(config), "c.json") == config


def test_an_output_that_cannot_be_written_is_a_clear_error(tmp_path):
    command = [sys.executable, "-m", "wmviz", "import", "kafka", str(FILE), "--parallelism", "3",
               "--out-of-orderness", "5s", "--topic", "shop.orders",
               "--out", str(tmp_path / "no" / "t.jsonl")]  # fmt: skip
    proc = subprocess.run(command, capture_output=True, text=True)
    assert proc.returncode == 2 and "cannot be written" in proc.stderr
