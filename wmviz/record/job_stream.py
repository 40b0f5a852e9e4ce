"""An appended job recording turned into the columnar form line by line, never held whole.

A day of a 50-vertex job sampled every second is ~86,000 lines and ~90 million points (~1.3 GB,
bench/day_recording.py): more than the JSON reader may hold (`job.MAX_FILE_BYTES`), and as
Python lists ~100 bytes a point. The columnar form (`wmviz.record.job_columnar`) holds it as two
int64 columns read in place, series after series. This module writes that file from the lines in
two passes over them, each reading one line at a time with the lines' own rules
(`job_lines.LinesReader`):

1. count: every line judged as the reader judges it (the header, series numbers, samples, notes,
   the input vote's lines; each time and value a long), and how many points each series has; the
   header and the series keys are then judged by `job.recording_of`, as any recording is;
2. place: each series gets its rows (in `job.series_order`, as both writers order them); the points
   of a few hundred lines at a time are sorted by series and written at each series' next rows of
   two scratch files beside the destination, then each series' rows are put in time order (the
   reader sorts a series' points the same way) and the columns are written as one Arrow file.

Its memory is what a few hundred lines hold, the counts per series and the scratch files' pages
the kernel caches, whatever the file's length. A killed conversion leaves the destination as it was
(`wmviz.disk`) and its scratch folder, which the next conversion beside it clears.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from wmviz.record.job import header_json, recording_of, series_order
from wmviz.record.job_checks import JobFormatError, SeriesKey, long_of
from wmviz.record.job_columnar import MAX_HEADER_BYTES, ColumnarSeries, write_columnar
from wmviz.record.job_lines import MAX_PLAIN_NUMBER, LinesError, LinesReader
from wmviz.trace.jsonline import loads_strict

BATCH_LINES = 256
"""Sample lines whose points are placed at once (a 50-vertex job of parallelism 10: ~280,000
points, ~7 MB of arrays)."""
SCRATCH_PREFIX = ".wmviz-convert-"


def is_lines_file(path: Path) -> bool:
    """Whether a file is an appended recording, by its first line alone."""
    from wmviz.record.job_lines import is_lines_header

    with path.open("rb") as stream:
        head = stream.readline(MAX_HEADER_BYTES)
    if not head.endswith(b"\n") or b'"layout"' not in head:
        return False
    try:
        return is_lines_header(loads_strict(head.decode("utf-8")))
    except (ValueError, UnicodeDecodeError):
        return False


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """(number, text) of each whole line after the header; a last line without its newline is
    not given (the caller says so, as `job_lines.body_of_lines` does)."""
    with path.open("rb") as stream:
        stream.readline(MAX_HEADER_BYTES)
        for number, raw in enumerate(stream, start=2):
            if not raw.endswith(b"\n"):
                return
            try:
                yield number, raw[:-1].decode("utf-8")
            except UnicodeDecodeError as err:
                raise LinesError(f"{path.name}: line {number}: not UTF-8 text ({err.reason})") from None


def _cut_tail(path: Path) -> int:
    """The length of a last line without its newline (0: the file ends with one)."""
    with path.open("rb") as stream:
        size = stream.seek(0, 2)
        back = min(size, 1 << 16)
        stream.seek(size - back)
        tail = stream.read(back)
    return 0 if tail.endswith(b"\n") else len(tail) - (tail.rfind(b"\n") + 1)


class _Counting(LinesReader):
    """Pass 1: every line judged; points counted per series number, each time and value a long."""

    def __init__(self, name: str, header: dict[str, Any]) -> None:
        super().__init__(name, header)
        self.counts: dict[int, int] = {}
        self.plain_counts = np.zeros(0, dtype=np.int64)

    def take(self, number: int, time_ms: Any, value: Any, where: str) -> None:
        long_of(time_ms, f"{where}: `t`")
        long_of(value, f"{where}: series {number}'s value")
        self.counts[number] = self.counts.get(number, 0) + 1

    def take_all(self, numbers: np.ndarray, time_ms: int, values: np.ndarray) -> None:
        if len(self.plain_counts) < len(self.declared):
            grown = np.zeros(len(self.declared), dtype=np.int64)
            grown[: len(self.plain_counts)] = self.plain_counts
            self.plain_counts = grown
        self.plain_counts += np.bincount(numbers, minlength=len(self.plain_counts))

    def count(self, number: int) -> int:
        """How many points series `number` has."""
        plain = int(self.plain_counts[number]) if 0 <= number < len(self.plain_counts) else 0
        return self.counts.get(number, 0) + plain


class _Placing(LinesReader):
    """Pass 2: the points of a batch of lines, gathered as (row, time, value) once placed."""

    def __init__(self, name: str, header: dict[str, Any], rows_of: dict[int, int]) -> None:
        super().__init__(name, header)
        self.rows_of = rows_of
        plain = [n for n in rows_of if type(n) is int and 0 <= n < MAX_PLAIN_NUMBER]
        self.plain_rows = np.full(max(plain, default=-1) + 1, -1, dtype=np.int64)
        for number in plain:
            self.plain_rows[number] = rows_of[number]
        self.slot: list[int] = []
        self.time: list[int] = []
        self.value: list[int] = []
        self.plain: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []

    def take(self, number: int, time_ms: Any, value: Any, where: str) -> None:
        slot = self.rows_of.get(number)
        if slot is not None:  # a series declared again under the same key: its last number holds
            self.slot.append(slot)
            self.time.append(time_ms)
            self.value.append(value)

    def take_all(self, numbers: np.ndarray, time_ms: int, values: np.ndarray) -> None:
        rows = np.full(len(numbers), -1, dtype=np.int64)
        known = numbers < len(self.plain_rows)
        rows[known] = self.plain_rows[numbers[known]]
        kept = rows >= 0
        self.plain.append((rows[kept], np.full(int(kept.sum()), time_ms, dtype=np.int64), values[kept]))

    def gathered(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(row, time, value) of every point gathered since the last call, then forgotten."""
        parts = [*self.plain, (np.asarray(self.slot, np.int64), _longs(self.time), _longs(self.value))]
        self.slot, self.time, self.value, self.plain = [], [], [], []
        return tuple(np.concatenate([p[i] for p in parts]) for i in range(3))  # type: ignore[return-value]


def convert_lines(path: Path, out: Path) -> None:
    """Write the appended recording at `path` as a columnar one at `out`; JobFormatError naming
    the file and line otherwise."""
    name = path.name
    stamp = _stamp(path)
    try:
        with path.open("rb") as stream:
            header = loads_strict(stream.readline(MAX_HEADER_BYTES).decode("utf-8"))
        count = _Counting(name, header)
        for number, text in _lines(path):
            count.line(number, text)
    except LinesError as err:
        raise JobFormatError(str(err)) from None
    except (ValueError, UnicodeDecodeError) as err:
        raise JobFormatError(f"{name}: line 1: not JSON ({err})") from None
    cut = _cut_tail(path)
    if cut:
        count.notes.append(f"the last line ({cut} bytes) was cut off before its end; it is left out")
    body = count.body()
    rec = recording_of(body, name)
    numbers = {_key_of(k): n for n, k in count.keys.items()}  # a key declared twice: its last number
    keys = series_order(rec)
    sizes = [count.count(numbers[key]) for key in keys]
    starts = np.concatenate([[0], np.cumsum(np.asarray(sizes, dtype=np.int64))]).astype(np.int64)
    rows_of = {numbers[key]: i for i, key in enumerate(keys)}
    _clear_scratch(out.parent)
    with tempfile.TemporaryDirectory(prefix=SCRATCH_PREFIX, dir=out.parent) as scratch:
        time, value = _place(path, header, rows_of, starts, Path(scratch), stamp)
        write_columnar(header_json(rec), ColumnarSeries(keys, starts, time, value), keys, out)
        del time, value


def _key_of(raw: list[Any]) -> SeriesKey:
    """A series line's key as `job.recording_of` keys it (vertex and metric as text)."""
    return (str(raw[0]), raw[1], str(raw[2]), raw[3])


def _stamp(path: Path) -> tuple[int, int]:
    info = path.stat()
    return info.st_size, info.st_mtime_ns


def _clear_scratch(folder: Path) -> None:
    """Scratch folders a killed conversion left beside the destination."""
    for left in folder.glob(f"{SCRATCH_PREFIX}*"):
        shutil.rmtree(left, ignore_errors=True)


def _place(
    path: Path,
    header: Any,
    rows_of: dict[int, int],
    starts: np.ndarray,
    scratch: Path,
    stamp: tuple[int, int],
) -> tuple[np.ndarray, np.ndarray]:
    """Pass 2: the time and value columns, in scratch files mapped back read-only."""
    total = int(starts[-1])
    files = [scratch / "time", scratch / "value"]
    fds = [os.open(f, os.O_RDWR | os.O_CREAT, 0o600) for f in files]
    try:
        for fd in fds:
            os.ftruncate(fd, total * 8)
        nxt = starts[:-1].copy()
        place = _Placing(path.name, header, rows_of)
        pending = 0
        for number, text in _lines(path):
            place.line(number, text)
            pending += 1
            if pending == BATCH_LINES:
                _flush(place, nxt, fds)
                pending = 0
        _flush(place, nxt, fds)
        if _stamp(path) != stamp or not np.array_equal(nxt, starts[1:]):
            raise JobFormatError(f"{path.name}: the file changed while it was converted")
        for fd in fds:
            os.fsync(fd)
    finally:
        for fd in fds:
            os.close(fd)
    time = np.memmap(files[0], dtype=np.int64, mode="r+", shape=(total,)) if total else np.empty(0, np.int64)
    value = np.memmap(files[1], dtype=np.int64, mode="r+", shape=(total,)) if total else np.empty(0, np.int64)
    _in_time_order(time, value, starts)
    return time, value


def _longs(values: list[int]) -> np.ndarray:
    """Longs as `job_checks.long_of` holds them (pass 1 checked each is an integer)."""
    try:
        return np.fromiter(values, dtype=np.int64, count=len(values))
    except OverflowError:
        return np.fromiter((long_of(v, "") for v in values), dtype=np.int64, count=len(values))


def _flush(place: _Placing, nxt: np.ndarray, fds: list[int]) -> None:
    """Write the gathered points at their series' next rows, series by series."""
    slot, time, value = place.gathered()
    if not len(slot):
        return
    order = np.argsort(slot, kind="stable")
    columns = [time[order], value[order]]
    slot = slot[order]
    edges = np.flatnonzero(np.diff(slot)) + 1
    for lo, hi in zip(np.concatenate([[0], edges]).tolist(), np.concatenate([edges, [len(slot)]]).tolist()):
        series = int(slot[lo])
        at = int(nxt[series]) * 8
        for fd, column in zip(fds, columns, strict=True):
            os.pwrite(fd, column[lo:hi].tobytes(), at)
        nxt[series] += hi - lo


def _in_time_order(time: np.ndarray, value: np.ndarray, starts: np.ndarray) -> None:
    """Each series' points sorted by time, then value (as the JSON reader sorts a series' pairs):
    only the series whose times run back are touched."""
    bounds = starts.tolist()
    for lo, hi in pairwise(bounds):
        if hi - lo < 2:
            continue
        # Compared, not subtracted: a difference overflows int64 between MIN and MAX.
        times, values = time[lo:hi], value[lo:hi]
        later, same = times[1:] > times[:-1], times[1:] == times[:-1]
        if not (later | (same & (values[1:] >= values[:-1]))).all():
            order = np.lexsort((value[lo:hi], time[lo:hi]))
            time[lo:hi], value[lo:hi] = time[lo:hi][order], value[lo:hi][order]
