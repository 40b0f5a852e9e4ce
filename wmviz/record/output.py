"""Durations on the command line, and a JSON Lines trace written row by row.

The trace goes to disk as it is recorded: the config line first, then each sample's rows, flushed
after every sample, so an interrupted recording (Ctrl-C, a lost connection, a killed process)
leaves a complete, valid trace of every sample taken.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import IO, Any

_UNITS_MS = {"ms": 1, "s": 1000, "m": 60_000, "min": 60_000, "h": 3_600_000, "d": 86_400_000}
_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|min|s|m|h|d)")


def parse_duration_ms(text: str, option: str) -> int:
    """`500ms`, `1s`, `1.5s`, `10m`, `1h30m` (or a bare number of milliseconds) as milliseconds."""
    cleaned = text.strip().lower().replace(" ", "")
    if cleaned.isdigit():
        return int(cleaned)
    pos, total = 0, 0.0
    for match in _PART.finditer(cleaned):
        if match.start() != pos:
            break
        total += float(match.group(1)) * _UNITS_MS[match.group(2)]
        pos = match.end()
    if pos != len(cleaned) or not cleaned:
        raise ValueError(f"{option} {text!r}: expected a duration such as 500ms, 1s, 10m or 1h30m")
    return round(total)


class TraceFile:
    """A JSON Lines trace opened for writing: the config line, then rows, flushed per batch."""

    def __init__(self, path: Path, config: dict[str, Any]) -> None:
        self.path = path
        self.rows = 0
        self._file: IO[str] = path.open("w", encoding="utf-8")
        self._file.write(json.dumps({"config": config}) + "\n")
        self._file.flush()

    def write(self, rows: list[dict[str, Any]]) -> None:
        """Append rows and flush them to disk."""
        for row in rows:
            self._file.write(json.dumps(row) + "\n")
        self.rows += len(rows)
        self._file.flush()

    def close(self) -> None:
        """Close the file (everything is already flushed)."""
        self._file.close()
