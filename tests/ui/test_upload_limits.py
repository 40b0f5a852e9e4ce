"""The upload box's limits (issue 33): Streamlit takes no more than wmviz's own limit, so the page
states one number in its caption and every drop zone; the job-recording sniffer and the trace
reader after it refuse hostile JSON quickly and without building it."""

from __future__ import annotations

import json
import time
import tomllib
import tracemalloc

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO
from wmviz.record.job import is_recording_bytes
from wmviz.store import uploads
from wmviz.trace.errors import TraceValidationError
from wmviz.trace.readers import read_trace

NESTED = b"[" * 300_000 + b'"wmviz-job/1"'  # 300 KB: deeper than any decoder's stack
LISTS = b"[" + b"[]," * 2_500_000 + b'"wmviz-job/1"]'  # 7.5 MB of empty lists


def test_streamlit_takes_uploads_up_to_wmviz_own_limit_and_no_more():
    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text(encoding="utf-8"))
    assert config["server"]["maxUploadSize"] == uploads.DEFAULT_LIMIT_MB


@pytest.mark.parametrize(("env", "limit"), [(None, 200), ("5", 5), ("5000", 200)])
def test_the_page_states_one_limit_in_its_caption_and_every_drop_zone(tmp_path, monkeypatch, env, limit):
    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path))
    if env is None:
        monkeypatch.delenv("WMVIZ_MAX_UPLOAD_MB", raising=False)
    else:
        monkeypatch.setenv("WMVIZ_MAX_UPLOAD_MB", env)
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    app.query_params["scenario"] = "flink-38477-zero-output"
    app.query_params["engine"] = "local"
    app.run()
    assert not app.exception, app.exception
    zones = [e.proto.max_upload_size_mb for e in app.get("file_uploader")]
    assert zones and set(zones) == {limit}, zones  # the drop zones' "Limit … per file"
    (caption,) = [c.value for c in app.sidebar.caption if "up to" in c.value]
    assert f"up to {limit:,} MB" in caption


def _cost(call):
    """What `call()` returns, the seconds it took and the most memory it held (bytes)."""
    tracemalloc.start()
    start = time.perf_counter()
    try:
        result = call()
    finally:
        seconds = time.perf_counter() - start
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    return result, seconds, peak


@pytest.mark.parametrize("data", [NESTED, LISTS], ids=["nested", "lists"])
def test_the_recording_sniffer_reads_a_bounded_head_not_the_whole_file(data):
    found, seconds, peak = _cost(lambda: is_recording_bytes(data))
    assert found is False
    assert peak < 1 << 20, (seconds, peak)  # a bounded head: memory, not time, so a busy machine passes


def test_the_sniffer_still_knows_a_recording():
    job = (REPO / "sample_data" / "jobs" / "silent-split-holds-the-whole-job.json").read_bytes()
    assert is_recording_bytes(job) and is_recording_bytes(b"\xef\xbb\xbf \n" + job + b"\n")
    assert is_recording_bytes(json.dumps({"format": "wmviz-job/1", "job": "j"}, indent=2).encode())
    assert not is_recording_bytes(b'{"config": {"name": "wmviz-job/1"}}\n{"kind": "watermark"}\n')
    assert not is_recording_bytes(b'{"format": "wmviz-job/1", ')  # cut short: not one object
    assert not is_recording_bytes(b'{"format": "wmviz-job/10"}')


@pytest.mark.parametrize("data", [NESTED, LISTS], ids=["nested", "lists"])
def test_the_trace_reader_after_it_refuses_the_same_json_quickly(tmp_path, data):
    path = tmp_path / "hostile.json"
    path.write_bytes(data)

    def read():
        with pytest.raises(TraceValidationError) as err:
            read_trace(path)
        return str(err.value)

    message, seconds, peak = _cost(read)
    assert message.startswith("hostile.json:1: line is not a JSON object") or "nested" in message, message
    assert peak < 4 * len(data) + (16 << 20), (seconds, peak)
