"""Everything one step shows, as plain values built once (no Streamlit here).

What a step shows is a function of the run's timeline, the instance, the step and the view options
(the time format): `step_view` builds it, and the page keeps it in a cache shared by every session
(`wmviz.ui.step_cache`), so the second person looking at a step costs almost nothing. Everything in
a `StepView` is immutable or never changed by a reader: figures as their Plotly JSON (built once;
the page hands Streamlit a copy), tables as Arrow tables with the width of each column, text as
strings. Nothing in it belongs to one browser session: widget keys, the tab a person clicked and
the what-if form are added by the page when it draws the view.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import pandas as pd
import plotly.graph_objects as go
import plotly.io as pio
import pyarrow as pa

from wmviz.core.rules import Rule, step_rules
from wmviz.core.story import explain_parts
from wmviz.core.types import Profile
from wmviz.timeline.cursor import InstanceCursor
from wmviz.view import figures, html_table, model, stall, widths
from wmviz.view import operator_model as om
from wmviz.view.imported import inferred_text, replay_check_text, split_table
from wmviz.view.plain import literal
from wmviz.view.step_chart import step_chart, step_chart_spec
from wmviz.view.timefmt import TimeFormat


@dataclass(frozen=True)
class ShownTable:
    """A table as the page shows it: Arrow (immutable; what Streamlit would convert a frame to)
    or None for no table, and the width in pixels of each column, from the longest value it holds
    or may hold (`wmviz.view.widths`)."""

    data: pa.Table | None
    widths: tuple[tuple[str, int], ...] = ()
    title: str = ""
    name: str = ""
    html: str = ""  # the table as escaped HTML, where the page draws it so (`wmviz.view.html_table`)

    @property
    def empty(self) -> bool:
        return self.data is None or self.data.num_rows == 0

    def frame(self) -> pd.DataFrame | None:
        """A new pandas frame of the table (for a Styler, which needs one)."""
        return None if self.data is None else self.data.to_pandas()

    @property
    def nbytes(self) -> int:
        return len(self.html) + (0 if self.data is None else self.data.nbytes)


@dataclass(frozen=True)
class FigureView:
    """One figure as its Plotly JSON, built once and shared (the overview heatmap at a step)."""

    spec: str

    @property
    def nbytes(self) -> int:
        return len(self.spec)


def overview_view(
    matrix: pd.DataFrame, frontier, cursor_order: int, lag_mode: str, t: TimeFormat
) -> FigureView:
    """The overview heatmap of every instance, with the step's column marked; coloured by lag
    behind the leading instance, or (the second lag mode) behind the newest input time."""
    chosen = frontier if lag_mode == figures.LAG_MODES[1] else None
    return FigureView(figure_json(figures.instance_heatmap(matrix, cursor_order, frontier=chosen, t=t)))


def shown(
    table: pd.DataFrame | None, *, possible: dict | None = None, title: str = "", name: str = ""
) -> ShownTable:
    """`table` as Arrow, with the widths its columns need (`possible` adds values it may hold)."""
    if table is None:
        return ShownTable(None, title=title, name=name)
    sized = tuple(widths.column_widths(table, possible).items())
    return ShownTable(pa.Table.from_pandas(table), sized, title, name, html_table.grid_table(table))


def figure_json(fig: go.Figure) -> str:
    """The figure's JSON, built once. Streamlit reads it back and encodes it again as it would the
    figure itself (`wmviz.ui.panels`), so any lossless encoder does: the standard library's is two to
    three times quicker here than Plotly's default (orjson, after walking every value to clean it)."""
    return pio.to_json(fig, validate=False, engine="json")


@dataclass(frozen=True)
class OperatorView:
    """The operator panel's tabs at a step (`wmviz.view.operator_model`)."""

    choice: om.PanelChoice
    timers_caption: str
    timers: ShownTable
    dropped_caption: str
    dropped_now: ShownTable
    dropped_so_far: ShownTable
    windows_caption: str = ""
    firings: ShownTable | None = None
    panes_heading: str = ""
    panes: ShownTable | None = None
    changelog_caption: str = ""
    changelog_now: ShownTable | None = None
    changelog: ShownTable | None = None
    join_cache: ShownTable | None = None

    def tables(self) -> list[ShownTable]:
        found = [self.timers, self.dropped_now, self.dropped_so_far, self.firings, self.panes]
        found += [self.changelog_now, self.changelog, self.join_cache]
        return [table for table in found if table is not None]


def operator_view(cursor: InstanceCursor, pipeline, step: int, t: TimeFormat) -> OperatorView:
    """Timers, windows, the join changelog and drops at `step`, and the tab that matters."""
    choice = om.panel_choice(cursor, pipeline, step)
    now = om.dropped_table(cursor, step, t)
    so_far = om.dropped_so_far(cursor, step)
    parts: dict = {}
    if om.WINDOWS in choice.names:
        parts.update(
            windows_caption=literal(om.firings_so_far(cursor, step))
            + f" · operator event time {literal(t(pipeline.operator.watermark_ms))}",
            firings=shown(om.window_firings_table(cursor, step, t)),
            panes_heading=om.panes_heading(pipeline),
            panes=shown(om.panes_table(pipeline, t)),
        )
    if om.CHANGELOG in choice.names:
        log = om.changelog_table(cursor, step, t)
        emitted = log[log["now"] != ""]
        parts.update(
            changelog_caption=literal(om.changelog_so_far(cursor, step)),
            changelog_now=_bare(None if emitted.empty else emitted.drop(columns="now")),
            changelog=_bare(log),
            join_cache=_bare(om.join_cache_table(pipeline, t)),
        )
    return OperatorView(
        choice=choice,
        timers_caption=literal(om.timers_so_far(cursor, step)),
        timers=shown(om.timers_table(cursor, pipeline, step, t)),
        dropped_caption=f"dropped at this step: {len(now)} · dropped so far: {so_far}",
        dropped_now=shown(now),
        dropped_so_far=shown(om.dropped_table(cursor, step, t, so_far=True)),
        **parts,
    )


CHANGELOG_CLASSES = {"kind": lambda kind: html_table.KIND_CLASSES.get(kind, "")}
"""A changelog row's kind (`+I`, `-U`, `+U`) coloured (the page's CSS)."""


def _bare(table: pd.DataFrame | None) -> ShownTable:
    """A join table, its kinds coloured."""
    if table is None:
        return ShownTable(None)
    return ShownTable(pa.Table.from_pandas(table), html=html_table.grid_table(table, CHANGELOG_CLASSES))


def channel_tables(views: Sequence[model.ValveView], possible: dict | None = None) -> tuple[ShownTable, ...]:
    """One channel table per valve; several valves (a two-input operator) share one table with an
    `input` column: one header instead of one per valve keeps the step on one screen. Each also as
    the HTML the page draws: statuses coloured, the minimum marked, columns sized for any step."""
    if len(views) > 1:
        tables = [(model.merged_channels(list(views)), "Channels of every input", "all")]
    else:
        tables = [(v.channels, "Channels", v.input) for v in views]
    out = []
    for frame, title, name in tables:
        table = shown(frame, possible=possible, title=title, name=name)
        out.append(replace(table, html=html_table.channel_table(frame, dict(table.widths))))
    return tuple(out)


@dataclass(frozen=True)
class HeapView:
    """One valve's aligned min-heap as a tree: its input and the figure's JSON."""

    input: str
    spec: str


@dataclass(frozen=True)
class StepView:
    """What the page shows at one step, in the order it shows it."""

    step: int
    last: int
    summary: str
    order: int
    cards: tuple[model.OutputCard, ...]
    inferred: str | None
    replay: tuple[bool, str] | None
    stall: str | None
    narration: tuple[str, ...]
    rules: tuple[Rule, ...]
    splits: ShownTable
    channels: tuple[ShownTable, ...]
    operator: OperatorView | None
    chart: str
    heaps: tuple[HeapView, ...]
    input_row: ShownTable
    caption: str

    @property
    def nbytes(self) -> int:
        """About the memory the view holds (its figures' JSON and its tables), for the cache's bound."""
        tables = [self.splits, *self.channels, self.input_row]
        if self.operator is not None:
            tables += self.operator.tables()
        text = len(self.chart) + sum(len(h.spec) for h in self.heaps) + sum(len(p) for p in self.narration)
        return text + sum(table.nbytes for table in tables) + 4096  # + the small fields and objects


def step_view(
    cursor: InstanceCursor,
    step: int,
    profile: Profile,
    keyframe_every: int,
    t: TimeFormat,
    histories: tuple[pd.DataFrame, pd.DataFrame] | None = None,
) -> StepView:
    """Everything about `step`: what arrived and what happened, the output, the channels, the
    operator panel, the chart, the heap, the input row. `histories` are the cursor's channel and
    output histories when the caller keeps them (`wmviz.view.step_chart`)."""
    record = cursor.row(step)
    result, pipeline, before = cursor.explain(step)
    views = model.valve_views(cursor, pipeline, step, profile, t)
    short = replace(t, short=True)  # clock times, as the narration reads
    found = stall.stall_at(cursor, step, model.holders(views))
    finishes = bool(cursor.finished_by(cursor.count - 1))
    has_operator = pipeline.operator is not None or not cursor.timers.empty
    # Only its JSON is kept, built without Plotly's validation: the same figure, sooner.
    spec = step_chart_spec(cursor, step, views, t, histories=histories, title="Watermarks over steps")
    chart = figures.unchecked_figure(spec)
    changed = record.get("channel")
    return StepView(
        step=step,
        last=cursor.count - 1,
        summary=model.input_summary(record, t),
        order=int(record["order"]),
        cards=tuple(model.output_cards(views, pipeline, om.operator_watermark(cursor, step), t)),
        inferred=inferred_text(result),
        replay=replay_check_text(result, pipeline, short),
        stall=None if found is None else literal(stall.stall_text(found, cursor.count, t)),
        narration=tuple(explain_parts(result, short, lead=True)),
        rules=tuple(step_rules(result)),
        splits=_splits(split_table(pipeline, short)),
        channels=channel_tables(views, widths.channel_possible(t, widths.latest_time(cursor), finishes)),
        operator=operator_view(cursor, pipeline, step, t) if has_operator else None,
        chart=figure_json(chart),
        heaps=tuple(
            HeapView(v.input, figure_json(figures.heap_figure(v.heap, highlight=changed, t=short)))
            for v in views
        ),
        input_row=_fields(model.input_table(record, t)),
        caption=f"state rebuilt from the keyframe at step {before.keyframe_step} (one every "
        f"{keyframe_every:,} steps); {cursor.count:,} steps in instance {literal(cursor.instance)}",
    )


def _fields(table: pd.DataFrame) -> ShownTable:
    return replace(shown(table), html=html_table.fields_table(table))


SPLIT_CLASSES = {
    "status": lambda status: html_table.FLAGGED_CLASS if status in ("IDLE", "PAUSED") else "",
    "holds": lambda holds: html_table.HOLDS_CLASS if holds else "",
}
"""A split IDLE or PAUSED flagged, the split holding its subtask marked."""
SPLIT_HOVER = {"watermark": "raw (ms)"}
"""A split's raw watermark one hover away (eight columns did not fit beside the step at 1440 px)."""


def _splits(table: pd.DataFrame | None) -> ShownTable:
    if table is None:
        return ShownTable(None)
    html = html_table.grid_table(table, SPLIT_CLASSES, SPLIT_HOVER)
    return ShownTable(pa.Table.from_pandas(table), html=html)


@dataclass(frozen=True)
class SideView:
    """One run of compare mode at its step: what arrived, the output, the narration, the channels,
    a shorter chart without a title, the operator panel."""

    caption: str
    cards: tuple[model.OutputCard, ...]
    narration: tuple[str, ...]
    rules: tuple[Rule, ...]
    channels: tuple[ShownTable, ...]
    chart: str
    operator: OperatorView | None

    @property
    def nbytes(self) -> int:
        tables = [*self.channels, *(self.operator.tables() if self.operator is not None else [])]
        return len(self.chart) + sum(len(p) for p in self.narration) + sum(t.nbytes for t in tables) + 4096


def side_view(
    cursor: InstanceCursor,
    step: int,
    profile: Profile,
    t: TimeFormat,
    histories: tuple[pd.DataFrame, pd.DataFrame] | None = None,
) -> SideView:
    """One run of a comparison at `step` (`histories` as for `step_view`)."""
    result, pipeline, _ = cursor.explain(step)
    views = model.valve_views(cursor, pipeline, step, profile, t)
    short = replace(t, short=True)
    chart = step_chart(cursor, step, views, t, histories=histories, title="")
    chart.update_layout(height=min(chart.layout.height, 520), margin={"t": 30})
    has_operator = pipeline.operator is not None or not cursor.timers.empty
    return SideView(
        caption=f"step {step} · {literal(model.input_summary(cursor.row(step), t))}",
        cards=tuple(model.output_cards(views, pipeline, om.operator_watermark(cursor, step), t)),
        narration=tuple(explain_parts(result, short, lead=True)),
        rules=tuple(step_rules(result)),
        channels=channel_tables(views),
        chart=figure_json(chart),
        operator=operator_view(cursor, pipeline, step, t) if has_operator else None,
    )
