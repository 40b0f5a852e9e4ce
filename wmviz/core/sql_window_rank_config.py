"""The configs of SQL's window TopN (`operator.type` window_rank) and window deduplication
(`operator.type` window_dedup) over a TUMBLE, HOP or CUMULATE table function
(wmviz/core/sql_window_rank.py).

Kept apart from the operator so `wmviz.core.scenario` can name the config types without importing
the operator (docs/sql.md, "Operators")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from wmviz.core.fieldrules import choice, count, names, text
from wmviz.core.sql_windows_config import WindowKind, WindowTvfFields, window_tvf_problems

Keep = Literal["first", "last"]
TableFunction = WindowKind
"""The window table functions these operators read (the window aggregate's own kinds)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowTumbleFields(WindowTvfFields):
    """What both operators read besides their windows (`WindowTvfFields`: the window table function
    before them, TUMBLE, or HOP and CUMULATE, which copy a row into each window holding it)."""

    partition_by: tuple[str, ...] = field(
        default=(), metadata=names("PARTITION BY besides window_start and window_end")
    )
    columns: tuple[str, ...] = field(
        default=(),
        metadata=names(
            "the output columns in order (the operator's input columns); window_start and"
            " window_end are computed, the others read from the row"
        ),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowRankConfig(WindowTumbleFields):
    """`operator.type` window_rank: `ROW_NUMBER() OVER (PARTITION BY window_start, window_end[, k]
    ORDER BY c [DESC]) AS rn … WHERE rn <= N` over `TABLE(TUMBLE(...))` (Flink's WindowRank)."""

    type_name: ClassVar[str] = "window_rank"
    order_by: tuple[str, ...] = field(default=(), metadata=names("ORDER BY: the sort columns in order"))
    descending: tuple[str, ...] = field(
        default=(), metadata=names("the ORDER BY columns sorted DESC (the others ASC)")
    )
    top: int = field(default=1, metadata=count("N of `rn <= N`: the rows emitted per window", minimum=1))
    rank_column: str = field(
        default="", metadata=text("the name of the rn column when it is selected; empty: not selected")
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowDedupConfig(WindowTumbleFields):
    """`operator.type` window_dedup: `ROW_NUMBER() OVER (PARTITION BY window_start, window_end[, k]
    ORDER BY rowtime ASC|DESC) AS rn … WHERE rn = 1` over `TABLE(TUMBLE(...))` (Flink's
    WindowDeduplicate)."""

    type_name: ClassVar[str] = "window_dedup"
    keep: Keep = field(
        default="first", metadata=choice(Keep, "ORDER BY the row time ASC keeps the first row, DESC the last")
    )


def window_rank_problems(config_values: dict[str, object]) -> list[tuple[str, str]]:
    """The cross-field rules of both configs, as (field, reason) pairs: the step each table
    function needs, Flink's assigners' offset rule, a zone wmviz knows, DESC columns that are sort
    columns."""
    out = window_tvf_problems(config_values, whole_slides=False)
    order, descending = config_values.get("order_by"), config_values.get("descending")
    order_names = set(order) if isinstance(order, (tuple, list)) else set()
    stray = (
        [str(n) for n in descending if n not in order_names] if isinstance(descending, (tuple, list)) else []
    )
    if stray:
        out.append(("descending", f"{', '.join(stray)} is not an order_by column"))
    return out
