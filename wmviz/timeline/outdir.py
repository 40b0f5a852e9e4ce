"""The output folder of `simulate --out`: written only if it is empty or a timeline wmviz wrote.

wmviz marks every timeline folder it writes with `.wmviz-timeline`. Replacing a timeline removes
only what a timeline consists of (`meta.json`, the marker, and `table=<name>` folders holding part
files); a folder with anything else in it is refused, never cleared.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from wmviz import __version__
from wmviz.timeline.tables import TABLES

MARKER = ".wmviz-timeline"
_OWN_FILES = frozenset({MARKER, "meta.json"})
_OWN_FOLDERS = frozenset(f"table={t}" for t in TABLES)


class OutDirError(ValueError):
    """The folder cannot be written without touching something wmviz did not write."""


@contextmanager
def timeline_out_dir(path: Path) -> Iterator[Path]:
    """A fresh folder to write a timeline into; on success it replaces `path`'s contents.

    `path` is checked first (OutDirError, nothing written, when it is a file or holds anything
    but a timeline wmviz wrote). The timeline is written beside it and moved in only when the run
    succeeds, so a failed or invalid run leaves an earlier timeline as it was.
    """
    path = Path(path)
    check_out_dir(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{path.name}.wmviz-", dir=path.parent))
    try:
        yield work
        check_out_dir(path)  # nothing may have moved in while the run went on
        _clear_own(path)
        path.mkdir(exist_ok=True)
        for entry in work.iterdir():
            entry.rename(path / entry.name)
        (path / MARKER).write_text(json.dumps({"written_by": "wmviz", "version": __version__}) + "\n")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def check_out_dir(path: Path) -> None:
    """OutDirError unless `path` is absent, an empty folder, or a timeline wmviz wrote."""
    if path.is_symlink():
        raise OutDirError(f"{path} is a symbolic link; give a real folder")
    if path.exists() and not path.is_dir():
        raise OutDirError(f"{path} is a file, not a folder")
    if not path.is_dir():
        return
    entries = list(path.iterdir())
    if not entries:
        return
    if not (path / MARKER).is_file():
        raise OutDirError(
            f"{path} is not empty and is not a timeline wmviz wrote (no {MARKER}); "
            "give an empty or new folder"
        )
    foreign = [e.name for e in entries if not _own(e)]
    if foreign:
        raise OutDirError(
            f"{path} holds files wmviz did not write ({', '.join(sorted(foreign)[:5])}); "
            "move them or give another folder"
        )


def _clear_own(path: Path) -> None:
    if not path.is_dir():
        return
    for entry in path.iterdir():
        if entry.is_dir():
            shutil.rmtree(entry)
        else:
            entry.unlink()


def _own(entry: Path) -> bool:
    """Whether `entry` is a piece of a timeline (and nothing but that)."""
    if entry.is_symlink():
        return False
    if entry.name in _OWN_FILES:
        return entry.is_file()
    if entry.name not in _OWN_FOLDERS or not entry.is_dir():
        return False
    return all(
        part.is_file() and not part.is_symlink() and (part.suffix == ".parquet" or part.name.startswith("."))
        for part in entry.iterdir()
    )
