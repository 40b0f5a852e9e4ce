"""A trace `wmviz validate` accepts but the operator stops at (a split finished twice): the page says
the row, column and reason, as the CLI does (exit 2 there), and shows no traceback (issue 33: an
uncaught error with the server's paths filled the page)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.conftest import REPO

CONFIG = (
    b'{"config": {"name": "finished twice", "generator": {"emit": "periodic", "interval_ms": 1000, '
    b'"idle_timeout_ms": 5000, "resume": "flip27-released", "splits": {"0": ["orders-0", "orders-1"]}}}}\n'
)
TRACE = (
    CONFIG
    + b"""{"kind": "record", "channel": 0, "split": "orders-0", "event_ms": 20000, "proc_ms": 1}
{"kind": "split", "channel": 0, "split": "orders-1", "split_event": "finished", "proc_ms": 13500}
{"kind": "split", "channel": 0, "split": "orders-1", "split_event": "finished", "proc_ms": 13600}
"""
)


def test_a_trace_the_operator_stops_at_is_a_notice_naming_its_row(tmp_path, monkeypatch):
    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path))
    from wmviz.store import uploads

    stored = uploads.store_upload("twice.jsonl", TRACE, None)
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    app.query_params.update({"trace": stored.digest, "engine": "local"})
    app.run()
    assert not app.exception, app.exception[0].value
    said = " ".join(e.value for e in app.error).replace("\\", "")  # markdown escapes
    assert "the trace is valid, but the operator cannot process line 4: column split" in said, said
    assert "orders-1" in said and "/" not in said.split("line 4")[1]
