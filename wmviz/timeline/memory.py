"""A timeline held in memory and grown step by step (live mode), read like one on disk.

`InstanceCursor` and the panels read a timeline through `table()` and `decode_keyframe()`; a
`MemoryTimeline` answers both from the tables the live query's workers recorded, so a live run is
shown by exactly the code that shows a recorded one.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from wmviz.core.pipeline import InstancePipeline
from wmviz.timeline import keyframe
from wmviz.timeline.meta import TimelineMeta
from wmviz.timeline.tables import SCHEMAS, TABLE_COLUMNS, TABLES


class MemoryTimeline:
    """Tables appended as steps happen; `meta` as a timeline's meta.json would say it, its steps per
    instance counted as they land (a `TimelineSource`)."""

    path: Path | None = None

    def __init__(self, meta: TimelineMeta) -> None:
        self.meta = meta
        self._refs = meta.refs()
        self._parts: dict[str, list[pa.Table]] = {t: [] for t in TABLES}
        self._tables: dict[str, pa.Table | None] = {}

    def add(self, tables: dict[str, pa.Table]) -> None:
        """One step's rows (any instance), as a recorder built them."""
        for name, table in tables.items():
            self._parts[name].append(table)
            self._tables.pop(name, None)
        steps = tables.get("steps")
        if steps is not None and steps.num_rows:
            counts = dict(self.meta.instances)
            for instance in steps.column("instance").to_pylist():
                counts[instance] = counts.get(instance, 0) + 1
            self.meta = self.meta.with_steps(counts)

    def _all(self, name: str) -> pa.Table | None:
        if name not in self._tables:
            parts = self._parts[name]
            self._tables[name] = pa.concat_tables(parts).cast(SCHEMAS[name]) if parts else None
        return self._tables[name]

    def table(
        self, name: str, instance: str | None = None, first: int | None = None, last: int | None = None
    ) -> pa.Table | None:
        """Rows of one table, optionally one instance and a step range, sorted by (instance, step)."""
        table = self._all(name)
        if table is None:
            return None
        mask = None
        for part in (
            pc.equal(table["instance"], instance) if instance is not None else None,
            pc.greater_equal(table["step"], first) if first is not None else None,
            pc.less_equal(table["step"], last) if last is not None else None,
        ):
            if part is not None:
                mask = part if mask is None else pc.and_(mask, part)
        chosen = table if mask is None else table.filter(mask)
        return chosen.select(list(TABLE_COLUMNS[name])).sort_by(
            [("instance", "ascending"), ("step", "ascending")]
        )

    def decode_keyframe(self, blob: bytes) -> InstancePipeline:
        pipeline: InstancePipeline = keyframe.decode(blob, self._refs)
        return pipeline
