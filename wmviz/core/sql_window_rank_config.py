"""The configs of SQL's window TopN (`operator.type` window_rank) and window deduplication
(`operator.type` window_dedup) over a TUMBLE, HOP or CUMULATE table function
(wmviz/core/sql_window_rank.py).

Kept apart from the operator so `wmviz.core.scenario` can name the config types without importing
the operator (docs/sql.md, "Operators")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from wmviz.core.fieldrules import choice, count, millis, names, text
from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.sql_windows_config import _known_zone as known_zone

Keep = Literal["first", "last"]
TableFunction = Literal["tumble", "hop", "cumulate"]


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowTumbleFields(SqlOperatorKind):
    """The windows both operators cut rows into (the window table function before them: TUMBLE,
    or HOP and CUMULATE, which copy a row into each window holding it)."""

    window: TableFunction = field(
        default="tumble", metadata=choice(TableFunction, "the window table function")
    )
    size_ms: int = field(metadata=millis("the window's length (CUMULATE: its largest size)", minimum=1))
    slide_ms: int | None = field(
        default=None, metadata=millis("HOP: how far each window starts after the one before", minimum=1)
    )
    step_ms: int | None = field(
        default=None, metadata=millis("CUMULATE: how much each window grows by", minimum=1)
    )
    offset_ms: int = field(default=0, metadata=millis("shifts every window's start; |offset| < size"))
    zone: str = field(
        default="UTC",
        metadata=text(
            "the session time zone the windows are cut in: table.local-time-zone for a TIMESTAMP_LTZ"
            " time attribute, UTC for a TIMESTAMP one"
        ),
    )
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
    out: list[tuple[str, str]] = []
    size, offset = config_values.get("size_ms"), config_values.get("offset_ms") or 0
    window = config_values.get("window", "tumble")
    for kind, name, what in (("hop", "slide_ms", "a HOP window needs its slide"),
                             ("cumulate", "step_ms", "a CUMULATE window needs its step")):  # fmt: skip
        given = config_values.get(name)
        if window == kind and not isinstance(given, int):
            out.append((name, what))
        elif window != kind and given is not None:
            out.append((name, f"only a {kind.upper()} window has one"))
    step = config_values.get("step_ms")
    if window == "cumulate" and isinstance(size, int) and isinstance(step, int) and size % step:
        out.append(("size_ms", f"a CUMULATE window's largest size is a whole number of steps ({step} ms)"))
    if isinstance(size, int) and isinstance(offset, int) and abs(offset) >= size:
        out.append(("offset_ms", f"|offset| must be below the size ({size} ms), as Flink requires"))
    zone = config_values.get("zone")
    if not isinstance(zone, str) or not known_zone(zone):
        out.append(("zone", f"{zone!r} is not a time zone wmviz knows (UTC, Europe/Berlin, ...)"))
    order, descending = config_values.get("order_by"), config_values.get("descending")
    order_names = set(order) if isinstance(order, (tuple, list)) else set()
    stray = (
        [str(n) for n in descending if n not in order_names] if isinstance(descending, (tuple, list)) else []
    )
    if stray:
        out.append(("descending", f"{', '.join(stray)} is not an order_by column"))
    return out
