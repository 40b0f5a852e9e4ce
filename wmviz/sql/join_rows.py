"""An interval join's output rows as SQL's (docs/sql.md, "Replay"): the one place the replay turns
the core's `JoinOutput` (its changelog kind and the two trace rows it joined) into the join node's
output row, which `wmviz.sql.rowflow` then carries to the sinks like any SQL operator's rows.

The row is the join node's `outputType`: the left input's fields, then the right input's, by
position (the planner renames a clashing right field, `ts` → `ts0`, so names cannot be matched),
each read from the trace row of its side by the input's own field name (a replay record's payload
holds its table's columns), and NULL on every field of a side padded with nulls (an outer join's
unmatched row). Where that cannot be done from the rows file (a field computed before the join,
an output row of another width) the reason is returned instead, and the sinks' rows are refused
by name.

Rows meet by the join's equality keys (`joinSpec.leftKeys`/`rightKeys`, positions in each input):
`row_key` is the key the core's join groups a row by. A row with a NULL key field matches nothing
(the planner's `filterNulls`), though a LEFT join still pads it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from wmviz.core.operator_log import JoinOutput
from wmviz.core.scenario import TraceRow
from wmviz.core.sql_rows import SqlOutput, SqlValue, columns_of
from wmviz.sql.job_shape import Group
from wmviz.sql.model import SqlJob, fields_of


@dataclass(frozen=True, slots=True)
class JoinRows:
    """How one interval join's output rows are made from the rows it joined."""

    left: tuple[str, ...]
    """The left input's fields, in order: the names its rows' payloads use."""
    right: tuple[str, ...]
    fields: tuple[str, ...]
    """The join node's output fields: `left` then `right`, by position."""

    def output(self, joined: JoinOutput) -> SqlOutput:
        """The join node's output row for one `JoinOutput`, with the trace rows it was made from."""
        values = (*self.side(joined.left, self.left), *self.side(joined.right, self.right))
        made_from = sorted(row.row for row in (joined.left, joined.right) if row is not None)
        return SqlOutput(joined.kind, tuple(zip(self.fields, values, strict=True)), tuple(made_from))

    @staticmethod
    def side(row: TraceRow | None, names: tuple[str, ...]) -> tuple[SqlValue, ...]:
        """One side's values by its input's field names; all NULL for a side padded with nulls."""
        if row is None:
            return (None,) * len(names)
        columns = columns_of(row)
        return tuple(columns.get(name) for name in names)


def join_rows(job: SqlJob, group: Group) -> JoinRows | str:
    """The interval join's rows of a group meeting at one, or why they cannot be made (in words,
    naming the plan node)."""
    assert group.meeting is not None
    meeting = job.node(group.meeting)
    where = f"{meeting.name} (plan node {meeting.id})"
    edges = job.inputs_of(meeting.id)
    sides = [fields_of(job.node(edge.source)) for edge in edges]
    fields = fields_of(meeting)
    if len(sides) != 2 or len(fields) != sum(map(len, sides)):
        return f"{where}: its output row is not its two inputs' fields side by side"
    for branch, names in zip(group.branches, sides, strict=True):
        given = set(fields_of(job.node(branch.table.node_id)))
        computed = [name for name in names if name not in given]
        if computed:
            return f"{where} reads {', '.join(computed)}, computed before it (not modelled)"
    condition = _join_spec(meeting.spec).get("nonEquiCondition")
    if condition is not None:
        return f"{where}: a join condition besides its keys and time bounds (not modelled)"
    left, right = sides
    return JoinRows(left, right, fields)


def _join_spec(spec: Mapping[str, object]) -> Mapping[str, object]:
    interval = spec.get("intervalJoinSpec")
    join = interval.get("joinSpec") if isinstance(interval, dict) else None
    return join if isinstance(join, dict) else {}


def key_fields(job: SqlJob, group: Group) -> dict[str, tuple[str, ...]]:
    """Each side's key fields (by trace input, `L` and `R`), named as its input names them."""
    assert group.meeting is not None
    spec = _join_spec(job.node(group.meeting).spec)
    out: dict[str, tuple[str, ...]] = {}
    for branch, edge, keys in zip(group.branches, job.inputs_of(group.meeting), ("leftKeys", "rightKeys")):
        names = fields_of(job.node(edge.source))
        positions = spec.get(keys)
        out[branch.input] = (
            tuple(names[i] for i in positions if isinstance(i, int) and i < len(names))
            if isinstance(positions, list)
            else ()
        )
    return out


def row_key(values: Mapping[str, object], names: tuple[str, ...], line: int) -> str:
    """The key a row meets its partners by: its key fields' values; one no other row has when a
    key field is NULL (it joins nothing)."""
    key = [values.get(name) for name in names]
    if any(value is None for value in key):
        return f"line {line}: a NULL key"
    return json.dumps(key)
