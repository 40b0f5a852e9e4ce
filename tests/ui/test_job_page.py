"""The job graph page (AppTest) cannot be taken down or spoofed by a recording (issue 33), and says
when nothing is stalled (issue 30 item 3).

- Opening the graph and moving its slider build no valve trace; its button builds one, and only
  when the trace is within the import budget (`WMVIZ_MAX_IMPORT_ROWS`), else a notice says so.
- An uploaded recording is judged a job recording (the whole file read and decoded) once, not on
  every rerun.
- A vertex name on the button is text, not markdown (no image every viewer fetches).
"""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.analysis.test_blame_healthy import job
from tests.conftest import REPO
from tests.support import job_shape as js
from tests.support.markdown_text import shown
from wmviz.record.job import JobRecording, Vertex, to_json
from wmviz.ui import job_view

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


def upload(name: str, rec: JobRecording) -> str:
    import json

    from wmviz.store import uploads

    return uploads.store_upload(name, json.dumps(to_json(rec)).encode(), None).digest


def test_the_valve_trace_is_built_only_when_its_button_is_pressed(monkeypatch):
    built = []
    real = job_view.vertex_trace
    monkeypatch.setattr(job_view, "vertex_trace", lambda rec, vid: built.append(vid) or real(rec, vid))
    app = open_job(job=JOB, at=str(js.T0 + 200_000), vertex=js.WINDOW)
    app.select_slider(key="job_at").set_value(js.T0 + 600_000).run()
    assert not app.exception and built == []
    app.button(key="job_valve").click().run()
    assert not app.exception, app.exception
    assert built == [js.WINDOW] and app.query_params.get("trace")


def test_a_valve_trace_over_the_budget_is_a_notice_not_a_build(monkeypatch):
    monkeypatch.setenv("WMVIZ_MAX_IMPORT_ROWS", "100")
    monkeypatch.setattr(job_view, "vertex_trace", lambda rec, vid: pytest.fail("built"))
    app = open_job(job=JOB, vertex=js.WINDOW)
    notice = shown(app.info[0].value)
    assert "Window: revenue -> Sink: warehouse: its valve step-through would be a trace of about" in notice
    assert "more than wmviz builds: 100 (WMVIZ_MAX_IMPORT_ROWS)" in notice
    assert not [b for b in app.button if b.key == "job_valve"]


def test_an_uploaded_recording_is_judged_once_not_at_every_rerun(monkeypatch):
    judged = []
    real = job_view.is_recording_bytes
    monkeypatch.setattr(job_view, "is_recording_bytes", lambda data: judged.append(1) or real(data))
    digest = upload("judged-once.json", job())
    app = open_job(job=digest)
    app.select_slider(key="job_at").set_value(job().times()[3]).run()
    app.run()
    assert not app.exception, app.exception
    assert len(judged) == 1


def test_a_healthy_upload_says_no_stall_and_a_hostile_name_stays_text():
    app = open_job(job=upload("healthy.json", job()))
    said = " ".join(shown(m.value) for m in app.markdown)
    assert "No stall:" in said and "nothing is stalled; the slowest path is 'win' subtask 0" in said
    image = "![x](https://evil.example/p.png) win"
    rec = job()
    hostile = JobRecording(rec.job, (rec.vertices[0], Vertex("w", image, 1)), rec.edges, rec.series)
    app = open_job(job=upload("hostile.json", hostile), vertex="w")
    label = app.button(key="job_valve").label
    assert "![x](" not in label and f"Step through {image} subtask 0" in shown(label)
