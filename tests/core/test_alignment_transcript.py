"""Watermark alignment in the transcript, as data (docs/trace-format.md, "The transcript").

Two traces: the built-in incident (a subtask paused once its sampling ring has caught its lead,
three records held and all read) and a hand-made one (tests/data/alignment-hand.jsonl) whose every
value is worked out below from the rules in docs/alignment.md: no sampling ring, so the latest
watermark is compared; a pause between updates; a release that reads two held records and pauses
again on the second, so the third waits on; an update due at a record row's own time that runs
with the next row, and one due at the last row's time that never runs. Both engines must print the
same lines (marker `spark`).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.support import paths
from wmviz.cli import commands as cli
from wmviz.core.types import MAX_MS

REPO = paths.REPO
INCIDENT = REPO / "sample_data" / "fast-partition-paused-by-alignment.jsonl"
HAND = REPO / "tests" / "data" / "alignment-hand.jsonl"


def transcript(capsys, path: Path, engine: str = "local") -> list[str]:
    code = cli.main(["transcript", str(path), "--engine", engine])
    out, err = capsys.readouterr()
    assert code == 0, err
    return out.splitlines()


def alignment_by_step(lines: list[str]) -> dict[int, list[dict]]:
    records = [json.loads(line) for line in lines]
    return {r["step"]: r["alignment"] for r in records if "alignment" in r}


def update(at: int, reports: list[tuple[int, int, str]], group_wm: int, max_allowed: int, held_by) -> dict:
    return {
        "event": "update",
        "at": at,
        "group": "g",
        "reports": [{"subtask": s, "wm": wm, "split": split} for s, wm, split in reports],
        "group_wm": group_wm,
        "max_allowed": max_allowed,
        "held_by": {"subtask": held_by[0], "split": held_by[1]},
    }


def pause(event: str, split: str | None, wm: int, announced: dict) -> dict:
    """Subtask 0 (or its split `split`) paused or resumed; with no ring the sampled is the latest."""
    told = {k: announced[k] for k in ("group_wm", "max_allowed", "held_by")}
    return {"event": event, "subtask": 0, "split": split, "wm": wm, "sampled": wm} | told


def held(row: int) -> dict:
    return {"event": "held", "subtask": 0, "split": "a", "row": row, "waits_on": "subtask"}


# At 1000 ms subtask 0 has sent 15000 - 1 (split a), subtask 1 10000 - 1 (split b): the group
# watermark is 9999 and 10 s of drift allow up to 19999.
FIRST = update(1000, [(0, 14999, "a"), (1, 9999, "b")], 9999, 19999, (1, "b"))
# At 2000 ms: subtask 0 still 24999 (its later records are held), subtask 1 has reached 19999.
SECOND = update(2000, [(0, 24999, "a"), (1, 19999, "b")], 19999, 29999, (1, "b"))

HAND_ALIGNMENT = {
    # line 4, proctime 1000: the first update, nobody paused
    2: [FIRST],
    # line 5, record at 25000: 24999 passes 19999, and with no ring Flink pauses at once (between
    # updates), the subtask and its split
    3: [pause("paused", None, 24999, FIRST), pause("paused", "a", 24999, FIRST)],
    4: [held(6)],
    5: [held(7)],
    6: [held(8)],
    # line 9, a record at 2000: the update due at 2000 does not run with it (step 7 has none) ...
    # line 10, proctime 2000: ... it runs here; 24999 <= 29999 resumes both, line 6 (25999) is read,
    # line 7 (39999) is read and pauses them again, so line 8 waits on and is not "released"
    8: [
        SECOND,
        pause("resumed", None, 24999, SECOND),
        pause("resumed", "a", 24999, SECOND),
        {"event": "released", "subtask": 0, "rows": [6, 7]},
        pause("paused", None, 39999, SECOND),
        pause("paused", "a", 39999, SECOND),
        held(8),
    ],
    # line 11, the last row, a record at 3000: the update due at 3000 never runs
}


def test_the_hand_made_trace_carries_every_value_worked_out_by_hand(capsys):
    assert alignment_by_step(transcript(capsys, HAND)) == HAND_ALIGNMENT


def test_a_release_that_listed_every_held_record_is_caught(capsys, monkeypatch):
    """Planted: the old release, which said every record it handed back was read."""
    from wmviz.core import pipeline
    from wmviz.core.alignment import ReleasedRecords

    def read_all(reader, rows, read):
        for row in rows:
            read(row)
        return ReleasedRecords(reader.channel, tuple(r.row for r in rows))

    monkeypatch.setattr(pipeline, "read_released", read_all)
    assert alignment_by_step(transcript(capsys, HAND)) != HAND_ALIGNMENT


def test_the_incident_reports_announces_pauses_holds_and_releases(capsys):
    steps = alignment_by_step(transcript(capsys, INCIDENT))
    updates = [e for events in steps.values() for e in events if e["event"] == "update"]
    # one update a second from 1000 to 7000, the last row (a proctime row: its own time included)
    assert [u["at"] for u in updates] == [1000, 2000, 3000, 4000, 5000, 6000, 7000]
    for u in updates:
        assert u["group"] == "orders"
        assert u["group_wm"] == min(r["wm"] for r in u["reports"])
        assert u["max_allowed"] == min(u["group_wm"] + 10_000, MAX_MS)
    # the live partition's subtask runs 20 s ahead; the ring of 3 compares the value two updates
    # back (29999 at 1000 ms) with 11999 + 10 s, so it pauses at the third update, not the first
    paused = [e for e in steps[6] if e["event"] == "paused"]
    assert [(e["split"], e["wm"], e["sampled"], e["max_allowed"]) for e in paused] == [
        (None, 31999, 29999, 21999),
        ("orders-0", 31999, 29999, 21999),
    ]
    assert all(e["sampled"] > e["max_allowed"] for e in paused)
    held_rows = [e["row"] for events in steps.values() for e in events if e["event"] == "held"]
    assert held_rows == [8, 10, 13]
    # the burst on orders-1 lifts the group watermark to 25999: the update at 6000 resumes and reads all three
    resumed = [e for e in steps[13] if e["event"] == "resumed"]
    assert [(e["group_wm"], e["max_allowed"]) for e in resumed] == [(25999, 35999)] * 2
    assert all(e["sampled"] <= e["max_allowed"] for e in resumed)
    assert [e for e in steps[13] if e["event"] == "released"] == [
        {"event": "released", "subtask": 0, "rows": [8, 10, 13]}
    ]


def test_a_trace_without_alignment_has_no_alignment_key(capsys, tmp_path):
    trace = tmp_path / "plain.jsonl"
    trace.write_text(
        '{"config": {"generator": {"preset": "flip27", "splits": {"0": ["a"]}}}}\n'
        '{"kind": "record", "channel": 0, "split": "a", "event_ms": 5, "proc_ms": 1000}\n'
    )
    assert alignment_by_step(transcript(capsys, trace)) == {}


@pytest.mark.spark
@pytest.mark.parametrize("path", [INCIDENT, HAND], ids=lambda p: p.stem)
def test_both_engines_print_the_same_alignment(spark, capsys, path):
    assert transcript(capsys, path, "spark") == transcript(capsys, path, "local")


def test_every_event_and_field_the_transcript_writes_is_documented(capsys):
    """docs/trace-format.md's table names every `event` and every field the items carry."""
    text = (REPO / "docs" / "trace-format.md").read_text()
    section = text.split("### Alignment in the transcript", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("| `")][1:]  # past the header
    documented_events = {e for line in table for e in re.findall(r"`(\w+)`", line.split("|")[1])}
    items = [
        item
        for path in (INCIDENT, HAND)
        for events in alignment_by_step(transcript(capsys, path)).values()
        for item in events
    ]
    assert {item["event"] for item in items} == documented_events
    fields = {key for item in items for key in item} | {
        key for item in items for report in item.get("reports", []) for key in report
    }
    undocumented = {f for f in fields if f"`{f}`" not in section and f'"{f}"' not in section}
    assert not undocumented
