"""The valve's invariants (`Valve.invariant_violations`, emitted watermarks strictly increase) and the
profiles' equivalences (REPLAY-MAX; flip-38477 without FINISHED is flink-1.x-2.x) as seeded Hypothesis
properties."""

from __future__ import annotations

import itertools

from hypothesis import given, seed, settings
from hypothesis import strategies as st

from wmviz.core.account import account_step
from wmviz.core.types import (
    MAX_MS,
    MIN_MS,
    EmittedStatus,
    EmittedWatermark,
    Profile,
    Status,
    StatusInput,
    WatermarkInput,
)
from wmviz.core.valve import Valve

SETTINGS = settings(max_examples=400, deadline=None, derandomize=True)


@st.composite
def traces(draw, *, statuses=(Status.ACTIVE, Status.IDLE, Status.FINISHED)):
    """A channel count and a sequence of inputs: rising, equal, falling, MIN/MAX watermarks, toggles."""
    channels = draw(st.integers(1, 6))
    channel = st.integers(0, channels - 1)
    value = st.one_of(st.integers(-20, 120), st.sampled_from([MIN_MS, MAX_MS]))
    watermark = st.builds(WatermarkInput, channel, value)
    status = st.builds(StatusInput, channel, st.sampled_from(statuses))
    inputs = draw(st.lists(st.one_of(watermark, watermark, status), max_size=60))
    return channels, inputs


def run(channels, inputs, profile):
    valve = Valve(channels, profile)
    return valve, [valve.apply(inp) for inp in inputs]


@seed(20261122)
@SETTINGS
@given(traces(), st.sampled_from(list(Profile)))
def test_emitted_watermarks_strictly_increase_and_never_include_min(trace, profile):
    _, outputs = run(*trace, profile)
    watermarks = [e.watermark_ms for out in outputs for e in out if isinstance(e, EmittedWatermark)]
    assert MIN_MS not in watermarks
    assert all(a < b for a, b in itertools.pairwise(watermarks))


@seed(20261122)
@SETTINGS
@given(traces(), st.sampled_from(list(Profile)))
def test_every_valve_invariant_holds_after_every_input(trace, profile):
    channels, inputs = trace
    valve = Valve(channels, profile)
    for i, inp in enumerate(inputs):
        valve.apply(inp)
        assert valve.invariant_violations() == [], f"after input {i}: {inputs[: i + 1]}"


@seed(20261122)
@SETTINGS
@given(traces(), st.sampled_from(list(Profile)))
def test_the_drawn_heap_is_a_min_heap_of_exactly_the_aligned_channels_with_the_minimum_on_top(trace, profile):
    channels, inputs = trace
    valve = Valve(channels, profile)
    for inp in inputs:
        valve.apply(inp)
        state = valve.state()
        nodes = state.heap
        assert {n.channel: n.watermark_ms for n in nodes} == state.aligned
        for i, node in enumerate(nodes):
            for child in (2 * i + 1, 2 * i + 2):
                if child < len(nodes):
                    assert (node.watermark_ms, node.channel) <= (
                        nodes[child].watermark_ms,
                        nodes[child].channel,
                    )
        if nodes:
            assert nodes[0].watermark_ms == min(state.aligned.values())
        aligned = all(c.status is Status.ACTIVE for c in state.channels if c.aligned)
        assert aligned


@seed(20261122)
@SETTINGS
@given(traces(), st.sampled_from(list(Profile)))
def test_one_input_emits_at_most_one_watermark_after_s_active_and_before_s_idle(trace, profile):
    _, outputs = run(*trace, profile)
    for out in outputs:
        assert sum(isinstance(e, EmittedWatermark) for e in out) <= 1
        kinds = [e.status if isinstance(e, EmittedStatus) else "W" for e in out]
        if Status.IDLE in kinds and "W" in kinds:
            assert kinds.index("W") < kinds.index(Status.IDLE)  # the flush comes before S:IDLE
        if Status.ACTIVE in kinds and "W" in kinds:
            assert kinds.index(Status.ACTIVE) < kinds.index("W")  # S:ACTIVE comes before a watermark


@seed(20261122)
@SETTINGS
@given(traces(statuses=(Status.ACTIVE, Status.IDLE)))
def test_flip_38477_without_finished_inputs_behaves_exactly_like_released_flink(trace):
    channels, inputs = trace
    released, released_out = run(channels, inputs, Profile.FLINK_1X_2X)
    flip, flip_out = run(channels, inputs, Profile.FLIP_38477)
    assert flip_out == released_out
    assert flip.state() == released.state()


@seed(20261122)
@SETTINGS
@given(traces(), st.sampled_from([Profile.FLINK_1X_2X, Profile.FLINK_MASTER]))
def test_finished_is_replayed_exactly_as_a_max_watermark_in_the_profiles_without_it(trace, profile):
    channels, inputs = trace
    as_max = [
        WatermarkInput(i.channel, MAX_MS) if isinstance(i, StatusInput) and i.status is Status.FINISHED else i
        for i in inputs
    ]
    finished, finished_out = run(channels, inputs, profile)
    replayed, replayed_out = run(channels, as_max, profile)
    assert finished_out == replayed_out
    assert finished.state() == replayed.state()


@seed(20261122)
@SETTINGS
@given(traces(), st.sampled_from(list(Profile)))
def test_the_account_path_emits_the_same_as_the_fast_path_and_its_diff_is_the_whole_change(trace, profile):
    channels, inputs = trace
    fast, accounted = Valve(channels, profile), Valve(channels, profile)
    for inp in inputs:
        before = accounted.state()
        acc = account_step(accounted, inp)
        assert list(acc.emissions) == fast.apply(inp)
        after = accounted.state()
        assert after == fast.state()
        # Only the input's channel may change: the account's before/after pair is the full diff.
        for old, new in zip(before.channels, after.channels):
            if old.channel != inp.channel:
                assert old == new
        assert acc.before == before.channels[inp.channel]
        assert acc.after == after.channels[inp.channel]
        assert acc.last_watermark_after_ms == after.last_watermark_ms


@seed(20261122)
@SETTINGS
@given(traces(), st.sampled_from(list(Profile)))
def test_lazy_heap_minimum_always_equals_a_plain_min_over_aligned_channels(trace, profile):
    channels, inputs = trace
    valve = Valve(channels, profile)
    for inp in inputs:
        valve.apply(inp)
        aligned = valve.state().aligned
        expected = sorted(aligned.values())[0] if aligned else None
        assert valve._aligned_min() == expected
