"""Bringing your own trace: limits, storage, bundles, and the app opening an upload by its link."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO
from tests.support.markdown_text import shown
from wmviz.store import bundles, uploads
from wmviz.store.uploads import UploadError
from wmviz.trace.errors import TraceValidationError
from wmviz.trace.readers import read_trace

INCIDENT = (REPO / "sample_data" / "flink-38477-zero-output.jsonl").read_bytes()
BROKEN = INCIDENT.replace(b'"status": "FINISHED"', b'"status": "DONE"', 1).replace(
    b'{"ch": 1, "wm": 12}', b'{"ch": 9, "wm": "x"}'
)


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path))  # the data root: timelines/, uploads/, whatifs/
    return tmp_path


def test_a_2_gb_upload_is_refused_with_a_message_naming_the_file_its_size_and_the_limit():
    with pytest.raises(UploadError) as err:
        uploads.check_upload("orders.csv", 2 * 2**30, limit=200)
    assert str(err.value).startswith("orders.csv: 2,048.0 MB is over the upload limit of 200 MB")
    assert "WMVIZ_MAX_UPLOAD_MB" in str(err.value)


def test_the_upload_limit_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("WMVIZ_MAX_UPLOAD_MB", "5")
    uploads.check_upload("a.csv", 5 * 2**20)
    with pytest.raises(UploadError):
        uploads.check_upload("a.csv", 5 * 2**20 + 1)


def test_an_unknown_file_type_is_refused_before_reading_it():
    with pytest.raises(UploadError, match=r"notes\.txt: unknown trace format; expected one of \.csv"):
        uploads.check_upload("notes.txt", 10)


def test_the_same_upload_is_stored_once_under_its_digest_and_a_link_finds_it(cache):
    first = uploads.store_upload("prod trace.jsonl", INCIDENT, None)
    again = uploads.store_upload("prod trace.jsonl", INCIDENT, None)
    assert first == again and first.name == "prod_trace.jsonl"
    assert uploads.find_upload(first.digest) == first
    assert (
        read_trace(first.trace_path).rows
        == read_trace(REPO / "sample_data" / "flink-38477-zero-output.jsonl").rows
    )
    other = uploads.store_upload("prod trace.jsonl", INCIDENT, b'{"profile": "flip-38477"}')
    assert other.digest != first.digest and other.config_path is not None


@pytest.mark.parametrize("digest", [None, "", "../../etc", "zz" * 12, "0" * 23])
def test_a_malformed_or_unknown_digest_in_a_link_finds_nothing(digest):
    assert uploads.find_upload(digest) is None


def test_a_file_name_cannot_climb_out_of_the_upload_folder():
    assert uploads.safe_name("../../etc/passwd") == "passwd"
    assert uploads.safe_name("..\\..\\x.csv") == "x.csv"
    assert uploads.safe_name("<script>.csv") == "script_.csv"


def test_every_validation_issue_becomes_a_row_with_file_row_column_and_reason(cache):
    stored = uploads.store_upload("bad.jsonl", BROKEN, None)
    with pytest.raises(TraceValidationError) as err:
        read_trace(stored.trace_path)
    table = uploads.issues_frame(err.value)
    assert list(table.columns) == ["file", "row", "column", "reason"]
    assert len(table) == err.value.total == 3
    assert set(table["file"]) == {"bad.jsonl"}
    assert "DONE" in " ".join(table["reason"])


def test_a_bundle_round_trips_the_trace_the_config_and_the_view(cache):
    stored = uploads.store_upload("t.jsonl", INCIDENT, b'{"profile": "flip-38477"}')
    data = bundles.make_bundle(stored, {"step": "7", "profile": "flip-38477", "instance": "0"})
    bundle = bundles.open_bundle("b.zip", data)
    assert (bundle.trace_name, bundle.trace_bytes, bundle.config_bytes) == (
        "t.jsonl",
        INCIDENT,
        b'{"profile": "flip-38477"}',
    )
    assert bundle.view == {"instance": "0", "profile": "flip-38477", "step": "7"}
    assert uploads.store_upload(bundle.trace_name, bundle.trace_bytes, bundle.config_bytes) == stored


def _zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return out.getvalue()


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"not a zip", "not a zip file"),
        (_zip({"a.csv": b"x", "b.jsonl": b"y"}), "exactly one trace file, found a.csv, b.jsonl"),
        (_zip({"readme.txt": b"x"}), "exactly one trace file, found readme.txt"),
        (_zip({"a.csv": b"x", "view.json": b"{"}), "view.json: not valid JSON"),
        (_zip({"a.csv": b"x", "view.json": b"[1]"}), "view.json: expected a JSON object"),
    ],
)
def test_a_malformed_bundle_is_refused_with_what_is_wrong(data, message):
    with pytest.raises(UploadError) as err:
        bundles.open_bundle("b.zip", data)
    assert str(err.value).startswith("b.zip: ") and message in str(err.value)


# --- the app ---------------------------------------------------------------------------------------


def open_link(**query) -> AppTest:
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    for key, value in query.items():
        app.query_params[key] = value
    app.run()
    assert not app.exception, app.exception
    return app


def test_an_invalid_upload_shows_every_error_with_its_row_and_nothing_is_simulated(cache):
    stored = uploads.store_upload("prod.jsonl", BROKEN, None)
    app = open_link(trace=stored.digest, engine="local")
    assert "3 validation error(s)" in app.error[0].value and "nothing was simulated" in app.error[0].value
    table = app.dataframe[0].value
    assert list(table["row"]) == ["4", "4", "5"]
    assert {"prod.jsonl"} == set(table["file"])
    assert not app.slider and not app.get("plotly_chart")
    assert not (cache / "timelines").exists() or not any((cache / "timelines").iterdir())


def test_an_upload_with_a_config_name_takes_it_as_its_title_and_without_one_its_file_name(cache):
    named = uploads.store_upload("prod.jsonl", INCIDENT, b'{"name": "Checkout stalls after the deploy"}')
    app = open_link(trace=named.digest, engine="local")
    assert shown(app.title[0].value) == "Checkout stalls after the deploy"
    unnamed = uploads.store_upload("prod.jsonl", INCIDENT, b'{"name": "  "}')
    app = open_link(trace=unnamed.digest, engine="local")
    assert shown(app.title[0].value) == "Uploaded: prod.jsonl"


def test_a_valid_upload_opens_at_the_linked_step_and_offers_its_bundle(cache):
    stored = uploads.store_upload("prod.jsonl", INCIDENT, None)
    app = open_link(trace=stored.digest, engine="local", step="7", profile="flip-38477")
    assert shown(app.title[0].value) == "Uploaded: prod.jsonl"
    assert next(h.value for h in app.subheader if h.value.startswith("Step ")) == "Step 7 of 7"
    assert app.query_params["trace"] in (stored.digest, [stored.digest])
    assert app.query_params["profile"] in ("flip-38477", ["flip-38477"])
    assert app.button(key="bundle").label.startswith("Download bundle")
    assert "incident report (HTML" in app.button(key="report").label
    # Built at the click, for the step on screen, then saved by a button that holds it (a file
    # Streamlit builds on its own at the click was swept before a busy server's browser fetched it).
    assert not app.get("download_button")
    app.button(key="bundle").click().run()
    saves = [b.proto.label for b in app.get("download_button")]
    assert saves == ["Save the bundle of step 7"], saves


def test_a_link_to_an_upload_this_server_lacks_falls_back_with_a_notice(cache):
    app = open_link(trace="0123456789abcdef01234567", engine="local")
    assert app.title[0].value.startswith("FLINK-38477")
    assert any("upload its bundle" in t.value for t in app.toast)


def test_user_text_in_an_upload_is_never_rendered_as_markup(cache):
    nasty = "<img src=x onerror=alert(1)> **bold** <script>alert(2)</script>"
    config = json.dumps({"name": nasty, "description": nasty}).encode()
    trace = INCIDENT.split(b"\n", 1)[1]  # the incident without its own config line
    stored = uploads.store_upload("x.jsonl", trace, config)
    app = open_link(trace=stored.digest, engine="local")
    assert nasty in [t.value for t in app.text]  # shown as plain text
    assert all(nasty not in m.value for m in app.markdown)


def test_a_large_upload_goes_through_the_spark_engine_whatever_the_engine_switch_says(cache, monkeypatch):
    monkeypatch.setenv("WMVIZ_SPARK_UPLOAD_MB", "0.0001")  # ~100 bytes: the incident is larger
    stored = uploads.store_upload("big.jsonl", INCIDENT, None)
    app = open_link(trace=stored.digest, engine="local", step="7")
    assert any("validated and simulated on the Spark engine" in i.value for i in app.info)
    assert "engine spark" in app.caption[0].value
    assert app.metric[0].value == "MAX"


def test_the_same_bytes_under_another_name_is_another_upload_and_both_links_keep_working(cache):
    first = uploads.store_upload("a.jsonl", INCIDENT, None)
    second = uploads.store_upload("b.jsonl", INCIDENT, None)
    assert first.digest != second.digest
    assert uploads.find_upload(first.digest) == first and uploads.find_upload(second.digest) == second


# --- stories and what-ifs travel with an upload (issue 12) -------------------------------------------

KAFKA = REPO / "tests" / "data" / "kafka-rebalance.csv"


def test_an_upload_can_carry_a_story_the_page_shows_through_the_safe_subset(cache):
    story = (
        KAFKA.with_suffix(".md").read_text() + "\n<script>alert(1)</script> ![x](http://evil.example/x.png)"
    )
    stored = uploads.store_upload(
        KAFKA.name, KAFKA.read_bytes(), KAFKA.with_suffix(".json").read_bytes(), story_bytes=story.encode()
    )
    assert uploads.find_upload(stored.digest).story() == story
    app = open_link(trace=stored.digest, engine="local", step="151")
    shown = " ".join(h.proto.body for h in app.get("html"))
    assert "What users saw" in shown and "<strong>not even IDLE</strong>" in shown
    assert "&lt;script&gt;" in shown and "<img" not in shown and "<script>" not in shown
    assert all("evil.example" not in m.value for m in app.markdown)


def test_a_story_changes_the_uploads_digest_and_a_bad_story_is_refused(cache):
    plain = uploads.store_upload("t.csv", KAFKA.read_bytes(), None)
    told = uploads.store_upload("t.csv", KAFKA.read_bytes(), None, story_bytes=b"## What users saw\nx")
    assert plain.digest != told.digest and plain.story_path is None and told.story() == "## What users saw\nx"
    with pytest.raises(uploads.UploadError, match="UTF-8"):
        uploads.check_story("story.md", b"\xff\xfe")
    with pytest.raises(uploads.UploadError, match="at most"):
        uploads.check_story("story.md", b"x" * (uploads.STORY_LIMIT + 1))


def test_a_bundle_carries_the_story_and_the_what_if_of_its_view(cache):
    stored = uploads.store_upload("t.jsonl", INCIDENT, None, story_bytes=b"## The fix\nIdle sooner.")
    view = {"trace": stored.digest, "step": "4", "compare": "whatif:eyJvcCI6ImRlbGV0ZSJ9"}
    bundle = bundles.open_bundle("b.zip", bundles.make_bundle(stored, view))
    assert bundle.story_bytes == b"## The fix\nIdle sooner." and bundle.view["compare"] == view["compare"]
    again = uploads.store_upload(bundle.trace_name, bundle.trace_bytes, None, story_bytes=bundle.story_bytes)
    assert again.digest == stored.digest


def test_the_committed_kafka_fixture_is_exactly_what_its_generator_writes():
    from tests.support.kafka_trace import csv_text, rows

    assert KAFKA.read_text(encoding="utf-8") == csv_text()
    assert 440 <= len(rows()) <= 500  # a realistic ~468-row export
