"""`operator.type` window_join: the config of SQL's window join (`FROM TABLE(TUMBLE(...)) L JOIN
TABLE(TUMBLE(...)) R ON L.k = R.k AND L.window_start = R.window_start AND L.window_end =
R.window_end`, and its IN / EXISTS forms), modelled by `wmviz.core.sql_window_join`. Kept apart from
the operator so `scenario.py` can name the config without importing the operator."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from wmviz.core.fieldrules import choice, names
from wmviz.core.sql_windows_config import WindowTvfFields, sql_window_problems

WindowJoinType = Literal["inner", "left", "right", "full", "semi", "anti"]
"""The joins Flink 2.3.0 plans as a window join: SEMI is `IN`/`EXISTS`, ANTI `NOT IN`/`NOT EXISTS`."""

LEFT, RIGHT = "L", "R"
"""The canonical input names: L the join's left input, R its right input."""

WINDOW_COLUMNS = ("window_start", "window_end", "window_time")
"""The columns the window table function adds to each row, computed from the window it is put in."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowJoinConfig(WindowTvfFields):
    """Flink SQL's window join of input L with input R, both cut into the same TUMBLE, HOP or
    CUMULATE windows by a window table function: per key and window, each side's rows wait until the
    combined watermark passes the window's end, then the window is joined and forgotten (docs/rules.md,
    "SQL window join", SQL-WJ1..SQL-WJ6)."""

    type_name: ClassVar[str] = "window_join"
    inputs: ClassVar[tuple[str, ...]] = (LEFT, RIGHT)

    join_type: WindowJoinType = field(
        default="inner",
        metadata=choice(
            WindowJoinType,
            "inner; left/right/full pad the unmatched side with NULLs; semi/anti keep a left row"
            " that has (has no) match",
        ),
    )
    left_key: tuple[str, ...] = field(metadata=names("the left input's join-key columns, in key order"))
    right_key: tuple[str, ...] = field(metadata=names("the right input's join-key columns, in key order"))
    left_columns: tuple[str, ...] = field(
        metadata=names(
            "the left input's columns as the join reads them, in order; window_start, window_end and"
            " window_time are computed from the row's window, the others read from the row"
        )
    )
    right_columns: tuple[str, ...] = field(
        default=(), metadata=names("the right input's columns, as left_columns (semi/anti: none output)")
    )
    output_names: tuple[str, ...] = field(
        default=(),
        metadata=names(
            "the output's names, position by position: left_columns then right_columns (semi/anti:"
            " left_columns only); Flink renames a clash, user_id0; none: the columns' own"
        ),
    )

    @property
    def outer_left(self) -> bool:
        return self.join_type in ("left", "full")

    @property
    def outer_right(self) -> bool:
        return self.join_type in ("right", "full")

    @property
    def keeps_right(self) -> bool:
        """Whether the output carries the right side's columns (not for SEMI/ANTI)."""
        return self.join_type not in ("semi", "anti")

    @classmethod
    def canonical_input(cls, name: str) -> str | None:
        # `0`/`1` (and lower case) are accepted and mapped, as for the other joins, so two
        # spellings cannot split one side into two valves.
        return {"l": LEFT, "0": LEFT, "r": RIGHT, "1": RIGHT}.get(name.strip().lower())


def window_join_problems(values: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """The rules over several fields: the window's (as the window aggregate's, one implementation),
    keys that pair up, output names that match the columns."""
    yield from sql_window_problems(values)
    if values.get("zone") not in (None, "UTC"):
        yield "zone", "only UTC windows are modelled (a TIMESTAMP time attribute)"
    left, right = values.get("left_key") or (), values.get("right_key") or ()
    if left and right and len(left) != len(right):
        yield "right_key", f"has {len(right)} columns, operator.left_key {len(left)}: they pair up"
    kept = values.get("join_type") not in ("semi", "anti")
    width = len(values.get("left_columns") or ()) + (len(values.get("right_columns") or ()) if kept else 0)
    output = values.get("output_names") or ()
    if output and len(output) != width:
        yield "output_names", f"names {len(output)} columns, the inputs give {width}"
