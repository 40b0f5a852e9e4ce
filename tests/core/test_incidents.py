"""The built-in incidents: every trace validates, has a three-part story, and does what its story says.

Each behaviour test replays the incident (and, where the story's fix section names a change, the
changed trace) and checks the steps the story names, so a change in the core that breaks a story
fails here rather than misleading a reader.
"""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

from tests.conftest import REPO
from wmviz.core.operator_log import Cause, Dropped, JoinOutput, RowKind, WindowOutput
from wmviz.core.scenario import Kind, Trace, TraceRow
from wmviz.core.simulate import Simulation, simulate
from wmviz.core.step_result import StepResult
from wmviz.core.types import MAX_MS, EmittedStatus, EmittedWatermark, Profile, Status, StatusInput
from wmviz.store.incidents import (
    DEFAULT_INCIDENT,
    SAMPLES,
    STORY_SECTIONS,
    Incident,
    built_in_incidents,
    story_sections,
)
from wmviz.trace.readers import FORMATS

INCIDENTS = built_in_incidents()
REQUIRED = (
    "silent-split-window-never-fires",
    "idle-partition-pins-watermark",
    "last-window-never-closes",
    "flink-38477-zero-output",
    "resumed-partition-records-late",
    "late-data-allowed-lateness",
    "future-dated-record-makes-everything-late",
    "early-fire-left-join",
    "order-dependent-final-watermark",
    "late-click-merges-sessions",
    "fast-partition-paused-by-alignment",
    "sql-silent-partition-holds-the-window",
)


def incident_trace(slug: str) -> Trace:
    return INCIDENTS[slug].trace()


def run(trace: Trace, profile: Profile | None = None, instance: str = "0") -> list[StepResult]:
    """One instance's step results, indexed by the step number `explain` prints."""
    results = [r for r in simulate(trace, profile, explain=True) if r.instance == instance]
    assert [r.step for r in results] == list(range(len(results)))
    return results


def with_generator(trace: Trace, **changes) -> Trace:
    config = trace.config
    return replace(trace, config=replace(config, generator=replace(config.generator, **changes)))


def with_operator(trace: Trace, **changes) -> Trace:
    config = trace.config
    return replace(trace, config=replace(config, operator=replace(config.operator, **changes)))


def with_rows(trace: Trace, *rows: TraceRow) -> Trace:
    return replace(trace, rows=trace.rows + rows)


def without_rows(trace: Trace, keep) -> Trace:
    return replace(trace, rows=tuple(r for r in trace.rows if keep(r)))


def watermarks(result: StepResult) -> list[int]:
    return [e.watermark_ms for e in result.out if isinstance(e, EmittedWatermark)]


def statuses(result: StepResult) -> list[Status]:
    return [e.status for e in result.out if isinstance(e, EmittedStatus)]


def firings(result: StepResult) -> list[WindowOutput]:
    return [e for e in result.emit if isinstance(e, WindowOutput)]


def firing_summary(results: list[StepResult]) -> list[tuple[int, int, tuple, bool]]:
    """(step, window start, contents, late) of every window firing, in order."""
    return [(r.step, f.start_ms, f.elements, f.late) for r in results for f in firings(r)]


def dropped_events(results: list[StepResult]) -> list[tuple[int, int]]:
    """(step, event time) of every dropped record."""
    return [(r.step, d.row.event_ms) for r in results for d in r.dropped]


def valve_inputs(result: StepResult, generated: bool = True) -> list:
    return [vs.valve_input for vs in result.valve_steps if vs.generated == generated]


# --- the catalogue as a whole -----------------------------------------------------------------


def test_the_catalogue_holds_every_required_incident_with_the_flink_38477_default_first():
    assert set(REQUIRED) <= set(INCIDENTS)
    assert next(iter(INCIDENTS)) == DEFAULT_INCIDENT
    assert len(INCIDENTS) >= 8


def test_every_incident_is_named_after_its_trace_file_titled_by_its_config_and_finds_its_sibling_config():
    for slug, incident in INCIDENTS.items():
        assert isinstance(incident, Incident)
        assert incident.slug == slug == incident.trace_path.stem
        assert incident.trace_path.parent == SAMPLES
        sibling = incident.trace_path.with_suffix(".json")
        assert incident.config_path == (sibling if sibling.is_file() else None), slug
        assert incident.title == incident.trace().config.name != "", slug


def test_every_trace_file_in_sample_data_has_a_markdown_story_beside_it():
    traces = [p for p in SAMPLES.iterdir() if p.suffix in FORMATS and p.suffix != ".json"]
    assert traces
    for path in traces:
        assert path.with_suffix(".md").is_file(), f"{path.name} has no story {path.stem}.md"
        assert path.stem in INCIDENTS
    for story in SAMPLES.glob("*.md"):
        assert story.stem in INCIDENTS, f"{story.name} tells the story of no trace"


def test_every_sibling_json_in_sample_data_is_the_config_of_a_trace_not_a_trace_of_its_own():
    for config in SAMPLES.glob("*.json"):
        assert INCIDENTS[config.stem].config_path == config


def test_the_samples_path_is_the_repositorys_sample_data_directory():
    assert SAMPLES == REPO / "sample_data"


@pytest.mark.parametrize("slug", list(INCIDENTS))
def test_the_incident_trace_validates_is_small_enough_to_step_through_and_simulates_every_step(slug):
    trace = incident_trace(slug)
    assert 8 <= len(trace.rows) <= 60
    assert len(list(simulate(trace))) == len(trace.rows)


@pytest.mark.parametrize("slug", list(INCIDENTS))
def test_the_story_has_exactly_the_three_sections_in_order_each_with_text_and_no_html(slug):
    story = INCIDENTS[slug].story_md
    sections = story_sections(story)
    assert tuple(sections) == STORY_SECTIONS
    assert all(len(body) > 80 for body in sections.values())
    assert not re.search(r"</?[A-Za-z!][^>]*>", story), "stories are plain markdown"


@pytest.mark.parametrize("slug", list(INCIDENTS))
def test_every_step_the_story_names_exists_in_the_trace(slug):
    trace = incident_trace(slug)
    longest = max(sum(1 for r in trace.rows if r.instance == i) for i in trace.instances)
    named = [int(n) for n in re.findall(r"\b[Ss]teps? (\d+)", INCIDENTS[slug].story_md)]
    named += [int(n) for n in re.findall(r"\b[Ss]teps? \d+ (?:to|and) (\d+)", INCIDENTS[slug].story_md)]
    assert named, "a story names the steps it talks about"
    assert max(named) < longest


# --- story_sections ---------------------------------------------------------------------------


def test_story_sections_splits_on_level_two_headings_and_strips_the_bodies():
    md = "## What users saw\n\nA stall.\n\n## The fix\n\nIdleness.\n"
    assert story_sections(md) == {"What users saw": "A stall.", "The fix": "Idleness."}


def test_story_sections_keeps_deeper_headings_and_fenced_hashes_inside_the_section_body():
    md = "## One\n### Detail\ntext\n```\n## not a heading\n```\n## Two\nmore"
    sections = story_sections(md)
    assert list(sections) == ["One", "Two"]
    assert "### Detail" in sections["One"] and "## not a heading" in sections["One"]


def test_story_sections_keeps_text_before_the_first_heading_under_an_empty_title_and_merges_repeats():
    sections = story_sections("intro\n## A\nx\n## A\ny")
    assert sections == {"": "intro", "A": "x\ny"}
    assert story_sections("") == {}


def test_built_in_incidents_of_another_folder_orders_unknown_slugs_alphabetically_after_known_ones(tmp_path):
    for name in ("zeta.jsonl", "alpha.jsonl", "flink-38477-zero-output.jsonl"):
        (tmp_path / name).write_text('{"channels": 1}\n{"ch": 0, "wm": 5}\n')
    (tmp_path / "alpha.md").write_text("## What users saw\nx\n")
    incidents = built_in_incidents(tmp_path)
    assert list(incidents) == ["flink-38477-zero-output", "alpha", "zeta"]
    assert incidents["alpha"].title == "alpha" and incidents["zeta"].story_md == ""


# --- one test per incident: the behaviour its story claims ------------------------------------


def test_silent_split_no_window_ever_fires_and_the_valve_never_emits_but_a_5s_idle_timeout_fires_them():
    trace = incident_trace("silent-split-window-never-fires")
    results = run(trace)
    assert len(results) == 14
    assert all(not firings(r) and not r.out for r in results)
    assert all(r.row.channel == 0 for r in results), "partition 1 carries no record"
    generated = [inp.watermark_ms for r in results for inp in valve_inputs(r)]
    assert generated[0] == 8399 and generated[-1] == 57099
    windows_with_timers = sorted({reg.timer.namespace[0] for r in results for reg in r.timers_registered})
    assert windows_with_timers == [10000, 20000, 30000, 40000, 50000]

    fixed = run(with_generator(trace, idle_timeout_ms=5000))
    idle = [(r.step, p.time_ms) for r in fixed for p in r.probes if p.emitted]
    assert idle == [(3, 17000)]
    probes = [p for r in fixed for p in r.probes]
    assert probes[0].time_ms == 11000, "the first multiple of 1000 at or after the first clock reading"
    [went_idle] = [p for p in probes if p.emitted]
    assert went_idle.emitted == (StatusInput(1, Status.IDLE),) and went_idle.countdown_start_ms == 11000
    assert watermarks(fixed[3]) == [13099, 17799]
    assert [(s, start, len(c)) for s, start, c, _ in firing_summary(fixed)] == [
        (5, 10000, 4),
        (7, 20000, 3),
        (10, 30000, 2),
        (11, 40000, 2),
    ]
    assert fixed[-1].emit[-1].watermark_ms == 57099


def test_idle_partition_pins_subtask_0_at_09_59_58_while_subtask_1_advances_until_the_idle_at_step_4():
    trace = incident_trace("idle-partition-pins-watermark")
    ten = 1795255200000  # 2026-11-21T10:00:00Z
    sub0, sub1 = run(trace, instance="0"), run(trace, instance="1")
    assert [watermarks(r) for r in sub0] == [[], [ten - 2000], [], [], [ten + 10000], [ten + 15000]]
    assert sub0[4].row.status is Status.IDLE and sub0[4].row.proc_ms == 9000
    assert sub0[1].row.proc_ms == 1000, "partition 1's only watermark, eight seconds before its IDLE"
    assert sub0[4].account.rules[:2] == ("S1", "S1b")
    assert [watermarks(r) for r in sub1] == [
        [],
        [ten + 1000],
        [ten + 2000],
        [ten + 6000],
        [ten + 7000],
        [ten + 11000],
    ]


def test_last_window_all_channels_go_idle_the_released_flush_stops_at_34399_and_30000_40000_never_fires():
    trace = incident_trace("last-window-never-closes")
    sim = Simulation(trace)
    results = list(sim.run(explain=True))
    assert [(s, start) for s, start, _, _ in firing_summary(results)] == [(5, 10000), (10, 20000)]
    assert [r.valve_steps[0].valve_input for r in results[12:14]] == [
        StatusInput(0, Status.IDLE),
        StatusInput(1, Status.IDLE),
    ]
    assert results[12].out == () and results[12].row.proc_ms == 44000
    assert results[13].out == (EmittedWatermark(34399), EmittedStatus(Status.IDLE))
    assert results[13].valve_steps[0].account.rules[:2] == ("S1", "S1a")
    assert results[14].out == () and results[14].row.proc_ms == 100000
    operator = sim.pipelines["0"].operator
    assert [e for _, e in operator.panes[("eu-west", (30000, 40000))]] == [31800, 33900, 36400, 35200]
    assert operator.watermark_ms == 34399

    master = run(trace, Profile.FLINK_MASTER)
    assert master[13].out == (EmittedWatermark(34399), EmittedStatus(Status.IDLE))
    assert not any(f.start_ms == 30000 for r in master for f in firings(r))

    last = trace.rows[-1].row
    new_order = TraceRow(last + 1, Kind.RECORD, channel=0, event_ms=42300, proc_ms=101000, key="eu-west")
    fixed = run(with_rows(trace, new_order))
    assert fixed[15].out == (EmittedStatus(Status.ACTIVE), EmittedWatermark(40299))
    assert firing_summary(fixed)[-1] == (15, 30000, (31800, 33900, 36400, 35200), False)

    finish = [TraceRow(last + 1 + c, Kind.STATUS, channel=c, status=Status.FINISHED) for c in (0, 1)]
    finished = run(with_rows(trace, *finish))
    assert [r.out for r in finished[15:]] == [(), ()]
    assert [r.account.rules for r in finished[15:]] == [("W1",), ("W1",)]


def test_flink_38477_output_jumps_to_max_when_the_live_channels_go_idle_under_released_flink_not_flip_38477():
    trace = incident_trace("flink-38477-zero-output")
    expected_before = [[], [], [], [10], [12], [20], [25]]
    for profile in (Profile.FLINK_1X_2X, Profile.FLINK_MASTER):
        released = run(trace, profile)
        assert [watermarks(r) for r in released[:7]] == expected_before
        assert released[7].out == (EmittedWatermark(MAX_MS),)
        assert not any(statuses(r) for r in released), "the finished channels keep the valve ACTIVE"
        assert "S1b" in released[7].account.rules
    assert trace.config.profile is Profile.FLINK_1X_2X

    flip = run(trace, Profile.FLIP_38477)
    assert [watermarks(r) for r in flip[:7]] == expected_before
    assert flip[7].out == (EmittedStatus(Status.IDLE),)
    assert all(MAX_MS not in watermarks(r) for r in flip)


def test_resumed_partition_stays_idle_under_flip27_released_and_its_last_two_readings_are_dropped_as_late():
    trace = incident_trace("resumed-partition-records-late")
    assert trace.config.generator.resume == "flip27-released"
    results = run(trace)
    idle_at = [(r.step, p.time_ms) for r in results for p in r.probes if p.channel == 1 and p.emitted]
    assert idle_at == [(11, 32000)]
    resumed = [r for r in results if r.row.kind is Kind.RECORD and r.row.channel == 1 and r.step >= 15]
    assert [r.row.value for r in resumed] == ["p1-5", "p1-6", "p1-7", "p1-8", "p1-9"]
    assert all(not r.valve_steps for r in resumed), "no ACTIVE, no watermark: the channel stays IDLE"
    assert [watermarks(r) for r in results[16:22]] == [[33999], [35999], [], [37999], [], [39999]]
    assert firing_summary(results) == [
        (8, 10000, ("p0-1", "p0-2", "p0-3"), False),
        (13, 20000, ("p1-1", "p1-2", "p0-4", "p0-5", "p0-6", "p0-7", "p0-8"), False),
        (
            21,
            30000,
            ("p1-3", "p1-4", "p0-9", "p0-10", "p0-11", "p1-5", "p0-12", "p0-13", "p1-6", "p1-7"),
            False,
        ),
    ]
    assert dropped_events(results) == [(22, 34800), (24, 35200)]
    assert results[27].out == (EmittedStatus(Status.IDLE),)

    eager = run(with_generator(trace, resume="eager"))
    assert valve_inputs(eager[15]) == [StatusInput(1, Status.ACTIVE)]
    assert eager[15].out == () and eager[15].valve_steps[0].account.rules[0] == "S2"
    assert dropped_events(eager) == []
    assert all(watermarks(r) == [] for r in eager[17:26])
    last = firing_summary(eager)[-1]
    assert last[:2] == (26, 30000) and len(last[2]) == 12 and {"p1-8", "p1-9"} <= set(last[2])

    lateness = run(with_operator(trace, allowed_lateness_ms=5000))
    assert dropped_events(lateness) == []
    assert [(s, start, late, c[-1]) for s, start, c, late in firing_summary(lateness)[-3:]] == [
        (21, 30000, False, "p1-7"),
        (22, 30000, True, "p1-8"),
        (24, 30000, True, "p1-9"),
    ]


def test_late_data_table_fires_0_5_twice_drops_the_third_3_and_accepts_it_with_allowed_lateness_3():
    trace = incident_trace("late-data-allowed-lateness")
    results = run(trace)
    generated = [[inp.watermark_ms for inp in valve_inputs(r)] for r in results]
    assert generated == [[-2], [0], [], [3], [], [], [4], [], [6], [], [9]]
    assert firing_summary(results) == [
        (6, 0, (1, 3, 2, 4), False),
        (7, 0, (1, 3, 2, 4, 3), True),
        (10, 5, (6, 5, 7, 9), False),
    ]
    assert [f.timer.timestamp_ms for f in results[8].timers_fired] == [5]
    assert dropped_events(results) == [(9, 3)]

    lenient = run(with_operator(trace, allowed_lateness_ms=3))
    assert dropped_events(lenient) == []
    assert (9, 0, (1, 3, 2, 4, 3, 3), True) in firing_summary(lenient)


def test_future_dated_record_pushes_the_watermark_an_hour_ahead_and_every_later_record_is_dropped_as_late():
    trace = incident_trace("future-dated-record-makes-everything-late")
    results = run(trace)
    assert results[6].emit[-1].watermark_ms == 16199
    assert results[7].row.event_ms == 3617000 and watermarks(results[7]) == [3611999]
    assert firing_summary(results) == [
        (7, 10000, (10400, 12100, 11300, 15800, 14200, 18900), False),
        (7, 20000, (21200,), False),
    ]
    assert dropped_events(results) == [
        (8, 19500),
        (9, 22600),
        (10, 20800),
        (11, 24900),
        (12, 27300),
        (13, 31000),
    ]
    assert all(len(r.dropped) == 1 and "too late" in r.dropped[0].reason for r in results[8:])
    sim = Simulation(trace)
    list(sim.run())
    assert list(sim.pipelines["0"].operator.panes) == [("store-12", (3610000, 3620000))]

    clean = run(without_rows(trace, lambda r: r.event_ms != 3617000))
    assert dropped_events(clean) == []
    [(step, start, contents, _late)] = firing_summary(clean)
    assert clean[step].row.event_ms == 27300 and start == 10000 and len(contents) == 7 and 19500 in contents


def test_early_fire_left_join_emits_a_speculative_pad_then_a_minus_u_immediately_followed_by_its_plus_u():
    trace = incident_trace("early-fire-left-join")
    results = run(trace)
    rows = [(r.step, e) for r in results for e in r.emit if isinstance(e, JoinOutput)]
    assert [(s, e.kind, e.cause) for s, e in rows] == [
        (4, RowKind.INSERT, Cause.MATCH),
        (6, RowKind.INSERT, Cause.EARLY_FIRE),
        (7, RowKind.UPDATE_BEFORE, Cause.RETRACT),
        (7, RowKind.UPDATE_AFTER, Cause.MATCH),
    ]
    pad, retract, correction = rows[1][1], rows[2][1], rows[3][1]
    assert pad.left.value == "order-1" and pad.right is None
    assert (retract.left, retract.right) == (pad.left, None)
    assert correction.left == pad.left and correction.right.value == "shipment-1"
    step7 = [e for e in results[7].emit if isinstance(e, JoinOutput)]
    assert step7 == [retract, correction], "the -U comes immediately before its +U"
    assert [f.purposes for f in results[6].timers_fired] == [("early_fire",)]
    assert [e.watermark_ms for e in results[6].emit if not isinstance(e, JoinOutput)] == [4000]
    assert results[5].out == () and results[2].emit[-1].watermark_ms == 1000
    assert len(results[9].timers_fired) == 4 and not any(isinstance(e, JoinOutput) for e in results[9].emit)
    assert results[9].emit[-1].watermark_ms == 31000

    plain = run(with_operator(trace, early_fire_delay_ms=None, time_mode=None))
    plain_rows = [(r.step, e.kind) for r in plain for e in r.emit if isinstance(e, JoinOutput)]
    assert plain_rows == [(4, RowKind.INSERT), (7, RowKind.INSERT)]
    assert [e.watermark_ms for e in plain[6].emit] == [4000]


def test_order_dependent_final_watermark_is_70_in_released_flink_100_on_master_and_100_in_another_order():
    trace = incident_trace("order-dependent-final-watermark")
    released = run(trace)
    assert [r.out for r in released[2:]] == [
        (EmittedWatermark(50),),
        (EmittedWatermark(70),),
        (),
        (),
        (),
        (),
        (EmittedStatus(Status.IDLE),),
    ]
    assert released[8].account.rules == ("S1", "S1a (no flush)")
    assert released[8].account.last_watermark_after_ms == 70

    master = run(trace, Profile.FLINK_MASTER)
    assert master[8].out == (EmittedWatermark(100), EmittedStatus(Status.IDLE))

    first, last_three = trace.rows[:-3], trace.rows[-3:]
    by_channel = {r.channel: r for r in last_three}
    reordered = replace(trace, rows=(*first, by_channel[1], by_channel[2], by_channel[0]))
    assert [w for r in run(reordered)[6:] for w in watermarks(r)] == [100]


def test_every_dropped_record_in_the_catalogue_is_reported_with_a_reason():
    for slug in INCIDENTS:
        for result in simulate(incident_trace(slug)):
            assert all(isinstance(d, Dropped) and d.reason for d in result.dropped), slug
