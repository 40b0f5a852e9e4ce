"""The freshness budget on the job graph page (AppTest): beside the blame chain, the table of the
moment's causes and the bars per cause over time, following the time slider and the picked vertex."""

from __future__ import annotations

import json

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO
from tests.support import job_shape as js
from tests.support.html_tables import read_tables
from tests.support.markdown_text import shown

JOB = "silent-split-holds-the-whole-job"


@pytest.fixture(scope="module", autouse=True)
def data_root(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("WMVIZ_CACHE", str(tmp_path_factory.mktemp("data")))
    mp.setenv("WMVIZ_SPARK_START", "lazy")
    yield
    mp.undo()


def causes(app: AppTest) -> list[dict]:
    """The lag table's rows: the one dataframe with a `cause` column (the page also shows the blame
    chain and every vertex's group, in an order the layout may change)."""
    table = next(t.frame for h in app.get("html") for t in read_tables(h.value) if "cause" in t.columns)
    return table.to_dict("records")


def bars(app: AppTest) -> dict:
    chart = next(c for c in app.get("plotly_chart") if "job_lag_bars" in c.proto.id)
    return json.loads(chart.proto.spec)


def test_the_page_shows_the_budget_and_its_bars_and_they_follow_the_slider():
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    app.query_params["job"] = JOB
    app.query_params["at"] = str(js.T0 + 600_000)
    app.run()
    assert not app.exception, app.exception
    assert any(h.value == "How late, and why" for h in app.subheader)
    assert any(
        "Window: revenue -> Sink: warehouse subtask 0 is 5m 40.001s behind the wall clock" in shown(m.value)
        for m in app.markdown
    )
    top = causes(app)[0]
    assert (top["cause"], top["kind"], top["where"]) == (
        "stall",
        "measured",
        "Source: orders subtask 2 split orders-5",
    )
    figure = bars(app)
    names = [trace["name"] for trace in figure["data"]]
    assert names == ["out-of-orderness", "window", "backlog", "stall"]
    assert all(trace["type"] == "bar" for trace in figure["data"])
    assert figure["layout"]["barmode"] == "relative"
    assert figure["layout"]["shapes"][0]["x0"] == js.T0 + 600_000  # the moment marked
    stall = next(trace for trace in figure["data"] if trace["name"] == "stall")
    assert stall["y"][-1] == 304_999 and stall["y"][0] == 0  # the stall grows at the end only

    app.select_slider(key="job_at").set_value(js.T0 + 200_000).run()
    assert not app.exception, app.exception
    top = causes(app)[0]
    assert (top["cause"], top["where"]) == ("backlog", "Source: payments subtask 1")
    assert bars(app)["layout"]["shapes"][0]["x0"] == js.T0 + 200_000
