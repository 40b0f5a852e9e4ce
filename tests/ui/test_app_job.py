"""The job graph in the app (AppTest): a link opens it, the time slider moves the moment and the
link follows, a vertex opens its valve step-through at that moment, and the valve page leads back.

The built-in job is sample_data/jobs/silent-split-holds-the-whole-job.json, the 4-vertex fixture
of tests/support/job_shape.py imported with --idleness 30s.
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO
from tests.support import job_shape as js
from tests.support.html_tables import read_tables
from tests.support.markdown_text import shown
from wmviz.view.timefmt import TimeFormat

JOB = "silent-split-holds-the-whole-job"


@pytest.fixture(scope="module", autouse=True)
def data_root(tmp_path_factory):
    mp = pytest.MonkeyPatch()
    mp.setenv("WMVIZ_CACHE", str(tmp_path_factory.mktemp("data")))
    mp.setenv("WMVIZ_SPARK_START", "lazy")
    yield
    mp.undo()


def open_job(**query: str) -> AppTest:
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    for key, value in query.items():
        app.query_params[key] = value
    app.run()
    assert not app.exception, app.exception
    return app


def param(app: AppTest, key: str) -> str | None:
    value = app.query_params.get(key)
    return value[0] if isinstance(value, list) else value


def chain(app: AppTest) -> list[dict]:
    """The blame chain's rows (escaped HTML, each cell wrapping: nothing cut)."""
    table = next(t.frame for h in app.get("html") for t in read_tables(h.value) if "held by" in t.columns)
    return table.to_dict("records")


def test_a_link_opens_the_job_graph_at_its_moment_and_the_slider_moves_it():
    app = open_job(job=JOB, at=str(js.T0 + 200_000))
    assert app.title[0].value == "A silent Kafka split holds the whole job"
    assert app.session_state["job_at"] == js.T0 + 200_000
    assert (
        chain(app)[-1]["vertex"] == "Source: payments"
        and chain(app)[-1]["held by"] == "its own reading (no split metrics)"
    )
    figure = app.get("plotly_chart")[0].proto.spec
    assert TimeFormat()(js.T0 + 200_000) in figure  # the title says the moment in readable time
    app.select_slider(key="job_at").set_value(js.T0 + 600_000).run()
    assert not app.exception, app.exception
    assert chain(app)[-1]["vertex"] == "Source: orders" and chain(app)[-1]["held by"] == "split 'orders-5'"
    assert param(app, "at") == str(js.T0 + 600_000) and param(app, "job") == JOB


def test_a_bad_link_falls_back_and_says_why():
    app = open_job(job=JOB, at="soon", vertex="nope")
    assert app.session_state["job_at"] == js.T0 + 600_000  # the end
    assert app.session_state["job_vertex"] == ""
    assert any("nope" in t.value for t in app.toast)
    missing = open_job(job="no-such-job")
    assert "no job recording" in shown(missing.info[0].value)


def test_a_vertex_opens_its_valve_page_at_the_moment_and_the_page_leads_back():
    app = open_job(job=JOB, at=str(js.T0 + 200_000), vertex=js.WINDOW)
    assert "Step through Window: revenue -> Sink: warehouse subtask" in shown(
        app.button(key="job_valve").label
    )
    app.button(key="job_valve").click().run()
    assert not app.exception, app.exception
    assert param(app, "trace") and param(app, "job") == JOB and param(app, "vertex") == js.WINDOW
    instance, step = param(app, "instance"), int(param(app, "step"))
    assert app.session_state["instance"] == instance and app.session_state["step"] == step > 0
    assert "Window\\_revenue" in app.title[0].value  # the trace is named after the job and vertex
    app.button(key="fwd").click().run()  # a step on the valve page keeps the way back in the link
    assert not app.exception, app.exception
    assert int(param(app, "step")) == step + 1 and param(app, "job") == JOB
    app.button(key="job_back").click().run()
    assert not app.exception, app.exception
    assert param(app, "trace") is None and param(app, "at") == str(js.T0 + 200_000)
    assert app.session_state["job_vertex"] == js.WINDOW and app.title[0].value.startswith("A silent")


def test_a_source_vertex_says_it_has_no_valve_and_the_valve_pages_list_the_job():
    app = open_job(job=JOB, vertex=js.ORDERS)
    assert any("is a source" in c.value for c in app.caption)
    valve = open_job(scenario="flink-38477-zero-output", engine="local")
    valve.button(key=f"job_open_{JOB}").click().run()
    assert not valve.exception, valve.exception
    assert param(valve, "job") == JOB and valve.title[0].value.startswith("A silent")


def test_an_uploaded_recording_opens_on_its_graph_and_a_trace_upload_is_refused_there():
    from wmviz.store import uploads
    from wmviz.store.incidents import SAMPLES

    recording = (SAMPLES / "jobs" / f"{JOB}.json").read_bytes()
    stored = uploads.store_upload("incident.json", recording, None)
    app = open_job(job=stored.digest, at=str(js.T0 + 600_000))
    assert "Uploaded job" in app.title[0].value and "incident" in app.title[0].value
    assert chain(app)[-1]["held by"] == "split 'orders-5'"
    sample = (REPO / "sample_data" / "flink-38477-zero-output.jsonl").read_bytes()
    trace = uploads.store_upload("t.jsonl", sample, None)
    refused = open_job(job=trace.digest)
    assert "is a trace, not a job recording" in shown(refused.error[0].value)
    refused.button(key="job_as_trace").click().run()
    assert not refused.exception and param(refused, "trace") == trace.digest
