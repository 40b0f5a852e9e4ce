"""Write and read the timeline dataset (Parquet, partitioned by `table`) with pyarrow.

Layout of DIR: `meta.json`, and `table=<name>/part-*.parquet` for each table of schema.TABLES,
every file sorted by (instance, step) so reads filtered to one instance touch few row groups.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wmviz.core.pipeline import InstancePipeline, StepResult
from wmviz.timeline.records import TABLE_COLUMNS, Columns, trace_row_from_step
from wmviz.timeline.schema import COLUMN_NAMES, SCHEMA_VERSION, TABLES, arrow_schema

META = "meta.json"


def columns_to_table(table: str, columns: Columns):
    """An Arrow table with the full schema: the table's columns filled, the rest null."""
    import pyarrow as pa

    schema = arrow_schema()
    n = len(next(iter(columns.values())))
    arrays = []
    for name in COLUMN_NAMES:
        field = schema.field(name)
        if name == "table":
            arrays.append(pa.array([table] * n, field.type))
        elif name in columns:
            values = columns[name]
            if isinstance(values, pa.Array | pa.ChunkedArray):
                arrays.append(values.cast(field.type))  # passed through from the input, no Python
            else:
                arrays.append(pa.array(values, field.type))
        else:
            arrays.append(pa.nulls(n, field.type))
    return pa.Table.from_arrays(arrays, schema=schema)


class TimelineWriter:
    """Appends sorted part files per table; `close` writes meta.json."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = Path(out_dir)
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._parts = 0
        self.rows = dict.fromkeys(TABLES, 0)

    def write(self, columns: dict[str, Columns]) -> None:
        """Write one batch of buffers (one part file per non-empty table)."""
        import pyarrow.parquet as pq

        for table, cols in columns.items():
            n = len(cols["instance"])
            if not n:
                continue
            arrow = columns_to_table(table, cols).sort_by([("instance", "ascending"), ("step", "ascending")])
            arrow = arrow.drop_columns(["table"])  # the directory name carries it
            folder = self.out_dir / f"table={table}"
            folder.mkdir(exist_ok=True)
            pq.write_table(arrow, folder / f"part-{self._parts:05d}.parquet", row_group_size=64_000)
            self.rows[table] += n
        self._parts += 1

    def close(self, meta: dict[str, Any]) -> None:
        """Write meta.json (source, config, profile, counts, keyframe interval, schema version)."""
        meta = {"schema_version": SCHEMA_VERSION, "rows": self.rows, **meta}
        (self.out_dir / META).write_text(json.dumps(meta, indent=2))


@dataclass(frozen=True)
class InstanceState:
    """An instance's pipeline after `step`, rebuilt from a keyframe and a short replay."""

    step: int
    pipeline: InstancePipeline
    keyframe_step: int
    replayed: int


class Timeline:
    """Read access to a timeline directory: per-instance steps, tables, and state at any step."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        meta_path = self.path / META
        if not meta_path.is_file():
            raise FileNotFoundError(f"{self.path}: not a wmviz timeline (no {META})")
        self.meta = json.loads(meta_path.read_text())
        if self.meta.get("schema_version") != SCHEMA_VERSION:
            raise ValueError(
                f"{self.path}: timeline schema {self.meta.get('schema_version')} != {SCHEMA_VERSION}"
            )

    def _dataset(self, table: str):
        import pyarrow.dataset as ds

        folder = self.path / f"table={table}"
        if not folder.is_dir():
            return None
        return ds.dataset(folder, format="parquet")

    def table(
        self, table: str, instance: str | None = None, first: int | None = None, last: int | None = None
    ):
        """Rows of one table, optionally one instance and a step range, sorted by (instance, step)."""
        import pyarrow.dataset as ds

        dataset = self._dataset(table)
        if dataset is None:
            return None
        condition = None
        for part in (
            ds.field("instance") == instance if instance is not None else None,
            ds.field("step") >= first if first is not None else None,
            ds.field("step") <= last if last is not None else None,
        ):
            if part is not None:
                condition = part if condition is None else condition & part
        columns = [c for c in TABLE_COLUMNS[table]]
        result = dataset.to_table(columns=columns, filter=condition)
        return result.sort_by([("instance", "ascending"), ("step", "ascending")])

    def state_at(self, instance: str, step: int) -> InstanceState:
        """The pipeline after `step` (−1: before the first): nearest keyframe, then replay."""
        import pyarrow.dataset as ds

        keyframes = self._dataset("keyframes")
        assert keyframes is not None, "a timeline always has keyframes"
        found = keyframes.to_table(
            columns=["step", "state"],
            filter=(ds.field("instance") == instance) & (ds.field("step") <= step),
        )
        if found.num_rows == 0:
            raise KeyError(f"instance {instance!r} is not in this timeline")
        best = max(range(found.num_rows), key=lambda i: found["step"][i].as_py())
        keyframe_step = found["step"][best].as_py()
        pipeline: InstancePipeline = pickle.loads(found["state"][best].as_py())
        replayed = 0
        if step > keyframe_step:
            for rec in self.table("steps", instance, keyframe_step + 1, step).to_pylist():
                pipeline.process(rec["step"], trace_row_from_step(rec), explain=False)
                replayed += 1
        return InstanceState(step, pipeline, keyframe_step, replayed)

    def explain_at(self, instance: str, step: int) -> tuple[StepResult, InstancePipeline]:
        """Step `step` replayed with full accounts, and the pipeline after it."""
        state = self.state_at(instance, step - 1)
        rows = self.table("steps", instance, step, step).to_pylist()
        if not rows:
            raise KeyError(f"instance {instance!r} has no step {step}")
        result = state.pipeline.process(step, trace_row_from_step(rows[0]), explain=True)
        return result, state.pipeline

    def transcript_records(self) -> Iterator[dict[str, Any]]:
        """Steps in arrival order across instances (the transcript's order)."""
        dataset = self._dataset("steps")
        assert dataset is not None
        table = dataset.to_table().sort_by("order")
        yield from table.to_pylist()
