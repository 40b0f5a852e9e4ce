"""Traces people bring: size limits and content-addressed storage (a shared bundle, the zip of an
upload and its view, is made and read in `bundles`).

Pure (no Streamlit): the app's upload panel only moves bytes between the browser and these
functions. An upload is stored once under the SHA-256 of its bytes, so a link can name it
(`?trace=<digest>`) and two people uploading the same file share one simulation. The digest is
checked again whenever the stored files may have changed on disk (their inode, size, mtime or
ctime moved: ctime moves on every write, whatever mtime is set back to), and what an upload hands
out (its story, its bundle) is checked against the SHA-256 of each file taken in that check: an
upload cut or edited there is reported (`DamagedUpload`) and never served, and uploading the same
files again repairs it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from wmviz.core.errors import BadInputError
from wmviz.core.settings import MAX_UPLOAD_MB
from wmviz.store.runs import LAST_USED as _LAST_USED
from wmviz.store.runs import data_root, identity
from wmviz.trace.errors import TraceValidationError
from wmviz.trace.sources import FORMATS, format_of

DEFAULT_LIMIT_MB = MAX_UPLOAD_MB.default
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DIGEST = re.compile(r"^[0-9a-f]{24}$")
_NAME_LIMIT = 120
_SUFFIX_LIMIT = 16


class UploadError(BadInputError, ValueError):
    """An upload refused before reading it (too large, unknown format, a broken bundle)."""


class DamagedUpload(UploadError):
    """A stored upload whose files are no longer the bytes its digest names (cut, edited, removed
    on disk): it is not served; storing the same files again repairs it."""


def limit_mb() -> int:
    """The configured upload limit: $WMVIZ_MAX_UPLOAD_MB, else 200 MB."""
    return MAX_UPLOAD_MB.get()


def uploads_root() -> Path:
    """Where uploads are kept: `uploads/` under wmviz's data root, beside the timelines."""
    return data_root() / "uploads"


STORY = "story.md"
STORY_LIMIT = 256 * 1024
"""An upload's story is text a person wrote: a quarter of a megabyte is plenty."""
RESERVED = ("config.json", STORY)
"""The names of an upload's files that are never its trace."""


@dataclass(frozen=True)
class StoredUpload:
    """An upload on disk: its digest (the link's name), the trace file, the config and the story
    (plain text or the safe markdown subset of `wmviz.report.html.markdown_html`), if any."""

    digest: str
    trace_path: Path
    config_path: Path | None
    story_path: Path | None = None
    checked: tuple[tuple[str, str], ...] = field(default=(), compare=False, repr=False)
    """Each file's name and the SHA-256 of its bytes when the upload's digest was checked."""

    def read(self, path: Path) -> bytes:
        """One of the upload's files, only if its bytes are still the ones checked (DamagedUpload
        else): what is handed out is what was stored."""
        out = io.BytesIO()
        self.copy(path, out)
        return out.getvalue()

    def copy(self, path: Path, out) -> None:
        """Write one of the upload's files to `out` a megabyte at a time, hashing what is read;
        DamagedUpload at the end when those bytes are not the ones checked (whoever gave `out`
        then drops it)."""
        digest = hashlib.sha256()
        try:
            with open(path, "rb") as f:
                for block in iter(lambda: f.read(1 << 20), b""):
                    digest.update(block)
                    out.write(block)
        except OSError as exc:
            raise DamagedUpload(_damaged(self.digest, f"{path.name}: {exc.strerror or exc}")) from None
        if (path.name, digest.hexdigest()) not in self.checked:
            raise DamagedUpload(
                _damaged(self.digest, f"{path.name} changed on disk since it was checked")
                + " Upload the same files again to repair it."
            )

    def story(self) -> str:
        """The story's text ("" when the upload has none)."""
        return self.read(self.story_path).decode("utf-8") if self.story_path is not None else ""

    @property
    def name(self) -> str:
        """The trace's file name as uploaded (sanitised)."""
        return self.trace_path.name


def check_upload(name: str, size: int, limit: int | None = None, job_recording: bool = False) -> None:
    """Refuse a file that is too large or not a trace format (unless it is a job recording, JSON
    or columnar .arrow, told apart by its bytes), naming it and the limit."""
    limit = limit if limit is not None else limit_mb()
    if size > limit * 2**20:
        instead = (
            "`wmviz blame` and `wmviz lag` read it where it lies (an appended recording over 512 MB "
            f"first converted: `wmviz convert {name} {Path(name).stem}.arrow`)"
            if job_recording
            else "run `python -m wmviz simulate` on the file"
        )
        raise UploadError(
            f"{name}: {size / 2**20:,.1f} MB is over the upload limit of {limit:,} MB "
            f"(set WMVIZ_MAX_UPLOAD_MB to change it, or {instead})"
        )
    if not job_recording and not name.lower().endswith(".zip") and format_of(name) is None:
        known = ", ".join(FORMATS)
        raise UploadError(f"{name}: unknown trace format; expected one of {known}, or a .zip bundle")


def safe_name(name: str) -> str:
    """A file name safe to store: the base name, with anything unusual replaced by `_`."""
    base = _SAFE.sub("_", Path(name.replace("\\", "/")).name).strip("._") or "trace"
    if len(base) <= _NAME_LIMIT:
        return base
    # Cut the stem, never the extension: the extension picks the reader.
    suffix = "".join(Path(base).suffixes[-2:])[-_SUFFIX_LIMIT:]
    return base[: _NAME_LIMIT - len(suffix)].rstrip("._") + suffix


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
    stored once. A stored copy that no longer matches its digest is set aside (renamed, never
    deleted) and written again: uploading the same files repairs a damaged upload."""
    root = root or uploads_root()
    if story_bytes is not None:
        check_story(STORY, story_bytes)
    name = stored_name(trace_name)
    digest = upload_digest(name, [trace_bytes], config_bytes, story_bytes)
    folder = root / digest
    try:
        found = find_upload(digest, root)
    except DamagedUpload:
        found = None
        with contextlib.suppress(FileNotFoundError):  # another session set it aside first
            folder.rename(folder.with_name(f"{digest}.damaged-{time.time_ns()}"))
    if found is not None:
        return found
    work = root / f"{digest}.part-{os.getpid()}-{time.time_ns()}"
    work.mkdir(parents=True)
    try:
        (work / name).write_bytes(trace_bytes)
        if config_bytes is not None:
            (work / "config.json").write_bytes(config_bytes)
        if story_bytes is not None:
            (work / STORY).write_bytes(story_bytes)
        work.rename(folder)  # all files at once: a reader never sees half an upload
    except OSError:  # another session stored the same upload first, or the disk is full
        for part in work.iterdir():
            part.unlink()  # only the files this call wrote, in the folder it made
        work.rmdir()
        if not folder.is_dir():
            raise
    stored = find_upload(digest, root)
    if stored is None:
        raise DamagedUpload(f"{name}: the upload just stored cannot be read back")
    return stored


def stored_name(trace_name: str) -> str:
    """The name a trace is stored (and shown) under: sanitised, and never the config's or the
    story's name, so a trace called config.json stays the trace."""
    name = safe_name(trace_name)
    return f"trace-{name}" if name in RESERVED else name


def upload_digest(name: str, trace_blocks, config_bytes: bytes | None, story_bytes: bytes | None) -> str:
    """The upload's name in links: a hash of the trace's bytes (given in blocks), the config's,
    the story's and the trace's stored name (a folder holds exactly one trace, and the name is
    shown)."""
    h = hashlib.sha256()
    for block in trace_blocks:
        h.update(block)
    h.update(b"\0" + (config_bytes if config_bytes is not None else b"-"))
    if story_bytes is not None:  # only then: the digests of uploads without a story stay as they were
        h.update(b"\0story\0" + story_bytes)
    h.update(b"\0" + name.encode())
    return h.hexdigest()[:24]


def find_upload(digest: str | None, root: Path | None = None) -> StoredUpload | None:
    """The stored upload a link names, or None (an unknown or malformed digest). DamagedUpload when
    its folder is there but its files are not the bytes the digest names."""
    if not digest or not _DIGEST.match(digest):
        return None
    folder = (root or uploads_root()) / digest
    if not folder.is_dir():
        return None
    try:
        files = [p for p in folder.iterdir() if p.name != _LAST_USED]
        stamp = tuple(sorted((p.name, identity(p)) for p in files))
    except OSError as exc:  # a file removed or replaced while listed
        raise DamagedUpload(_damaged(digest, exc.strerror or str(exc))) from None
    found = _verified_upload(str(folder), stamp)
    if isinstance(found, str):
        raise DamagedUpload(found)
    return found


@functools.lru_cache(maxsize=256)
def _verified_upload(folder: str, stamp: tuple) -> StoredUpload | str:
    """Read the stored files and check them against the folder's digest, once per stamp (every
    file's name and identity: the page asks at every step); what is wrong, if anything."""
    try:
        return _verify_upload(Path(folder), stamp)
    except DamagedUpload as exc:
        return str(exc)
    except OSError as exc:  # a folder where a file was, a file that cannot be read
        return _damaged(Path(folder).name, exc.strerror or str(exc))


def _damaged(digest: str, what: str) -> str:
    return f"stored upload {digest} is damaged: {what}; it is not served."


def _verify_upload(path: Path, stamp: tuple) -> StoredUpload:
    digest = path.name
    names = {name for name, _ in stamp}
    traces = sorted(names - set(RESERVED))
    if len(traces) != 1:
        raise DamagedUpload(f"stored upload {digest} is damaged: it holds {len(traces)} trace files, not 1")
    trace_path = path / traces[0]
    config_path = path / "config.json" if "config.json" in names else None
    story_path = path / STORY if STORY in names else None
    config = config_path.read_bytes() if config_path is not None else None
    story = story_path.read_bytes() if story_path is not None else None
    trace_sha = hashlib.sha256()

    def trace_blocks(f):
        for block in iter(lambda: f.read(1 << 20), b""):
            trace_sha.update(block)
            yield block

    with open(trace_path, "rb") as f:
        found = upload_digest(traces[0], trace_blocks(f), config, story)
    if found != digest:
        raise DamagedUpload(
            f"stored upload {digest} ({traces[0]}) is damaged: its files are not the bytes it was stored "
            "with (cut or changed on disk); it is not served. Upload the same files again to repair it."
        )
    checked = [(traces[0], trace_sha.hexdigest())]
    for name, data in (("config.json", config), (STORY, story)):
        if data is not None:
            checked.append((name, hashlib.sha256(data).hexdigest()))
    return StoredUpload(digest, trace_path, config_path, story_path, tuple(checked))


def touch(upload: StoredUpload) -> None:
    """Mark a stored upload (a what-if) as used now: least-recently-used eviction reads this."""
    with contextlib.suppress(OSError):  # a read-only store still serves; it only stops aging
        (upload.trace_path.parent / _LAST_USED).touch()


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
