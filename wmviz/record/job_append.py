"""Writing a job recording as it is sampled: the header once, then each sample appended as a line.

The form is `wmviz.record.job_lines`'s. The writer holds what the next line needs — the number of
every series key it has declared, the last sample's time, the input vote's window — and nothing
of the samples already written, so a day of a 50-vertex job costs what one sample holds.

Which logical input each edge feeds is voted on the values (`wmviz.record.job_inputs`). The vote
needs only the vertices with two or more input edges and the outputs of their upstreams, and a
few agreeing samples decide: the writer keeps those series for the first `job_inputs.MAX_TIMES`
samples, votes again when their count has grown fourfold (and at the end), writes an `inputs` line
whenever the decision changes, then lets them go. (The whole-document writer voted over up to
`MAX_TIMES` samples spread over the whole recording; this one over the first ones.)
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from wmviz.disk.atomic import GrowingFile
from wmviz.record.job import (
    INPUT_WATERMARK,
    OUTPUT_WATERMARK,
    TASK_FINISHED,
    JobRecording,
    SeriesKey,
    input_number,
    recording_of,
    to_json,
)
from wmviz.record.job_inputs import MAX_TIMES, assign_inputs
from wmviz.record.job_lines import LAYOUT

VOTE_AT = frozenset({4, 16, 64, MAX_TIMES})
"""The window's sample counts at which the vote runs (and at the end of a shorter recording): it
reads every sample of the window (up to ~0.5 s at 240 samples of a 50-vertex job of parallelism
10, bench/record_job_memory.py), so it runs a few times, when the window has grown fourfold."""


def line(item: dict[str, Any]) -> bytes:
    """One line of the appended form (compact JSON, then a newline)."""
    return json.dumps(item, separators=(",", ":")).encode("utf-8") + b"\n"


class InputVote:
    """The window of series the input vote reads, kept for the first `MAX_TIMES` samples only."""

    def __init__(self, rec: JobRecording) -> None:
        targets = [v.id for v in rec.vertices if sum(e.target == v.id for e in rec.edges) >= 2]
        self.voters = frozenset(targets)
        self.upstreams = frozenset(e.source for e in rec.edges if e.target in self.voters)
        self.window = JobRecording(rec.job, rec.vertices, rec.edges)
        self.samples = 0
        self.open = bool(self.voters)
        self.inputs = [e.input for e in rec.edges]

    def wanted(self, key: SeriesKey) -> bool:
        """A series the vote reads: a voter's per-input watermarks, an upstream's outputs."""
        if key[3] is not None:
            return False
        if key[0] in self.voters and input_number(key[2]) is not None:
            return True
        return key[0] in self.upstreams and key[2] in (OUTPUT_WATERMARK, INPUT_WATERMARK, TASK_FINISHED)

    def add(self, time_ms: int, points: dict[SeriesKey, int]) -> bool:
        """Take one sample's points in; True when a vote is due (at `VOTE_AT` samples)."""
        if not self.open:
            return False
        for key, value in points.items():
            if self.wanted(key):
                self.window.add(key, time_ms, value)
        self.samples += 1
        return self.samples in VOTE_AT

    def decide(self) -> tuple[list[int], list[str]]:
        """The edges' inputs and the notes the vote gives on the window so far."""
        assign_inputs(self.window)
        return [e.input for e in self.window.edges], list(self.window.notes)

    def close(self) -> None:
        """Let the window go (the vote is final)."""
        self.open = False
        self.window.series.clear()


class JobWriter:
    """Appends the samples of one job recording to its file as they are taken."""

    def __init__(self, rec: JobRecording, path: Path) -> None:
        """Check the header as the reader would (`JobFormatError`) and open the file: it appears at
        `path` with its first sample (or at `close`), never half-written (`GrowingFile`)."""
        header = {k: v for k, v in to_json(rec).items() if k != "series"}
        recording_of({**header, "series": []}, path.name)
        self.file = GrowingFile(path, line({**header, "layout": LAYOUT}))
        self.keys: dict[SeriesKey, int] = {}
        self.vote = InputVote(rec)
        self.vertices, self.edges = rec.vertices, rec.edges
        self.late = 0
        """How many samples started late (written with `late_ms`)."""
        self.last_ms: int | None = None
        self.first_ms: int | None = None
        self.samples = 0
        self.points = 0

    def sample(self, time_ms: int, points: list[tuple[SeriesKey, int]], late_ms: int | None = None) -> None:
        """Append one sample: its new series keys and its values in one block (one write). A key
        given twice keeps its last value; a time not after the last one moves to 1 ms after it (a
        wall clock stepped back), so every series' points stay in order."""
        if self.last_ms is not None and time_ms <= self.last_ms:
            time_ms = self.last_ms + 1
        values = dict(points)
        numbers = {key: len(self.keys) + i for i, key in enumerate(k for k in values if k not in self.keys)}
        block = line({"series": [[n, *key] for key, n in numbers.items()]}) if numbers else b""
        item: dict[str, Any] = {
            "t": time_ms,
            "v": [[self.keys.get(k, numbers.get(k)), v] for k, v in values.items()],
        }
        if late_ms:
            item["late_ms"] = late_ms
            self.late += 1
        self.file.add(block + line(item))
        self.keys |= numbers
        self.last_ms = time_ms
        self.first_ms = time_ms if self.first_ms is None else self.first_ms
        self.samples += 1
        self.points += len(values)
        if self.vote.add(time_ms, values):
            self.revote(final=self.vote.samples >= MAX_TIMES)

    def revote(self, final: bool) -> None:
        """Vote on the window; write the edges' inputs when they changed, and the vote's note once
        it is final."""
        inputs, notes = self.vote.decide()
        if inputs != self.vote.inputs:
            self.vote.inputs = inputs
            self.file.add(line({"inputs": inputs}))
        if final:
            for note in notes:
                self.note(note)
            self.vote.close()

    def note(self, text: str) -> None:
        """Append a note (what changed under the recording)."""
        self.file.add(line({"note": text}))

    def close(self) -> None:
        """End the recording: the vote's last word, and the file placed even with no sample."""
        try:
            if self.vote.open and self.vote.samples:
                self.revote(final=True)
            if not self.file.placed:
                self.file.add(b"")
        finally:
            self.file.close()
