"""The page's HTML tables read back in AppTest: the channel table is escaped HTML
(`wmviz.view.html_table`), not a data grid, so `app.dataframe` does not hold it."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser

import pandas as pd
from streamlit.testing.v1 import AppTest

from wmviz.view.html_table import CHANNEL_TABLE_CLASS


@dataclass
class ReadTable:
    """One `<table>` as read: its header, its cells (text), each cell's class, each column's width."""

    css_class: str
    columns: list[str] = field(default_factory=list)
    rows: list[list[str]] = field(default_factory=list)
    classes: list[list[str]] = field(default_factory=list)
    widths: list[int] = field(default_factory=list)
    titles: dict[str, str] = field(default_factory=dict)

    @property
    def frame(self) -> pd.DataFrame:
        return pd.DataFrame(self.rows, columns=self.columns)

    @property
    def width_of(self) -> dict[str, int]:
        return dict(zip(self.columns, self.widths, strict=True))


class _Reader(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tables: list[ReadTable] = []
        self._cell: list[str] | None = None
        self._title = ""
        self._in_body = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = {k: v or "" for k, v in attrs}
        if tag == "table":
            self.tables.append(ReadTable(named.get("class", "")))
        elif tag == "col":
            self.tables[-1].widths.append(int(re.fullmatch(r"width:(\d+)px", named["style"]).group(1)))
        elif tag == "tbody":
            self._in_body = True
        elif tag == "tr" and self._in_body:
            self.tables[-1].rows.append([])
            self.tables[-1].classes.append([])
        elif tag in ("td", "th"):
            self._cell, self._title = [], named.get("title", "")
            if tag == "td":
                self.tables[-1].classes[-1].append(named.get("class", ""))

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            text, table = "".join(self._cell), self.tables[-1]
            if tag == "th":
                table.columns.append(text)
                if self._title:
                    table.titles[text] = self._title
            else:
                table.rows[-1].append(text)
            self._cell = None
        elif tag == "tbody":
            self._in_body = False

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def read_tables(html: str) -> list[ReadTable]:
    reader = _Reader()
    reader.feed(html)
    return reader.tables


def channel_tables(app: AppTest) -> list[ReadTable]:
    """Every channel table on the page, in page order."""
    found = []
    for element in app.get("html"):
        found += [t for t in read_tables(element.value) if t.css_class == CHANNEL_TABLE_CLASS]
    return found


def channel_frames(app: AppTest) -> list[pd.DataFrame]:
    return [table.frame for table in channel_tables(app)]


def walk(node) -> Iterator:
    """Every element under `node` in page order (blocks opened)."""
    children = getattr(node, "children", None)
    if children is None:
        yield node
        return
    for index in sorted(children):
        yield from walk(children[index])
