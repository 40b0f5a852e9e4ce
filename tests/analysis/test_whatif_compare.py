"""What-if edits (`wmviz.analysis.whatif_edit`, `whatif_trace`, `whatif_token`) and the comparison of
two runs (`wmviz.analysis.compare`).

The comparison is checked against a naive oracle that rebuilds every step's full pipeline state
with `InstanceCursor.state_at` (what `compare` deliberately avoids doing) on seeded random traces.
"""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from tests.conftest import REPO
from wmviz.analysis.compare import ONLY_IN_ONE_RUN, divergence_steps, first_divergence, step_map
from wmviz.analysis.whatif_edit import Change, Delete, Insert, describe_edit
from wmviz.analysis.whatif_token import decode_edit, encode_edit
from wmviz.analysis.whatif_trace import apply_edit, write_whatif
from wmviz.cli import main as cli_main
from wmviz.core.scenario import Kind, Trace, TraceRow
from wmviz.core.types import MIN_MS, Profile, Status
from wmviz.store.runs import RunRequest, run_timeline
from wmviz.timeline.cursor import InstanceCursor
from wmviz.timeline.local import build_timeline_local
from wmviz.timeline.store import Timeline
from wmviz.trace.errors import TraceValidationError
from wmviz.trace.readers import read_trace, read_trace_bytes
from wmviz.view.timefmt import TimeFormat

SAMPLES = REPO / "sample_data"
INCIDENT = SAMPLES / "flink-38477-zero-output.jsonl"
PINNED = SAMPLES / "idle-partition-pins-watermark.csv"
RELEASED, FLIP = Profile.FLINK_1X_2X, Profile.FLIP_38477
PROPERTY = settings(max_examples=60, deadline=None, derandomize=True)
# Each example simulates two timelines (~0.1 s): enough examples to cover every edit kind and profile.
ORACLE = settings(
    max_examples=25,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
_dirs = iter(range(10**9))


def run(trace: Trace, root: Path, profile: Profile | None = None, instance: str = "0") -> InstanceCursor:
    """Simulate `trace` into a fresh timeline under `root` and open one instance of it."""
    out = root / f"timeline-{next(_dirs)}"
    build_timeline_local(trace, out, profile)
    return InstanceCursor(Timeline(out), instance)


def content(row: TraceRow) -> TraceRow:
    """A row without the numbering an edit renews."""
    return dataclasses.replace(row, row=0, seq=None)


@pytest.fixture(scope="module")
def incident() -> Trace:
    return read_trace(INCIDENT)


@pytest.fixture(scope="module")
def pinned() -> Trace:
    return read_trace(PINNED, PINNED.with_suffix(".json"))


# --- comparing runs ---------------------------------------------------------------------------------


def test_a_run_compared_with_itself_has_no_divergence_under_either_alignment(incident, tmp_path):
    a, b = run(incident, tmp_path), run(incident, tmp_path)
    for aligned_by in ("step", "row"):
        assert first_divergence(a, b, aligned_by=aligned_by) is None
        assert divergence_steps(a, b, aligned_by=aligned_by) == []


@pytest.mark.parametrize(
    ("column", "value", "aspect"),
    [
        ("out_json", "W13", "emissions"),
        ("emit_json", '[{"wm": 13}]', "operator output"),
        ("dropped_json", '[{"row": 7, "reason": "late"}]', "dropped records"),
        ("output_wm", 13, "output watermark"),
        ("output_status", "IDLE", "output status"),
    ],
)
def test_one_mutated_step_column_is_found_at_exactly_that_step_and_named(
    incident, tmp_path, column, value, aspect
):
    a, b = run(incident, tmp_path), run(incident, tmp_path)
    values = b.steps.column(column).to_pylist()
    values[4] = value
    index = b.steps.column_names.index(column)
    b.steps = b.steps.set_column(index, column, pa.array(values, b.steps.schema.field(column).type))

    found = first_divergence(a, b)

    assert (found.step, found.what, found.right_step) == (4, (aspect,), 4)
    assert divergence_steps(a, b) == [4]
    assert found.left.startswith("step 4 W20@0: emit W12; output 12 ACTIVE")


@pytest.mark.parametrize(
    ("step", "field", "value", "aspect", "steps"),
    [
        # ch0 changes at steps 0, 4 and 6: a changed state holds until that channel's next change.
        (4, "watermark_ms", 21, "channel 0 watermark", [4, 5]),
        (6, "status", "ACTIVE", "channel 0 status", [6, 7]),
        (0, "aligned", False, "channel 0 aligned", [0, 1, 2, 3]),
    ],
)
def test_one_mutated_channel_change_differs_until_that_channels_next_change(
    incident, tmp_path, step, field, value, aspect, steps
):
    a, b = run(incident, tmp_path), run(incident, tmp_path)
    row = b.channels.index[(b.channels["step"] == step) & (b.channels["channel"] == 0)]
    b.channels.loc[row, field] = value

    found = first_divergence(a, b)

    assert (found.step, found.what) == (step, (aspect,))
    assert divergence_steps(a, b) == steps


def test_explain_shows_the_two_profiles_part_at_the_first_finished_step(capsys):
    # What the CLI narrates at step 2, the first FINISHED: the comparison below must agree with it.
    for profile in (RELEASED, FLIP):
        assert cli_main(["explain", str(INCIDENT), "--profile", profile.value, "--step", "2"]) == 0
    out = capsys.readouterr().out.strip().splitlines()
    released, flip = [line for line in out if not line.startswith("# ")]
    assert "replayed as WMAX@2" in released and "ch2 MIN → MAX (W3)" in released
    assert "nothing emitted" in released
    assert "ch2 ACTIVE → FINISHED and leaves the aligned set (FS1)" in flip
    assert "its watermark stays MIN" in flip and "nothing emitted" in flip


def test_released_flink_and_flip_38477_first_diverge_at_the_first_finished_in_channel_2_only(
    incident, tmp_path
):
    released, flip = run(incident, tmp_path, RELEASED), run(incident, tmp_path, FLIP)

    found = first_divergence(released, flip)

    # Released Flink replays FINISHED as MAX on a still-ACTIVE, aligned channel; flip-38477 keeps MIN
    # and takes the channel out of the aligned set. Nothing is emitted on either side yet.
    assert found.step == 2
    assert found.what == ("channel 2 watermark", "channel 2 status", "channel 2 aligned")
    assert found.left == "step 2 FINISHED@2: nothing emitted; output MIN ACTIVE; ch2 MAX ACTIVE aligned"
    assert (
        found.right == "step 2 FINISHED@2: nothing emitted; output MIN ACTIVE; ch2 MIN FINISHED not aligned"
    )
    assert divergence_steps(released, flip) == [2, 3, 4, 5, 6, 7]  # channel 2 never agrees again
    last = first_divergence(released, flip, aligned_by="row")
    assert last == found  # the same rows: row alignment pairs them step by step


def test_the_last_step_of_the_incident_emits_max_under_released_flink_and_idle_under_flip(incident, tmp_path):
    released, flip = run(incident, tmp_path, RELEASED), run(incident, tmp_path, FLIP)
    # The headline of the incident: of all the steps that differ, only step 7 emits differently.
    emissions = [
        s for s in divergence_steps(released, flip) if released.row(s)["out_json"] != flip.row(s)["out_json"]
    ]
    assert emissions == [7]
    assert (released.row(7)["out_json"], flip.row(7)["out_json"]) == ("WMAX", "S:IDLE")


def test_unknown_alignment_is_rejected(incident, tmp_path):
    a = run(incident, tmp_path)
    with pytest.raises(ValueError, match="aligned_by must be 'step' or 'row'"):
        first_divergence(a, a, aligned_by="seq")


# --- what-if on the FLINK-38477 incident ------------------------------------------------------------


def test_channel_2_going_idle_instead_of_finishing_resimulates_and_diverges_at_step_2(incident, tmp_path):
    edit = Change("0", 2, {"status": Status.IDLE})
    whatif = apply_edit(incident, edit)
    original, changed = run(incident, tmp_path, RELEASED), run(whatif, tmp_path, RELEASED)

    assert (
        describe_edit(edit, incident)
        == "what if ch2 of instance 0 had gone IDLE at step 2 (instead of FINISHED)?"
    )
    assert whatif.rows[2].status is Status.IDLE and len(whatif.rows) == len(incident.rows)
    found = first_divergence(original, changed)
    assert (found.step, found.what) == (2, ("channel 2 watermark", "channel 2 status", "channel 2 aligned"))
    assert found.right == "step 2 IDLE@2: nothing emitted; output MIN ACTIVE; ch2 MIN IDLE not aligned"
    # ch3 still finishes (MAX), so released Flink reaches the same WMAX at step 7 either way.
    assert changed.row(7)["out_json"] == original.row(7)["out_json"] == "WMAX"


def test_a_watermark_inserted_at_the_end_is_only_in_one_run_by_step_and_changes_nothing_by_row(
    incident, tmp_path
):
    edit = Insert("0", 8, Kind.WATERMARK, "0", 0, watermark_ms=30)
    whatif = apply_edit(incident, edit)
    original, longer = run(incident, tmp_path), run(whatif, tmp_path)

    assert [content(r) for r in whatif.rows[:-1]] == [content(r) for r in incident.rows]
    assert (whatif.rows[-1].channel, whatif.rows[-1].watermark_ms, longer.count) == (0, 30, 9)
    found = first_divergence(original, longer)
    assert (found.step, found.what, found.right_step) == (8, (ONLY_IN_ONE_RUN,), 8)
    assert found.left == "no step 8: this run has 8 steps"
    assert found.right == "step 8 W30@0: nothing emitted; output MAX ACTIVE"
    # ch0 is IDLE by then, so the watermark is dropped: paired by row, nothing differs.
    assert first_divergence(original, longer, aligned_by="row") is None


def test_deleting_step_0_shifts_every_step_but_row_alignment_finds_what_really_changed(incident, tmp_path):
    edit = Delete("0", 0)
    whatif = apply_edit(incident, edit)
    original, shorter = run(incident, tmp_path), run(whatif, tmp_path)

    assert [content(r) for r in whatif.rows] == [content(r) for r in incident.rows[1:]]
    assert [r.row for r in whatif.rows] == list(range(1, 8))
    by_step = first_divergence(original, shorter)
    assert (by_step.step, by_step.what) == (0, ("channel 0 watermark", "channel 1 watermark"))
    by_row = first_divergence(original, shorter, aligned_by="row")
    assert (by_row.step, by_row.what, by_row.right_step) == (0, ("channel 0 watermark",), None)
    assert by_row.right.startswith("no such row in this run")
    # Without W10 on ch0, W10 is not emitted at step 3; from ch0's W20 at step 4 on, the runs agree.
    assert divergence_steps(original, shorter, aligned_by="row") == [0, 1, 2, 3]


def test_deleting_the_only_row_of_the_highest_channel_keeps_the_valves_channel_count(incident, tmp_path):
    whatif = apply_edit(incident, Delete("0", 3))  # ch3's FINISHED
    assert whatif.valve_channels == {("0", "0"): 4}
    assert whatif.config.channels == {"0": 4}  # pinned: re-deriving from the rows would give 3
    path = write_whatif(whatif, tmp_path)
    assert read_trace(path).valve_channels == {("0", "0"): 4}
    # ch3 stays at MIN and holds the output down for the rest of the run.
    assert all(s == "" for s in (r["out_json"] for r in run(whatif, tmp_path).steps.to_pylist()[:6]))


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (Delete("0", 8), "instance '0' has no step 8: its steps are 0 to 7"),
        (Change("0", -1, {"status": "IDLE"}), "instance '0' has no step -1"),
        (
            Insert("0", 9, Kind.STATUS, "0", 1, status=Status.IDLE),
            "no step 9: its steps are 0 to 7, or 8 for the end",
        ),
        (Delete("3", 0), r"instance '3' is not in this trace \(its instances: 0\)"),
        (Change("0", 1, {"instance": "1"}), "cannot change instance"),
        (Change("0", 1, {"kind": "late"}), "kind 'late' is not one of"),
        (Change("0", 1, {"kind": None}), "kind cannot be removed"),
        (Change("0", 1, {"input": None}), "input cannot be removed"),  # was KeyError in the writer
    ],
)
def test_a_step_that_does_not_exist_or_a_field_that_cannot_change_is_a_clear_value_error(
    incident, edit, message
):
    with pytest.raises(ValueError, match=message):
        apply_edit(incident, edit)


@pytest.mark.parametrize(
    ("edit", "row", "column", "reason"),
    [
        (Change("0", 0, {"watermark_ms": None}), 1, "watermark_ms", "required for a watermark row"),
        (Change("0", 4, {"kind": Kind.STATUS, "status": Status.IDLE}), 5, "watermark_ms", None),
        (Insert("0", 2, Kind.WATERMARK, "0", 9, watermark_ms=1), 3, "channel", "9 is out of range"),
    ],
)
def test_an_edit_that_makes_the_trace_invalid_names_the_row_and_column(incident, edit, row, column, reason):
    with pytest.raises(TraceValidationError) as caught:
        apply_edit(incident, edit)
    issue = caught.value.issues[0]
    assert (issue.file, issue.row, issue.column) == ("flink-38477-zero-output.whatif.jsonl", row, column)
    assert str(caught.value).startswith(f"flink-38477-zero-output.whatif.jsonl:{row}: column {column}: ")
    if reason is not None:
        assert reason in issue.reason


def test_describe_edit_reads_as_one_question_with_and_without_the_trace(incident):
    insert = Insert("0", 5, Kind.STATUS, "0", 2, status="IDLE")
    assert describe_edit(insert, incident) == "what if ch2 of instance 0 had gone IDLE just before step 5?"
    end = Insert("0", 8, Kind.WATERMARK, "0", 1, watermark_ms=2**63 - 1)
    assert describe_edit(end, incident) == "what if ch1 of instance 0 had received watermark MAX at the end?"
    delete = Delete("0", 4)
    assert (
        describe_edit(delete, incident)
        == "what if watermark 20 on ch0 at step 4 of instance 0 had never arrived?"
    )
    assert describe_edit(delete) == "what if the row at step 4 of instance 0 had never arrived?"
    assert (
        describe_edit(Change("0", 2, {"status": Status.IDLE}))
        == "what if step 2 of instance 0 had had status IDLE?"
    )


def test_change_edits_are_hashable_and_do_not_follow_later_changes_to_the_callers_dict():
    fields = {"status": Status.IDLE}
    edit = Change("0", 2, fields)
    fields["status"] = Status.ACTIVE
    assert edit.fields["status"] is Status.IDLE
    assert (
        edit == Change("0", 2, {"status": Status.IDLE})
        and len({edit, Change("0", 2, {"status": Status.IDLE})}) == 1
    )


# --- writing an edited trace ------------------------------------------------------------------------


def test_write_whatif_is_idempotent_and_the_file_reads_back_as_the_edited_trace(pinned, tmp_path):
    whatif = apply_edit(pinned, Delete("0", 4))
    first = write_whatif(whatif, tmp_path)
    mtime = first.stat().st_mtime_ns
    again = write_whatif(apply_edit(pinned, Delete("0", 4)), tmp_path)

    assert again == first and first.stat().st_mtime_ns == mtime
    assert first.name.startswith("idle-partition-pins-watermark.whatif-") and first.suffix == ".jsonl"
    assert json.loads(first.read_text().splitlines()[0])["config"]["channels"] == {"0": 2}
    back = read_trace(first)
    assert [content(r) for r in back.rows] == [content(r) for r in whatif.rows]
    assert (back.config, back.valve_channels) == (whatif.config, whatif.valve_channels)
    assert write_whatif(apply_edit(pinned, Delete("0", 3)), tmp_path) != first


def test_a_written_whatif_runs_through_the_apps_run_cache_like_any_trace(incident, tmp_path):
    whatif = apply_edit(incident, Change("0", 2, {"status": "IDLE"}))
    path = write_whatif(whatif, tmp_path / "whatifs")
    request = RunRequest(path, None, RELEASED, "local")
    cached = InstanceCursor(run_timeline(request, root=tmp_path / "cache"), "0")
    direct = run(whatif, tmp_path, RELEASED)
    assert first_divergence(cached, direct) is None
    assert first_divergence(run(incident, tmp_path, RELEASED), cached).step == 2


def test_instances_with_different_compact_channel_counts_keep_them_through_edit_and_write(tmp_path):
    data = b'{"channels": 4}\n{"ch": 0, "wm": 10}\n{"ch": 1, "wm": 11}\n{"channels": 2}\n{"ch": 0, "wm": 5}\n'
    trace = read_trace_bytes(data + b'{"ch": 1, "status": "IDLE"}\n', "two.jsonl")
    whatif = apply_edit(trace, Delete("1", 1))

    assert whatif.valve_channels == {("0", "0"): 4, ("1", "0"): 2}
    assert [r.row for r in whatif.rows] == [1, 2, 3]
    path = write_whatif(whatif, tmp_path)
    assert path.read_bytes().startswith(b'{"channels": 4}\n')  # only the compact format can say it
    assert read_trace(path).valve_channels == whatif.valve_channels


# --- multi-instance ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "edit",
    [
        Delete("0", 4),
        Change("1", 2, {"watermark_ms": 1_795_255_300_000}),
        Insert("1", 0, Kind.STATUS, "0", 1, status=Status.IDLE),
        Insert("0", 6, Kind.WATERMARK, "0", 1, watermark_ms=1_795_255_216_000),
    ],
    ids=str,
)
def test_an_edit_touches_only_its_own_instance(pinned, tmp_path, edit):
    whatif = apply_edit(pinned, edit)
    other = "1" if edit.instance == "0" else "0"

    assert [r.seq for r in whatif.rows] == list(range(1, len(whatif.rows) + 1))
    assert [content(r) for r in whatif.rows if r.instance == other] == [
        content(r) for r in pinned.rows if r.instance == other
    ]
    assert (
        first_divergence(run(pinned, tmp_path, instance=other), run(whatif, tmp_path, instance=other)) is None
    )
    assert first_divergence(
        run(pinned, tmp_path, instance=edit.instance), run(whatif, tmp_path, instance=edit.instance)
    )


def test_never_marking_partition_1_idle_keeps_subtask_0_pinned_from_step_4(pinned, tmp_path):
    edit = Delete("0", 4)
    assert describe_edit(edit, pinned) == "what if IDLE on ch1 at step 4 of instance 0 had never arrived?"
    original, whatif = run(pinned, tmp_path), run(apply_edit(pinned, edit), tmp_path)

    by_step = first_divergence(original, whatif)
    assert by_step.step == 4
    assert by_step.what == (
        "emissions",
        "output watermark",
        "channel 0 watermark",
        "channel 1 status",
        "channel 1 aligned",
    )
    by_row = first_divergence(original, whatif, aligned_by="row")
    assert (by_row.step, by_row.right_step) == (4, None)
    assert by_row.what == ("emissions", "output watermark", "channel 1 status", "channel 1 aligned")
    assert by_row.left == (
        "step 4 IDLE@1: emit W(2026-11-21 10:00:10.000Z); output 2026-11-21 10:00:10.000Z ACTIVE; "
        "ch1 2026-11-21 09:59:58.000Z IDLE not aligned"
    )
    raw = first_divergence(original, whatif, aligned_by="row", t=TimeFormat("ms"))
    assert raw.left == (
        "step 4 IDLE@1: emit W1795255210000; output 1795255210000 ACTIVE; ch1 1795255198000 IDLE not aligned"
    )
    # What the runs send on first differs at the same step here: the emission.
    assert first_divergence(original, whatif, output=True).step == 4
    assert divergence_steps(original, whatif, aligned_by="row") == [4, 5]  # pinned at ch1's watermark


# --- step_map ---------------------------------------------------------------------------------------


def test_step_map_shifts_steps_after_an_insert_and_back():
    forward = step_map(Insert("0", 2, Kind.STATUS, "0", 0, status=Status.IDLE), 5)
    back = step_map(Insert("0", 2, Kind.STATUS, "0", 0, status=Status.IDLE), 5, inverse=True)
    assert [forward(s) for s in range(-1, 5)] == [-1, 0, 1, 3, 4, 5]
    assert [back(s) for s in range(-1, 6)] == [-1, 0, 1, None, 2, 3, 4]
    at_end = step_map(Insert("0", 5, Kind.STATUS, "0", 0, status=Status.IDLE), 5)
    assert [at_end(s) for s in range(5)] == [0, 1, 2, 3, 4]


def test_step_map_drops_a_deleted_step_and_maps_back_around_it():
    forward, back = step_map(Delete("0", 2), 5), step_map(Delete("0", 2), 5, inverse=True)
    assert [forward(s) for s in range(5)] == [0, 1, None, 2, 3]
    assert [back(s) for s in range(4)] == [0, 1, 3, 4]
    with pytest.raises(ValueError, match="step 4 is not in a run of 4 steps"):
        back(4)
    with pytest.raises(ValueError, match="step 5 is not in a run of 5 steps"):
        forward(5)


def test_step_map_is_the_identity_for_a_change_and_for_other_instances():
    assert [step_map(Change("0", 1, {"status": "IDLE"}), 3)(s) for s in range(3)] == [0, 1, 2]
    assert [step_map(Delete("0", 1), 3, instance="1")(s) for s in range(3)] == [0, 1, 2]


@pytest.mark.parametrize(
    "edit", [Delete("0", 2), Delete("0", 7), Insert("0", 3, Kind.WATERMARK, "0", 2, watermark_ms=5)], ids=str
)
def test_step_map_pairs_each_original_step_with_the_same_row_in_the_whatif_run(incident, tmp_path, edit):
    original, whatif = run(incident, tmp_path), run(apply_edit(incident, edit), tmp_path)
    forward = step_map(edit, original.count)
    for step in range(original.count):
        mapped = forward(step)
        if mapped is not None:
            assert content(whatif.trace_row(mapped)) == content(original.trace_row(step))
    assert sum(forward(s) is None for s in range(original.count)) == isinstance(edit, Delete)


# --- properties on generated traces -----------------------------------------------------------------


@st.composite
def traces(draw) -> Trace:
    """A valid multi-instance trace: watermarks, statuses, records, a payload, sometimes shuffled `seq`."""
    instances, channels = draw(st.integers(1, 3)), draw(st.integers(1, 4))
    base = st.fixed_dictionaries(
        {
            "instance": st.sampled_from([str(i) for i in range(instances)]),
            "channel": st.integers(0, channels - 1),
        }
    )
    watermark = st.fixed_dictionaries(
        {
            "kind": st.just("watermark"),
            "watermark_ms": st.one_of(st.integers(-5, 60), st.sampled_from(["MIN", "MAX"])),
        }
    )
    status = st.fixed_dictionaries(
        {"kind": st.just("status"), "status": st.sampled_from(["ACTIVE", "IDLE", "FINISHED"])}
    )
    record = st.fixed_dictionaries(
        {"kind": st.just("record"), "event_ms": st.integers(0, 60)}, optional={"note": st.just("n")}
    )
    rows = draw(
        st.lists(st.tuples(base, st.one_of(watermark, watermark, status, record)), min_size=1, max_size=24)
    )
    lines = [{**a, **b} for a, b in rows]
    lines[0]["instance"] = "0"  # the instance the comparisons open
    if draw(st.booleans()):  # arrival order from seq, not file order
        for line, seq in zip(lines, draw(st.permutations(range(len(lines)))), strict=True):
            line["seq"] = 10 * seq + 3
    head = [{"config": {"channels": {"0": channels}}}] if draw(st.booleans()) else []
    data = "".join(json.dumps(obj) + "\n" for obj in head + lines).encode()
    return read_trace_bytes(data, "generated.jsonl")


def new_row_fields(channels: int):
    """Fields of a valid watermark or status row on input 0."""
    channel = st.integers(0, channels - 1)
    watermark = st.fixed_dictionaries(
        {"kind": st.just(Kind.WATERMARK), "channel": channel, "watermark_ms": st.integers(-5, 70)}
    )
    status = st.fixed_dictionaries(
        {"kind": st.just(Kind.STATUS), "channel": channel, "status": st.sampled_from(list(Status))}
    )
    return st.one_of(watermark, status)


def draw_edit(data, trace: Trace):
    instance = data.draw(st.sampled_from(trace.instances))
    count = sum(r.instance == instance for r in trace.rows)
    kind = data.draw(st.sampled_from(["insert", "delete", "change"]))
    if kind == "delete":
        return Delete(instance, data.draw(st.integers(0, count - 1)))
    fields = data.draw(new_row_fields(trace.valve_channels[(instance, "0")]))
    if kind == "insert":
        return Insert(instance, data.draw(st.integers(0, count)), input="0", **fields)
    cleared = {"watermark_ms": None, "status": None, "event_ms": None}
    return Change(instance, data.draw(st.integers(0, count - 1)), {**cleared, **fields})


@PROPERTY
@given(traces(), st.data())
def test_apply_edit_changes_exactly_the_edited_row_and_keeps_every_other_row_and_its_arrival_order(
    trace, data
):
    edit = draw_edit(data, trace)
    # Arrival order from the file itself: by seq when the rows carry it.
    arrival = sorted(trace.rows, key=lambda r: (r.seq if r.seq is not None else 0, r.row))
    expected = [content(r) for r in arrival]
    positions = [i for i, r in enumerate(arrival) if r.instance == edit.instance]
    if isinstance(edit, Delete):
        del expected[positions[edit.step]]
    elif isinstance(edit, Insert):
        at = positions[edit.step] if edit.step < len(positions) else len(expected)
        fields = {f.name: getattr(edit, f.name) for f in dataclasses.fields(edit) if f.name != "step"}
        expected.insert(at, TraceRow(row=0, **fields))
    else:
        at = positions[edit.step]
        expected[at] = dataclasses.replace(expected[at], **edit.fields)
    if not expected:
        with pytest.raises(TraceValidationError, match="the trace has no rows"):
            apply_edit(trace, edit)
        return

    edited = apply_edit(trace, edit)

    assert [content(r) for r in edited.rows] == expected
    assert [r.row for r in edited.rows] == list(range(1, len(expected) + 1))
    has_seq = trace.rows[0].seq is not None
    assert [r.seq for r in edited.rows] == (
        list(range(1, len(expected) + 1)) if has_seq else [None] * len(expected)
    )
    for pair, n in edited.valve_channels.items():
        assert n == trace.valve_channels.get(pair, n)  # no valve gains or loses a channel


def naive_divergences(a: InstanceCursor, b: InstanceCursor, slots, *, missing_differs: bool) -> list[int]:
    """The oracle: full pipeline state rebuilt at every slot. `slots` are (step of a | None, step of b | None,
    left step); a missing row emits nothing and leaves the state as after that run's previous row."""

    def events(cursor, step):
        row = cursor.row(step)
        return row["out_json"], row["emit_json"], row["dropped_json"]

    def state(cursor, step):
        output = (
            (MIN_MS, "ACTIVE")
            if step < 0
            else (cursor.row(step)["output_wm"], cursor.row(step)["output_status"])
        )
        valves = cursor.state_at(step).pipeline.valves
        channels = {
            (n, c.channel): (c.watermark_ms, c.status, c.aligned)
            for n, v in valves.items()
            for c in v.state().channels
        }
        return output, channels

    found, last = set(), [-1, -1]
    for ia, ib, left in slots:
        if missing_differs and (ia is None or ib is None):
            found.add(left)
            continue
        last = [ia if ia is not None else last[0], ib if ib is not None else last[1]]
        ev = [events(c, i) if i is not None else ("", None, None) for c, i in ((a, ia), (b, ib))]
        (out_a, ch_a), (out_b, ch_b) = state(a, last[0]), state(b, last[1])
        initial = (MIN_MS, Status.ACTIVE, True)
        channels_differ = any(ch_a.get(k, initial) != ch_b.get(k, initial) for k in ch_a.keys() | ch_b.keys())
        if ev[0] != ev[1] or out_a != out_b or channels_differ:
            found.add(left)
    return sorted(found)


def row_slots(edit, count: int):
    """The pairing an edit defines: (original step, what-if step, original step it belongs to)."""
    if isinstance(edit, Insert):
        k = edit.step
        return [(i, i, i) for i in range(k)] + [(None, k, k)] + [(i, i + 1, i) for i in range(k, count)]
    forward = step_map(edit, count)
    return [(i, forward(i), i) for i in range(count)]


@ORACLE
@given(traces(), st.data(), st.sampled_from([RELEASED, FLIP]))
def test_divergences_match_a_full_state_rebuild_at_every_step_under_both_alignments(
    tmp_path, trace, data, profile
):
    edit = draw_edit(data, trace)
    try:
        edited = apply_edit(trace, edit)
    except TraceValidationError:
        assume(False)  # deleting the only row
    positions = [i for i, r in enumerate(trace.rows) if r.instance == edit.instance]
    count = len(positions)
    # Identical neighbouring rows make the edited row's place ambiguous (either pairing is right):
    # the oracle follows the edit, so keep to edits whose place the rows themselves pin down.
    if isinstance(edit, Delete) and edit.step + 1 < count:
        assume(content(trace.rows[positions[edit.step]]) != content(trace.rows[positions[edit.step + 1]]))
    if isinstance(edit, Insert) and edit.step < count:
        assume(content(edited.rows[positions[edit.step]]) != content(trace.rows[positions[edit.step]]))
    assume(edit.instance in edited.instances)
    a, b = run(trace, tmp_path, profile, edit.instance), run(edited, tmp_path, profile, edit.instance)

    by_step = [
        (i if i < a.count else None, i if i < b.count else None, i) for i in range(max(a.count, b.count))
    ]
    expected = naive_divergences(a, b, by_step, missing_differs=True)
    assert divergence_steps(a, b) == expected
    found = first_divergence(a, b)
    assert (found.step if found else None) == (expected[0] if expected else None)

    expected = naive_divergences(a, b, row_slots(edit, a.count), missing_differs=False)
    assert divergence_steps(a, b, aligned_by="row") == expected
    found = first_divergence(a, b, aligned_by="row")
    assert (found.step if found else None) == (expected[0] if expected else None)
    if found is not None:
        assert found.what and found.left != found.right


@ORACLE
@given(traces(), traces(), st.sampled_from([RELEASED, FLIP]))
def test_two_unrelated_traces_compare_by_step_exactly_as_the_full_state_rebuild_says(
    tmp_path, one, two, profile
):
    a, b = run(one, tmp_path, profile), run(two, tmp_path, profile)
    slots = [
        (i if i < a.count else None, i if i < b.count else None, i) for i in range(max(a.count, b.count))
    ]
    assert divergence_steps(a, b) == naive_divergences(a, b, slots, missing_differs=True)
    assert first_divergence(a, a) is None


# --- what-ifs in links ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "edit",
    [
        Delete("0", 5),
        Insert("1", 3, Kind.STATUS, "0", 2, status=Status.IDLE),
        Insert("0", 0, Kind.RECORD, "L", 0, event_ms=10_000, key="1", value="order-9"),
        Change("0", 4, {"kind": Kind.WATERMARK, "watermark_ms": 2**63 - 1, "status": None}),
    ],
)
def test_an_edit_survives_the_round_trip_through_a_url_token(edit):
    token = encode_edit(edit)
    assert re.fullmatch(r"[A-Za-z0-9_-]+", token) and len(token) < 400
    assert decode_edit(token) == edit


@pytest.mark.parametrize(
    "token",
    ["", "!!", "a" * 5000, "bm90IGpzb24", "WzFd", "eyJvcCI6ImRlbGV0ZSJ9",
     "eyJpbnN0YW5jZSI6IjAiLCJvcCI6ImNoYW5nZSIsInN0ZXAiOjEsImZpZWxkcyI6eyJyb3ciOjV9fQ"],
)  # fmt: skip
def test_a_malformed_or_hostile_token_is_refused_with_a_value_error(token):
    with pytest.raises(ValueError):
        decode_edit(token)
