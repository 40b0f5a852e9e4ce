"""The what-if trace: an edit applied to a trace, validated, and stored as a file to replay.

`apply_edit` returns the edited trace in arrival order, validated exactly as a file would be: it is
written as JSON Lines and read back, so an edit that breaks a rule raises the usual
`TraceValidationError` (`file:row: column NAME: reason`, rows counted in the edited trace).
`write_whatif` stores an edited trace as a file the run cache can simulate like any other.

Pure: no streamlit, pyspark or plotly.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
from pathlib import Path

from wmviz.analysis.whatif_edit import Change, Configure, Delete, Edit, Insert, changed_row, inserted_row
from wmviz.core.scenario import ScenarioConfig, Trace, TraceRow
from wmviz.disk.atomic import write_file
from wmviz.trace.config_write import replace_field
from wmviz.trace.readers import read_trace_bytes
from wmviz.trace.writers import write_trace_bytes

__all__ = ["apply_edit", "whatif_file", "write_whatif"]

_WHATIF_SUFFIX = re.compile(r"\.whatif(-[0-9a-f]+)?$")


def apply_edit(trace: Trace, edit: Edit) -> Trace:
    """The trace with `edit` applied: a new, validated `Trace` in arrival order.

    Every other row keeps its fields and its place in arrival order. Rows are renumbered 1..n in
    that order (`row`, and `seq` when the trace carried it), and the trace is re-validated by
    writing and re-reading it. Every valve keeps its channel count, even when the edit removes the
    only row of the highest channel. Raises ValueError for a step or instance that does not exist
    or a field that cannot be changed, and `TraceValidationError` when the edited trace breaks a
    rule (a row on a channel the valve does not have included).
    """
    if isinstance(edit, Configure):
        config = trace.config
        for path, value in edit.fields.items():
            config = replace_field(config, path, value, "what-if")
        return _validated(
            list(trace.rows), dataclasses.replace(trace, config=config), _whatif_name(trace.source)
        )
    positions = [i for i, r in enumerate(trace.rows) if r.instance == edit.instance]
    rows = list(trace.rows)
    if isinstance(edit, Insert):
        _check_step(trace, edit, len(positions), end_allowed=True)
        # At the end: after everything recorded, the only place we know it did not precede.
        at = positions[edit.step] if edit.step < len(positions) else len(rows)
        rows.insert(at, inserted_row(edit))
    elif isinstance(edit, Delete):
        _check_step(trace, edit, len(positions), end_allowed=False)
        del rows[positions[edit.step]]
    elif isinstance(edit, Change):
        _check_step(trace, edit, len(positions), end_allowed=False)
        at = positions[edit.step]
        rows[at] = changed_row(rows[at], edit.fields)
    else:
        raise TypeError(f"not an edit: {edit!r}")
    # The file order now is the arrival order, so seq only has to count it. `row` is not written:
    # reading back numbers the rows 1..n.
    if any(r.seq is not None for r in trace.rows):
        rows = [dataclasses.replace(r, seq=i) for i, r in enumerate(rows, 1)]
    return _validated(rows, trace, _whatif_name(trace.source))


def write_whatif(trace: Trace, directory: Path) -> Path:
    """Write an edited trace as JSON Lines with its config embedded; return the file's path.

    The name is the source's stem plus a hash of the bytes, so writing the same trace again
    returns the same path without rewriting it, and the run cache (which hashes the file) reuses
    its timeline. Traces whose instances need different channel counts for one input go out in
    the compact format (still a .jsonl file), the only one that can say so.
    """
    name, data = whatif_file(trace)
    path = Path(directory) / name
    if not path.is_file():
        path.parent.mkdir(parents=True, exist_ok=True)
        write_file(path, data)  # beside it, then renamed in: a reader never sees half a trace
    return path


def whatif_file(trace: Trace) -> tuple[str, bytes]:
    """An edited trace as a file's name and bytes (what `write_whatif` writes): the app stores
    these once, as it stores an upload."""
    data = _encode(trace)
    stem = re.sub(r"[^A-Za-z0-9_.-]+", "_", _base_stem(trace.source))[:80]
    return f"{stem}.whatif-{hashlib.sha256(data).hexdigest()[:16]}.jsonl", data


# --- applying ---------------------------------------------------------------------------------------


def _check_step(trace: Trace, edit: Edit, count: int, *, end_allowed: bool) -> None:
    if count == 0 and not (end_allowed and edit.step == 0):
        known = ", ".join(trace.instances)
        raise ValueError(f"instance {edit.instance!r} is not in this trace (its instances: {known})")
    last = count if end_allowed else count - 1
    if not 0 <= edit.step <= last:
        end = f", or {count} for the end" if end_allowed else ""
        raise ValueError(
            f"instance {edit.instance!r} has no step {edit.step}: its steps are 0 to {count - 1}{end}"
        )


def _base_stem(source: str) -> str:
    """The source file's name without its extension and any what-if suffix (an edit of an edit is
    named after the original)."""
    return _WHATIF_SUFFIX.sub("", os.path.splitext(source)[0]) or "trace"


def _whatif_name(source: str) -> str:
    return f"{_base_stem(source)}.whatif.jsonl"  # the extension picks the reader


def _validated(rows: list[TraceRow], original: Trace, source: str) -> Trace:
    """Write and re-read the rows; keep the original's channel counts where re-deriving lost some."""
    config = original.config
    # Without a config line, rows read back as lines 1..n, the numbers the edited trace shows.
    edited = read_trace_bytes(write_trace_bytes(rows, "jsonl"), source, config)
    # An edit changes rows, not the topology: a valve keeps its channel count even when re-deriving
    # it from the rows would not (a compact header, or the highest channel's only row deleted),
    # and a row on a channel beyond it is an error, as it would be in the original.
    wanted = {pair: original.valve_channels.get(pair, n) for pair, n in edited.valve_channels.items()}
    if wanted == edited.valve_channels:
        return edited
    # Pin the counts in the config when all instances agree per input (config.channels is per
    # input); otherwise only the compact format's per-instance header can say them.
    lost_inputs = {inp for (inst, inp), n in wanted.items() if n != edited.valve_channels[(inst, inp)]}
    counts = {inp: {n for (_, i), n in wanted.items() if i == inp} for inp in lost_inputs}
    if all(len(c) == 1 for c in counts.values()):
        pinned = {**config.channels, **{inp: next(iter(c)) for inp, c in counts.items()}}
        config = dataclasses.replace(config, channels=pinned)
        return read_trace_bytes(write_trace_bytes(rows, "jsonl"), source, config)
    candidate = Trace(source, edited.rows, config, wanted)
    try:
        data = write_trace_bytes(candidate, "compact", config if config != ScenarioConfig() else None)
    except ValueError as exc:
        raise ValueError(
            f"the instances of this trace need different channel counts for one input, which only the "
            f"compact format can keep, and the edited rows do not fit it ({exc})"
        ) from None
    back = read_trace_bytes(data, source)
    if back.valve_channels != wanted or back.instances != edited.instances:
        raise ValueError("the edited trace cannot keep its instances' channel counts in any format")
    # The compact reader counts its header lines; the edited trace numbers its rows 1..n.
    return dataclasses.replace(
        back, rows=tuple(dataclasses.replace(r, row=i) for i, r in enumerate(back.rows, 1))
    )


def _encode(trace: Trace) -> bytes:
    """JSON Lines bytes (config embedded) that read back as `trace`; compact when only it can."""
    config = trace.config if trace.config != ScenarioConfig() else None
    if _derived_channels(trace) == trace.valve_channels:
        return write_trace_bytes(trace, "jsonl", config)  # the reader derives the same counts
    for fmt in ("jsonl", "compact"):
        try:
            data = write_trace_bytes(trace, fmt, config)
        except ValueError:
            continue  # rows the compact format cannot hold
        back = read_trace_bytes(data, trace.source)
        if back.valve_channels == trace.valve_channels and back.instances == trace.instances:
            return data
    raise ValueError(f"{trace.source}: no trace format keeps these instances' channel counts")


def _derived_channels(trace: Trace) -> dict[tuple[str, str], int]:
    """The channel counts a reader gives these rows without a compact header (docs/engines.md, "How a
    trace is judged"): the config's count for the input, else 1 + the largest index over all instances."""
    largest: dict[str, int] = {}
    for r in trace.rows:
        if r.channel is not None and r.channel > largest.get(r.input, -1):
            largest[r.input] = r.channel
    return {
        (r.instance, r.input): trace.config.channels.get(r.input, largest.get(r.input, 0) + 1)
        for r in trace.rows
    }
