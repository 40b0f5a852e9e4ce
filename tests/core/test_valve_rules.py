"""Unit tests for single rules, the account and the narration, named after what they pin down."""

from __future__ import annotations

import pytest

from wmviz.core.account import account_step
from wmviz.core.narrate import narrate
from wmviz.core.types import (
    MAX_MS,
    ChannelOutOfRange,
    Profile,
    Status,
    StatusInput,
    WatermarkInput,
    format_emission,
    parse_input,
)
from wmviz.core.valve import Outcome, Routine, Valve


def feed(valve: Valve, *tokens: str) -> list[str]:
    return [format_emission(e) for t in tokens for e in valve.apply(parse_input(t))]


def test_narration_of_a_min_holder_going_idle_names_the_rule_the_aligned_set_and_the_new_minimum():
    valve = Valve(3)
    feed(valve, "W25@0", "W17@1", "W10@2")
    line = narrate(account_step(valve, parse_input("IDLE@2")))
    assert line == (
        "IDLE@2: ch2 ACTIVE → IDLE and leaves the aligned set; it held the minimum 10, so (S1b) "
        "the minimum over aligned channels {0: 25, 1: 17} is 17 → emit W17"
    )


def test_account_of_the_t12_gap_records_the_skipped_flush_under_released_flink_and_the_flush_on_master():
    tokens = ["W100@0", "W50@1", "W70@2", "IDLE@1", "ACTIVE@1", "W60@1", "IDLE@0", "IDLE@2"]
    for profile, outcome, emitted in [
        (Profile.FLINK_1X_2X, Outcome.S1A_LAST_ACTIVE_IDLE_NO_FLUSH, ["S:IDLE"]),
        (Profile.FLINK_MASTER, Outcome.S1A_LAST_ACTIVE_IDLE_FLUSH, ["W100", "S:IDLE"]),
    ]:
        valve = Valve(3, profile)
        feed(valve, *tokens)
        acc = account_step(valve, parse_input("IDLE@1"))
        assert acc.outcome is outcome
        assert [format_emission(e) for e in acc.emissions] == emitted
        assert acc.rules[0] == "S1"
    released_line = narrate(account_step(_t12_prefix(Profile.FLINK_1X_2X), parse_input("IDLE@1")))
    assert "skips the all-idle flush" in released_line and "FLINK-40475" in released_line


def _t12_prefix(profile: Profile) -> Valve:
    valve = Valve(3, profile)
    feed(valve, "W100@0", "W50@1", "W70@2", "IDLE@1", "ACTIVE@1", "W60@1", "IDLE@0", "IDLE@2")
    return valve


def test_finished_under_released_flink_is_accounted_and_narrated_as_a_replayed_max_watermark():
    valve = Valve(2, Profile.FLINK_1X_2X)
    feed(valve, "W100@1")
    acc = account_step(valve, StatusInput(0, Status.FINISHED))
    assert acc.replayed_as_max
    assert acc.after.status is Status.ACTIVE and acc.after.watermark_ms == MAX_MS
    assert acc.outcome is Outcome.W3_TO_W5_ACCEPTED
    assert "replayed as WMAX@0" in narrate(acc)


def test_finished_under_flip_38477_is_a_real_status_and_not_a_replay():
    valve = Valve(2, Profile.FLIP_38477)
    feed(valve, "W100@1")
    acc = account_step(valve, StatusInput(0, Status.FINISHED))
    assert not acc.replayed_as_max
    assert acc.after.status is Status.FINISHED and not acc.after.aligned
    assert acc.routine is Routine.TRY_W
    assert [format_emission(e) for e in acc.emissions] == ["W100"]


def test_an_out_of_range_channel_raises_and_leaves_every_piece_of_state_untouched():
    valve = Valve(2)
    feed(valve, "W5@0", "IDLE@1")
    before = valve.state()
    for inp in (WatermarkInput(2, 1), StatusInput(2, Status.IDLE)):
        with pytest.raises(ChannelOutOfRange, match="out of range"):
            valve.apply(inp)
    assert valve.state() == before


def test_inputs_with_a_negative_channel_or_a_value_beyond_64_bits_cannot_even_be_constructed():
    with pytest.raises(ChannelOutOfRange, match="negative"):
        StatusInput(-1, Status.IDLE)
    with pytest.raises(ChannelOutOfRange, match="negative"):
        WatermarkInput(-1, 5)


def test_a_watermark_outside_the_signed_64_bit_range_is_refused_at_construction():
    with pytest.raises(ValueError, match="64-bit"):
        WatermarkInput(0, MAX_MS + 1)
    with pytest.raises(ValueError, match="64-bit"):
        WatermarkInput(0, -(2**63) - 1)


def test_the_lazy_heap_compacts_itself_on_long_traces_without_changing_any_output(monkeypatch):
    # Stale entries pile up above a pinned minimum: ch0 holds the output at 5 while ch1 keeps
    # rising and toggling IDLE/ACTIVE, so its old entries are never popped from the top.
    compactions = []
    original = Valve._compact_heap
    monkeypatch.setattr(Valve, "_compact_heap", lambda self: (compactions.append(1), original(self)))
    valve = Valve(2)
    assert feed(valve, "W5@0", "W100@1") == ["W5"]
    for i in range(1, 500):
        assert feed(valve, f"W{100 + 2 * i}@1", "IDLE@1", "ACTIVE@1") == []
        assert len(valve._heap) <= 4 * valve.channels + 64 + 1
        assert valve.invariant_violations() == []
        assert valve.state().aligned == {0: 5, 1: 100 + 2 * i}
    assert len(compactions) >= 10
    assert feed(valve, "W2000@0") == ["W1098"]


def test_valve_rejects_a_zero_channel_construction():
    with pytest.raises(ValueError, match="at least one channel"):
        Valve(0)


@pytest.mark.parametrize(
    ("token", "expected"),
    [
        ("W10@0", WatermarkInput(0, 10)),
        ("W-3@1", WatermarkInput(1, -3)),
        ("WMAX@2", WatermarkInput(2, MAX_MS)),
        ("idle@0", StatusInput(0, Status.IDLE)),
        ("FINISHED@3", StatusInput(3, Status.FINISHED)),
    ],
)
def test_parse_input_reads_the_conformance_notation(token, expected):
    assert parse_input(token) == expected


@pytest.mark.parametrize("token", ["W10", "PAUSED@1", "Wabc@0", "W99999999999999999999@0", "W1@-1"])
def test_parse_input_rejects_malformed_notation_with_a_reason(token):
    with pytest.raises(ValueError):
        parse_input(token)
