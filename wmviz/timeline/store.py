"""Write and read a timeline directory: one Parquet dataset per table, and meta.json.

Layout of DIR: `meta.json`, and `table=<name>/part-*.parquet` for each table of `TABLES`. A writer
appends row groups to one part file per table as instances finish, so rows come out sorted by
(instance, step) without a global sort. meta.json names the schema version, the keyframe format and
the wmviz version that wrote it; a reader refuses anything else rather than guess.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq

from wmviz import __version__
from wmviz.core.pipeline import InstancePipeline
from wmviz.core.step_result import StepResult
from wmviz.core.types import Profile
from wmviz.timeline import keyframe
from wmviz.timeline.checked_parts import CheckedPart, PartChanged, block_digests
from wmviz.timeline.meta import TimelineError, TimelineMeta
from wmviz.timeline.tables import SCHEMA_VERSION, SCHEMAS, TABLE_COLUMNS, TABLES
from wmviz.trace.rowtable import row_from_record

META = "meta.json"
ROW_GROUP_ROWS = 64_000


class TimelineWriter:
    """Appends instances' tables to one part file per table (`part` names the file, so parallel
    tasks writing into one directory never collide)."""

    def __init__(self, out_dir: Path, part: str = "part-00000") -> None:
        self.out_dir = Path(out_dir)
        self.part = part
        self.rows = dict.fromkeys(TABLES, 0)
        self._pending: dict[str, list[pa.Table]] = {t: [] for t in TABLES}
        self._pending_rows = dict.fromkeys(TABLES, 0)
        self._writers: dict[str, pq.ParquetWriter] = {}

    def add(self, tables: dict[str, pa.Table]) -> None:
        """One instance's tables; flushed as a row group once enough rows wait."""
        for table, rows in tables.items():
            self._pending[table].append(rows)
            self._pending_rows[table] += rows.num_rows
            self.rows[table] += rows.num_rows
            if self._pending_rows[table] >= ROW_GROUP_ROWS:
                self._flush(table)

    def _flush(self, table: str) -> None:
        if not self._pending[table]:
            return
        writer = self._writers.get(table)
        if writer is None:
            folder = self.out_dir / f"table={table}"
            folder.mkdir(parents=True, exist_ok=True)
            writer = self._writers[table] = pq.ParquetWriter(folder / f"{self.part}.parquet", SCHEMAS[table])
        writer.write_table(pa.concat_tables(self._pending[table]), row_group_size=ROW_GROUP_ROWS)
        self._pending[table], self._pending_rows[table] = [], 0

    def finish(self) -> dict[str, int]:
        """Flush and close the part files; returns the rows written per table."""
        for table in TABLES:
            self._flush(table)
        for writer in self._writers.values():
            writer.close()
        self._writers.clear()
        return dict(self.rows)

    def files(self) -> dict[str, dict[str, Any]]:
        """Each part file this writer wrote (relative to the timeline folder), its size and SHA-256:
        meta.json keeps them so a reader can tell a timeline wmviz wrote from a damaged one."""
        return {
            f"table={table}/{self.part}.parquet": file_record(
                self.out_dir / f"table={table}" / f"{self.part}.parquet"
            )
            for table in TABLES
            if (self.out_dir / f"table={table}" / f"{self.part}.parquet").is_file()
        }


def file_record(path: Path) -> dict[str, Any]:
    """A file's size and SHA-256."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return {"bytes": path.stat().st_size, "sha256": digest.hexdigest()}


def write_meta(
    out_dir: Path, rows: dict[str, int], fields: dict[str, Any], files: dict[str, dict[str, Any]]
) -> dict[str, Any]:
    """meta.json: what the run was, how many rows each table has, what wrote it, and every part
    file's size and digest."""
    meta = {
        "schema_version": SCHEMA_VERSION,
        "keyframe_format": keyframe.FORMAT,
        "wmviz_version": __version__,
        "rows": rows,
        **fields,
        "files": dict(sorted(files.items())),
    }
    (Path(out_dir) / META).write_text(json.dumps(meta, indent=2))
    return meta


def timeline_meta_fields(
    source: str,
    config: dict[str, Any],
    profile: Profile,
    keyframe_every: int,
    engine: str,
    steps: dict[str, int],
    valve_channels: dict[tuple[str, str], int],
) -> dict[str, Any]:
    """What meta.json says about a run (both engines write the same fields)."""
    return {
        "source": source,
        "config": config,
        "profile": profile.value,
        "keyframe_every": keyframe_every,
        "engine": engine,
        "instances": dict(sorted(steps.items())),
        "valve_channels": [[inst, inp, n] for (inst, inp), n in sorted(valve_channels.items())],
    }


@dataclass(frozen=True)
class InstanceState:
    """An instance's pipeline after `step`, rebuilt from a keyframe and a short replay."""

    step: int
    pipeline: InstancePipeline
    keyframe_step: int
    replayed: int


def _part_name(name: str) -> bool:
    """`table=<t>/<file>.parquet` and nothing else: meta.json never names a file outside DIR."""
    parts = name.split("/")
    return len(parts) == 2 and parts[1].endswith(".parquet") and parts[1] not in (".", "..")


class Timeline:
    """Read access to a timeline directory: per-instance steps, tables, and state at any step."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        meta_path = self.path / META
        if not meta_path.is_file():
            raise TimelineError(f"{self.path}: not a wmviz timeline (no {META})")
        try:
            written = json.loads(meta_path.read_text())
        except (ValueError, UnicodeDecodeError) as exc:
            raise TimelineError(f"{meta_path}: not readable: {exc}") from None
        if not isinstance(written, dict):
            raise TimelineError(f"{meta_path}: not a timeline's meta.json")
        self.meta_json: dict[str, Any] = written
        """meta.json as written (its part files, rows per table and versions besides the run's fields)."""
        if written.get("schema_version") != SCHEMA_VERSION:
            raise TimelineError(
                f"{self.path}: timeline schema {written.get('schema_version')} != {SCHEMA_VERSION}"
            )
        if written.get("keyframe_format") != keyframe.FORMAT:
            raise TimelineError(f"{self.path}: keyframes in format {written.get('keyframe_format')!r}")
        self.meta = TimelineMeta.from_json(written, str(meta_path))
        """The run this timeline is of, read once here (`TimelineSource.meta`)."""
        self.damage: str | None = None
        """What a read found changed or gone, if anything: the run cache then makes it again."""

    def verify(self) -> None:
        """TimelineError unless every part file meta.json lists is there, of its size and digest,
        and no other part file is: a timeline is served only as wmviz wrote it. (Each read checks
        again what it reads: see `wmviz.timeline.checked_parts`.)"""
        listed = self._listed()
        present = {str(p.relative_to(self.path)) for p in self.path.glob("table=*/*.parquet")}
        if present != set(listed):
            raise TimelineError(f"{self.path}: its part files are not the ones meta.json lists")
        for name, record in listed.items():
            try:
                with open(self.path / name, "rb", buffering=0) as f:
                    block_digests(f, record, fresh=True)
            except (PartChanged, FileNotFoundError):
                raise TimelineError(
                    f"{self.path}: {name} is not the file wmviz wrote (size or digest differs)"
                ) from None

    def _listed(self) -> dict[str, dict[str, Any]]:
        """meta.json's part files: name -> {"bytes", "sha256"}."""
        listed = self.meta_json.get("files")
        if not isinstance(listed, dict) or not all(
            isinstance(r, dict) and isinstance(r.get("bytes"), int) and isinstance(r.get("sha256"), str)
            for r in listed.values()
        ):
            raise TimelineError(f"{self.path}: meta.json lists no files")
        return listed

    def _scan(self, table: str, **scan: Any) -> pa.Table | None:
        """The listed part files of `table` read as one dataset through checked files; None when
        the table has none. A part changed or gone since it was written is a TimelineError (and
        marks this timeline damaged), never bytes wmviz did not write."""
        listed = self._listed()
        names = sorted(n for n in listed if n.split("/")[0] == f"table={table}" and _part_name(n))
        if not names:
            return None
        fmt = ds.ParquetFileFormat()
        try:
            with contextlib.ExitStack() as files:
                parts = [files.enter_context(CheckedPart(self.path / n, listed[n])) for n in names]
                fragments = [fmt.make_fragment(pa.PythonFile(part, mode="r")) for part in parts]
                return ds.FileSystemDataset(fragments, SCHEMAS[table], fmt).to_table(**scan)
        except (PartChanged, OSError) as exc:
            reason = exc if isinstance(exc, PartChanged) else f"gone or unreadable ({exc})"
            self.damage = f"{self.path}: a part file of table {table} is {reason}"
            raise TimelineError(self.damage) from None

    def table(
        self, table: str, instance: str | None = None, first: int | None = None, last: int | None = None
    ) -> pa.Table | None:
        """Rows of one table, optionally one instance and a step range, sorted by (instance, step)."""
        condition = None
        for part in (
            ds.field("instance") == instance if instance is not None else None,
            ds.field("step") >= first if first is not None else None,
            ds.field("step") <= last if last is not None else None,
        ):
            if part is not None:
                condition = part if condition is None else condition & part
        result = self._scan(table, columns=list(TABLE_COLUMNS[table]), filter=condition)
        if result is None:
            return None
        return result.sort_by([("instance", "ascending"), ("step", "ascending")])

    def columns(self, table: str, names: list[str]) -> pa.Table | None:
        """Some columns of every row of one table, in file order (no sort): for whole-run views."""
        return self._scan(table, columns=names)

    def decode_keyframe(self, blob: bytes) -> InstancePipeline:
        """A keyframe of this timeline back as a pipeline (config and profile from meta.json)."""
        return keyframe.decode(blob, self.meta.refs())

    def state_at(self, instance: str, step: int) -> InstanceState:
        """The pipeline after `step` (−1: before the first): nearest keyframe, then replay."""
        found = self.table("keyframes", instance, None, step)
        if found is None or found.num_rows == 0:
            raise KeyError(f"instance {instance!r} is not in this timeline")
        keyframe_step = found["step"][-1].as_py()
        pipeline = self.decode_keyframe(found["state"][-1].as_py())
        replayed = 0
        if step > keyframe_step:
            steps = self.table("steps", instance, keyframe_step + 1, step)
            assert steps is not None
            for record in steps.to_pylist():
                pipeline.process(record["step"], row_from_record(record), explain=False)
                replayed += 1
        return InstanceState(step, pipeline, keyframe_step, replayed)

    def explain_at(self, instance: str, step: int) -> tuple[StepResult, InstancePipeline]:
        """Step `step` replayed with full accounts, and the pipeline after it."""
        state = self.state_at(instance, step - 1)
        rows = self.table("steps", instance, step, step)
        if rows is None or not rows.num_rows:
            raise KeyError(f"instance {instance!r} has no step {step}")
        result = state.pipeline.process(step, row_from_record(rows.to_pylist()[0]), explain=True)
        return result, state.pipeline

    def transcript_records(self) -> Iterator[dict[str, Any]]:
        """Steps in arrival order across instances (the transcript's order)."""
        table = self._scan("steps")
        assert table is not None
        table = table.sort_by("order")
        for batch in table.to_batches(max_chunksize=65_536):
            yield from batch.to_pylist()
