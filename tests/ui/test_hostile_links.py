"""Links and bundles under attack (issue 24): every value a URL or a bundle's view.json gives is
bounded and validated once, in the pure view layer; a bad one falls back with a notice on the page,
never a traceback with the server's paths, and a reload of the link stays clean. A bundle's member
count is read from the end of the zip before its directory is parsed."""

from __future__ import annotations

import base64
import io
import struct
import zipfile

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO
from wmviz.analysis.whatif_edit import Change
from wmviz.analysis.whatif_token import TOKEN_LIMIT, decode_edit, encode_edit
from wmviz.store import bundles, uploads
from wmviz.store.uploads import UploadError
from wmviz.store.zipend import ZipEnd, zip_end
from wmviz.view.timefmt import TimeFormat, zone_known
from wmviz.view.url import VALUE_LIMIT, parse_view

INCIDENT = (REPO / "sample_data" / "flink-38477-zero-output.jsonl").read_bytes()
HOSTILE_ZONES = [
    "Europe",
    "America/Argentina",
    "Etc",
    "a" * 300,
    "Europe/" + "b" * 250,
    "zone.tab",
    "../../etc/passwd",
    "/etc/localtime",
    "Europe//Berlin",
    "Europe/Berlin\x00",
    "é/ü",
]


def deep_token(depth: int = 1500) -> str:
    """A what-if token within TOKEN_LIMIT whose JSON nests `depth` deep."""
    text = '{"instance":"0","step":1,"op":"change","fields":{"value":' + "[" * depth + "]" * depth + "}}"
    token = base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")
    assert len(token) <= TOKEN_LIMIT
    return token


@pytest.fixture(autouse=True)
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path))
    monkeypatch.setenv("WMVIZ_SPARK_START", "lazy")
    return tmp_path


# --- the pure layer ----------------------------------------------------------------------------------


@pytest.mark.parametrize("zone", HOSTILE_ZONES)
def test_a_zone_folder_or_an_overlong_or_odd_zone_is_unknown_not_an_oserror(zone):
    assert not zone_known(zone)
    with pytest.raises(ValueError, match="unknown time zone"):
        TimeFormat(zone=zone)
    view = parse_view({"tz": zone}, ["s"], "s")
    assert view.zone == "UTC" and len(view.notes) == 1 and "unknown time zone" in view.notes[0]
    assert len(view.notes[0]) < 120  # quoted, not echoed whole


@pytest.mark.parametrize("zone", ["Europe/Berlin", "America/Argentina/Buenos_Aires", "Etc/GMT+5", "UTC"])
def test_real_zones_are_still_known(zone):
    assert zone_known(zone) and parse_view({"tz": zone}, ["s"], "s").zone == zone


def test_a_deep_whatif_token_is_a_clean_value_error_not_a_recursion_error():
    with pytest.raises(ValueError, match=r"nested \d+ deep"):
        decode_edit(deep_token())
    edit = Change("0", 1, {"value": "x", "watermark_ms": 5})
    assert decode_edit(encode_edit(edit)) == edit


def test_a_compare_target_that_is_no_run_falls_back_with_a_note():
    view = parse_view({"compare": "flink-9"}, ["s"], "s")
    assert view.compare is None and "compare" in view.notes[0]
    assert parse_view({"compare": "flip-38477"}, ["s"], "s").compare == "flip-38477"
    token = "whatif:" + deep_token()
    assert parse_view({"compare": token}, ["s"], "s").compare == token  # decode_edit judges the token


@pytest.mark.parametrize(
    "field", ["scenario", "trace", "compare", "instance", "tz", "time", "engine", "step"]
)
def test_an_overlong_value_is_dropped_with_a_short_note(field):
    view = parse_view({field: "x" * (VALUE_LIMIT + 1)}, ["s"], "s")
    assert view == parse_view({}, ["s"], "s")
    assert len(view.notes) == 1 and "over" in view.notes[0] and len(view.notes[0]) < 120


# --- the page --------------------------------------------------------------------------------------------


def open_link(**query) -> AppTest:
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    app.query_params.update({"engine": "local", **query})
    app.run()
    return app


def no_traceback(app: AppTest) -> None:
    assert not app.exception, app.exception
    shown = " ".join(str(e.value) for e in [*app.error, *app.warning, *app.toast, *app.markdown])
    assert "site-packages" not in shown and "Traceback" not in shown


@pytest.mark.parametrize("tz", ["Europe", "a" * 300])
def test_a_link_with_a_zone_folder_or_a_long_zone_opens_in_utc_with_a_notice(tz):
    app = open_link(tz=tz)
    no_traceback(app)
    assert app.sidebar.selectbox(key="time_zone").value == "UTC"
    assert any("unknown time zone" in t.value for t in app.toast)
    app.run()  # a reload of the same page stays clean
    no_traceback(app)
    assert app.query_params.get("tz") in (None, [], "UTC", ["UTC"])  # the link no longer carries it


def test_a_link_with_a_deep_whatif_says_it_cannot_be_applied():
    app = open_link(compare="whatif:" + deep_token())
    no_traceback(app)
    assert any("what-if cannot be applied" in e.value and "deep" in e.value for e in app.error)
    app.run()
    no_traceback(app)


def bundle_app(view: dict, monkeypatch) -> AppTest:
    """The page right after a bundle with `view` as its view.json was uploaded (AppTest cannot
    drive the upload box: the sidebar's upload panel is replaced by one that takes the bundle in
    once, as `upload_panel` does, through `open_bundle` and `_adopt_view`)."""
    import streamlit as st

    from wmviz.ui import bring

    data = _zip({"t.jsonl": INCIDENT, "view.json": _json(view)})

    def upload_panel():  # the first run opens the page; the bundle comes in on the next
        runs = st.session_state["test_runs"] = st.session_state.get("test_runs", 0) + 1
        if runs != 2:
            return None
        bundle = bundles.open_bundle("b.zip", data)
        stored = uploads.store_upload(bundle.trace_name, bundle.trace_bytes, bundle.config_bytes)
        bring._adopt_view(stored, bundle.view)
        return stored

    monkeypatch.setattr(bring, "upload_panel", upload_panel)
    app = open_link()
    app.run()
    return app


@pytest.mark.parametrize(
    "view",
    [{"tz": "Europe"}, {"tz": "z" * 300}, {"compare": "whatif:" + deep_token()}, {"compare": "nope"}],
)
def test_a_bundle_whose_view_names_a_bad_zone_or_a_deep_whatif_opens_with_a_notice(view, monkeypatch):
    app = bundle_app(view, monkeypatch)
    no_traceback(app)
    assert app.title[0].value.startswith("Uploaded")
    said = [str(e.value).replace("\\", "") for e in [*app.toast, *app.error]]  # markdown-escaped
    assert any("bundle's view" in s or "cannot be applied" in s for s in said), said
    app.run()
    no_traceback(app)


# --- a bundle's member count, from the end of the zip -------------------------------------------------


def _json(view: dict) -> bytes:
    import json

    return json.dumps(view).encode()


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return out.getvalue()


def _many(count: int) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr("t.jsonl", INCIDENT)
        for i in range(count - 1):
            zf.writestr(f"{i}", b"")
    return out.getvalue()


@pytest.fixture(scope="module")
def zip64_bundle() -> bytes:
    """70,000 empty members: more than the classic end record counts, so it says 0xFFFF and the
    zip64 end record holds the real number."""
    data = _many(70_000)
    assert data[-22:-18] == b"PK\x05\x06" and data[-42:-38] == b"PK\x06\x07"
    return data


def _no_zipfile(monkeypatch):
    """Fail the test if open_bundle hands the archive to zipfile."""

    def refuse(*args, **kwargs):
        raise AssertionError("zipfile parsed the directory before the member count was checked")

    monkeypatch.setattr(bundles.zipfile, "ZipFile", refuse)


def test_a_bundle_of_many_members_is_refused_from_its_end_record_before_zipfile_reads_it(monkeypatch):
    data = _many(2_000)
    assert zip_end(data) == ZipEnd(2_000, zip_end(data).directory_bytes)
    _no_zipfile(monkeypatch)
    with pytest.raises(
        UploadError, match=r"^b\.zip: the bundle has 2,000 members; a bundle holds at most 64 "
    ):
        bundles.open_bundle("b.zip", data)


def test_the_zip64_end_record_is_read_for_the_member_count(zip64_bundle, monkeypatch):
    assert zip_end(zip64_bundle).members == 70_000
    _no_zipfile(monkeypatch)
    with pytest.raises(UploadError, match="the bundle has 70,000 members"):
        bundles.open_bundle("b.zip", zip64_bundle)


def test_an_end_record_that_understates_the_members_is_caught_by_the_directory_size(monkeypatch):
    data = bytearray(_many(2_000))
    struct.pack_into("<2H", data, len(data) - 22 + 8, 3, 3)  # the end record now claims 3 members
    assert zip_end(bytes(data)).members == 3
    _no_zipfile(monkeypatch)
    with pytest.raises(UploadError, match=r"the bundle's directory is [\d,]+ bytes, more than 64 members"):
        bundles.open_bundle("b.zip", bytes(data))


def test_a_zip64_locator_pointing_elsewhere_counts_the_larger_record(zip64_bundle):
    record = len(zip64_bundle) - 22 - 20 - 56  # the zip64 end record, just before the locator
    copy = bytearray(zip64_bundle[record : record + 56])  # a copy at the front says 70,000...
    data = bytearray(bytes(copy) + zip64_bundle)
    struct.pack_into("<2Q", data, 56 + record + 24, 2, 2)  # ...the one zipfile reads says 2
    struct.pack_into("<Q", data, len(data) - 22 - 20 + 8, 0)  # and the locator points at the copy
    assert zip_end(bytes(data)).members == 70_000
    struct.pack_into("<2Q", data, 24, 5, 5)
    struct.pack_into("<2Q", data, 56 + record + 24, 70_000, 70_000)
    assert zip_end(bytes(data)).members == 70_000


def test_the_member_budget_is_set_by_its_environment_variable(monkeypatch):
    bundle = _zip({"t.jsonl": INCIDENT, "view.json": b"{}", "config.json": b"{}"})
    assert bundles.open_bundle("b.zip", bundle).trace_name == "t.jsonl"
    monkeypatch.setenv("WMVIZ_MAX_BUNDLE_MEMBERS", "2")
    with pytest.raises(
        UploadError, match=r"has 3 members; a bundle holds at most 2 .*WMVIZ_MAX_BUNDLE_MEMBERS"
    ):
        bundles.open_bundle("b.zip", bundle)


@pytest.mark.parametrize("data", [b"", b"PK", b"not a zip at all" * 10, b"PK\x05\x06" + b"\0" * 10])
def test_data_without_an_end_record_is_not_a_zip(data):
    assert zip_end(data) is None
    with pytest.raises(UploadError, match="not a zip file"):
        bundles.open_bundle("b.zip", data)
