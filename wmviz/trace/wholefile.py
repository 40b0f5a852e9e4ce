"""The rules that need more than one row: arrival order and `seq`, `proc_ms` order within an
instance, explicit watermarks on generated channels, and each valve's channel count.

Each check is a function over a `CHECKED_SCHEMA` table. The local engine runs them on the whole
trace; the Spark engine runs `check_instances` inside each instance's group and merges the
`seq` facts of its tasks (`SeqFacts`), so both report the same issues with the same words.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from wmviz.core.channel_generators import makes_generators
from wmviz.core.scenario import ScenarioConfig
from wmviz.trace.check import PHASE_GENERATED, PHASE_HEADER, PHASE_PROC, PHASE_SEQ
from wmviz.trace.errors import IssueCollector
from wmviz.trace.quote import show
from wmviz.trace.timecells import said_time_ms

NO_ROWS_REASON = "the trace has no rows"


# ---- messages ----------------------------------------------------------------------------------


def header_missing_reason(unit: str, kinds: list[str], first: int) -> str:
    """A required column the CSV header / Parquet schema lacks; `kinds` lists the row kinds needing it
    in order of first need ("every" when each row needs it), `first` the first row that needed it."""
    where = "header" if unit == "line" else "schema"
    needed = (
        "every row needs it"
        if kinds == ["every"]
        else f"required for {'/'.join(kinds)} rows (first on {unit} {first})"
    )
    return f"missing from the {where}; {needed}"


def seq_missing_reason(unit: str, first: int) -> str:
    return f"missing, but other rows have it (first on {unit} {first})"


def seq_reused_reason(seq: int, unit: str, first: int) -> str:
    return f"{seq} is also used on {unit} {first}"


def proc_ms_decrease_reason(proc_ms: int, previous: int, unit: str, previous_row: int, instance: str) -> str:
    """Times said as instants when they are (a file of ISO times must not be told epoch ms back)."""
    return (
        f"{said_time_ms(proc_ms)} is before {said_time_ms(previous)} on {unit} {previous_row}; "
        f"proc_ms must not decrease within instance {show(instance)}"
    )


def generated_watermark_reason(channel: int, unit: str, first: int) -> str:
    return (
        f"explicit watermark on channel {channel}, whose watermarks come from the "
        f"generator because it carries records (first on {unit} {first})"
    )


def _typed(table: pa.Table, name: str, kind: pa.DataType) -> pa.Array:
    """One column as a single array of `kind` (a checked table may hold it as Arrow's null type,
    or dictionary-encoded)."""
    return table.column(name).combine_chunks().cast(kind)


def _numpy(table: pa.Table, name: str) -> np.ndarray:
    return table.column(name).combine_chunks().to_numpy(zero_copy_only=False)


# ---- header ----------------------------------------------------------------------------------


def merge_header_missing(parts: Iterable[dict[str, dict[str, int]]]) -> dict[str, dict[str, int]]:
    merged: dict[str, dict[str, int]] = {}
    for part in parts:
        for column, kinds in part.items():
            into = merged.setdefault(column, {})
            for label, first in kinds.items():
                into[label] = min(into.get(label, first), first)
    return merged


def report_header_missing(
    missing: dict[str, dict[str, int]], unit: str, header_row: int | None, collector: IssueCollector
) -> None:
    for column, kinds in missing.items():
        ordered = sorted(kinds, key=kinds.__getitem__)
        first = min(kinds.values())
        collector.add(header_row, column, header_missing_reason(unit, ordered, first), phase=PHASE_HEADER)


# ---- seq and arrival order ---------------------------------------------------------------------


@dataclass(slots=True)
class SeqFacts:
    """What the `seq` rule needs to know of a part of the file, mergeable over parts.

    A file whose parts each have strictly increasing `seq` in file order, with disjoint ranges and
    no row missing it, has no tie: that is proven from these facts alone. Otherwise the caller
    looks for ties over the whole `(row, seq)` column.
    """

    with_seq: int = 0
    without_seq: int = 0
    first_with_seq: int | None = None
    broken_cells: int = 0
    ranges: list[tuple[int, int]] = field(default_factory=list)
    increasing: bool = True

    @classmethod
    def of(cls, table: pa.Table) -> SeqFacts:
        seq = _typed(table, "seq", pa.int64())
        bad = _numpy(table, "seq_bad")
        has = seq.is_valid().to_numpy(zero_copy_only=False) | bad
        rows = _numpy(table, "row")
        facts = cls(with_seq=int(has.sum()), without_seq=int((~has).sum()), broken_cells=int(bad.sum()))
        if facts.with_seq:
            facts.first_with_seq = int(rows[has].min())
        values = seq.drop_null().to_numpy(zero_copy_only=False)
        if len(values):
            order = np.argsort(rows[seq.is_valid().to_numpy(zero_copy_only=False)], kind="stable")
            in_file_order = values[order]
            facts.increasing = bool(np.all(np.diff(in_file_order) > 0))
            facts.ranges = [(int(values.min()), int(values.max()))]
        return facts

    def merge(self, other: SeqFacts) -> SeqFacts:
        firsts = [f for f in (self.first_with_seq, other.first_with_seq) if f is not None]
        return SeqFacts(
            self.with_seq + other.with_seq,
            self.without_seq + other.without_seq,
            min(firsts) if firsts else None,
            self.broken_cells + other.broken_cells,
            self.ranges + other.ranges,
            self.increasing and other.increasing,
        )

    def proves_unique(self) -> bool:
        """No tie is possible: every part increases and no two parts' ranges overlap."""
        if not self.increasing:
            return False
        spans = sorted(self.ranges)
        return all(a[1] < b[0] for a, b in itertools.pairwise(spans))

    @property
    def used(self) -> bool:
        return self.with_seq > 0


def check_seq(table: pa.Table, unit: str, collector: IssueCollector) -> bool:
    """`seq` on some rows but not others, or used twice; True when the arrival order is known.

    `table` holds every checked row of the file in file order.
    """
    facts = SeqFacts.of(table)
    if not facts.used:
        return True
    rows = _numpy(table, "row")
    seq = _typed(table, "seq", pa.int64())
    has = seq.is_valid().to_numpy(zero_copy_only=False) | _numpy(table, "seq_bad")
    assert facts.first_with_seq is not None
    for row in rows[~has].tolist():
        collector.add(row, "seq", seq_missing_reason(unit, facts.first_with_seq), phase=PHASE_SEQ)
    ties = 0
    if not facts.proves_unique():
        ties = report_seq_ties(
            rows[seq.is_valid().to_numpy(zero_copy_only=False)],
            seq.drop_null().to_numpy(zero_copy_only=False),
            unit,
            collector,
        )
    return facts.broken_cells == 0 and facts.without_seq == 0 and ties == 0


def report_seq_ties(rows: np.ndarray, seqs: np.ndarray, unit: str, collector: IssueCollector) -> int:
    """Every row whose `seq` an earlier row (in file order) already used; returns how many."""
    order = np.lexsort((rows, seqs))
    sorted_seq, sorted_rows = seqs[order], rows[order]
    repeat = np.concatenate(([False], sorted_seq[1:] == sorted_seq[:-1]))
    if not repeat.any():
        return 0
    # The first row of each run of equal seq values, carried forward over the run.
    starts = np.where(~repeat, np.arange(len(repeat)), 0)
    first_rows = sorted_rows[np.maximum.accumulate(starts)]
    tied = np.flatnonzero(repeat)
    for index in tied.tolist():
        collector.add(
            int(sorted_rows[index]),
            "seq",
            seq_reused_reason(int(sorted_seq[index]), unit, int(first_rows[index])),
            phase=PHASE_SEQ,
        )
    return len(tied)


def arrival_order(table: pa.Table) -> pa.Array:
    """Each row's place in arrival order: its `seq` when the rows carry one, else its row number."""
    seq = table.column("seq")
    return seq.cast(pa.int64()) if seq.null_count < len(seq) else table.column("row")


# ---- per instance ------------------------------------------------------------------------------


def check_instances(
    table: pa.Table,
    config: ScenarioConfig,
    config_ok: bool,
    unit: str,
    collector: IssueCollector,
    *,
    order_known: bool,
) -> None:
    """`proc_ms` order and generated channels, on rows sorted by (instance, arrival order)."""
    instances = table.column("instance").combine_chunks()
    if not len(instances):
        return
    if order_known:
        _check_proc_ms(table, instances, unit, collector)
    if config_ok and makes_generators(config.generator):  # SOURCE_WATERMARK(): the rows carry them
        _check_generated(table, unit, collector)


def _segments(instances: pa.Array) -> list[tuple[int, int]]:
    """[start, end) of each run of one instance in a table sorted by instance."""
    values = instances.to_numpy(zero_copy_only=False)
    change = np.flatnonzero(values[1:] != values[:-1]) + 1
    bounds = [0, *change.tolist(), len(values)]
    return list(itertools.pairwise(bounds))


def _check_proc_ms(table: pa.Table, instances: pa.Array, unit: str, collector: IssueCollector) -> None:
    proc = _typed(table, "proc_ms", pa.int64())
    if proc.null_count == len(proc):
        return
    has = proc.is_valid().to_numpy(zero_copy_only=False)
    values = proc.fill_null(0).to_numpy(zero_copy_only=False)
    rows = _numpy(table, "row")
    names = instances.to_numpy(zero_copy_only=False)
    for start, end in _segments(instances):
        here = np.flatnonzero(has[start:end]) + start
        if len(here) < 2:
            continue
        seen = values[here]
        highest_before = np.maximum.accumulate(seen)[:-1]
        if not (seen[1:] < highest_before).any():
            continue
        # Rare: walk the instance to name, for each decrease, the row holding the highest so far.
        best_value, best_row = int(seen[0]), int(rows[here[0]])
        for index in here[1:].tolist():
            value, row = int(values[index]), int(rows[index])
            if value < best_value:
                reason = proc_ms_decrease_reason(value, best_value, unit, best_row, str(names[index]))
                collector.add(row, "proc_ms", reason, phase=PHASE_PROC)
            else:
                best_value, best_row = value, row


def _check_generated(table: pa.Table, unit: str, collector: IssueCollector) -> None:
    """An explicit watermark on a channel that carries records (so the generator makes its watermarks)."""
    kind = _typed(table, "kind", pa.string())
    channel = _typed(table, "channel", pa.int32())
    keys = pc.binary_join_element_wise(
        table.column("instance").combine_chunks(),
        _typed(table, "input", pa.string()),
        channel.cast(pa.string()),
        "\x00",
    )
    is_record = pc.fill_null(pc.and_(pc.equal(kind, "record"), channel.is_valid()), False)
    is_watermark = pc.fill_null(pc.and_(pc.equal(kind, "watermark"), channel.is_valid()), False)
    if not pc.any(is_record).as_py() or not pc.any(is_watermark).as_py():
        return
    rows = _numpy(table, "row")
    record_at = np.flatnonzero(is_record.to_numpy(zero_copy_only=False))
    record_keys = keys.take(pa.array(record_at))
    distinct, first = np.unique(record_keys.to_numpy(zero_copy_only=False), return_index=True)
    first_row = dict(zip(distinct.tolist(), rows[record_at[first]].tolist(), strict=True))
    key_values = keys.to_numpy(zero_copy_only=False)
    channels = channel.to_numpy(zero_copy_only=False)
    for index in np.flatnonzero(is_watermark.to_numpy(zero_copy_only=False)).tolist():
        first_record = first_row.get(key_values[index])
        if first_record is not None:
            reason = generated_watermark_reason(int(channels[index]), unit, first_record)
            collector.add(int(rows[index]), "kind", reason, phase=PHASE_GENERATED)


# ---- channel counts ------------------------------------------------------------------------------


def valve_channels(
    pairs: Iterable[tuple[str, str]],
    config: ScenarioConfig,
    config_ok: bool,
    compact: dict[str, int],
    max_channel: dict[str, int],
) -> dict[tuple[str, str], int]:
    """Each (instance, input)'s channel count: the config's, else the compact header's, else 1 + the
    largest index seen for that input over all instances (every subtask of an operator has the same
    upstream parallelism, even if some never hear from all of it)."""
    result: dict[tuple[str, str], int] = {}
    for instance, input_name in pairs:
        if config_ok and input_name in config.channels:
            result[(instance, input_name)] = config.channels[input_name]
        elif instance in compact:
            result[(instance, input_name)] = compact[instance]
        else:
            result[(instance, input_name)] = max_channel.get(input_name, 0) + 1
    return result


def merge_max_channel(parts: Iterable[dict[str, int]]) -> dict[str, int]:
    merged: dict[str, int] = {}
    for part in parts:
        for name, channel in part.items():
            merged[name] = max(merged.get(name, channel), channel)
    return merged
