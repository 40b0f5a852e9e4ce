"""Stored uploads, what-ifs and bundles under attack (issue 13): a stored upload cut or changed on
disk is reported and never served, and uploading it again repairs it; storage is one root, bounded,
least recently used first out, each what-if stored once; a hostile bundle is a clean error."""

from __future__ import annotations

import io
import json
import os
import struct
import zipfile

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO
from wmviz.store import bundles, runs, uploads
from wmviz.store.uploads import DamagedUpload, UploadError
from wmviz.view.url import parse_view

INCIDENT = (REPO / "sample_data" / "flink-38477-zero-output.jsonl").read_bytes()


@pytest.fixture(autouse=True)
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path))
    monkeypatch.setenv("WMVIZ_SPARK_START", "lazy")
    return tmp_path


# --- stored uploads verified on read ------------------------------------------------------------------


def test_uploads_timelines_and_whatifs_live_under_one_root(root):
    assert uploads.uploads_root() == root / "uploads"
    assert runs.cache_root() == root / "timelines" and runs.whatifs_root() == root / "whatifs"


def test_a_stored_upload_cut_on_disk_is_reported_and_reuploading_repairs_it(root):
    stored = uploads.store_upload("t.jsonl", INCIDENT, None)
    lines = INCIDENT.splitlines(keepends=True)
    stored.trace_path.write_bytes(b"".join(lines[:5]))  # cut from its rows to five lines
    with pytest.raises(DamagedUpload, match=f"stored upload {stored.digest} .* is damaged"):
        uploads.find_upload(stored.digest)
    again = uploads.store_upload("t.jsonl", INCIDENT, None)
    assert again == stored and stored.trace_path.read_bytes() == INCIDENT
    assert uploads.find_upload(stored.digest) == stored
    aside = [p for p in (root / "uploads").iterdir() if ".damaged-" in p.name]
    assert len(aside) == 1 and (aside[0] / "t.jsonl").read_bytes() == b"".join(lines[:5])  # kept


@pytest.mark.parametrize("damage", ["edit", "drop config", "add config", "second trace", "rename"])
def test_any_change_to_a_stored_uploads_files_is_damage(root, damage):
    stored = uploads.store_upload("t.jsonl", INCIDENT, b'{"profile": "flip-38477"}')
    folder = stored.trace_path.parent
    if damage == "edit":
        stored.trace_path.write_bytes(INCIDENT.replace(b'"wm": 10', b'"wm": 11'))
    elif damage == "drop config":
        (folder / "config.json").unlink()
    elif damage == "add config":
        (folder / "story.md").write_text("hello")
    elif damage == "second trace":
        (folder / "other.csv").write_text("kind\n")
    else:
        stored.trace_path.rename(folder / "u.jsonl")
    with pytest.raises(DamagedUpload):
        uploads.find_upload(stored.digest)


def test_a_damaged_upload_is_said_on_the_page_and_not_served(root):
    stored = uploads.store_upload("prod.jsonl", INCIDENT, None)
    stored.trace_path.write_bytes(INCIDENT[:200])
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    app.query_params.update({"trace": stored.digest, "engine": "local"})
    app.run()
    assert not app.exception, app.exception
    assert any("is damaged" in e.value and "Upload the same files again" in e.value for e in app.error)
    assert not app.title[0].value.startswith("Uploaded")  # a built-in incident instead
    sources = [json.loads(m.read_text())["source"] for m in (root / "timelines").glob("*/meta.json")]
    assert sources and not any("prod" in s for s in sources)  # only the built-in incident ran


# --- bounded storage, what-ifs stored once ----------------------------------------------------------


def _entry(folder, name, size, used):
    entry = folder / name
    entry.mkdir(parents=True)
    (entry / "data").write_bytes(b"x" * size)
    (entry / runs.LAST_USED).touch()
    os.utime(entry / runs.LAST_USED, (used, used))
    return entry


def test_timelines_and_whatifs_share_one_budget_least_recently_used_first(root):
    timelines, whatifs = root / "timelines", root / "whatifs"
    old_timeline = _entry(timelines, "a" * 24, 400_000, 1000)
    (old_timeline / "meta.json").write_text("{}")
    old_whatif = _entry(whatifs, "b" * 24, 400_000, 2000)
    new_timeline = _entry(timelines, "c" * 24, 400_000, 3000)
    (new_timeline / "meta.json").write_text("{}")
    not_ours = _entry(whatifs, "notes", 400_000, 0)  # not a digest: never a candidate
    removed = runs.enforce_budget(timelines, keep=new_timeline, budget_mb=0.5)
    assert removed == [old_timeline, old_whatif]
    assert new_timeline.is_dir() and not_ours.is_dir()


def test_a_whatif_is_stored_once_and_made_again_after_eviction(root, monkeypatch):
    from wmviz.analysis.whatif_edit import Delete
    from wmviz.analysis.whatif_token import encode_edit
    from wmviz.store.incidents import built_in_incidents
    from wmviz.ui import compare_view

    incident = built_in_incidents(REPO / "sample_data")["flink-38477-zero-output"]
    target = compare_view.WHATIF_PREFIX + encode_edit(Delete("0", 3))
    stored, text, _ = compare_view.resolve_whatif(incident, target)
    assert "never arrived" in text
    files = [p for p in root.rglob("*.jsonl")]
    assert files == [stored.trace_path] and stored.trace_path.is_relative_to(root / "whatifs")
    evicted = runs.enforce_budget(runs.cache_root(), keep=root / "none", budget_mb=0)
    assert evicted == [stored.trace_path.parent]
    again, _, _ = compare_view.resolve_whatif(incident, target)
    assert again == stored and again.trace_path.is_file()


# --- bundles ------------------------------------------------------------------------------------------


def _zip(files: dict[str, bytes], method=zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", method) as zf:
        for name, data in files.items():
            zf.writestr(name, data)
    return out.getvalue()


def _lie_about_sizes(data: bytes, size: int) -> bytes:
    """The zip with every member's uncompressed size (local header and central directory) set to
    `size`: a bomb that declares a few bytes and inflates to megabytes."""
    out = bytearray(data)
    at = 0
    while (at := out.find(b"PK\x03\x04", at)) >= 0:
        struct.pack_into("<I", out, at + 22, size)
        at += 4
    at = 0
    while (at := out.find(b"PK\x01\x02", at)) >= 0:
        struct.pack_into("<I", out, at + 24, size)
        at += 4
    return bytes(out)


def test_a_bundle_is_bounded_by_the_upload_limit_counted_while_inflating(monkeypatch):
    monkeypatch.setenv("WMVIZ_MAX_UPLOAD_MB", "1")
    honest = _zip({"t.jsonl": b"\n" * (3 * 2**20)})
    with pytest.raises(UploadError, match=r"unpacks to more than the upload limit of 1 MB"):
        bundles.open_bundle("b.zip", honest)
    lying = _lie_about_sizes(honest, 100)
    with pytest.raises(UploadError, match=r"^b\.zip: t\.jsonl is damaged or unreadable"):
        bundles.open_bundle("b.zip", lying)
    # Two members, each under the limit, together over it: the count carries across members.
    pair = _zip({"config.json": b" " * (2**20 - 10), "t.jsonl": b"\n" * (2**20 - 10)})
    with pytest.raises(UploadError, match="unpacks to more than"):
        bundles.open_bundle("b.zip", pair, limit=2**20 + 100)


def test_a_bundle_member_with_a_bad_crc_is_a_clean_error():
    data = bytearray(_zip({"t.jsonl": INCIDENT}, zipfile.ZIP_STORED))
    at = data.find(b'"wm": 10')
    data[at + 6] = ord("9")
    with pytest.raises(UploadError, match=r"^b\.zip: t\.jsonl is damaged or unreadable \(Bad CRC-32"):
        bundles.open_bundle("b.zip", bytes(data))


def test_a_broken_lzma_member_is_a_clean_error():
    data = bytearray(_zip({"t.jsonl": INCIDENT}, zipfile.ZIP_LZMA))
    data[30 + len("t.jsonl") + 20] ^= 0xFF  # inside the LZMA stream (after its 4-byte header)
    with pytest.raises(UploadError, match=r"^b\.zip: t\.jsonl is damaged or unreadable \(Corrupt input"):
        bundles.open_bundle("b.zip", bytes(data))


def test_an_lzma_member_asking_for_a_huge_dictionary_is_refused_before_it_is_allocated():
    data = bytearray(_zip({"t.jsonl": INCIDENT}, zipfile.ZIP_LZMA))
    struct.pack_into("<I", data, 30 + len("t.jsonl") + 5, 3_313_500_160)  # a 3.3 GB dictionary
    with pytest.raises(UploadError, match=r"^b\.zip: t\.jsonl is damaged .*LZMA dictionary of 3,313,500,160"):
        bundles.open_bundle("b.zip", bytes(data))
    assert bundles.open_bundle("b.zip", _zip({"t.jsonl": INCIDENT}, zipfile.ZIP_LZMA)).trace_bytes == INCIDENT
    # An end record that places the directory 1,000 bytes later than it is: zipfile takes the
    # bytes before as a prefix, and the member's header lands before the file's start (fuzz seed 1
    # #24967); it is zipfile's refusal, not a struct.error.
    data = bytearray(_zip({"t.jsonl": INCIDENT}, zipfile.ZIP_LZMA))
    end = data.rfind(b"PK\x05\x06")
    struct.pack_into("<I", data, end + 16, struct.unpack_from("<I", data, end + 16)[0] + 1000)
    with pytest.raises(UploadError, match=r"^b\.zip: (not a zip file|t\.jsonl is damaged)"):
        bundles.open_bundle("b.zip", bytes(data))


def test_a_zip_needing_a_later_zip_version_is_a_clean_error():
    data = bytearray(_zip({"t.jsonl": INCIDENT}))
    struct.pack_into("<H", data, data.find(b"PK\x01\x02") + 6, 174)  # "version needed": 17.4
    with pytest.raises(UploadError, match=r"^b\.zip: not a zip file \(zip file version 17\.4"):
        bundles.open_bundle("b.zip", bytes(data))


@pytest.mark.parametrize(
    ("view", "message"),
    [
        (b'{"step": "\xff"}', "view.json: not UTF-8 text"),
        (b"[" * 100_000 + b"]" * 100_000, "view.json is over its limit of 64 KB"),
        (b'{"a":' * 2000 + b"1" + b"}" * 2000, "view.json: not valid JSON (nested"),
        (b'{"step": 1e999}', "view.json: not valid JSON"),
        (b'{"step": 1, "step": 2}', "appears twice"),
    ],
)
def test_a_hostile_view_json_is_a_clean_error(view, message):
    with pytest.raises(UploadError, match=r"^b\.zip: ") as err:
        bundles.open_bundle("b.zip", _zip({"t.jsonl": INCIDENT, "view.json": view}))
    assert message in str(err.value)


@pytest.mark.parametrize("step", ["²", "٣", "𝟙", " 7", "7.0", "-3", "1" * 40, "7\n"])
def test_a_step_that_is_not_ascii_digits_falls_back_to_step_0_with_a_note(step):
    view = parse_view({"step": step}, ["s"], "s")
    assert view.step == 0 and len(view.notes) == 1 and "step" in view.notes[0]


def test_a_bundles_view_with_a_bad_step_opens_at_step_0_with_a_notice(root):
    stored = uploads.store_upload("t.jsonl", INCIDENT, None)
    bundle = bundles.open_bundle("b.zip", bundles.make_bundle(stored, {"step": "²", "profile": ["x"]}))
    assert bundle.view == {"step": "²"}  # only plain values travel; the page checks each


def test_a_trace_named_config_json_stays_the_trace():
    stored = uploads.store_upload("config.json", b'[{"ch": 0, "wm": 5}]', None)
    assert stored.config_path is None and stored.name == "trace-config.json"
    bundle = bundles.open_bundle("b.zip", bundles.make_bundle(stored, {}))
    assert (bundle.trace_name, bundle.config_bytes) == ("trace-config.json", None)
    with pytest.raises(UploadError, match=r"exactly one trace file, found config\.json"):
        bundles.open_bundle("b.zip", _zip({"config.json": b'[{"ch": 0, "wm": 5}]'}))


@pytest.mark.parametrize("ext", [".jsonl", ".csv", ".parquet", ".json", ".ndjson"])
def test_a_long_name_keeps_its_extension(ext):
    name = uploads.safe_name("x" * 300 + ext)
    assert len(name) <= 120 and name.endswith(ext) and name.startswith("xxx")
    stored = uploads.store_upload("y" * 300 + ext, b"kind\n", None)
    assert stored.name.endswith(ext)


def test_a_bundle_view_is_only_plain_values():
    data = _zip(
        {"t.jsonl": INCIDENT, "view.json": json.dumps({"step": 4, "x": {"a": 1}, "b": True}).encode()}
    )
    assert bundles.open_bundle("b.zip", data).view == {"step": "4"}


def test_a_failed_write_leaves_no_half_upload_and_nothing_else_is_touched(root, monkeypatch):
    from pathlib import Path

    keep = uploads.store_upload("a.jsonl", INCIDENT, None)
    real = Path.write_bytes

    def full_disk(self, data):
        if self.name == "config.json":
            raise OSError(28, "No space left on device")
        return real(self, data)

    monkeypatch.setattr(Path, "write_bytes", full_disk)
    with pytest.raises(OSError, match="No space left"):
        uploads.store_upload("b.jsonl", INCIDENT, b"{}")
    assert [p.name for p in (root / "uploads").iterdir()] == [keep.digest]
    assert uploads.find_upload(keep.digest) == keep
