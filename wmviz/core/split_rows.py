"""The split cells of a trace row on a channel that reads splits (docs/trace-format.md §10): the
`split` a record came from, and a `split` row's `split_event`, each checked as it is applied."""

from __future__ import annotations

from wmviz.core.scenario import TraceRow
from wmviz.core.splits import SPLIT_CHANGES, SplitChangeError, SplitReader
from wmviz.core.types import ValveInput
from wmviz.core.windows import ScenarioError


def split_of(row: TraceRow, reader: SplitReader) -> str:
    """The split a record on a split-reading channel came from (its `split` column)."""
    for name, value in row.payload:
        if name == "split" and value is not None and str(value) in reader.splits:
            return str(value)
        if name == "split" and value is not None:
            known = ", ".join(reader.splits)
            raise ScenarioError(row, "split", f"{value!r} is not a split of channel {row.channel} ({known})")
    raise ScenarioError(row, "split", f"channel {row.channel} reads splits, so a record needs its split")


def apply_split_row(row: TraceRow, reader: SplitReader | None) -> list[ValveInput]:
    """A `split` row applied to its channel's reader (None: the channel reads no splits); what the
    reader sends its channel because of it."""
    if reader is None:
        raise ScenarioError(row, "channel", f"channel {row.channel} does not read splits (generator.splits)")
    cells = dict(row.payload)
    split, what = cells.get("split"), cells.get("split_event")
    if split is None or str(split) == "":
        raise ScenarioError(row, "split", "a split row needs its split")
    if what not in SPLIT_CHANGES:
        raise ScenarioError(row, "split_event", f"expected one of {', '.join(SPLIT_CHANGES)}")
    try:
        return reader.change(str(split), what)
    except SplitChangeError as error:
        raise ScenarioError(row, "split", str(error)) from None
