"""The panels of one step (Streamlit). Each takes plain values and lays them out; the content comes
from `wmviz.view.model`, `wmviz.view.operator_model`, `wmviz.view.stall` and `wmviz.view.figures`, which are
tested without Streamlit.

User text (trace values, keys, payloads, names, an upload's story) is only ever shown through
`st.dataframe`, `st.text`, `st.code`, or as HTML built by `wmviz.view.html_table` and
`wmviz.report.html` from escaped text; never as Streamlit markdown, which would follow links and
load images.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import pandas as pd
import plotly.graph_objects as go
import streamlit as st
from plotly.basedatatypes import BaseFigure

from wmviz.core.rules import Rule
from wmviz.report.html import markdown_html
from wmviz.spark.service import SparkService, SparkStatus
from wmviz.store.incidents import story_sections
from wmviz.ui import state
from wmviz.view import figures, model
from wmviz.view import operator_model as om
from wmviz.view.figures import STATUS_COLORS
from wmviz.view.html_table import STATUS_CLASSES, esc, grid_table
from wmviz.view.plain import literal
from wmviz.view.step_view import HeapView, OperatorView, ShownTable
from wmviz.view.timefmt import TimeFormat

# One screen (1440×900) must hold the step controls, the narration, the output and the channels:
# less padding above the page, a smaller title and smaller metric values than Streamlit's defaults.
_STYLE = """
<style>
[data-testid="stHeader"] { background: transparent; }
[data-testid="stHeader"], [data-testid="stHeader"] div { pointer-events: none; }
[data-testid="stHeader"] button, [data-testid="stHeader"] a { pointer-events: auto; }
[data-testid="stMainBlockContainer"] { padding-top: 1.4rem; padding-bottom: 3rem;
  padding-left: 2.2rem; padding-right: 2.2rem; }
[data-testid="stMain"] h1 { font-size: 1.55rem; padding: 0.1rem 7rem 0.2rem 0; }
[data-testid="stMain"] h3 { font-size: 1.15rem; padding: 0.2rem 0; }
[data-testid="stMetricValue"] { font-size: 1.3rem; }
[data-testid="stMetricLabel"] p { font-size: 0.8rem; }
[data-testid="stSidebarContent"] [data-testid="stVerticalBlock"] { gap: 0.6rem; }
/* The shortcut listener's frame runs unseen, and its wrapper takes no gap above the title. */
[data-testid="stLayoutWrapper"]:has(> .st-key-shortcut_keys), .st-key-shortcut_keys { display: none; }
/* A chart's code loads in the browser after the script run is over, when Streamlit's running sign
   has gone (seconds on a busy machine): its grey placeholder says what is coming. */
.st-key-watermark_chart [data-testid="stSkeleton"]::after,
[class*="st-key-heap_"] [data-testid="stSkeleton"]::after,
.st-key-overview [data-testid="stSkeleton"]::after {
  content: "Drawing the chart…"; display: block; padding: 1rem; color: #31333f; opacity: 0.7; }
/* The channel table and the input row (escaped HTML built once per step, `wmviz.view.html_table`):
   the grid's look; the channels' columns as wide as any step needs, a long list scrolls under its
   header; a long field value wraps. */
.wmviz-table-title { font-weight: 600; margin: 0 0 0.3rem; }
.wmviz-table-box { max-height: 22rem; overflow: auto; border: 1px solid rgba(49, 51, 63, 0.12);
  border-radius: 0.5rem; }
table.wmviz-channels, table.wmviz-fields { border-collapse: collapse; margin: 0; font-size: 0.875rem;
  border: none; width: 100%; }
table.wmviz-channels { table-layout: fixed; width: max-content; min-width: 100%; }
:is(table.wmviz-channels, table.wmviz-fields) :is(th, td) { padding: 0.22rem 0.5rem; text-align: left;
  border: none; border-bottom: 1px solid rgba(49, 51, 63, 0.08); vertical-align: top; }
table.wmviz-channels :is(th, td) { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
table.wmviz-fields td { overflow-wrap: anywhere; }
table.wmviz-fields td:first-child { white-space: nowrap; width: 1%; }
:is(table.wmviz-channels, table.wmviz-fields) th { position: sticky; top: 0; background: #f6f7f9;
  font-weight: 400; color: rgba(49, 51, 63, 0.7); }
table.wmviz-channels td.holds { font-weight: 600; color: #D55E00; }
/* The tables beside the step (timers, windows, drops, the join, the splits): as wide as the column,
   every cell wrapping, so nothing is cut at 1440×900 (a data grid cannot wrap a cell). */
table.wmviz-grid { border-collapse: collapse; margin: 0; font-size: 0.875rem; border: none; width: 100%; }
table.wmviz-grid :is(th, td) { padding: 0.22rem 0.5rem; text-align: left; border: none; vertical-align: top;
  border-bottom: 1px solid rgba(49, 51, 63, 0.08); overflow-wrap: break-word; }
table.wmviz-grid th { position: sticky; top: 0; background: #f6f7f9; font-weight: 400;
  color: rgba(49, 51, 63, 0.7); }
table.wmviz-grid td.holds { font-weight: 700; }
table.wmviz-grid td.flagged { color: #b45309; font-weight: 600; }
table.wmviz-grid td:is(.kind-insert, .kind-retract, .kind-update) { color: white; }
table.wmviz-grid td.kind-insert { background: #1b7837; }
table.wmviz-grid td.kind-retract { background: #b2182b; }
table.wmviz-grid td.kind-update { background: #2166ac; }
"""
_STATUS_CSS = "".join(  # the chart's status colours (no user text)
    f"table.wmviz-channels td.{STATUS_CLASSES[status]} {{ background-color: {colour}; color: white; }}\n"
    for status, colour in STATUS_COLORS.items()
)
PAGE_CSS = f"{_STYLE}{_STATUS_CSS}</style>"


def page_style() -> None:
    """The page's own CSS (no user text in it)."""
    st.html(PAGE_CSS)


# --- the head of the page ------------------------------------------------------------------------------


def story_strip(story_md: str, *, trusted: bool, description: str | None) -> None:
    """The story (what users saw, what the valve did, the fix) in a strip of fixed height above the
    steps, its sections side by side; collapsible, and it stays as the person left it (`story_open`
    in the session) across steps and incidents. A built-in story is our markdown; an upload's is
    rendered through the safe subset, and a config's description is plain text."""
    if not story_md.strip() and not (description or "").strip():
        return
    if state.STORY_OPEN not in st.session_state:
        st.session_state[state.STORY_OPEN] = True
    with (
        st.expander(
            "The story: what users saw, what the valve did, the fix", key=state.STORY_OPEN, on_change="rerun"
        ),
        st.container(height=130, border=False),
    ):
        if not story_md.strip():
            st.text(description)
            return
        sections = story_sections(story_md)
        columns = st.columns(len(sections)) if len(sections) > 1 else [st.container()]
        for column, (title, body) in zip(columns, sections.items(), strict=True):
            with column:
                if trusted:
                    if title:
                        st.markdown(f"**{title}**")
                    st.markdown(body)
                else:
                    heading = f"## {title}\n" if title else ""
                    st.html(markdown_html(heading + body, heading_shift=2))


def step_heading(step: int, last: int, summary: str) -> None:
    """`Step 7 of 10` and, as plain text, the input that arrived."""
    st.subheader(f"Step {step} of {last}", anchor=False)
    st.text(summary)


def narration_panel(parts: list[str], t: TimeFormat, rules: Sequence[Rule] = (), key: str = "") -> None:
    """What the valve and operator did at this step, rule by rule (the same text as `explain`), in a
    box of bounded height so a busy step never pushes the output and channels off the screen; under
    it, folded, what each rule the step cites means (`wmviz.core.rules.step_rules`), so a reader
    never has to leave the page to look up `S1b`."""
    day = f"Times are {t.zone_label} on {t.day} unless dated." if t.short and t.day else None
    lines = sum(1 + len(part) // 58 for part in parts)  # ~58 characters a line in its column
    with st.container(height=min(34 + 24 * lines, 190), key=f"{key}narration"):
        st.text("\n".join(f"• {part}" for part in parts), help=day)
    if rules:
        with st.expander(f"Rules cited: {' · '.join(r.id for r in rules)}", key=f"{key}rules_legend"):
            st.markdown("\n".join(f"- **{r.id}** ({r.part}): {r.meaning}" for r in rules))
            st.caption("Each rule at length, with the method that implements it: docs/rules.md")


def output_panel(cards: Sequence[model.OutputCard]) -> None:
    """The emitted output watermark(s), readable, the raw number one hover away."""
    per_row = 2 if len(cards) > 2 else len(cards)
    if any(c.dated for c in cards):  # a date in the label: one card a line, nothing cut
        per_row = 1
    for start in range(0, len(cards), per_row):
        columns = st.columns(per_row)
        for column, card in zip(columns, cards[start : start + per_row], strict=False):
            column.metric(literal(card.label), card.value, help=f"raw: {card.raw} (ms)")


def table(shown: ShownTable, key: str) -> None:
    """A table built with the step (`wmviz.view.step_view`), as its escaped HTML: as wide as its box,
    each cell wrapping, a long list scrolling under its header; nothing converted per session."""
    st.container(key=key).html(f'<div class="wmviz-table-box">{shown.html}</div>')


def frame_table(frame: pd.DataFrame, key: str) -> None:
    """A table built on the page (the job graph's), drawn as `table` draws one built with the step."""
    st.container(key=key).html(f'<div class="wmviz-table-box">{grid_table(frame)}</div>')


def channel_tables(tables: Sequence[ShownTable], key: str = "") -> None:
    """One channel table per valve (`wmviz.view.step_view.channel_tables`): watermark readable and
    raw, status coloured, the channel(s) holding the minimum marked; each column as wide as what it
    may hold at any step. Drawn as the escaped HTML built with the step: one element, nothing
    converted per session."""
    box = st.container(key=f"{key}channels")
    for shown in tables:
        box.html(
            f'<p class="wmviz-table-title">{esc(shown.title)}</p>'
            f'<div class="wmviz-table-box">{shown.html}</div>'
        )


# --- the operator ----------------------------------------------------------------------------------


def operator_panel(view: OperatorView, moment: tuple, key: str = "") -> None:
    """Timers, windows, the join changelog and drops as tabs (`wmviz.view.step_view.operator_view`);
    the tab that matters at this step (a retraction, a firing, a drop, a timer) is the one shown
    when the step (`moment`: timeline, instance, step) changes, each with its cumulative view."""
    choice = view.choice
    box = st.container(key=f"{key}operator")
    if choice.reason:
        box.caption(f"Operator: {choice.shown} shown because {literal(choice.reason)}.")
    else:
        box.caption("Operator")
    tab_key = f"{key}{state.OPERATOR_TAB}"
    _follow_the_step(tab_key, moment, choice)
    # A tab that tracks its state, so the page can select it: a tab's `default` applies only when
    # the tabs are first drawn, and stepping on would keep the tab of the first step shown.
    drawn = box.tabs(list(choice.names), key=tab_key, on_change="rerun")
    tabs = dict(zip(choice.names, drawn, strict=True))
    with tabs[om.TIMERS]:
        st.caption(view.timers_caption)
        if view.timers.empty:
            st.caption("No timer is pending, registered or fired at this step.")
        table(view.timers, f"{key}timers_table")
    if om.WINDOWS in tabs and view.firings is not None and view.panes is not None:
        with tabs[om.WINDOWS]:
            st.caption(view.windows_caption)
            table(view.firings, f"{key}firings")
            st.markdown(f"**{view.panes_heading}**")
            table(view.panes, f"{key}panes_table")
    if om.CHANGELOG in tabs:
        with tabs[om.CHANGELOG]:
            _changelog_tab(view, key)
    with tabs[om.DROPPED]:
        st.caption(view.dropped_caption)
        if not view.dropped_now.empty:
            table(view.dropped_now, f"{key}dropped_table")
        if not view.dropped_so_far.empty:
            st.markdown("**Dropped so far**")
            table(view.dropped_so_far, f"{key}dropped_so_far")


def _changelog_tab(view: OperatorView, key: str) -> None:
    """The join's changelog: what it emitted at this step, the changelog so far, its cache."""
    st.caption(view.changelog_caption)
    if view.changelog_now is not None and not view.changelog_now.empty:
        st.markdown("**Emitted at this step**")
        table(view.changelog_now, f"{key}changelog_now")
        st.markdown(
            "**The changelog so far**",
            help="trace rows: the trace rows each side came from · corrects: the # of the row a -U retracts",
        )
    if view.changelog is not None and not view.changelog.empty:
        table(view.changelog, f"{key}changelog_table")
    st.markdown("**Rows the join still caches**")
    if view.join_cache is not None and not view.join_cache.empty:
        table(view.join_cache, f"{key}join_cache")
    st.caption(om.MATCHED_HELP)


def _follow_the_step(tab_key: str, moment: tuple, choice: om.PanelChoice) -> None:
    """Select the tab that matters whenever the step changes, however it was reached (a key, a
    button, the slider, a link); between steps a tab the person clicked stays."""
    follows = st.session_state.setdefault(state.TAB_FOLLOWS, {})
    if follows.get(tab_key) != moment or st.session_state.get(tab_key) not in choice.names:
        follows[tab_key] = moment
        st.session_state[tab_key] = choice.shown


# --- below the fold ------------------------------------------------------------------------------------


def watermark_chart(fig: go.Figure | str, key: str = "watermark_chart") -> None:
    """Every channel's watermark and the output over steps (built by `figures.watermark_figure`):
    a figure, or its JSON built once with the step."""
    st.plotly_chart(_figure(fig), width="stretch", key=key)


class _Built(BaseFigure):
    """A Plotly figure whose JSON was built once (`wmviz.view.step_view`). `st.plotly_chart` takes
    any Plotly figure and asks it for its dict: this one gives a new copy of the built one, so a
    shared view is never changed by a reader, and Plotly never builds and validates it again."""

    def __init__(self, spec: str) -> None:  # no BaseFigure state: only to_dict is asked
        self._spec = spec

    def to_dict(self) -> dict:
        return json.loads(self._spec)


def _figure(fig: go.Figure | str) -> go.Figure | BaseFigure:
    return _Built(fig) if isinstance(fig, str) else fig


def heap_and_input(heaps: Sequence[HeapView], row: ShownTable) -> None:
    """The aligned min-heap of each valve as a tree, and every field of the input row."""
    left, right = st.columns([3, 2])
    with left:
        for heap in heaps:
            where = "" if heap.input == "0" else f" of input {literal(heap.input)}"
            st.markdown(f"**Aligned min-heap{where}** (the root is the output candidate)")
            st.plotly_chart(
                _figure(heap.spec),
                width="stretch",
                key=f"heap_{heap.input}",
                config={"displayModeBar": False},
            )
    with right:
        st.html(
            '<p class="wmviz-table-title">The input row, every field</p>'
            f'<div class="wmviz-table-box">{row.html}</div>'
        )


def lag_mode_choice() -> str:
    """How the overview colours each instance: by lag behind the leading instance or (absolute)
    behind the newest input time."""
    return st.radio(
        "Colour each instance by its lag",
        figures.LAG_MODES,
        horizontal=True,
        key="lag_mode",
        help="Behind the leading instance finds the one stuck subtask; behind the newest input time "
        "(absolute) also shows a stall of every instance at once.",
    )


def overview_chart(spec: str) -> None:
    """Every instance's output watermark over arrival order, to find the stuck subtask (built once
    for every session: `step_cache.overview`)."""
    st.plotly_chart(_figure(spec), width="stretch", key="overview")


def spark_status(service: SparkService) -> bool:
    """The sidebar's Spark box: starting / warming up / ready / failed, the master URL, the cores,
    and the job running now. While anything is under way it refreshes itself every second; the
    page's next run (a person's next click or key) draws it still. It never reruns the page by
    itself: that would close a select box or a form a person has open. Returns whether it is
    refreshing itself."""
    refreshing = _busy(service)

    @st.fragment(run_every=1.0 if refreshing else None)
    def box() -> None:
        status = service.status()
        icon = {"ready": ":material/check_circle:", "failed": ":material/error:"}.get(
            status.state, ":material/hourglass_top:"
        )
        timing = _spark_timing(status)
        cores = f" · {status.cores} cores" if status.cores else ""
        with st.container(border=True, key="spark_status"):
            st.markdown(f"{icon} **Spark {status.state}** · {timing}{cores}")
            st.caption(f"master `{status.master}`")
            if status.live_warming:
                st.caption("warming live mode: a one-step query, so that your first live run starts faster")
            if status.job:
                st.caption(f"running: {status.job}")
            if status.error:
                st.caption(f"error: {status.error}")

    with st.sidebar:
        box()
    return refreshing


def _spark_timing(status: SparkStatus) -> str:
    """`up in 9 s`, `4 s so far`, `after 3 s` (failed), or when a lazily started Spark will start."""
    if status.state == "ready":
        return f"up in {status.seconds:.0f} s"
    if status.state == "failed":
        return f"after {status.seconds:.0f} s"
    if status.state == "not started":
        return "starts when a run needs it"
    if status.state == "starting soon":
        return "starts once the page is drawn"
    return f"{status.seconds:.0f} s so far"


def _busy(service: SparkService) -> bool:
    status = service.status()
    return status.state in ("starting soon", "starting", "warming up") or status.job is not None
