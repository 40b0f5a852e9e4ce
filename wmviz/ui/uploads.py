"""Traces people bring: size limits, content-addressed storage, bundles (trace + config + view).

Pure (no Streamlit): the app's upload panel only moves bytes between the browser and these
functions. An upload is stored once under the SHA-256 of its bytes, so a link can name it
(`?trace=<digest>`) and two people uploading the same file share one simulation.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from wmviz.trace.errors import TraceValidationError
from wmviz.trace.readers import FORMATS, format_of
from wmviz.ui.runs import cache_root

DEFAULT_LIMIT_MB = 200
BUNDLE_VIEW = "view.json"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DIGEST = re.compile(r"^[0-9a-f]{24}$")


class UploadError(ValueError):
    """An upload refused before reading it (too large, unknown format, a broken bundle)."""


def limit_mb() -> int:
    """The configured upload limit: $WMVIZ_MAX_UPLOAD_MB, else 200 MB."""
    try:
        return int(os.environ.get("WMVIZ_MAX_UPLOAD_MB", DEFAULT_LIMIT_MB))
    except ValueError:
        return DEFAULT_LIMIT_MB


def uploads_root() -> Path:
    """Where uploads are kept: beside the timeline cache."""
    return cache_root().parent / "uploads"


STORY = "story.md"
STORY_LIMIT = 256 * 1024
"""An upload's story is text a person wrote: a quarter of a megabyte is plenty."""
_RESERVED = ("config.json", STORY)


@dataclass(frozen=True)
class StoredUpload:
    """An upload on disk: its digest (the link's name), the trace file, the config and the story
    (plain text or the safe markdown subset of `wmviz.report_html.markdown_html`), if any."""

    digest: str
    trace_path: Path
    config_path: Path | None
    story_path: Path | None = None

    def story(self) -> str:
        """The story's text ("" when the upload has none)."""
        return self.story_path.read_text(encoding="utf-8") if self.story_path is not None else ""

    @property
    def name(self) -> str:
        """The trace's file name as uploaded (sanitised)."""
        return self.trace_path.name


def check_upload(name: str, size: int, limit: int | None = None) -> None:
    """Refuse a file that is too large or not a trace format, naming it and the limit."""
    limit = limit if limit is not None else limit_mb()
    if size > limit * 2**20:
        raise UploadError(
            f"{name}: {size / 2**20:,.1f} MB is over the upload limit of {limit:,} MB "
            "(set WMVIZ_MAX_UPLOAD_MB to change it, or run `python -m wmviz simulate` on the file)"
        )
    if not name.lower().endswith(".zip") and format_of(name) is None:
        known = ", ".join(FORMATS)
        raise UploadError(f"{name}: unknown trace format; expected one of {known}, or a .zip bundle")


def safe_name(name: str) -> str:
    """A file name safe to store: the base name, with anything unusual replaced by `_`."""
    base = _SAFE.sub("_", Path(name.replace("\\", "/")).name).strip("._") or "trace"
    return base[:120]


def check_story(name: str, data: bytes) -> str:
    """A story file's text: UTF-8, at most STORY_LIMIT bytes (UploadError naming the file else)."""
    if len(data) > STORY_LIMIT:
        raise UploadError(f"{name}: a story is at most {STORY_LIMIT // 1024} KB of text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UploadError(f"{name}: a story must be UTF-8 text (byte {exc.start} is not)") from None


def store_upload(
    trace_name: str,
    trace_bytes: bytes,
    config_bytes: bytes | None,
    root: Path | None = None,
    story_bytes: bytes | None = None,
) -> StoredUpload:
    """Keep the trace (and config and story) under the digest of their bytes; the same upload is
    stored once."""
    root = root or uploads_root()
    h = hashlib.sha256(trace_bytes)
    h.update(b"\0" + (config_bytes if config_bytes is not None else b"-"))
    if story_bytes is not None:  # only then: the digests of uploads without a story stay as they were
        check_story(STORY, story_bytes)
        h.update(b"\0story\0" + story_bytes)
    name = safe_name(trace_name)
    if name in _RESERVED:
        name = f"trace-{name}"
    # The name is part of the identity: a folder holds exactly one trace, and the name is shown.
    h.update(b"\0" + name.encode())
    digest = h.hexdigest()[:24]
    folder = root / digest
    folder.mkdir(parents=True, exist_ok=True)
    trace_path = folder / name
    if not trace_path.is_file():
        _write_atomic(trace_path, trace_bytes)
    config_path = None
    if config_bytes is not None:
        config_path = folder / "config.json"
        if not config_path.is_file():
            _write_atomic(config_path, config_bytes)
    story_path = None
    if story_bytes is not None:
        story_path = folder / STORY
        if not story_path.is_file():
            _write_atomic(story_path, story_bytes)
    return StoredUpload(digest, trace_path, config_path, story_path)


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".part")
    tmp.write_bytes(data)
    tmp.replace(path)


def find_upload(digest: str | None, root: Path | None = None) -> StoredUpload | None:
    """The stored upload a link names, or None (an unknown or malformed digest)."""
    if not digest or not _DIGEST.match(digest):
        return None
    folder = (root or uploads_root()) / digest
    if not folder.is_dir():
        return None
    traces = [p for p in folder.iterdir() if p.name not in _RESERVED and not p.name.endswith(".part")]
    if len(traces) != 1:
        return None
    config, story = folder / "config.json", folder / STORY
    return StoredUpload(
        digest, traces[0], config if config.is_file() else None, story if story.is_file() else None
    )


def issues_frame(error: TraceValidationError) -> pd.DataFrame:
    """Every kept issue as a table: file, row, column (or config field), reason."""
    rows = [
        {
            "file": issue.file,
            "row": "" if issue.row is None else str(issue.row),
            "column": issue.column or (f"field {issue.field}" if issue.field else ""),
            "reason": issue.reason,
        }
        for issue in error.issues
    ]
    return pd.DataFrame(rows, columns=["file", "row", "column", "reason"])


# --- bundles -----------------------------------------------------------------------------------------

_BUNDLE_LIMIT = 4 * 2**30  # refuses zip bombs: the declared uncompressed size of all members


def make_bundle(upload: StoredUpload, view: dict) -> bytes:
    """A zip with the trace, its config, its story and the view (profile, step, instance, engine,
    the compared run: a what-if travels as its edit, `compare=whatif:<token>`)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.write(upload.trace_path, upload.trace_path.name)
        if upload.config_path is not None:
            zf.write(upload.config_path, "config.json")
        if upload.story_path is not None:
            zf.write(upload.story_path, STORY)
        zf.writestr(BUNDLE_VIEW, json.dumps(view, indent=2, sort_keys=True))
    return out.getvalue()


@dataclass(frozen=True)
class Bundle:
    """What a bundle holds."""

    trace_name: str
    trace_bytes: bytes
    config_bytes: bytes | None
    view: dict
    story_bytes: bytes | None = None


def open_bundle(name: str, data: bytes) -> Bundle:
    """Unpack a bundle made by `make_bundle`; a malformed one raises UploadError naming the problem."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        raise UploadError(f"{name}: not a zip file ({exc})") from exc
    with zf:
        members = [i for i in zf.infolist() if not i.is_dir()]
        if sum(i.file_size for i in members) > _BUNDLE_LIMIT:
            raise UploadError(f"{name}: the bundle unpacks to more than {_BUNDLE_LIMIT // 2**30} GB")
        traces = [
            i
            for i in members
            if format_of(i.filename) is not None and i.filename not in (*_RESERVED, BUNDLE_VIEW)
        ]
        if len(traces) != 1:
            found = ", ".join(i.filename for i in members) or "nothing"
            raise UploadError(f"{name}: a bundle holds exactly one trace file, found {found}")
        names = {i.filename for i in members}
        config = zf.read("config.json") if "config.json" in names else None
        story = zf.read(STORY) if STORY in names else None
        view: dict = {}
        if BUNDLE_VIEW in names:
            try:
                view = json.loads(zf.read(BUNDLE_VIEW))
            except json.JSONDecodeError as exc:
                raise UploadError(f"{name}: {BUNDLE_VIEW}: not valid JSON ({exc})") from exc
            if not isinstance(view, dict):
                raise UploadError(f"{name}: {BUNDLE_VIEW}: expected a JSON object")
        return Bundle(traces[0].filename, zf.read(traces[0]), config, view, story)
