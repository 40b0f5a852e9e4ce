"""The sweep (wmviz/analysis/sweep.py): reading `--vary`, the grid, and counters that agree with the
transcript for every combination."""

from __future__ import annotations

import dataclasses
import itertools
import json
import random
from pathlib import Path

import pytest

from tests.support import paths
from wmviz.analysis.sweep import (
    Vary,
    grid,
    nearest_rank,
    parse_vary,
    recommend,
    run_sweep,
    sweep_configs,
)
from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.scenario import Trace
from wmviz.core.simulate import simulate
from wmviz.record.kafka import KafkaImport, build_trace, read_dump
from wmviz.store.incidents import built_in_incidents
from wmviz.timeline.transcript import transcript_record
from wmviz.trace.errors import TraceValidationError
from wmviz.trace.readers import read_trace
from wmviz.view.tune import pareto_front

DATA = paths.DATA


def operator_incidents(sql: bool = False) -> dict[str, Trace]:
    """The built-in incidents with an operator: DataStream's (whose knobs are the out-of-orderness
    bound and allowed lateness), or SQL's (whose knob is the WATERMARK's delay)."""
    return {
        slug: trace
        for slug, incident in built_in_incidents().items()
        if (trace := incident.trace()).config.operator.type_name != "none"
        and isinstance(trace.config.operator, SqlOperatorKind) is sql
    }


@pytest.fixture(scope="module")
def kafka_sample() -> Trace:
    return read_trace(DATA / "kafka-rebalance.csv", DATA / "kafka-rebalance.json")


@pytest.fixture(scope="module")
def kafka_dump(tmp_path_factory) -> Trace:
    """The committed Kafka dump imported as per-split generators, with one-minute windows behind."""
    options = KafkaImport(parallelism=3, out_of_orderness_ms=5000, idleness_ms=60_000, topic="shop.orders")
    config, rows = build_trace(read_dump(DATA / "kafka" / "shop-orders.kcat.txt"), options, "dump")
    config["operator"] = {"type": "window", "size_ms": 60_000, "aggregate": "count"}
    path = tmp_path_factory.mktemp("dump") / "orders.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [{"config": config}, *rows]) + "\n")
    return read_trace(path)


def transcript_drops(trace: Trace) -> int:
    """How many records the transcript lists as dropped (what `wmviz transcript` prints)."""
    return sum(len(transcript_record(r, operator=True)["dropped"]) for r in simulate(trace))


# ---- reading --vary ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "path", "values"),
    [
        (
            "generator.out_of_orderness_ms=0,5s,200ms,1m",
            "generator.out_of_orderness_ms",
            (0, 5000, 200, 60_000),
        ),
        ("generator.idle_timeout_ms=none,1m30s", "generator.idle_timeout_ms", (None, 90_000)),
        ("operator.lower_ms=-5s,-1", "operator.lower_ms", (-5000, -1)),
        ("operator.aggregate=count, sum", "operator.aggregate", ("count", "sum")),
        ("operator.all_idle_flush=true,false", "operator.all_idle_flush", (True, False)),
    ],
)
def test_vary_values_are_numbers_durations_words_or_text(text, path, values):
    assert parse_vary(text) == Vary(path, values)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("generator.out_of_orderness_ms", "expected FIELD=V1,V2"),
        ("=1,2", "expected FIELD=V1,V2"),
        ("operator.size_ms=", "an empty value"),
        ("operator.size_ms=1,,2", "an empty value"),
        ("operator.size_ms=1s,1000", '"1000" is listed twice'),
    ],
)
def test_a_malformed_vary_is_named(text, message):
    with pytest.raises(ValueError, match=message):
        parse_vary(text)


def test_the_grid_is_every_combination_first_field_slowest():
    varies = [Vary("a", (1, 2)), Vary("b", ("x", "y", "z"))]
    assert grid(varies) == [(1, "x"), (1, "y"), (1, "z"), (2, "x"), (2, "y"), (2, "z")]


def test_a_grid_over_the_budget_is_refused_before_it_is_built(monkeypatch):
    monkeypatch.setenv("WMVIZ_MAX_SWEEP_COMBINATIONS", "5")
    with pytest.raises(ValueError, match=r"2 × 3 = 6 combinations .* 5 \(WMVIZ_MAX_SWEEP_COMBINATIONS\)"):
        grid([Vary("a", (1, 2)), Vary("b", (1, 2, 3))])
    assert len(grid([Vary("a", (1, 5)), Vary("b", (1,))])) == 2


def test_the_same_field_twice_is_refused():
    with pytest.raises(ValueError, match="given twice"):
        grid([Vary("a", (1,)), Vary("a", (2,))])


@pytest.mark.parametrize(
    ("vary", "message"),
    [
        ("generator.out_of_orderness_ms=0,5x", 'field generator.out_of_orderness_ms: "5x" is not an integer'),
        ("generator.out_of_orderness_ms=-1s", "field generator.out_of_orderness_ms: -1000 must be >= 0"),
        ("operator.sizems=1s", "field operator.sizems: unknown field"),
        ("operator.lower_ms=1s", "operator.lower_ms: not used by operator type window"),
    ],
)
def test_a_field_or_value_the_config_refuses_names_its_path(vary, message):
    base = built_in_incidents()["late-data-allowed-lateness"].trace().config
    with pytest.raises(TraceValidationError, match=message):
        sweep_configs(base, [parse_vary(vary)])


# ---- counters ----------------------------------------------------------------------------------


def _variations(trace: Trace, rng: random.Random) -> list[Vary]:
    """A few random values for the fields this trace's config has."""
    varies = []
    if trace.config.generator is not None:
        varies.append(Vary("generator.out_of_orderness_ms", tuple(rng.sample(range(0, 8000), 2))))
        varies.append(Vary("generator.idle_timeout_ms", (None, rng.randint(1, 6000))))
    if trace.config.operator.type_name == "window":
        varies.append(Vary("operator.allowed_lateness_ms", (0, rng.randint(1, 5000))))
    else:
        varies.append(Vary("operator.min_cleanup_interval_ms", (0, rng.randint(1, 5000))))
    return varies


@pytest.mark.parametrize("slug", sorted(operator_incidents()))
def test_late_dropped_is_what_the_transcript_drops_for_every_combination(slug):
    trace = operator_incidents()[slug]
    varies = _variations(trace, random.Random(slug))
    table = run_sweep(trace, varies)
    configs = sweep_configs(trace.config, varies)
    assert len(table) == len(configs) == len(grid(varies))
    for row, config in zip(table, configs, strict=True):
        expected = transcript_drops(dataclasses.replace(trace, config=config))
        assert row["late_dropped"] == expected, (slug, row)
        assert row["records"] == sum(r.kind.value == "record" for r in trace.rows)
        assert row["late_share"] == expected / row["records"]


def test_late_dropped_agrees_with_the_transcript_on_the_kafka_sample(kafka_sample):
    varies = [Vary("operator.allowed_lateness_ms", (0, 30_000, 120_000))]
    table = run_sweep(kafka_sample, varies)
    for row, config in zip(table, sweep_configs(kafka_sample.config, varies), strict=True):
        assert row["late_dropped"] == transcript_drops(dataclasses.replace(kafka_sample, config=config))
    assert table[0]["late_dropped"] > 0, "the sample's backlog is dropped with no lateness"
    assert table[-1]["late_dropped"] < table[0]["late_dropped"]
    assert {row["delay_clock"] for row in table} == {"proc_ms"}


def _non_increasing(values: list[int]) -> bool:
    return all(b <= a for a, b in itertools.pairwise(values))


@pytest.mark.parametrize("slug", sorted(s for s, t in operator_incidents().items() if t.config.generator))
def test_more_out_of_orderness_or_lateness_never_drops_more(slug):
    trace = operator_incidents()[slug]
    bounds = (0, 1, 2, 5, 500, 1000, 2000, 3000, 5000, 10_000, 60_000)
    for field in ("generator.out_of_orderness_ms", "operator.allowed_lateness_ms"):
        other = (
            "operator.allowed_lateness_ms"
            if field.startswith("generator")
            else "generator.out_of_orderness_ms"
        )
        for fixed in (0, 1, 2000):
            table = run_sweep(trace, [Vary(other, (fixed,)), Vary(field, bounds)])
            drops = [row["late_dropped"] for row in table]
            assert _non_increasing(drops), (slug, field, fixed, drops)


@pytest.mark.parametrize("slug", sorted(operator_incidents(sql=True)))
def test_a_longer_sql_watermark_delay_never_drops_more(slug):
    """The SQL incidents swept over their WATERMARK's delay: drops never rise with it, and each
    row's late_dropped is what the transcript drops under that config."""
    trace = operator_incidents(sql=True)[slug]
    varies = [Vary("generator.watermark_delay_ms", (0, 500, 1000, 2000, 5000, 10_000))]
    table = run_sweep(trace, varies)
    assert _non_increasing([row["late_dropped"] for row in table]), slug
    for row, config in zip(table, sweep_configs(trace.config, varies), strict=True):
        assert row["late_dropped"] == transcript_drops(dataclasses.replace(trace, config=config)), slug


def test_more_lateness_never_drops_more_on_the_kafka_sample(kafka_sample):
    table = run_sweep(
        kafka_sample, [Vary("operator.allowed_lateness_ms", (0, 1000, 10_000, 60_000, 180_000))]
    )
    drops = [row["late_dropped"] for row in table]
    assert _non_increasing(drops) and drops[0] > drops[-1]


def test_the_imported_kafka_dump_agrees_with_the_transcript_and_drops_less_with_larger_bounds(kafka_dump):
    varies = [
        Vary("generator.out_of_orderness_ms", (0, 5000, 120_000)),
        Vary("operator.allowed_lateness_ms", (0, 600_000)),
    ]
    table = run_sweep(kafka_dump, varies)
    for row, config in zip(table, sweep_configs(kafka_dump.config, varies), strict=True):
        assert row["late_dropped"] == transcript_drops(dataclasses.replace(kafka_dump, config=config))
    by_bounds = {(r["generator.out_of_orderness_ms"], r["operator.allowed_lateness_ms"]): r for r in table}
    for lateness in (0, 600_000):
        assert _non_increasing([by_bounds[(o, lateness)]["late_dropped"] for o in (0, 5000, 120_000)])
    assert by_bounds[(0, 0)]["late_dropped"] > 0
    # A longer bound costs latency: the firings come later.
    assert by_bounds[(120_000, 0)]["firing_delay_p50_ms"] > by_bounds[(0, 0)]["firing_delay_p50_ms"]


def _window_trace(tmp_path: Path, rows: list[dict], *, ooo: int = 0, slide: int | None = None) -> Trace:
    config = {
        "generator": {"out_of_orderness_ms": ooo},
        "operator": {"type": "window", "size_ms": 10, "slide_ms": slide, "aggregate": "count"},
    }
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in [{"config": config}, *rows]) + "\n")
    return read_trace(path)


def test_firing_delay_and_stall_are_read_on_the_proc_clock(tmp_path):
    # Per-record watermarks (event - 0 - 1): the record at 12 fires [0,10) at proc 1050; the record
    # at 25 fires [10,20) at proc 1300. The watermark rises at every record but the one at 5.
    rows = [
        {"kind": "record", "channel": 0, "event_ms": 3, "proc_ms": 1000},
        {"kind": "record", "channel": 0, "event_ms": 2, "proc_ms": 1010},
        {"kind": "record", "channel": 0, "event_ms": 12, "proc_ms": 1050},
        {"kind": "record", "channel": 0, "event_ms": 5, "proc_ms": 1200},
        {"kind": "record", "channel": 0, "event_ms": 25, "proc_ms": 1300},
    ]
    (row,) = run_sweep(_window_trace(tmp_path, rows), [Vary("generator.out_of_orderness_ms", (0,))])
    assert row["firings"] == 2 and row["late_dropped"] == 1  # the record at 5 is late for [0,10)
    assert row["firing_delay_p50_ms"] == 1050 - 10 and row["firing_delay_p95_ms"] == 1300 - 20
    # Standing still from 1050 (the rise at 12) until the record at 1300 arrived: 250 ms.
    assert row["output_stall_ms"] == 250 and row["delay_clock"] == "proc_ms"


def test_without_proc_ms_the_clock_is_the_largest_event_time_so_far(tmp_path):
    rows = [{"kind": "record", "channel": 0, "event_ms": e} for e in (3, 12, 14, 26)]
    (row,) = run_sweep(_window_trace(tmp_path, rows, ooo=3), [Vary("operator.allowed_lateness_ms", (0,))])
    # [0,10) fires at watermark 10 (the record at 14, clock 14): 4 late; [10,20) at 26: 6.
    assert (row["firings"], row["firing_delay_p50_ms"], row["firing_delay_p95_ms"]) == (2, 4, 6)
    assert row["delay_clock"] == "event_ms"


def test_records_in_a_gap_between_sliding_windows_count_as_the_transcript_counts_them(tmp_path):
    # Windows of 10 every 20: 15, 35, 12 and 56 fall in gaps, dropped though not late; tumbling,
    # only 12 is late (behind the watermark 34) unless the bound is 30.
    rows = [{"kind": "record", "channel": 0, "event_ms": e} for e in (3, 15, 35, 12, 56)]
    trace = _window_trace(tmp_path, rows, slide=20)
    varies = [Vary("operator.slide_ms", (20, 10)), Vary("generator.out_of_orderness_ms", (0, 30))]
    table = run_sweep(trace, varies)
    for row, config in zip(table, sweep_configs(trace.config, varies), strict=True):
        assert row["late_dropped"] == transcript_drops(dataclasses.replace(trace, config=config))
    assert [row["late_dropped"] for row in table] == [4, 4, 1, 0]


def test_nearest_rank_percentiles():
    assert nearest_rank([], 0.5) is None
    assert nearest_rank([5], 0.95) == 5
    assert nearest_rank(list(range(1, 101)), 0.95) == 95
    assert nearest_rank([4, 1, 3, 2], 0.5) == 2


def _row(share: float, p95: int | None, p50: int | None = 0) -> dict:
    return {"late_share": share, "firing_delay_p95_ms": p95, "firing_delay_p50_ms": p50}


def test_the_recommendation_is_the_fastest_row_meeting_the_target():
    table = [_row(0.01, 100), _row(0.0, 900), _row(0.0005, 300, 50), _row(0.0005, 300, 40), _row(0.0, None)]
    assert recommend(table, 0.001) is table[3]
    assert recommend(table, 0.0) is table[1]
    assert recommend([_row(0.5, 10)], 0.001) is None


def test_the_pareto_front_keeps_the_rows_nothing_beats_on_both():
    table = [
        _row(0.01, 100),
        _row(0.0, 900),
        _row(0.02, 200),
        _row(0.0, 950),
        _row(0.005, 400),
        _row(0.0, None),
    ]
    assert pareto_front(table) == [0, 1, 4]


# ---- a combination as a what-if ----------------------------------------------------------------


def test_a_combination_opens_as_a_config_what_if_that_a_link_carries():
    from wmviz.analysis.compare import step_map
    from wmviz.analysis.whatif_edit import Configure, describe_edit
    from wmviz.analysis.whatif_token import decode_edit, encode_edit
    from wmviz.analysis.whatif_trace import apply_edit

    trace = built_in_incidents()["resumed-partition-records-late"].trace()
    varies = [Vary("generator.out_of_orderness_ms", (5000,)), Vary("operator.allowed_lateness_ms", (1000,))]
    (row,) = run_sweep(trace, varies)
    edit = Configure({v.path: row[v.path] for v in varies})
    assert decode_edit(encode_edit(edit)) == edit
    edited = apply_edit(trace, edit)
    assert edited.config == sweep_configs(trace.config, varies)[0]
    assert [r.event_ms for r in edited.rows] == [r.event_ms for r in trace.rows]
    assert transcript_drops(edited) == row["late_dropped"]
    assert step_map(edit, len(trace.rows), instance="0")(7) == 7
    assert describe_edit(edit) == (
        "what if the config had had generator.out_of_orderness_ms 5s, operator.allowed_lateness_ms 1s?"
    )
    with pytest.raises(TraceValidationError, match=r"field operator\.lower_ms"):
        apply_edit(trace, Configure({"operator.lower_ms": 1}))
