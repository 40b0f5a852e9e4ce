"""Seeded properties of the operators (issue 3): pads, retractions, watermarks, no record lost."""

from __future__ import annotations

from itertools import pairwise

from hypothesis import given, seed, settings
from hypothesis import strategies as st

from wmviz.core.operator_log import JoinOutput, OutputWatermark, RowKind, WindowOutput
from wmviz.core.scenario import (
    GeneratorConfig,
    IntervalJoinConfig,
    Kind,
    ScenarioConfig,
    Trace,
    TraceRow,
    WindowConfig,
)
from wmviz.core.simulate import Simulation
from wmviz.core.types import EmittedWatermark

SETTINGS = settings(max_examples=300, deadline=None, derandomize=True)


@st.composite
def join_traces(draw) -> Trace:
    """Random rows, watermarks and clock moves against a random interval-join config."""
    join = draw(st.sampled_from(["inner", "left", "right", "full"]))
    lower = draw(st.integers(-10, 4))
    upper = lower + draw(st.integers(-2, 16))  # mostly a real window; hi < lo now and then
    delay = draw(st.one_of(st.none(), st.integers(1, 15)))
    time_mode = draw(st.sampled_from(["rowtime", "proctime"])) if delay is not None else None
    operator = IntervalJoinConfig(
        join=join,
        lower_ms=lower,
        upper_ms=upper,
        early_fire_delay_ms=delay,
        time_mode=time_mode,
        min_cleanup_interval_ms=draw(st.integers(0, 8)),
    )
    rows: list[TraceRow] = []
    watermark = {"L": -5, "R": -5}
    pace = draw(st.sampled_from([6, 12, 25]))  # slow watermarks reach eager expiry, fast ones cleanup
    clock = 0
    for i in range(draw(st.integers(1, 40))):
        what = draw(st.sampled_from(["L", "R", "L", "R", "wm", "proc"]))
        line = i + 1
        if what in ("L", "R"):
            rows.append(
                TraceRow(
                    line,
                    Kind.RECORD,
                    input=what,
                    channel=0,
                    key=draw(st.sampled_from("ab")),
                    event_ms=draw(st.integers(1, 60)),
                    value=f"r{line}",
                )
            )
        elif what == "wm":
            side = draw(st.sampled_from(["L", "R"]))
            watermark[side] += draw(st.integers(-2, pace))
            rows.append(TraceRow(line, Kind.WATERMARK, input=side, channel=0, watermark_ms=watermark[side]))
        else:
            clock += draw(st.integers(0, 10))
            rows.append(TraceRow(line, Kind.PROCTIME, proc_ms=clock))
    config = ScenarioConfig(channels={"L": 1, "R": 1}, operator=operator)
    return Trace("random.jsonl", tuple(rows), config, {("0", "L"): 1, ("0", "R"): 1})


@st.composite
def window_traces(draw) -> Trace:
    """Random out-of-order records through a generator into tumbling or sliding windows."""
    size = draw(st.integers(1, 12))
    slide = draw(st.one_of(st.none(), st.integers(1, size)))
    operator = WindowConfig(
        size_ms=size,
        slide_ms=slide,
        allowed_lateness_ms=draw(st.integers(0, 6)),
        aggregate="list",
    )
    generator = GeneratorConfig(out_of_orderness_ms=draw(st.integers(0, 5)), emit="per-record")
    channels = draw(st.integers(1, 3))
    rows = tuple(
        TraceRow(
            i + 1,
            Kind.RECORD,
            channel=draw(st.integers(0, channels - 1)),
            key=draw(st.sampled_from("xy")),
            event_ms=draw(st.integers(-10, 80)),
        )
        for i in range(draw(st.integers(1, 40)))
    )
    config = ScenarioConfig(channels={"0": channels}, generator=generator, operator=operator)
    return Trace("random.jsonl", rows, config, {("0", "0"): channels})


def run(trace: Trace):
    sim = Simulation(trace)
    results = list(sim.run())
    return sim, results


def join_outputs(results) -> list[JoinOutput]:
    return [o for r in results for o in r.emit if isinstance(o, JoinOutput)]


def pad_side(o: JoinOutput):
    return o.left if o.right is None else o.right if o.left is None else None


@seed(20261122)
@SETTINGS
@given(join_traces())
def test_an_outer_row_is_padded_at_most_once_whatever_the_path(trace):
    _, results = run(trace)
    pads: dict[int, int] = {}
    for o in join_outputs(results):
        row = pad_side(o)
        if row is not None and o.kind is RowKind.INSERT:
            pads[row.row] = pads.get(row.row, 0) + 1
    assert all(n == 1 for n in pads.values()), pads


@seed(20261122)
@SETTINGS
@given(join_traces())
def test_every_retraction_is_immediately_followed_by_its_update_and_retracts_an_earlier_pad(trace):
    _, results = run(trace)
    outputs = join_outputs(results)
    live_pads: set[tuple] = set()
    for i, o in enumerate(outputs):
        ident = (o.left.row if o.left else None, o.right.row if o.right else None)
        if o.kind is RowKind.INSERT and pad_side(o) is not None:
            live_pads.add(ident)
        if o.kind is RowKind.UPDATE_BEFORE:
            assert ident in live_pads, f"-U {ident} retracts nothing emitted before"
            live_pads.discard(ident)
            follower = outputs[i + 1]
            assert follower.kind is RowKind.UPDATE_AFTER
            assert pad_side(o) in (follower.left, follower.right)
        if o.kind is RowKind.UPDATE_AFTER:
            assert i > 0 and outputs[i - 1].kind is RowKind.UPDATE_BEFORE


def check_output_watermark_bounded(results, hold_back: int = 0):
    combined = None
    last_out = None
    for r in results:
        for em in r.out:
            if isinstance(em, EmittedWatermark):
                combined = em.watermark_ms
        for o in r.emit:
            if isinstance(o, OutputWatermark):
                assert combined is not None and o.watermark_ms <= combined
                assert o.watermark_ms == combined - hold_back or combined - hold_back < -(2**63)
                assert last_out is None or o.watermark_ms > last_out
                last_out = o.watermark_ms


@seed(20261122)
@SETTINGS
@given(join_traces())
def test_the_join_output_watermark_never_exceeds_the_combined_input_and_strictly_increases(trace):
    sim, results = run(trace)
    operator = sim.pipelines["0"].operator if sim.pipelines else None
    hold = operator.hold_back_ms if operator is not None and not operator.negative_window else 0
    check_output_watermark_bounded(results, hold)


@seed(20261122)
@SETTINGS
@given(window_traces())
def test_the_window_output_watermark_is_the_valve_output_and_never_exceeds_it(trace):
    _, results = run(trace)
    check_output_watermark_bounded(results)


def records(trace: Trace) -> set[int]:
    return {r.row for r in trace.rows if r.kind is Kind.RECORD}


def accounted(sim: Simulation, results) -> set[int]:
    seen = {d.row.row for r in results for d in r.dropped}
    for r in results:
        for o in r.emit:
            if isinstance(o, WindowOutput):
                seen.update(o.rows)
            elif isinstance(o, JoinOutput):
                seen.update(x.row for x in (o.left, o.right) if x is not None)
    for pipeline in sim.pipelines.values():
        seen |= pipeline.live_rows()
    return seen


@seed(20261122)
@SETTINGS
@given(join_traces())
def test_no_join_record_is_lost_each_ends_in_output_dropped_or_live_state(trace):
    sim, results = run(trace)
    assert records(trace) <= accounted(sim, results)


@seed(20261122)
@SETTINGS
@given(window_traces())
def test_no_window_record_is_lost_each_ends_in_a_firing_dropped_or_a_live_pane(trace):
    sim, results = run(trace)
    assert records(trace) <= accounted(sim, results)


@seed(20261122)
@SETTINGS
@given(window_traces())
def test_window_firings_re_emit_the_full_contents_in_arrival_order(trace):
    _, results = run(trace)
    last: dict[tuple, tuple] = {}
    for r in results:
        for o in r.emit:
            if isinstance(o, WindowOutput):
                ident = (o.key, o.start_ms)
                previous = last.get(ident, ())
                assert o.rows[: len(previous)] == previous  # never purged before cleanup
                assert list(o.rows) == sorted(o.rows)
                last[ident] = o.rows


@seed(20261122)
@SETTINGS
@given(join_traces())
def test_a_record_that_appears_in_join_output_is_never_also_reported_as_dropped(trace):
    _, results = run(trace)
    joined = {x.row for o in join_outputs(results) for x in (o.left, o.right) if x is not None}
    dropped = {d.row.row for r in results for d in r.dropped}
    assert not joined & dropped, sorted(joined & dropped)


@st.composite
def session_traces(draw) -> Trace:
    """Random out-of-order records of two keys through a generator into session windows."""
    operator = WindowConfig(
        session_gap_ms=draw(st.integers(1, 10)),
        allowed_lateness_ms=draw(st.integers(0, 8)),
        aggregate="list",
    )
    generator = GeneratorConfig(out_of_orderness_ms=draw(st.integers(0, 5)), emit="per-record")
    channels = draw(st.integers(1, 2))
    rows = tuple(
        TraceRow(
            i + 1,
            Kind.RECORD,
            channel=draw(st.integers(0, channels - 1)),
            key=draw(st.sampled_from("xy")),
            event_ms=draw(st.integers(-10, 80)),
        )
        for i in range(draw(st.integers(1, 40)))
    )
    config = ScenarioConfig(channels={"0": channels}, generator=generator, operator=operator)
    return Trace("random.jsonl", rows, config, {("0", "0"): channels})


@seed(20261122)
@SETTINGS
@given(session_traces())
def test_no_session_record_is_lost_and_live_sessions_of_a_key_never_touch(trace):
    sim = Simulation(trace)
    results = []
    for result in sim.run():
        results.append(result)
        for pipeline in sim.pipelines.values():
            live: dict[str, list[tuple[int, int]]] = {}
            for key, window, contents in pipeline.operator.live_panes():
                assert contents, "a live session holds at least its first record"
                live.setdefault(key, []).append(window)
            for windows in live.values():
                windows.sort()
                # Touching sessions merge at once (start <= other.end): neighbours keep a gap.
                assert all(a[1] < b[0] for a, b in pairwise(windows)), windows
    assert records(trace) <= accounted(sim, results)
