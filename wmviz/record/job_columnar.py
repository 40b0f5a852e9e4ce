"""The columnar form of a job recording: one Arrow IPC file, read lazily.

A whole-job recording grows with vertices x parallelism x splits x samples; as one JSON object
(`wmviz.record.job`) every question paid for decoding all of it first. Here the points of every
series lie in two int64 columns, `time` and `value`, series after series (each in time order), and
everything else (the plan, the configuration, the notes, and the index of the series: their keys
and where each starts) is one JSON header in the schema's metadata under `wmviz`. The file is
memory-mapped, not read: opening it decodes the header and checks the columns with vectorised
passes; a series' points are touched only when a question asks for them (`ColumnarSeries`), so
blame at one moment, or one vertex's series, costs what it reads, not the file.

`ColumnarSeries` is the recording's `series` mapping (`JobRecording.series`), the same interface
the JSON form's dict gives, with two answers computed on the columns instead of a Python walk:
every sample time (`sample_times`) and a series' value at sorted times (`values_over`, Flink's
gauges read as "holds from its sample until the next one", the same rule as the JSON form).
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from wmviz.disk.atomic import replacing_file
from wmviz.record.job_checks import JobFormatError, SeriesKey, split_of, what, whole
from wmviz.trace.jsonline import loads_strict

COLUMNAR_FORMAT = "wmviz-job-columnar/1"
HEADER_KEY = b"wmviz"
ARROW_MAGIC = b"ARROW1"
MAX_COLUMNAR_BYTES = 16 << 30
"""Mapped, not read: the bound is the disk's, not the memory's (20 x 1,000 x 2 x 360 is ~2 GB)."""
MAX_HEADER_BYTES = 64 << 20
"""The header holds the plan and one index entry per series (~60 bytes each: 40,000 series ~2.4 MB)."""
Points = list[tuple[int, int]]
CHUNK_ROWS = 1 << 22
"""Rows a whole-column pass (the order check, the sample times) takes at once: 32 MB of a column,
so opening a day-long recording of ~90 million points costs no copy of its columns."""


def is_columnar_bytes(data: bytes) -> bool:
    """Whether bytes look like an Arrow IPC file (its magic at both ends), in constant time: the
    header and the columns are judged when it is opened (`read_columnar`)."""
    return data[:6] == ARROW_MAGIC and data[-6:] == ARROW_MAGIC


def is_columnar_file(path: Path) -> bool:
    """Whether a file is in the columnar form, by its first and last six bytes."""
    with path.open("rb") as stream:
        head = stream.read(6)
        if len(head) < 6 or stream.seek(0, 2) < 12:
            return False
        stream.seek(-6, 2)
        return is_columnar_bytes(head + stream.read(6))


class ColumnarSeries(MutableMapping[SeriesKey, Points]):
    """The series of a columnar recording: keys in file order, points sliced out on demand.

    Read-only: a recorder appends to a dict (`JobRecording.add`); this is what a finished
    recording is read back as."""

    def __init__(self, keys: list[SeriesKey], starts: np.ndarray, time: np.ndarray, value: np.ndarray):
        self._keys = keys
        self._place = {key: index for index, key in enumerate(keys)}
        self._starts, self._time, self._value = starts, time, value
        self._bounds: list[int] = starts.tolist()  # Python ints: a span costs two list reads
        self._sample_times: list[int] | None = None
        self._lists: dict[SeriesKey, tuple[list[int], list[int]]] = {}

    def __getitem__(self, key: SeriesKey) -> Points:
        lo, hi = self._span(key)
        return list(zip(self._time[lo:hi].tolist(), self._value[lo:hi].tolist(), strict=True))

    def __iter__(self) -> Iterator[SeriesKey]:
        return iter(self._keys)

    def __len__(self) -> int:
        return len(self._keys)

    def __contains__(self, key: object) -> bool:
        return key in self._place

    def __setitem__(self, key: SeriesKey, points: Points) -> None:
        raise TypeError("a columnar job recording is read-only; record into a dict")

    def __delitem__(self, key: SeriesKey) -> None:
        raise TypeError("a columnar job recording is read-only; record into a dict")

    def setdefault(self, key: SeriesKey, default: Points | None = None) -> Points:
        """Refused, as every write is: the points it returned would be a copy, and what was
        appended to it lost without a word (`JobRecording.add`)."""
        raise TypeError("a columnar job recording is read-only; record into a dict")

    def _span(self, key: SeriesKey) -> tuple[int, int]:
        index = self._place[key]
        return self._bounds[index], self._bounds[index + 1]

    def _touched(self, key: SeriesKey, lo: int, hi: int) -> tuple[list[int], list[int]]:
        """The series' times and values as Python lists, made when first asked for one moment and
        kept: a numpy search per moment cost ~10x a bisect, and blame asks a split's series at each
        moment it walks (the lists held grow with the series a question touches, not the file)."""
        found = self._lists.get(key)
        if found is None:
            found = self._lists[key] = (self._time[lo:hi].tolist(), self._value[lo:hi].tolist())
        return found

    @property
    def points(self) -> int:
        """How many points all series hold."""
        return len(self._time)

    def sample_times(self) -> list[int]:
        """Every distinct sample time, in order (computed once, on the column)."""
        if self._sample_times is None:
            found = np.empty(0, np.int64)
            for lo in range(0, len(self._time), CHUNK_ROWS):  # a chunk at a time: memory bounded
                found = np.union1d(found, np.unique(self._time[lo : lo + CHUNK_ROWS]))
            self._sample_times = found.tolist()
        return self._sample_times

    def values_over(self, key: SeriesKey, times: list[int]) -> list[int | None]:
        """The series' value at each of the sorted times: its last point at or before it (the
        later of two at one time), None before its first; one binary search per time."""
        if key not in self._place or not times:
            return [None] * len(times)
        lo, hi = self._span(key)
        if lo == hi:
            return [None] * len(times)
        if len(times) == 1:  # blame's single-moment questions, asked again and again of a series
            series_times, values = self._touched(key, lo, hi)
            at = bisect_right(series_times, times[0]) - 1
            return [values[at]] if at >= 0 else [None]
        index = np.searchsorted(self._time[lo:hi], np.asarray(times, dtype=np.int64), side="right") - 1
        found: list[int | None] = self._value[lo:hi][np.maximum(index, 0)].tolist()
        if index[0] < 0:
            for place in np.flatnonzero(index < 0).tolist():
                found[place] = None
        return found

    def flat(self, keys: Sequence[SeriesKey]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The points of the keys as (row, time, value) arrays, row = the key's place in `keys`
        (a key not recorded has none): what a reader of many series at every sample time takes
        in one gather, not a search per series (`wmviz.analysis.blame_columns.over_times`)."""
        spans = np.array([self._span(k) if k in self._place else (0, 0) for k in keys], np.int64)
        spans = spans.reshape(-1, 2)
        if not len(spans):
            return np.empty(0, np.int64), self._time[:0], self._value[:0]
        lengths = spans[:, 1] - spans[:, 0]
        rows = np.repeat(np.arange(len(keys), dtype=np.int64), lengths)
        before = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        pick = np.arange(int(lengths.sum()), dtype=np.int64) + np.repeat(spans[:, 0] - before, lengths)
        return rows, self._time[pick], self._value[pick]

    def columns(self, keys: list[SeriesKey]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The points of the keys, in that order, as (starts, time, value) arrays: what the writer
        copies when a columnar recording is written again."""
        spans = [self._span(key) for key in keys]
        counts = np.array([hi - lo for lo, hi in spans], dtype=np.int64)
        starts = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        if [lo for lo, _ in spans] == self._starts[:-1].tolist() and len(keys) == len(self._keys):
            return starts, self._time, self._value
        pick = np.concatenate(
            [np.arange(lo, hi, dtype=np.int64) for lo, hi in spans] or [np.empty(0, np.int64)]
        )
        return starts, self._time[pick], self._value[pick]


def write_columnar(
    header: dict[str, Any], series: Mapping[SeriesKey, Points], keys: list[SeriesKey], path: Path
) -> None:
    """Write the header (the JSON form's members but `series`) and the keys' points as one Arrow
    IPC file, whole (`wmviz.disk`: beside it, then renamed over it)."""
    if isinstance(series, ColumnarSeries):
        starts, time, value = series.columns(keys)
    else:
        counts = [len(series[key]) for key in keys]
        total = sum(counts)
        time = np.fromiter((t for key in keys for t, _ in series[key]), dtype=np.int64, count=total)
        value = np.fromiter((v for key in keys for _, v in series[key]), dtype=np.int64, count=total)
        starts = np.concatenate([[0], np.cumsum(np.array(counts, dtype=np.int64))]).astype(np.int64)
    index = {
        "vertex": [k[0] for k in keys],
        "subtask": [k[1] for k in keys],
        "metric": [k[2] for k in keys],
        "split": [k[3] for k in keys],
        "start": starts.tolist(),
    }
    body = {**header, "format": COLUMNAR_FORMAT, "index": index}
    schema = pa.schema(
        [pa.field("time", pa.int64(), nullable=False), pa.field("value", pa.int64(), nullable=False)],
        metadata={HEADER_KEY: json.dumps(body, separators=(",", ":")).encode("utf-8")},
    )
    batch = pa.record_batch([pa.array(time, pa.int64()), pa.array(value, pa.int64())], schema=schema)
    with replacing_file(path) as stream, pa.ipc.new_file(stream, schema) as writer:
        writer.write_batch(batch)


def read_columnar(path: Path) -> tuple[dict[str, Any], ColumnarSeries]:
    """The header (for the JSON form's plan reader) and the series of a columnar recording;
    JobFormatError naming the file and the field, column or row that cannot be read."""
    name = path.name
    if path.stat().st_size > MAX_COLUMNAR_BYTES:
        raise JobFormatError(f"{name}: larger than {MAX_COLUMNAR_BYTES >> 30} GB")
    try:
        reader = pa.ipc.open_file(pa.memory_map(str(path)))
        raw = (reader.schema.metadata or {}).get(HEADER_KEY)
        if raw is None:
            raise JobFormatError(f"{name}: an Arrow file without a wmviz header (schema metadata `wmviz`)")
        if len(raw) > MAX_HEADER_BYTES:
            raise JobFormatError(f"{name}: header larger than {MAX_HEADER_BYTES >> 20} MB")
        header = loads_strict(raw.decode("utf-8"))
        if not isinstance(header, dict) or header.get("format") != COLUMNAR_FORMAT:
            raise JobFormatError(
                f'{name}: header: not a columnar job recording (expected "format": "{COLUMNAR_FORMAT}")'
            )
        time, value = _columns(reader, name)
    except (pa.ArrowException, ValueError, UnicodeDecodeError, OSError) as err:
        if isinstance(err, JobFormatError):
            raise
        raise JobFormatError(f"{name}: not a columnar job recording ({err})") from None
    keys, starts = _index(header.get("index"), name, len(time))
    _check_order(time, starts, keys, name)
    return header, ColumnarSeries(keys, starts, time, value)


def _columns(reader: pa.ipc.RecordBatchFileReader, name: str) -> tuple[np.ndarray, np.ndarray]:
    if [(f.name, f.type) for f in reader.schema] != [("time", pa.int64()), ("value", pa.int64())]:
        shown = ", ".join(f"{f.name}: {f.type}" for f in reader.schema)
        raise JobFormatError(f"{name}: columns ({shown}); expected exactly (time: int64, value: int64)")
    table = reader.read_all()
    table.validate()
    out = []
    for column in ("time", "value"):
        chunked = table.column(column)
        if chunked.null_count:
            row = int(np.flatnonzero(chunked.is_null().to_numpy(zero_copy_only=False))[0])
            raise JobFormatError(f"{name}: column {column}, row {row}: empty (every point has a {column})")
        array = chunked.combine_chunks() if chunked.num_chunks != 1 else chunked.chunk(0)
        out.append(array.to_numpy(zero_copy_only=False) if len(array) else np.empty(0, np.int64))
    return out[0], out[1]


def _index(index: Any, name: str, rows: int) -> tuple[list[SeriesKey], np.ndarray]:
    """The series keys and their start rows, every entry checked (a key twice is refused)."""
    where = f"{name}: header index"
    try:
        vertex, subtask, metric, split, start = (
            index[f] for f in ("vertex", "subtask", "metric", "split", "start")
        )
        if not all(isinstance(c, list) for c in (vertex, subtask, metric, split, start)):
            raise TypeError("not lists")
        if not len(vertex) == len(subtask) == len(metric) == len(split) == len(start) - 1:
            raise JobFormatError(f"{where}: its lists differ in length (start has one more: the end)")
        keys: list[SeriesKey] = []
        for i, (v, s, m, p) in enumerate(zip(vertex, subtask, metric, split, strict=True)):
            if not isinstance(v, str) or not isinstance(m, str):
                raise JobFormatError(f"{where}: series {i}: vertex and metric must be text")
            keys.append(
                (v, whole(s, f"{where}: series {i}: subtask"), m, split_of(p, f"{where}: series {i}"))
            )
        for i, row in enumerate(start):
            whole(row, f"{where}: start[{i}]", 0, rows)
    except (KeyError, TypeError) as err:
        raise JobFormatError(f"{where}: {what(err)}") from None
    starts = np.asarray(start, dtype=np.int64)
    if starts[0] != 0 or starts[-1] != rows or (np.diff(starts) < 0).any():
        raise JobFormatError(f"{where}: start must run from 0 up to the {rows:,} rows, never down")
    if len(set(keys)) != len(keys):
        seen: set[SeriesKey] = set()
        twice = next(k for k in keys if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise JobFormatError(f"{where}: series {twice} appears twice")
    return keys, starts


def _check_order(time: np.ndarray, starts: np.ndarray, keys: list[SeriesKey], name: str) -> None:
    """Within a series the points run forward in time (the reader's binary search needs it)."""
    first = set(starts.tolist())
    for lo in range(0, max(len(time) - 1, 0), CHUNK_ROWS):  # a chunk at a time: memory bounded
        chunk = time[lo : lo + CHUNK_ROWS + 1]
        # Compared, not subtracted: a difference overflows int64 from a point at MIN (-2^63) to one
        # after 1970, and wrapped negative it read as time running back (fuzz, recording-json #43380).
        back = np.flatnonzero(chunk[1:] < chunk[:-1]) + lo + 1
        row = next((r for r in back.tolist() if r not in first), None)
        if row is None:
            continue
        key = keys[int(np.searchsorted(starts, row, side="right")) - 1]
        raise JobFormatError(
            f"{name}: row {row:,} (series {key}): its time runs back; points must be in time order"
        )
