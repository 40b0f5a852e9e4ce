"""One column spec for every timeline table, so Spark and pyarrow write identical files.

The dataset is partitioned by `table` (steps, channels, heap, timers, outputs, keyframes); every
table shares this schema and leaves the columns it does not use null, which Parquet stores for
almost nothing. That lets one Spark pass (`applyInPandas`) write all tables at once.
"""

from __future__ import annotations

SCHEMA_VERSION = 1
TABLES = ("steps", "channels", "heap", "timers", "outputs", "keyframes")

COLUMNS: tuple[tuple[str, str], ...] = (
    ("table", "string"),
    ("instance", "string"),
    ("step", "long"),
    ("order", "long"),  # arrival order over the whole trace (seq, else file order)
    ("row", "long"),  # the trace's row number, for messages and links
    # steps: the input row (enough to replay it) and what it caused
    ("kind", "string"),
    ("input", "string"),
    ("channel", "int"),
    ("seq", "long"),
    ("event_ms", "long"),
    ("watermark_ms", "long"),
    ("status", "string"),
    ("proc_ms", "long"),
    ("key", "string"),
    ("value_json", "string"),
    ("payload_json", "string"),
    ("rules", "string"),
    ("out_json", "string"),
    ("emit_json", "string"),
    ("dropped_json", "string"),
    ("output_wm", "long"),  # the valve's (or combined input's) last output watermark after the step
    ("output_status", "string"),
    # channels / heap: `watermark_ms`, `status`, `input`, `channel` above, plus
    ("aligned", "boolean"),
    ("event", "string"),  # heap: join | leave | move; timers: registered | fired
    # timers
    ("domain", "string"),
    ("at_ms", "long"),
    ("timer_key", "string"),
    ("window_start", "long"),
    ("window_end", "long"),
    ("purposes", "string"),
    ("new", "boolean"),
    # outputs
    ("ordinal", "int"),
    ("cause", "string"),
    ("left_row", "long"),
    ("right_row", "long"),
    ("late", "boolean"),
    ("result_json", "string"),
    # keyframes
    ("state", "binary"),
)
COLUMN_NAMES = tuple(name for name, _ in COLUMNS)


def spark_ddl() -> str:
    """The schema as a Spark DDL string (`applyInPandas` output)."""
    return ", ".join(f"`{name}` {kind}" for name, kind in COLUMNS)


def arrow_schema():
    """The schema as a pyarrow schema (the local engine and the reader)."""
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "long": pa.int64(),
        "int": pa.int32(),
        "boolean": pa.bool_(),
        "binary": pa.binary(),
    }
    return pa.schema([(name, types[kind]) for name, kind in COLUMNS])
