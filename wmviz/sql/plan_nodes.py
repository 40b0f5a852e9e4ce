"""A node's event-time details, from COMPILE PLAN JSON or from its digest: the window it fires, an
interval join's bounds, and the name a person knows it by. Shared by the three plan readers so a
window reads the same whichever input it came from."""

from __future__ import annotations

import re
from typing import Any

from wmviz.sql.digest import attributes, duration_ms, split_top, time_kind
from wmviz.sql.model import JoinBounds, WindowSpec

_JSON_WINDOWS = {
    "TumblingWindow": ("TUMBLE", {"size": "size_ms", "offset": "offset_ms"}),
    "HoppingWindow": ("HOP", {"size": "size_ms", "slide": "slide_ms", "offset": "offset_ms"}),
    "CumulativeWindow": ("CUMULATE", {"maxSize": "size_ms", "step": "step_ms", "offset": "offset_ms"}),
    "SessionWindow": ("SESSION", {"gap": "gap_ms"}),
    "TUMBLING": ("TUMBLE", {"size": "size_ms"}),
    "SLIDING": ("HOP", {"size": "size_ms", "slide": "slide_ms"}),
    "SESSION": ("SESSION", {"gap": "gap_ms"}),
}
"""A COMPILE PLAN window's type (window TVFs, then the legacy group windows' `kind`), as the SQL
function and the fields holding its durations."""

_DIGEST_SIZES = {
    "size": "size_ms",
    "max_size": "size_ms",
    "slide": "slide_ms",
    "step": "step_ms",
    "gap": "gap_ms",
}
_DIGEST_SIZES["offset"] = "offset_ms"


RUNTIME_NAMES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"Source: KafkaSource-(?:.*\.)?(?P<table>[^.]+)"), "TableSourceScan"),
    (re.compile(r"Source: (?P<table>[^\[]+?)(?:\[\d+\])?"), "TableSourceScan"),
    (re.compile(r"(?P<table>[^\[:]+)\[\d+\]: (?:Writer|Committer)"), "Sink"),
    (re.compile(r"Sink: (?P<table>.+)"), "Sink"),
)
"""Operators a running job names by their runtime name, not their digest: a source a connector
builds itself (Kafka's `Source: KafkaSource-default_catalog.default_database.orders`) and a sink's
writer (`revenue[11]: Writer`), with the digest name they stand for."""


def runtime_name(text: str) -> tuple[str, str] | None:
    """The digest name and table a runtime-named operator stands for, if it is one."""
    for pattern, label in RUNTIME_NAMES:
        match = pattern.fullmatch(text.strip())
        if match:
            return label, match.group("table").strip()
    return None


def node_name(label: str, table: str | None) -> str:
    """The name a person knows a node by: `TableSourceScan(orders)`, `Sink(totals)`, `WindowAggregate`."""
    return f"{label}({table})" if table else label


def window_from_json(raw: dict[str, Any], input_fields: list[tuple[str, str]]) -> WindowSpec | None:
    """A window node's window from its `windowing` (window TVFs, `leftWindowing` for a window join)
    or its `window` (legacy group windows); `input_fields` names the time attribute's index."""
    windowing = raw.get("windowing") or raw.get("leftWindowing")
    if isinstance(windowing, dict):
        window = windowing["window"] if isinstance(windowing.get("window"), dict) else {}
        time_type = windowing.get("timeAttributeType")
        index = windowing.get("timeAttributeIndex")
        column = input_fields[index][0] if isinstance(index, int) and 0 <= index < len(input_fields) else None
        return _spec(window.get("type"), window, column, time_type, windowing.get("isRowtime"))
    legacy = raw.get("window")
    if isinstance(legacy, dict):
        time_field = legacy["timeField"] if isinstance(legacy.get("timeField"), dict) else {}
        time_type = time_field.get("fieldType")
        rowtime = isinstance(time_type, dict) and time_type.get("kind") == "ROWTIME"
        return _spec(legacy.get("kind"), legacy, time_field.get("fieldName"), time_type, rowtime)
    return None


def _spec(
    window_type: object, window: dict[str, Any], column: object, time_type: object, rowtime: object
) -> WindowSpec:
    kind, sizes = _JSON_WINDOWS.get(str(window_type), (str(window_type), {}))
    values = {}
    for key, attr in sizes.items():
        text = window.get(key)
        values[attr] = duration_ms(text) if isinstance(text, str) else None
    type_text = time_type.get("type", "") if isinstance(time_type, dict) else str(time_type or "")
    if isinstance(time_type, dict) and rowtime is None:
        rowtime = time_type.get("kind") == "ROWTIME"
    proctime = isinstance(time_type, dict) and time_type.get("kind") == "PROCTIME"
    return WindowSpec(
        kind,
        str(column) if column is not None else None,
        time_kind(str(type_text)),
        bool(rowtime) if rowtime is not None else None,
        proctime,
        **values,
    )


def window_from_digest(attrs: dict[str, str]) -> WindowSpec | None:
    """A window from a digest's `window=[TUMBLE(time_col=[ts], size=[5 s])]`; the digest does not
    say the time column's type, so its kind and whether it is a rowtime stay unknown."""
    text = attrs.get("window") or attrs.get("leftWindow")
    if not text:
        return None
    match = re.match(r"(\w+)\((.*)\)$", text.strip(), re.DOTALL)
    if not match:
        return None
    kind, inner = match.groups()
    inside = attributes(split_top(inner))
    values = {attr: duration_ms(inside[key]) for key, attr in _DIGEST_SIZES.items() if key in inside}
    if kind.endswith("GroupWindow"):  # legacy: TumblingGroupWindow('w$, rowtime, 5000)
        parts = split_top(inner)
        legacy = {"Tumbling": "TUMBLE", "Sliding": "HOP", "Session": "SESSION"}
        size = duration_ms(parts[2]) if len(parts) > 2 else None
        attr = "gap_ms" if kind.startswith("Session") else "size_ms"
        column = parts[1] if len(parts) > 1 else None
        return WindowSpec(
            legacy.get(kind[: -len("GroupWindow")], kind), column, None, None, None, **{attr: size}
        )
    return WindowSpec(kind, inside.get("time_col"), None, None, None, **values)


def join_bounds_from_digest(attrs: dict[str, str]) -> tuple[JoinBounds | None, int | None]:
    """An interval join's bounds and FLIP-497 early-fire delay from its digest."""
    early_text = attrs.get("earlyFireDelay")
    early = int(early_text) if early_text and early_text.lstrip("-").isdigit() else None
    bounds = attributes(split_top(attrs.get("windowBounds", "")))
    try:
        lower, upper = int(bounds["leftLowerBound"]), int(bounds["leftUpperBound"])
    except (KeyError, ValueError):
        return None, early
    event = bounds.get("isRowTime", bounds.get("isEventTime", "")).lower() == "true"
    left, right = bounds.get("leftTimeIndex", ""), bounds.get("rightTimeIndex", "")
    return (
        JoinBounds(
            event,
            lower,
            upper,
            int(left) if left.isdigit() else None,
            int(right) if right.isdigit() else None,
        ),
        early,
    )
