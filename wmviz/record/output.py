"""A JSON Lines trace written row by row (and the duration parser, re-exported from trace.timecells).

The trace goes to disk as it is recorded: the config line first, then each sample's rows, flushed
after every sample, so an interrupted recording (Ctrl-C, a lost connection, a killed process)
leaves a complete, valid trace of every sample taken.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import IO, Any

# The duration parser lives with the other time texts; imported here for the recorder's callers.
from wmviz.trace.timecells import parse_duration_ms as parse_duration_ms


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
