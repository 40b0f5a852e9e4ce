"""Read and validate a trace file in this process: plan it, check it chunk by chunk, finish it.

The format comes from the file extension (CSV, JSON Lines including the compact valve format, or
Parquet). The very same pieces run on Spark (`wmviz.spark.engine`): `plan_trace` on the driver,
`read_chunk` + `check_batch` in the workers, the whole-file checks merged from their facts. The
result is a `Trace` whose rows stay an Arrow table (`TraceRows`), or one `TraceValidationError`
listing every problem in the file.
"""

from __future__ import annotations

import os
from collections.abc import Callable

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wmviz.core.scenario import ScenarioConfig, Trace
from wmviz.trace.check import CHECKED_SCHEMA, CheckContext, check_batch
from wmviz.trace.chunks import read_chunk
from wmviz.trace.config import load_config_into
from wmviz.trace.errors import IssueCollector
from wmviz.trace.rowtable import ROW_SCHEMA, TraceRows
from wmviz.trace.sources import FORMATS, PARQUET_CONFIG_KEY, Blob, TracePlan, format_of, plan_trace
from wmviz.trace.wholefile import (
    NO_ROWS_REASON,
    arrival_order,
    check_instances,
    check_seq,
    merge_header_missing,
    merge_max_channel,
    report_header_missing,
    valve_channels,
)

__all__ = ["FORMATS", "PARQUET_CONFIG_KEY", "format_of", "read_trace", "read_trace_bytes"]

Progress = Callable[[int, int], None]
"""Rows checked so far, and the rows or bytes in all (a sink for progress bars)."""


def read_trace(
    path: str | os.PathLike[str],
    config_path: str | os.PathLike[str] | None = None,
    *,
    config: ScenarioConfig | None = None,
    progress: Progress | None = None,
) -> Trace:
    """Read and validate a trace file; the format comes from the extension.

    The config is, in order of precedence: `config`, the JSON file `config_path`, the trace's own
    config (a leading `{"config": {...}}` JSON Lines line, or the Parquet schema metadata written by
    `write_trace`), else the defaults. A config given from outside replaces the in-file one
    entirely: the in-file line is then skipped without being read or validated.

    Raises `TraceValidationError` with every issue (trace and config file alike), sorted by row.
    """
    if config is not None and config_path is not None:
        raise ValueError("give either config or config_path, not both")
    source = os.path.basename(os.fspath(path))
    collector = IssueCollector(source)
    config_ok = True
    if config_path is not None:
        config, config_ok = load_config_into(config_path, collector)
    return validate(Blob(path=os.fspath(path)), source, collector, config, config_ok, progress)


def read_trace_bytes(data: bytes, name: str, config: ScenarioConfig | None = None) -> Trace:
    """`read_trace` for an upload held in memory; `name` gives the format and the message file name."""
    source = os.path.basename(name)
    return validate(Blob(data=data), source, IssueCollector(source), config, True)


def validate(
    blob: Blob,
    source: str,
    collector: IssueCollector,
    config: ScenarioConfig | None,
    config_ok: bool,
    progress: Progress | None = None,
) -> Trace:
    """Plan, check every chunk, run the whole-file checks; the Trace or `TraceValidationError`."""
    plan = plan_trace(blob, source, collector, config, config_ok)
    if plan is None:
        raise collector.error()
    context = check_context(plan)
    tables, missing, max_channels, compact = [], [], [], {}
    done = 0
    for chunk in plan.chunks:
        for raw in read_chunk(plan, chunk, collector):
            checked = check_batch(raw, context)
            collector.merge(checked.issues)
            tables.append(checked.table)
            missing.append(checked.header_missing)
            max_channels.append(checked.max_channel)
            compact.update(raw.compact_channels)
            done += raw.length
            if progress is not None:
                progress(done, 0)
    return finish(plan, _take_all(tables), collector, missing, max_channels, compact)


def _take_all(tables: list[pa.Table]) -> pa.Table:
    """The batches as one table, emptying the list so `finish` holds the only reference."""
    # Batches may differ in which columns are all null (Arrow's null type there): unify them.
    table = pa.concat_tables(tables, promote_options="permissive") if tables else CHECKED_SCHEMA.empty_table()
    tables.clear()
    return table


def check_context(plan: TracePlan) -> CheckContext:
    """What the row rules of `plan`'s rows need."""
    return CheckContext(plan.source, plan.config, plan.config_ok, plan.declared, plan.unit)


def finish(
    plan: TracePlan,
    table: pa.Table,
    collector: IssueCollector,
    missing: list[dict[str, dict[str, int]]],
    max_channels: list[dict[str, int]],
    compact: dict[str, int],
) -> Trace:
    """The whole-file checks over every checked row (in file order), then the Trace."""
    if table.num_rows == 0 and not collector:
        collector.add(None, None, NO_ROWS_REASON)
    report_header_missing(merge_header_missing(missing), plan.unit, plan.header_row, collector)
    order_known = check_seq(table, plan.unit, collector)
    table = table.append_column("order", arrival_order(table))
    key = "order" if order_known else "row"
    indices, in_file_order = instance_order(table, key)
    columns = {name: table.column(name) for name in ROW_SCHEMA.names}
    del table
    rows = _gather(columns, pa.array(indices))
    check_instances(rows, plan.config, plan.config_ok, plan.unit, collector, order_known=order_known)
    collector.raise_if_any()
    if in_file_order:  # arrival order is file order: the rows' positions are where each came from
        arrival = np.empty(len(indices), dtype=np.int64)
        arrival[indices] = np.arange(len(indices), dtype=np.int64)
    else:
        arrival = np.argsort(rows.column("order").to_numpy(), kind="stable")
    del indices
    pairs = _first_pairs(rows)
    channels = valve_channels(pairs, plan.config, plan.config_ok, compact, merge_max_channel(max_channels))
    trace_rows = TraceRows(rows, arrival, grouped=True)
    return Trace(source=plan.source, rows=trace_rows, config=plan.config, valve_channels=channels)


def instance_order(table: pa.Table, key: str) -> tuple[np.ndarray, bool]:
    """The row positions sorted by (instance, `key`), stably, and whether `key` (the arrival
    order) already rises in file order.

    Instances are few and repeat: they are ranked once through a dictionary, so the sort is of
    small integers. When `key` rises in file order (rows numbered as read, or seq written in
    order: nearly every trace), a stable sort by instance rank alone gives the order, and arrival
    order is file order; otherwise both columns are sorted together."""
    instances, order = table.column("instance"), table.column(key)
    if instances.null_count or order.null_count:  # reported already; any order will do until raised
        return pc.sort_indices(table, [("instance", "ascending"), (key, "ascending")]).to_numpy(), False
    encoded = instances.combine_chunks().dictionary_encode()
    ranks = np.empty(len(encoded.dictionary), dtype=np.int64)
    ranks[pc.sort_indices(encoded.dictionary).to_numpy()] = np.arange(len(ranks))
    instance_rank = ranks[encoded.indices.to_numpy()]
    values = order.to_numpy()
    rising = bool(len(values) < 2 or (values[1:] > values[:-1]).all())
    if rising:
        return np.argsort(instance_rank, kind="stable"), True
    return np.lexsort((values, instance_rank)), False


def _gather(columns: dict[str, pa.ChunkedArray], indices: pa.Array) -> pa.Table:
    """The columns taken in `indices` order, one at a time, each source column let go (popped from
    `columns`) once gathered: at most one column is held twice (ten million rows are ~1 GB)."""
    gathered = {}
    for name in list(columns):
        column = columns.pop(name)
        gathered[name] = column.take(indices).combine_chunks()
        del column
    return pa.table(gathered)


def _first_pairs(rows: pa.Table) -> list[tuple[str, str]]:
    """(instance, input) pairs in order of first arrival."""
    if not rows.num_rows:
        return []
    firsts = rows.group_by(["instance", "input"]).aggregate([("order", "min")]).sort_by("order_min")
    return list(zip(firsts.column("instance").to_pylist(), firsts.column("input").to_pylist(), strict=True))
