"""The timeline's tables, each with its own narrow Arrow schema (one Parquet dataset per table).

`steps` has one row per trace row: the row itself (ROW_SCHEMA's columns, so any step can be
replayed) and what it caused. The other tables hold only what changed: `channels` (a channel's
watermark, status or alignment), `heap` (joins, leaves and moves in the aligned set), `timers`
(registrations and firings), `outputs` (window firings, join rows, output watermarks) and
`keyframes` (the whole state every K steps, `wmviz.timeline.keyframe`'s encoding). Every table is
sorted by (instance, step), so a read of one instance touches few row groups.
"""

from __future__ import annotations

import pyarrow as pa

from wmviz.trace.rowtable import ROW_SCHEMA

SCHEMA_VERSION = 2
TABLES = ("steps", "channels", "heap", "timers", "outputs", "keyframes")

_COMPUTED = pa.schema(
    [
        ("instance", pa.string()),
        ("step", pa.int64()),
        ("order", pa.int64()),  # arrival order over the whole trace (seq, else the row number)
        ("rules", pa.string()),  # rule ids the step took (docs/rules.md), e.g. "W3 W4 W5"
        ("out_json", pa.string()),  # the valve's (or combined input's) emissions: "W10 S:IDLE"
        ("emit_json", pa.string()),  # the operator's outputs as JSON (transcript.py's shapes)
        ("dropped_json", pa.string()),  # records dropped in this step, as JSON
        ("output_wm", pa.int64()),  # the valve's (or combined input's) last output watermark after the step
        ("output_status", pa.string()),
    ]
)
INPUT_COLUMNS: tuple[str, ...] = tuple(n for n in ROW_SCHEMA.names if n not in ("instance", "order"))
"""The trace row a step replays, straight from the validated row table."""
COMPUTED_COLUMNS: tuple[str, ...] = tuple(_COMPUTED.names)
STEP_COLUMNS: tuple[str, ...] = COMPUTED_COLUMNS + INPUT_COLUMNS

SCHEMAS: dict[str, pa.Schema] = {
    "steps": pa.schema([*_COMPUTED, *(ROW_SCHEMA.field(n) for n in INPUT_COLUMNS)]),
    "channels": pa.schema(
        [
            ("instance", pa.string()),
            ("step", pa.int64()),
            ("input", pa.string()),
            ("channel", pa.int32()),
            ("watermark_ms", pa.int64()),
            ("status", pa.string()),
            ("aligned", pa.bool_()),
        ]
    ),
    "heap": pa.schema(
        [
            ("instance", pa.string()),
            ("step", pa.int64()),
            ("input", pa.string()),
            ("channel", pa.int32()),
            ("event", pa.string()),  # join | leave | move
            ("watermark_ms", pa.int64()),
        ]
    ),
    "timers": pa.schema(
        [
            ("instance", pa.string()),
            ("step", pa.int64()),
            ("event", pa.string()),  # registered | fired
            ("domain", pa.string()),
            ("at_ms", pa.int64()),
            ("timer_key", pa.string()),
            ("window_start", pa.int64()),
            ("window_end", pa.int64()),
            ("purposes", pa.string()),
            ("new", pa.bool_()),
        ]
    ),
    "outputs": pa.schema(
        [
            ("instance", pa.string()),
            ("step", pa.int64()),
            ("ordinal", pa.int32()),
            ("kind", pa.string()),
            ("cause", pa.string()),
            ("left_row", pa.int64()),
            ("right_row", pa.int64()),
            ("window_start", pa.int64()),
            ("window_end", pa.int64()),
            ("late", pa.bool_()),
            ("result_json", pa.string()),
            ("watermark_ms", pa.int64()),
            ("key", pa.string()),
        ]
    ),
    "keyframes": pa.schema([("instance", pa.string()), ("step", pa.int64()), ("state", pa.binary())]),
}
TABLE_COLUMNS: dict[str, tuple[str, ...]] = {name: tuple(schema.names) for name, schema in SCHEMAS.items()}
