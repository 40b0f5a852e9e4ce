"""The output folder of `simulate --out`: written only if it is empty or a timeline wmviz wrote.

wmviz marks every timeline folder it writes with `.wmviz-timeline`. A timeline is built in a work
folder beside `--out` and swapped in whole when it is complete (wmviz.disk.replacing_folder): the
folder holds the earlier timeline or the new one at every moment, and a kill leaves work items
that the next run clears. A folder with anything but a timeline in it is refused, never cleared.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from wmviz import __version__
from wmviz.core.errors import BadInputError
from wmviz.disk import replacing_folder
from wmviz.timeline.tables import TABLES

MARKER = ".wmviz-timeline"
_OWN_FILES = frozenset({MARKER, "meta.json"})
_OWN_FOLDERS = frozenset(f"table={t}" for t in TABLES)


class OutDirError(BadInputError, ValueError):
    """The folder cannot be written without touching something wmviz did not write."""


@contextmanager
def timeline_out_dir(path: Path) -> Iterator[Path]:
    """A fresh folder to write a timeline into; on success it replaces `path`, whole.

    `path` is checked first (OutDirError, nothing written, when it is a file or holds anything
    but a timeline wmviz wrote), and again just before the swap. A failed or invalid run leaves
    an earlier timeline as it was.
    """
    path = Path(path)
    check_out_dir(path)
    _clear_old_work(path)
    with replacing_folder(path, check=check_out_dir) as work:
        yield work
        (work / MARKER).write_text(json.dumps({"written_by": "wmviz", "version": __version__}) + "\n")


def _clear_old_work(path: Path) -> None:
    """Remove the work folders that earlier versions left beside `path` when killed (named
    `.<name>.wmviz-` and 8 letters by mkdtemp), and only those holding nothing but timeline pieces."""
    pattern = re.compile(re.escape(f".{path.name}.wmviz-") + r"[a-z0-9_]{8}")
    if not path.parent.is_dir():
        return
    for entry in path.parent.iterdir():
        old_work = pattern.fullmatch(entry.name) and entry.is_dir() and not entry.is_symlink()
        if old_work and all(_own(e) for e in entry.iterdir()):
            shutil.rmtree(entry, ignore_errors=True)


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
