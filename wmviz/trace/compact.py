"""The compact valve format (trace-format.md §2): `{"channels": N}` then `{"ch": c, "wm": v}` lines.

Each `{"channels": N}` header starts a new, independent valve, read as instance "0", "1", … in
order, with every input on input "0". The lines become ordinary trace rows (kind `watermark` or
`status`) and go through the same validation as every other format; messages keep the compact
names (`column ch`, `column wm`).
"""

from __future__ import annotations

from typing import Any

from wmviz.trace.config import MAX_CHANNELS
from wmviz.trace.timefmt import show
from wmviz.trace.validate import TraceBuilder

_LABELS = {"channel": "ch", "watermark_ms": "wm"}
_INPUT_KEYS = ("ch", "wm", "status")


def is_compact_header(obj: Any) -> bool:
    """Whether a decoded JSON line is a compact `{"channels": N}` header.

    A line with a `kind` is a regular trace row that merely has a payload column named `channels`.
    """
    return isinstance(obj, dict) and "channels" in obj and "kind" not in obj


class CompactReader:
    """Feeds compact lines, already decoded, into a `TraceBuilder`."""

    def __init__(self, builder: TraceBuilder):
        self.builder = builder
        self.collector = builder.collector
        self.instances = 0

    def feed(self, row: int, obj: dict[str, Any]) -> None:
        """One decoded, non-comment line."""
        if is_compact_header(obj):
            self._header(row, obj)
            return
        for key in obj:
            if key not in _INPUT_KEYS:
                self.collector.add(row, key, "unknown key; a compact line has ch and either wm or status")
        present = {k: v for k, v in obj.items() if k in _INPUT_KEYS and v is not None}
        has_wm, has_status = "wm" in present, "status" in present
        if has_wm and has_status:
            self.collector.add(row, None, "a compact line has either wm or status, not both")
            return
        if not has_wm and not has_status:
            self.collector.add(row, None, "a compact line needs wm (a watermark) or status")
            return
        cells: list[tuple[str, Any]] = [
            ("instance", str(self.instances - 1)),
            ("kind", "watermark" if has_wm else "status"),
        ]
        if "ch" in present:
            cells.append(("channel", present["ch"]))
        cells.append(("watermark_ms", present["wm"]) if has_wm else ("status", present["status"]))
        self.builder.add_row(row, cells, _LABELS)

    def _header(self, row: int, obj: dict[str, Any]) -> None:
        for key in obj:
            if key != "channels":
                self.collector.add(row, key, 'unknown key; a header line is only {"channels": N}')
        self.instances += 1
        count = obj["channels"]
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_CHANNELS:
            self.collector.add(row, "channels", f"{show(count)} is not a positive channel count")
            return
        self.builder.set_compact_channels(str(self.instances - 1), count, row)
