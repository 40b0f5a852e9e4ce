"""Bundles: the one zip a person shares, carrying a stored upload's trace, config and story and the
view they were looking at; made from a stored upload and read back when one is brought.

Pure (no Streamlit). Reading is where hostile zips arrive, so a bundle is judged before it costs
much: first on its zip's end record (how many members, how large a directory), before zipfile
builds anything per member; then on each LZMA member's dictionary, before the decompressor
allocates it; and everything it unpacks is counted against the upload limit while inflating.
Every refusal is an `UploadError` naming the bundle and the problem.
"""

from __future__ import annotations

import io
import json
import lzma
import struct
import zipfile
import zlib
from dataclasses import dataclass

from wmviz.core.settings import MAX_BUNDLE_MEMBERS
from wmviz.store.uploads import RESERVED, STORY, STORY_LIMIT, StoredUpload, UploadError, limit_mb
from wmviz.store.zipend import zip_end
from wmviz.trace.jsonline import JsonLineError, loads_strict
from wmviz.trace.sources import format_of

BUNDLE_VIEW = "view.json"
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
            if format_of(i.filename) is not None and i.filename not in (*RESERVED, BUNDLE_VIEW)
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


DEFAULT_BUNDLE_MEMBERS = MAX_BUNDLE_MEMBERS.default
"""A bundle holds a trace, its config, its story and the view: 64 members is far more than it needs."""
_DIRECTORY_ENTRY_BYTES = 1024
"""The directory bytes allowed per member: a 46-byte header and a name, extra and comment."""


def max_bundle_members() -> int:
    """The most members a bundle may have: $WMVIZ_MAX_BUNDLE_MEMBERS, else 64."""
    return MAX_BUNDLE_MEMBERS.get()


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
