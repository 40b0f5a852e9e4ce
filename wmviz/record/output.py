"""The trace an importer or the recorder writes, and the duration options they take.

`--out` writes the format its extension names (`out_format`): JSON Lines with the config as its
first line, CSV with the config beside it in `<name>.config.json` (a CSV file cannot hold one), or
Parquet with the config in its schema metadata. An import is read back through the trace reader
before a byte is written, whatever the format: an import either writes a trace `validate` accepts
or says why not and writes nothing. Every output appears whole or not at all
(wmviz.disk): an import is written beside its destination and renamed in when complete; a
recording (`RecordingFile`) appears with its first sample, then grows by one whole sample per
write, so an interrupted recording (Ctrl-C, a lost connection, a killed process) leaves a valid
trace of every sample taken. A Parquet file cannot grow: a Parquet recording is written when the
recording ends (Ctrl-C included); a killed one leaves what was at `--out` before.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from wmviz.core.budgets import duration_reason, import_rows_reason, max_duration_ms
from wmviz.core.errors import BudgetExceeded
from wmviz.core.settings import MAX_IMPORT_ROWS
from wmviz.disk.atomic import GrowingFile, replacing_file
from wmviz.trace.config import parse_config
from wmviz.trace.quote import show
from wmviz.trace.readers import read_trace_bytes
from wmviz.trace.timecells import parse_duration_ms
from wmviz.trace.writers import csv_header, csv_line, out_format, write_config, write_trace


def duration_option_ms(text: str, option: str) -> int:
    """A duration option of an import or the recorder (`5s`, `1m30s`), within the duration budget."""
    ms = parse_duration_ms(text, option)
    if ms > max_duration_ms():
        raise BudgetExceeded(duration_reason(option, show(text)))
    return ms


def bounded_rows(rows: Iterable[dict[str, Any]], what: str) -> list[dict[str, Any]]:
    """The rows an import builds, stopped with a BudgetExceeded naming the budget as soon as they pass
    it (so a small input cannot make an import build rows without end)."""
    held: list[dict[str, Any]] = []
    for row in rows:
        if len(held) >= MAX_IMPORT_ROWS.get():
            raise BudgetExceeded(import_rows_reason(what))
        held.append(row)
    return held


def config_beside(path: Path) -> Path:
    """Where the config of a CSV trace goes: `orders.csv` -> `orders.config.json`."""
    return path.with_suffix(".config.json")


def outputs_of(path: Path) -> list[tuple[str, Path]]:
    """The files `--out PATH` writes, named as a message names them."""
    written = [("--out", path)]
    if out_format(path) == "csv":
        written.append(("the config of --out", config_beside(path)))
    return written


def _json_lines(rows: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(row) + "\n" for row in rows)


def jsonl_bytes(config: dict[str, Any], rows: list[dict[str, Any]]) -> bytes:
    """A whole trace as JSON Lines bytes: the config as its first line, then the rows (encoded a
    few thousand rows at a time, so no second copy of the whole text is held)."""
    # JSON escapes every non-ASCII character, so the text is its own UTF-8 bytes.
    return b"".join(
        [(json.dumps({"config": config}) + "\n").encode("ascii")]
        + [_json_lines(rows[start : start + 4096]).encode("ascii") for start in range(0, len(rows), 4096)]
    )


def write_rows(path: Path, config: dict[str, Any], rows: list[dict[str, Any]]) -> None:
    """A whole trace, given as its config and rows (dicts of trace cells), written as `--out`'s
    extension says; whole or not at all.

    Every format goes through the trace reader first (`TraceValidationError` if the rows are no
    valid trace; nothing is written then), so what is written is a trace `validate` accepts.
    """
    fmt = out_format(path)
    data = jsonl_bytes(config, rows)
    trace = read_trace_bytes(data, f"{path.stem}.jsonl")
    if fmt == "jsonl":
        with replacing_file(path) as stream:
            stream.write(data)
        return
    if fmt == "csv":
        write_config(trace.config, config_beside(path))
    write_trace(trace, path, fmt)


class RecordingFile:
    """A trace written sample by sample, in the format `--out`'s extension names.

    JSON Lines and CSV grow by one whole sample per write and appear at `path` with the first
    sample (wmviz.disk.GrowingFile; a CSV's config is written beside it just before). Parquet
    holds the rows and is written by `close`.
    """

    def __init__(self, path: Path, config: dict[str, Any], payload_columns: tuple[str, ...]) -> None:
        self.path = path
        self.fmt = out_format(path)
        self.rows = 0
        self._config = config
        self._columns = payload_columns
        self._held: list[dict[str, Any]] = []
        self._file: GrowingFile | None = None
        if self.fmt == "jsonl":
            self._file = GrowingFile(path, (json.dumps({"config": config}) + "\n").encode("utf-8"))
        elif self.fmt == "csv":
            self._file = GrowingFile(path, csv_header(payload_columns).encode("utf-8"))

    def write(self, rows: list[dict[str, Any]]) -> None:
        """Append one sample's rows (one write; the first one moves the file in)."""
        if self._file is None:
            self._held.extend(rows)
        else:
            if self.fmt == "jsonl":
                block = _json_lines(rows)
            else:
                if not self._file.placed:
                    config = parse_config(self._config, "the recording's config")
                    write_config(config, config_beside(self.path))
                block = "".join(csv_line(row, self._columns) for row in rows)
            self._file.add(block.encode("utf-8"))
        self.rows += len(rows)

    def close(self) -> bool:
        """Finish the trace; whether it was written (False: no sample, `path` as it was)."""
        if self._file is not None:
            return self._file.close()
        if not self._held:
            return False
        write_rows(self.path, self._config, self._held)
        return True
