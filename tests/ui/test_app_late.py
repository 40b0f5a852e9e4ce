"""The "Late rows" table beside the step (wmviz/ui/late_view.py) through Streamlit's AppTest: the
instance's ledger filtered by fate, each step a link to the page at that step, the step on screen
highlighted."""

from __future__ import annotations

from html.parser import HTMLParser
from urllib.parse import parse_qs

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO
from wmviz.ui import state
from wmviz.ui.late_view import LEDGER_CLASS

SCENARIO = "late-data-allowed-lateness"


@pytest.fixture(scope="module", autouse=True)
def timeline_cache(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("WMVIZ_CACHE", str(tmp_path_factory.mktemp("timelines")))
    yield
    mp.undo()


def open_app(query: dict[str, str]) -> AppTest:
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    for key, value in query.items():
        app.query_params[key] = value
    app.run()
    assert not app.exception, app.exception
    return app


class _Ledger(HTMLParser):
    """The ledger table's rows: (class of the row, cell texts, the step cell's link)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.inside = False
        self.rows: list[tuple[str, list[str], str]] = []
        self.columns: list[str] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        named = {k: v or "" for k, v in attrs}
        if tag == "table":
            self.inside = LEDGER_CLASS in named.get("class", "")
        elif self.inside and tag == "tr" and self.columns:
            self.rows.append((named.get("class", ""), [], ""))
        elif self.inside and tag in ("td", "th"):
            self._cell = []
        elif self.inside and tag == "a" and self.rows:
            cls, cells, _ = self.rows[-1]
            self.rows[-1] = (cls, cells, named["href"])

    def handle_endtag(self, tag):
        if self.inside and tag in ("td", "th") and self._cell is not None:
            text = "".join(self._cell)
            (self.rows[-1][1] if tag == "td" else self.columns).append(text)
            self._cell = None
        elif tag == "table":
            self.inside = False

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def ledger(app: AppTest) -> _Ledger:
    found = _Ledger()
    for element in app.get("html"):
        if LEDGER_CLASS in element.value:
            found.feed(element.value)
    return found


def test_late_rows_beside_the_step_link_to_their_steps_and_mark_the_step_on_screen():
    app = open_app({"scenario": SCENARIO, "engine": "local", "step": "9"})
    assert app.get_by_key(state.LATE_ROWS) is not None
    table = ledger(app)
    assert table.columns[:7] == ["step", "row", "event time", "CURRENT_WATERMARK", "behind", "fate", "rule"]
    rows = [(cls, cells[0], cells[3], cells[5], cells[7]) for cls, cells, _ in table.rows]
    assert rows == [
        ("", "7", "4", "added late", ""),
        ("now", "9", "6", "dropped", "numLateRecordsDropped"),
    ]
    link = parse_qs(table.rows[0][2].lstrip("?"))
    assert link["step"] == ["7"] and link["scenario"] == [SCENARIO] and link["engine"] == ["local"]

    # Following the link opens the page at that step, its row now the highlighted one.
    followed = open_app({k: v[0] for k, v in link.items()})
    assert int(followed.session_state[state.STEP]) == 7
    assert [(cls, cells[0]) for cls, cells, _ in ledger(followed).rows] == [("now", "7"), ("", "9")]


def test_the_fate_filter_shows_one_fate_or_every_record():
    app = open_app({"scenario": SCENARIO, "engine": "local", "step": "0"})
    control = app.segmented_control(key=state.LATE_FILTER)
    control.set_value("all").run()
    assert not app.exception, app.exception
    every = ledger(app).rows
    assert len(every) == 11 and every[0][0] == "now"
    assert {cells[5] for _, cells, _ in every} == {"kept", "added late", "dropped"}
    control = app.segmented_control(key=state.LATE_FILTER)
    control.set_value("dropped").run()
    assert [cells[0] for _, cells, _ in ledger(app).rows] == ["9"]


def test_a_run_without_an_operator_says_why_it_has_no_ledger():
    app = open_app({"scenario": "flink-38477-zero-output", "engine": "local", "step": "0"})
    assert ledger(app).rows == []
    assert any("No operator in this run" in c.value for c in app.caption)
