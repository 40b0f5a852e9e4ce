"""Traces people bring: size limits, content-addressed storage, bundles (trace + config + view).

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
import json
import lzma
import os
import re
import struct
import time
import zipfile
import zlib
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from wmviz.store.runs import LAST_USED as _LAST_USED
from wmviz.store.runs import data_root, identity
from wmviz.store.zipend import zip_end
from wmviz.trace.errors import TraceValidationError
from wmviz.trace.jsonline import JsonLineError, loads_strict
from wmviz.trace.readers import FORMATS, format_of

DEFAULT_LIMIT_MB = 200
BUNDLE_VIEW = "view.json"
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_DIGEST = re.compile(r"^[0-9a-f]{24}$")
_NAME_LIMIT = 120
_SUFFIX_LIMIT = 16


class UploadError(ValueError):
    """An upload refused before reading it (too large, unknown format, a broken bundle)."""


class DamagedUpload(UploadError):
    """A stored upload whose files are no longer the bytes its digest names (cut, edited, removed
    on disk): it is not served; storing the same files again repairs it."""


def limit_mb() -> int:
    """The configured upload limit: $WMVIZ_MAX_UPLOAD_MB, else 200 MB."""
    try:
        return int(os.environ.get("WMVIZ_MAX_UPLOAD_MB", DEFAULT_LIMIT_MB))
    except ValueError:
        return DEFAULT_LIMIT_MB


def uploads_root() -> Path:
    """Where uploads are kept: `uploads/` under wmviz's data root, beside the timelines."""
    return data_root() / "uploads"


STORY = "story.md"
STORY_LIMIT = 256 * 1024
"""An upload's story is text a person wrote: a quarter of a megabyte is plenty."""
_RESERVED = ("config.json", STORY)


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
    return f"trace-{name}" if name in _RESERVED else name


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
    traces = sorted(names - set(_RESERVED))
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


# --- bundles -----------------------------------------------------------------------------------------

VIEW_LIMIT = 64 * 1024
"""A bundle's view.json names a handful of short fields: 64 KB is far more than it needs."""
_CHUNK = 1 << 20


def make_bundle(upload: StoredUpload, view: dict) -> bytes:
    """A zip with the trace, its config, its story and the view (profile, step, instance, engine,
    the compared run: a what-if travels as its edit, `compare=whatif:<token>`)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for path, name in (
            (upload.trace_path, upload.trace_path.name),
            (upload.config_path, "config.json"),
            (upload.story_path, STORY),
        ):
            if path is not None:  # each file's bytes are checked as they are packed
                with zf.open(name, "w", force_zip64=True) as member:
                    upload.copy(path, member)
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


def open_bundle(name: str, data: bytes, limit: int | None = None) -> Bundle:
    """Unpack a bundle made by `make_bundle`; a malformed one raises UploadError naming the problem.
    All it unpacks is at most the upload limit (`limit` bytes), counted while inflating: a member
    whose header lies about its size is stopped at the limit, never read whole."""
    budget = [limit if limit is not None else limit_mb() * 2**20]
    _check_zip_end(name, data)  # before zipfile builds an object per member of the directory
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        ValueError,
        OSError,
        EOFError,
        NotImplementedError,
    ) as exc:
        # NotImplementedError: a member's "version needed to extract" is past what zipfile reads.
        raise UploadError(f"{name}: not a zip file ({exc})") from None
    with zf:
        if len(zf.infolist()) > max_bundle_members():
            raise UploadError(f"{name}: {_too_many(len(zf.infolist()))}")
        members = [i for i in zf.infolist() if not i.is_dir()]
        if sum(i.file_size for i in members) > budget[0]:
            raise UploadError(f"{name}: {_over_limit(budget[0])}")
        _check_lzma_dictionaries(data, members, name, budget[0])
        traces = [
            i
            for i in members
            if format_of(i.filename) is not None and i.filename not in (*_RESERVED, BUNDLE_VIEW)
        ]
        if len(traces) != 1:
            found = ", ".join(i.filename for i in members[:20]) or "nothing"
            raise UploadError(
                f"{name}: a bundle holds exactly one trace file, found {found} (config.json, "
                "story.md and view.json are the bundle's config, story and view, never its trace)"
            )
        by_name = {i.filename: i for i in members}
        config = _member(zf, by_name.get("config.json"), name, budget)
        story = _member(zf, by_name.get(STORY), name, budget, STORY_LIMIT)
        view = _view(_member(zf, by_name.get(BUNDLE_VIEW), name, budget, VIEW_LIMIT), name)
        trace = _member(zf, traces[0], name, budget)
        assert trace is not None
        return Bundle(traces[0].filename, trace, config, view, story)


DEFAULT_BUNDLE_MEMBERS = 64
"""A bundle holds a trace, its config, its story and the view: 64 members is far more than it needs."""
_DIRECTORY_ENTRY_BYTES = 1024
"""The directory bytes allowed per member: a 46-byte header and a name, extra and comment."""


def max_bundle_members() -> int:
    """The most members a bundle may have: $WMVIZ_MAX_BUNDLE_MEMBERS, else 64."""
    try:
        return max(1, int(os.environ.get("WMVIZ_MAX_BUNDLE_MEMBERS", DEFAULT_BUNDLE_MEMBERS)))
    except ValueError:
        return DEFAULT_BUNDLE_MEMBERS


def _check_zip_end(name: str, data: bytes) -> None:
    """Judge a bundle on what its end record says (members, directory size) before anything else
    of it is read: its directory costs the server memory and time per member."""
    end = zip_end(data)
    if end is None:
        raise UploadError(f"{name}: not a zip file (no end of central directory record)")
    most = max_bundle_members()
    if end.members > most:
        raise UploadError(f"{name}: {_too_many(end.members)}")
    if end.directory_bytes > most * _DIRECTORY_ENTRY_BYTES:
        raise UploadError(
            f"{name}: the bundle's directory is {end.directory_bytes:,} bytes, more than {most} members "
            f"need ({most * _DIRECTORY_ENTRY_BYTES:,}; set WMVIZ_MAX_BUNDLE_MEMBERS to change it)"
        )


def _too_many(count: int) -> str:
    return (
        f"the bundle has {count:,} members; a bundle holds at most {max_bundle_members():,} "
        "(a trace, config.json, story.md and view.json; set WMVIZ_MAX_BUNDLE_MEMBERS to change it)"
    )


def _over_limit(limit: int) -> str:
    return (
        f"the bundle unpacks to more than the upload limit of {limit / 2**20:,.0f} MB "
        "(set WMVIZ_MAX_UPLOAD_MB to change it)"
    )


LZMA_MOST_DICTIONARY = 64 << 20
"""The largest dictionary LZMA's presets use (preset 9)."""


def _check_lzma_dictionaries(data: bytes, members: list[zipfile.ZipInfo], name: str, limit: int) -> None:
    """Refuse an LZMA member whose header asks for a dictionary larger than both the presets' largest
    and the upload limit: the decompressor allocates it whole before reading a byte (up to 4 GB)."""
    for info in members:
        if info.compress_type != zipfile.ZIP_LZMA or not 0 <= info.header_offset <= len(data) - 30:
            continue  # a header cut short or out of place: zipfile refuses the member when it is read
        name_length, extra_length = struct.unpack_from("<HH", data, info.header_offset + 26)
        # zip's LZMA data opens with a version (2 bytes), the properties' size (2), then the
        # properties: one byte of lc/lp/pb and the dictionary size (4, little-endian).
        start = info.header_offset + 30 + name_length + extra_length
        dictionary = int.from_bytes(data[start + 5 : start + 9], "little")
        if dictionary > max(limit, LZMA_MOST_DICTIONARY):
            raise UploadError(
                f"{name}: {info.filename} is damaged or unreadable (its LZMA dictionary of "
                f"{dictionary:,} bytes is larger than anything it may unpack to)"
            )


def _member(
    zf: zipfile.ZipFile, info: zipfile.ZipInfo | None, name: str, budget: list[int], cap: int | None = None
) -> bytes | None:
    """One member's bytes, inflated a megabyte at a time against what is left of the budget (and
    the member's own cap); a damaged member (bad CRC, broken stream, encryption) is an UploadError."""
    if info is None:
        return None
    cap = budget[0] if cap is None else min(cap, budget[0])
    chunks, size = [], 0
    try:
        with zf.open(info) as member:
            while block := member.read(_CHUNK):
                size += len(block)
                if size > cap:
                    if cap < budget[0]:
                        raise UploadError(f"{name}: {info.filename} is over its limit of {cap // 1024:,} KB")
                    raise UploadError(f"{name}: {_over_limit(budget[0])}")
                chunks.append(block)
    except UploadError:
        raise
    except (
        zipfile.BadZipFile,
        zlib.error,
        lzma.LZMAError,  # an LZMA member's broken stream (zlib.error is deflate's)
        EOFError,
        OSError,
        RuntimeError,
        NotImplementedError,
        ValueError,
    ) as exc:
        raise UploadError(f"{name}: {info.filename} is damaged or unreadable ({exc})") from None
    budget[0] -= size
    return b"".join(chunks)


def _view(raw: bytes | None, name: str) -> dict:
    """A bundle's view.json: a JSON object of plain values, decoded within wmviz's JSON bounds
    (the page validates each field as it validates a link's)."""
    if raw is None:
        return {}
    try:
        view = loads_strict(raw.decode("utf-8"))
    except UnicodeDecodeError as exc:
        raise UploadError(f"{name}: {BUNDLE_VIEW}: not UTF-8 text (byte {exc.start})") from None
    except JsonLineError as exc:
        raise UploadError(f"{name}: {BUNDLE_VIEW}: not valid JSON ({exc})") from None
    if not isinstance(view, dict):
        raise UploadError(f"{name}: {BUNDLE_VIEW}: expected a JSON object")
    return {
        key: str(value)
        for key, value in view.items()
        if isinstance(value, str | int) and not isinstance(value, bool)
    }
