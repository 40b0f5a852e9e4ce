"""The config of SQL's slicing window aggregate (`operator.type` sql_window): a TUMBLE, HOP or
CUMULATE table function grouped by its window and key columns (wmviz/core/sql_windows.py).

Kept apart from the operator so `wmviz.core.scenario` can name the config type without importing
the operator (docs/sql.md, "Operators")."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from wmviz.core.fieldrules import aggregates, choice, flag, millis, names, text
from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.sql_aggregates import AggregateCall, parse_call

WindowKind = Literal["tumble", "hop", "cumulate"]


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowTvfFields(SqlOperatorKind):
    """The windows a window table function cuts rows into (`TABLE(TUMBLE|HOP|CUMULATE(...))`),
    declared once for every SQL operator that reads them: the window aggregate, Window TopN and
    deduplication, the window join. Their rules over several fields: `window_tvf_problems`."""

    window: WindowKind = field(default="tumble", metadata=choice(WindowKind, "the window table function"))
    size_ms: int = field(metadata=millis("the window's length (CUMULATE: its largest size)", minimum=1))
    slide_ms: int | None = field(
        default=None,
        metadata=millis(
            "HOP: how far apart windows start (the window aggregate: size a multiple of it)", minimum=1
        ),
    )
    step_ms: int | None = field(
        default=None,
        metadata=millis("CUMULATE: how much each window grows; size is a multiple of it", minimum=1),
    )
    offset_ms: int = field(default=0, metadata=millis("shifts every window's start; |offset| < size"))
    zone: str = field(
        default="UTC",
        metadata=text(
            "the session time zone the windows are cut in: table.local-time-zone for a TIMESTAMP_LTZ"
            " time attribute, UTC for a TIMESTAMP one"
        ),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class SqlWindowConfig(WindowTvfFields):
    """`operator.type` sql_window: Flink SQL's window aggregate over `TABLE(TUMBLE|HOP|CUMULATE(...))`
    `GROUP BY window_start, window_end[, keys]`, one- or two-phase as the planner splits it."""

    type_name: ClassVar[str] = "sql_window"

    keys: tuple[str, ...] = field(default=(), metadata=names("the GROUP BY columns besides the window"))
    aggregates: tuple[AggregateCall, ...] = field(
        default=(parse_call("COUNT(*) AS n"),),
        metadata=aggregates("the aggregate calls of the SELECT, spelled as SQL"),
    )
    two_phase: bool = field(
        default=True,
        metadata=flag(
            "the planner's local/global split (table.optimizer.agg-phase-strategy AUTO or TWO_PHASE):"
            " a local stage buffers partials per key and slice until a watermark fires a slice"
        ),
    )

    @property
    def slice_ms(self) -> int:
        """The slice length: the window (TUMBLE), the slide (HOP) or the step (CUMULATE)."""
        if self.window == "hop":
            assert self.slide_ms is not None
            return self.slide_ms
        if self.window == "cumulate":
            assert self.step_ms is not None
            return self.step_ms
        return self.size_ms


def sql_window_problems(config_values: dict[str, object]) -> list[tuple[str, str]]:
    """The window aggregate's cross-field rules: its windows' (`window_tvf_problems`), a HOP's size
    a whole number of slides included, as Flink's HoppingSliceAssigner requires."""
    return window_tvf_problems(config_values, whole_slides=True)


def window_tvf_problems(config_values: dict[str, object], *, whole_slides: bool) -> list[tuple[str, str]]:
    """The rules over the fields of `WindowTvfFields`, as (field, reason) pairs: the slide a HOP and
    the step a CUMULATE needs (and no other kind takes), a CUMULATE's size a whole number of steps
    (a HOP's of slides when `whole_slides`: the slicing window aggregate's assigner refuses it),
    |offset| below the size, a zone wmviz knows."""
    out: list[tuple[str, str]] = []
    window, size = config_values.get("window"), config_values.get("size_ms")
    slide, step = config_values.get("slide_ms"), config_values.get("step_ms")
    offset = config_values.get("offset_ms") or 0
    if not isinstance(size, int):
        return out
    needs = {"hop": "slide_ms", "cumulate": "step_ms"}
    for kind, name in needs.items():
        given = slide if name == "slide_ms" else step
        if window == kind and given is None:
            out.append((name, f"required for window {kind}"))
        elif window != kind and given is not None:
            out.append((name, f"only a {kind.upper()} window takes it"))
        elif (
            window == kind
            and isinstance(given, int)
            and size % given
            and (whole_slides or kind == "cumulate")
        ):
            # Flink's HoppingSliceAssigner / CumulativeSliceAssigner refuse it.
            out.append((name, f"the size ({size} ms) must be a whole multiple of it"))
    if isinstance(offset, int) and abs(offset) >= size:
        out.append(("offset_ms", f"|offset| must be below the size ({size} ms), as Flink requires"))
    zone = config_values.get("zone")
    if not isinstance(zone, str) or not _known_zone(zone):
        out.append(("zone", f"{zone!r} is not a time zone wmviz knows (UTC, Europe/Berlin, ...)"))
    return out


def _known_zone(zone: str) -> bool:
    try:
        ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True
