"""Watermark alignment's update over an instance's split readers: sample, report, announce, pause.

Every `update_interval_ms` on the processing clock (wmviz/core/alignment.py, steps 1 to 3) the
pipeline runs `align_readers` over the channels of an instance that read splits: each reader's
samplers take their sample, each reports to the coordinator (`announce`), the announcement pauses
or resumes each subtask and each split that is not idle, and the records held back that may now be
read are handed back. Between updates a reader only pauses, which is part of its own rules
(`SplitReader.maybe_pause`, wmviz/core/splits.py), as is whether a record waits (`is_held`).
"""

from __future__ import annotations

from collections.abc import Callable

from wmviz.core.alignment import (
    Announcement,
    PauseEvent,
    ReleasedRecords,
    Report,
    announce,
    report_of,
)
from wmviz.core.scenario import AlignmentConfig, TraceRow
from wmviz.core.splits import SplitEvent, SplitReader
from wmviz.core.sql_generator import SqlGeneratorUpdate


def report(reader: SplitReader) -> Report | None:
    """What the subtask reports to the alignment coordinator."""
    return report_of(reader.channel, reader.sent_ms, reader.idle, reader.holder())


def sample(reader: SplitReader) -> None:
    """An update's first step: every split's sampler and the subtask's take their sample."""
    for state in reader.splits.values():
        state.sampler.sample()
    reader.sampled.sample()


def align(reader: SplitReader, announcement: Announcement, now_ms: int, group: str, drift_ms: int) -> None:
    """Apply an announcement: pause or resume the subtask and each split that is not idle; a
    paused split's idleness clock stops, a paused subtask stops its main output's."""
    reader.now_ms = now_ms
    reader.announcement = announcement
    allowed = announcement.max_allowed_ms

    def event(split: str | None, paused: bool, watermark_ms: int) -> PauseEvent:
        return PauseEvent(reader.channel, split, paused, watermark_ms, group, announcement, drift_ms)

    paused = reader.sampled.oldest_ms() > allowed
    if paused != reader.paused:
        reader.set_paused(None, paused)
        reader.events.append(event(None, paused, reader.sent_ms))
    for state in reader.splits.values():
        if state.partial_idle:
            continue  # an idle split is left as it is until it turns active
        split_paused = state.sampler.oldest_ms() > allowed
        if split_paused != state.paused:
            reader.set_paused(state, split_paused)
            reader.events.append(event(state.split, split_paused, state.partial_ms))


def release(reader: SplitReader) -> list[TraceRow]:
    """The held records that may be read now, in arrival order; the rest keep waiting."""
    free = [row for row in reader.held if not reader.is_held(_split_cell(row))]
    if free:
        reader.held = [row for row in reader.held if reader.is_held(_split_cell(row))]
    return free


def align_readers(
    readers: list[SplitReader], alignment: AlignmentConfig, time_ms: int
) -> tuple[list[SplitEvent | PauseEvent | SqlGeneratorUpdate], list[TraceRow]]:
    """One alignment update over an instance's split readers: they report, the coordinator
    announces, each subtask and split is paused or resumed; returns what that told and the held
    records that may be read now, reader by reader in arrival order (`read_released` reads them)."""
    notes: list[SplitEvent | PauseEvent | SqlGeneratorUpdate] = []
    for reader in readers:
        sample(reader)
    announcement = announce((r for g in readers if (r := report(g)) is not None), alignment.max_drift_ms)
    for reader in readers:
        align(reader, announcement, time_ms, alignment.group, alignment.max_drift_ms)
        notes.extend(reader.drain_events())
    released: list[TraceRow] = []
    for reader in readers:
        released += release(reader)
    return notes, released


def read_released(
    reader: SplitReader, rows: list[TraceRow], read: Callable[[TraceRow], None]
) -> ReleasedRecords | None:
    """Read the records a reader may go on with, in arrival order, and say which were read: a record
    can pause its subtask or split again (`SplitReader.maybe_pause`), and the ones after it then wait
    on (the narration once said "reads lines 5, 6" when only line 5 was read)."""
    done: list[int] = []
    for row in rows:
        read(row)
        if not reader.held or reader.held[-1] is not row:  # not held back again
            done.append(row.row)
    return ReleasedRecords(reader.channel, tuple(done)) if done else None


def _split_cell(row: TraceRow) -> str:
    """The `split` cell of a held record (it was checked when the record arrived)."""
    return str(dict(row.payload).get("split"))
