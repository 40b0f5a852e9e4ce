"""Tables as escaped HTML (pure, no Streamlit): the channel table of the page and of the report.

Every cell is escaped text unless the caller wraps already-built HTML in `Html`, so user text (a
trace's keys and values, a channel name) can never become markup. The page draws the channel table
this way rather than as a Streamlit data grid: a grid coloured cell by cell needs a pandas Styler,
which Streamlit converts and marshals again in every session at every step (about a quarter of a
step's server CPU under load); this HTML is built once per step and shared (`wmviz.view.step_view`).
"""

from __future__ import annotations

import html
from collections.abc import Callable, Iterable, Mapping, Sequence

import pandas as pd

from wmviz.core.types import Status

CHANNEL_TABLE_CLASS = "wmviz-channels"
"""The class of a channel table's `<table>`: the page's and the report's CSS colour its cells."""

FIELDS_TABLE_CLASS = "wmviz-fields"
"""The class of the input row's table (every field of the row a step received)."""

GRID_TABLE_CLASS = "wmviz-grid"
"""The class of a table beside the step (timers, windows, drops, the join, the splits): as wide as
its box, each cell wrapping, so at 1440×900 no value is cut or scrolled out of sight (a data grid
cannot wrap a cell: a drop's reason, a window's result, a timer's purposes were cut)."""

STATUS_CLASSES = {status.value: f"status-{status.value}" for status in Status}
"""A status cell's class, by the status its text starts with (`ACTIVE (FINISHED, replayed as MAX)`
is coloured as ACTIVE: that is what the valve holds it as)."""

HOLDS_CLASS = "holds"
"""The class of a `minimum` cell that marks a channel holding the valve's minimum."""

FLAGGED_CLASS = "flagged"
"""The class of a split's status that holds nothing back (IDLE) or is held back (PAUSED)."""

KIND_CLASSES = {"+I": "kind-insert", "-U": "kind-retract", "+U": "kind-update"}
"""The class of a changelog row's kind."""

CHANNEL_HELP = {
    "minimum": "The channel(s) the valve's output waits on",
    "raw (ms)": "The watermark as Flink logs it",
}


class Html(str):
    """Text that is already HTML (built here from escaped parts): `table` puts it in a cell as is."""


def esc(text: object) -> str:
    """`text` as HTML text: `&`, `<`, `>` and both quotes escaped, so it is safe in content and in
    attribute values alike."""
    return html.escape("" if text is None else str(text), quote=True)


def _cell(value: object) -> str:
    if isinstance(value, Html):
        return str(value)
    if value is None or (isinstance(value, float) and pd.isna(value)):
        return ""
    return esc(value)


def _head(columns: Sequence[str], titles: Mapping[str, str] | None, widths: Sequence[int] | None) -> str:
    """The `<colgroup>` (pixel widths, integers only) and the header row (each name escaped, with
    its help as a tooltip)."""
    cols = "".join(f'<col style="width:{int(px)}px">' for px in widths) if widths else ""
    colgroup = f"<colgroup>{cols}</colgroup>" if cols else ""
    head = "".join(
        f'<th title="{esc(titles[c])}">{esc(c)}</th>' if titles and c in titles else f"<th>{esc(c)}</th>"
        for c in columns
    )
    return colgroup + (f"<thead><tr>{head}</tr></thead>" if head else "")


def table(
    columns: Sequence[str],
    rows: Iterable[Sequence[object]],
    *,
    row_classes: Sequence[str] | None = None,
    cell_classes: Sequence[Sequence[str]] | None = None,
    css_class: str = "",
    titles: Mapping[str, str] | None = None,
    widths: Sequence[int] | None = None,
) -> str:
    """An HTML table (no header row when `columns` is empty); every cell is escaped text unless it
    is `Html`. `row_classes` and `cell_classes` must be class names built by the caller from fixed
    names, never user text; `titles` are header tooltips, `widths` each column's width in pixels."""
    body = []
    for i, row in enumerate(rows):
        row_class = f' class="{row_classes[i]}"' if row_classes and row_classes[i] else ""
        cells = []
        for j, value in enumerate(row):
            cls = cell_classes[i][j] if cell_classes else ""
            attr = f' class="{cls}"' if cls else ""
            cells.append(f"<td{attr}>{_cell(value)}</td>")
        body.append(f"<tr{row_class}>{''.join(cells)}</tr>")
    attr = f' class="{css_class}"' if css_class else ""
    return f"<table{attr}>{_head(columns, titles, widths)}<tbody>{''.join(body)}</tbody></table>"


def _channel_cell_class(column: str, value: object) -> str:
    if column == "status":
        return STATUS_CLASSES.get(str(value).split(" ")[0], "")
    if column == "minimum" and value:
        return HOLDS_CLASS
    return ""


def channel_table(frame: pd.DataFrame, widths: Mapping[str, int] | None = None) -> str:
    """A valve's channel table (`wmviz.view.model`): each status cell classed by its status, each
    channel holding the minimum marked, the headers' help as tooltips; with `widths`, every column
    as wide as `wmviz.view.widths` says it may need at any step (the table keeps its layout as the
    person steps)."""
    columns = [str(c) for c in frame.columns]
    rows = list(frame.itertuples(index=False, name=None))
    cells = [[_channel_cell_class(c, v) for c, v in zip(columns, row, strict=True)] for row in rows]
    sized = [widths.get(c, 0) for c in columns] if widths else None
    return table(
        columns,
        rows,
        cell_classes=cells,
        css_class=CHANNEL_TABLE_CLASS,
        titles=CHANNEL_HELP,
        widths=sized if sized and all(sized) else None,
    )


def _grid_value(value: object) -> object:
    """A cell as the data grid showed it: a whole float (an integer column with a gap) without `.0`."""
    if isinstance(value, float) and not pd.isna(value) and value.is_integer():
        return int(value)
    return value


def grid_table(
    frame: pd.DataFrame,
    cell_classes: Mapping[str, Callable[[str], str]] | None = None,
    hover: Mapping[str, str] | None = None,
) -> str:
    """`frame` as a wrapping table (`GRID_TABLE_CLASS`); `cell_classes` gives, for a column, the
    class of a cell from its text (a fixed name, never user text); `hover` moves a column into the
    tooltip of another's cells (`{"watermark": "raw (ms)"}`: the raw number a hover away, as on the
    output card), one column fewer to fit the width."""
    moved = {source: shown for shown, source in (hover or {}).items() if source in frame.columns}
    columns = [str(c) for c in frame.columns if c not in moved]
    rows: list[list[object]] = []
    for record in frame.to_dict("records"):
        tips = {shown: f"{source}: {record[source]}" for source, shown in moved.items()}
        rows.append([_tipped(_grid_value(record[c]), tips.get(c)) for c in columns])
    classes = None
    if cell_classes:
        classes = [
            [cell_classes[c](str(v)) if c in cell_classes else "" for c, v in zip(columns, row, strict=True)]
            for row in rows
        ]
    return table(columns, rows, cell_classes=classes, css_class=GRID_TABLE_CLASS)


def _tipped(value: object, tip: str | None) -> object:
    """`value`, with `tip` (escaped) as its tooltip."""
    return value if tip is None else Html(f'<span title="{esc(tip)}">{_cell(value)}</span>')


def fields_table(frame: pd.DataFrame) -> str:
    """The input row's fields (`wmviz.view.model.input_table`: field, value), each value escaped
    text that may wrap (a payload can be long)."""
    columns = [str(c) for c in frame.columns]
    return table(columns, frame.itertuples(index=False, name=None), css_class=FIELDS_TABLE_CLASS)
