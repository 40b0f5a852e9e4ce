"""The channel table as escaped HTML (`wmviz.view.html_table`), shared by the page and the report."""

from __future__ import annotations

import pandas as pd

from tests.support.html_tables import read_tables
from wmviz.view.html_table import CHANNEL_TABLE_CLASS, channel_table, table
from wmviz.view.model import HOLDS
from wmviz.view.widths import FINISHED_LABEL


def _frame() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "channel": [0, 1, 2],
            "watermark": ["MIN", "2026-11-21 10:00:10.000Z", "MAX"],
            "status": ["IDLE", "ACTIVE", FINISHED_LABEL],
            "minimum": ["", HOLDS, ""],
        }
    )


def test_statuses_are_classed_by_their_first_word_and_the_minimum_is_marked():
    (read,) = read_tables(channel_table(_frame()))
    assert read.css_class == CHANNEL_TABLE_CLASS
    assert read.frame.to_dict("list") == _frame().astype(str).to_dict("list")
    assert [row[2] for row in read.classes] == ["status-IDLE", "status-ACTIVE", "status-ACTIVE"]
    assert [row[3] for row in read.classes] == ["", "holds", ""]
    assert {row[0] for row in read.classes} == {""}
    assert read.titles["minimum"].startswith("The channel(s)")


def test_columns_take_the_widths_given_and_none_when_any_is_unknown():
    widths = {"channel": 60, "watermark": 200, "status": 240, "minimum": 150}
    assert read_tables(channel_table(_frame(), widths))[0].width_of == widths
    assert read_tables(channel_table(_frame(), {"channel": 60}))[0].widths == []


def test_user_text_is_escaped_in_cells_and_headers():
    hostile = '<img src=x onerror="alert(1)">&'
    html = table([hostile], [[hostile]], titles={hostile: hostile})
    assert "<img" not in html and "&lt;img" in html and "&quot;alert(1)&quot;" in html
    (read,) = read_tables(html)
    assert read.columns == [hostile] and read.rows == [[hostile]] and read.titles == {hostile: hostile}
