"""The stories `explain` tells for operators, and the transcript keys of issue 3."""

from __future__ import annotations

import json

from tests.conftest import REPO
from tests.support.join_cases import join_cases, run_case
from wmviz.cli import commands as cli
from wmviz.core.simulate import simulate
from wmviz.trace.readers import read_trace

EARLY_FIRE = REPO / "sample_data" / "early-fire-left-join.jsonl"
LATE_DATA = REPO / "sample_data" / "late-data-allowed-lateness.jsonl"


def run_cli(capsys, *argv):
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def narration(out: str) -> list[str]:
    """The step lines of explain's output: the header lines (what was checked, the date) start with #."""
    return [line for line in out.splitlines() if not line.startswith("# ")]


def test_left_join_transcript_shows_the_pad_at_the_early_fire_step_and_the_correction_at_the_match(capsys):
    code, out, _ = run_cli(capsys, "transcript", EARLY_FIRE)
    assert code == 0
    records = [json.loads(line) for line in out.splitlines()]
    assert set(records[0]) == {"step", "instance", "input", "out", "emit", "dropped", "timers"}
    early = records[6]
    assert early["timers"]["fired"] == [
        {"at": 13000, "domain": "event", "key": "1", "purposes": ["early_fire"]}
    ]
    assert early["emit"][0]["kind"] == "+I" and early["emit"][0]["cause"] == "early_fire"
    assert early["emit"][0]["left"]["value"] == "order-1" and early["emit"][0]["right"] is None
    assert early["emit"][1] == {"wm": 4000}
    correction = records[7]["emit"]
    assert [(e["kind"], e["cause"]) for e in correction] == [("-U", "retract"), ("+U", "match")]
    assert correction[0]["left"] == early["emit"][0]["left"] and correction[0]["right"] is None
    assert correction[1]["right"]["value"] == "shipment-1"
    assert all(not r["dropped"] for r in records)


def test_explain_tells_the_early_fire_story_in_words(capsys):
    _, out, _ = run_cli(capsys, "explain", EARLY_FIRE)
    assert "# modelled: interval join" in out or "# checked: interval join" in out
    lines = narration(out)
    assert lines[0].startswith("step 0 record order-1@10000 key=1")
    assert "registers early_fire@13000, cleanup_left_cache@15001" in lines[0]
    assert (
        "timer early_fire@13000 key 1 fired; +I(order-1@10000, null), speculative: "
        "order-1@10000 has no match yet; output watermark 4000"
    ) in lines[6]
    assert (
        "-U(order-1@10000, null) retracts the speculative row; "
        "+U(order-1@10000, shipment-1@14000) corrects it"
    ) in lines[7]
    assert "combined input: unchanged" in lines[1]


def test_explain_tells_the_late_firing_and_the_drop_of_the_window_table(capsys):
    _, out, _ = run_cli(capsys, "explain", LATE_DATA)
    assert "# checked: windows: equal to Flink 2.3.0" in out
    lines = narration(out)
    assert "timer window_end@4 for window [0, 5) fired; window [0, 5) fires with [1, 3, 2, 4]" in lines[6]
    assert "window [0, 5) fires again for a late element with [1, 3, 2, 4, 3]" in lines[7]
    assert "line 11@3 dropped: too late" in lines[9]
    assert "generator ch0 sends W-2@0" in lines[0]


def test_cross_domain_early_fire_is_labelled_inferred_at_the_step_it_happens(tmp_path):
    case = next(c for c in join_cases() if c["name"].startswith("S12"))
    groups = run_case(case, tmp_path)
    notes = [[n for r in g for n in r.notes] for g in groups]
    assert any("inferred" in n for n in notes[2])
    assert not any(notes[i] for i in (0, 1, 3, 4))


def test_pending_timers_are_visible_after_every_explained_step():
    trace = read_trace(EARLY_FIRE)
    results = list(simulate(trace, explain=True))
    pending = [[(t.timer.timestamp_ms, t.purposes) for t in r.pending_timers] for r in results]
    assert pending[0] == [(13000, ("early_fire",)), (15001, ("cleanup_left_cache",))]
    assert (13000, ("early_fire",)) not in pending[6]
    assert pending[-1] == []


def test_a_sum_over_a_non_numeric_value_is_refused_by_validation_naming_the_row(tmp_path, capsys):
    trace = tmp_path / "sum.jsonl"
    trace.write_text(
        json.dumps({"config": {"operator": {"type": "window", "size_ms": 5, "aggregate": "sum"}}})
        + "\n"
        + json.dumps({"kind": "record", "channel": 0, "event_ms": 1, "value": "abc"})
        + "\n"
    )
    code, out, err = run_cli(capsys, "transcript", trace)
    assert (code, out) == (2, "")  # refused by validation, before anything is simulated
    assert 'sum.jsonl:2: column value: "abc" is not a number, so it cannot be aggregated with sum' in err
