"""The appended form of a job recording: one JSON object per line, written as the samples come.

A whole-job `record` cannot rewrite one JSON document at every save (that costs the whole history
each time: 4.2 s at a million points, and the whole history in memory). It writes instead, one
line each, with `\\n` after every line:

* line 1, the header: the whole-document form (`job.to_json`) with no series, and
  `"layout": "lines"` — written once. Its first member is still `"format": "wmviz-job/1"`, so the
  upload box tells it from a trace as it tells the whole form;
* `{"series": [[k, vertex, subtask, metric, split], ...]}`: the series keys first seen in the
  sample that follows, each given a number `k` once (a sample line then says only `k`);
* `{"t": ms, "v": [[k, value], ...]}`: one sample, every value it took at time `t`; `"late_ms"`
  when it started later than its period said it should (the JobManager or the disk was slow);
* `{"note": text}`: what changed under the recording (an end, a rescale), in order;
* `{"inputs": [n, ...]}`: the logical input each plan edge feeds (in the header's edge order),
  once the recorder's vote on the values has decided (`wmviz.record.job_inputs`); the last holds.

A kill leaves whole lines only (each is one write(2), `wmviz.disk.atomic.GrowingFile`); a last
line without its newline (a disk that filled mid-line) is left out and said in the notes.
`body_of_lines` turns the lines into the whole-document body, which `job.recording_of` judges as
it judges any recording, so both forms have one set of rules.
"""

from __future__ import annotations

import json
import re
from typing import Any

import numpy as np

from wmviz.core.errors import BadInputError
from wmviz.trace.jsonline import loads_strict
from wmviz.trace.quote import show

LAYOUT = "lines"
MIN_LONG, MAX_LONG = -(2**63), 2**63 - 1
MAX_PLAIN_NUMBER = 1 << 22
"""Series numbers a plain sample may use (`record` numbers them from 0 as it meets them)."""
_PLAIN_SAMPLE = re.compile(
    r'\{"t":(-?[0-9]{1,19}),"v":\[(?:\[[0-9]{1,19},-?[0-9]{1,19}\](?:,(?=\[)|(?=\])))*\]'
    r'(?:,"late_ms":-?[0-9]{1,19})?\}',
    re.ASCII,
)
"""A sample line as `record` writes it (`job_append.line`): compact JSON, whole numbers only."""


class LinesError(BadInputError, ValueError):
    """A line of an appended recording that is not one of its kinds; the message names the line."""


def is_lines_header(body: Any) -> bool:
    """Whether a decoded first line is the header of the appended form."""
    return isinstance(body, dict) and body.get("layout") == LAYOUT


def header_of(text: str) -> Any:
    """The decoded first line of a file if it is the appended form's header, else None (a whole
    document, pretty-printed or not, is read as one)."""
    head, newline, _ = text.partition("\n")
    if not newline or '"layout"' not in head:
        return None
    try:
        body = loads_strict(head)
    except ValueError:
        return None
    return body if is_lines_header(body) else None


def body_of_lines(text: str, name: str) -> dict[str, Any]:
    """The whole-document body an appended recording holds (its header's, with the series)."""
    lines = text.split("\n")
    read = LinesReader(name, loads_strict(lines[0]))
    if lines[-1]:
        read.notes.append(
            f"the last line ({len(lines[-1])} bytes) was cut off before its end; it is left out"
        )
    for number in range(1, len(lines) - 1):
        read.line(number + 1, lines[number])
    return read.body()


class LinesReader:
    """What the lines after the header have said so far."""

    def __init__(self, name: str, header: dict[str, Any]) -> None:
        self.name = name
        self.header = {k: v for k, v in header.items() if k != "layout"}
        self.notes = list(_list(self.header.get("notes", []), f"{name}: line 1", "notes"))
        self.keys: dict[int, list[Any]] = {}
        self.points: dict[int, list[list[Any]]] = {}
        self.inputs: list[Any] | None = None
        self.declared = np.zeros(0, dtype=bool)
        """Which series numbers below `MAX_PLAIN_NUMBER` were declared (a plain sample's check)."""

    def line(self, number: int, raw: str) -> None:
        """Read one line (numbered from 1, the header's)."""
        if self.plain_sample(raw):
            return
        where = f"{self.name}: line {number}"
        try:
            item = loads_strict(raw)
        except ValueError as err:
            raise LinesError(f"{where}: not JSON ({err})") from None
        if not isinstance(item, dict):
            raise LinesError(f"{where}: {show(raw[:40])} is not a JSON object")
        if "t" in item:
            self.sample(item["t"], _list(item.get("v"), where, "v"), where)
        elif "series" in item:
            self.declare(_list(item["series"], where, "series"), where)
        elif "note" in item:
            self.notes.append(item["note"])
        elif "inputs" in item:
            self.inputs = _list(item["inputs"], where, "inputs")
        else:
            raise LinesError(f"{where}: no `t`, `series`, `note` or `inputs`: not a line of a recording")

    def sample(self, time_ms: Any, values: list[Any], where: str) -> None:
        """A sample line: each value joins its series at the sample's time."""
        for pair in values:
            if not (isinstance(pair, list) and len(pair) == 2 and pair[0] in self.keys):
                raise LinesError(f"{where}: {show(pair)} is not [a series number declared before, value]")
            self.take(pair[0], time_ms, pair[1], where)

    def plain_sample(self, raw: str) -> bool:
        """A sample line as `record` writes it, read at once: True when it was. Only a line these
        rules would take as it stands qualifies (compact, every number a whole number within a long,
        every series number declared before, `late_ms` the only other member); any other line
        returns False and is read by `line`'s rules, which say what is wrong with it."""
        match = _PLAIN_SAMPLE.fullmatch(raw)
        if match is None:
            return False
        time_ms = int(match.group(1))
        if not MIN_LONG <= time_ms <= MAX_LONG:
            return False
        try:
            pairs = np.array(json.loads(raw)["v"], dtype=np.int64).reshape(-1, 2)
        except (ValueError, OverflowError):
            return False
        numbers = pairs[:, 0]
        if numbers.size and (int(numbers.max()) >= len(self.declared) or not self.declared[numbers].all()):
            return False
        self.take_all(numbers, time_ms, pairs[:, 1])
        return True

    def take(self, number: int, time_ms: Any, value: Any, where: str) -> None:
        """One point of series `number` (kept here; `job_stream` counts or places it instead)."""
        self.points[number].append([time_ms, value])

    def take_all(self, numbers: np.ndarray, time_ms: int, values: np.ndarray) -> None:
        """A plain sample's points, in line order (`take` for each, unless a reader does better)."""
        for number, value in zip(numbers.tolist(), values.tolist(), strict=True):
            self.points[number].append([time_ms, value])

    def declare(self, entries: list[Any], where: str) -> None:
        """A series line: numbers given to series keys."""
        for entry in entries:
            if not (isinstance(entry, list) and len(entry) == 5 and type(entry[0]) is int):
                raise LinesError(f"{where}: {show(entry)} is not [number, vertex, subtask, metric, split]")
            if entry[0] in self.keys:
                raise LinesError(f"{where}: series number {entry[0]} is declared twice")
            self.keys[entry[0]] = entry[1:]
            self.points[entry[0]] = []
            if 0 <= entry[0] < MAX_PLAIN_NUMBER:
                if entry[0] >= len(self.declared):
                    grown = np.zeros(max(2 * len(self.declared), entry[0] + 1), dtype=bool)
                    grown[: len(self.declared)] = self.declared
                    self.declared = grown
                self.declared[entry[0]] = True

    def body(self) -> dict[str, Any]:
        """The whole-document body: the header's, with the notes, the edges' inputs and the series."""
        body = {**self.header, "notes": self.notes}
        if self.inputs is not None:
            edges = _list(body.get("edges"), f"{self.name}: line 1", "edges")
            if len(self.inputs) != len(edges) or not all(isinstance(e, dict) for e in edges):
                raise LinesError(
                    f"{self.name}: `inputs` names {len(self.inputs)} edges, the header has {len(edges)}"
                )
            body["edges"] = [{**edge, "input": n} for edge, n in zip(edges, self.inputs, strict=True)]
        body["series"] = [
            {"vertex": k[0], "subtask": k[1], "metric": k[2], "split": k[3], "points": self.points[n]}
            for n, k in self.keys.items()
        ]
        return body


def _list(value: Any, where: str, field: str) -> list[Any]:
    if not isinstance(value, list):
        raise LinesError(f"{where}: `{field}` {show(value)} is not a list")
    return value
