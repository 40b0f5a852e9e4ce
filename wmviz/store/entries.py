"""The cache's entries: which folders under it are wmviz's, how one leaves, and the budget.

An entry leaves by a rename aside and then a removal (`discard`), so whoever reads it finds it
whole or gone, never half removed, and a `.last-used` touched meanwhile cannot keep a half-removed
folder alive. Only folders wmviz made and recognises are ever counted or removed: a timeline with
its meta.json or a digest-named folder holding nothing but a timeline's files (one a removal cut
short), a what-if named by its digest, and the aside folders of these a kill left.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable
from pathlib import Path

from wmviz.core.settings import CACHE_MAX_MB
from wmviz.timeline.store import META

DEFAULT_CACHE_MB = CACHE_MAX_MB.default
LAST_USED = ".last-used"
_ASIDE = ".gone-"


def discard(entry: Path) -> bool:
    """Remove a cache entry: renamed aside first (one step: a reader finds it whole or gone, and
    a .last-used touched meanwhile lands in the aside folder), then removed. False when it was
    already gone. An aside folder left by a kill is removed by the next `enforce_budget`."""
    aside = entry.with_name(f"{entry.name}{_ASIDE}{os.getpid()}-{time.time_ns()}")
    try:
        entry.rename(aside)
    except FileNotFoundError:
        return False
    shutil.rmtree(aside, ignore_errors=True)
    return True


def is_timeline_entry(entry: Path, name: str | None = None) -> bool:
    """A timeline entry wmviz made: a folder with its meta.json, or a folder named by a digest
    (`name`, when it was renamed aside) holding nothing but what a timeline entry holds
    (meta.json, .last-used, `table=<name>/*.parquet`): one left incomplete by a removal cut
    short. Anything else is never removed."""
    if entry.is_symlink() or not entry.is_dir():
        return False
    if (entry / META).is_file():
        return True
    return _is_digest(entry.name if name is None else name) and _only_timeline_files(entry)


def _only_timeline_files(entry: Path) -> bool:
    for child in entry.iterdir():
        if child.name in (META, LAST_USED) and child.is_file() and not child.is_symlink():
            continue
        if not (child.name.startswith("table=") and child.is_dir() and not child.is_symlink()):
            return False
        for part in child.iterdir():
            if not (part.suffix == ".parquet" and part.is_file() and not part.is_symlink()):
                return False
    return True


def cache_budget_mb() -> float:
    """$WMVIZ_CACHE_MAX_MB, else 4 GB."""
    return CACHE_MAX_MB.get()


def enforce_budget(root: Path, keep: Path, budget_mb: float | None = None) -> list[Path]:
    """Remove the least recently used timelines and what-ifs until they fit the budget together;
    `keep` (the one just made or used) stays. `root` is the timelines folder; the what-ifs are
    its sibling `whatifs/`. Only entries wmviz wrote are candidates (`is_timeline_entry`, incomplete
    ones included; a what-if folder named by its digest). Returns what was removed."""
    budget = (budget_mb if budget_mb is not None else cache_budget_mb()) * 2**20
    entries = [
        *_entries(root, is_timeline_entry),
        *_entries(root.parent / "whatifs", _is_whatif),
    ]
    total = sum(size for _, size, _ in entries)
    removed = []
    for _, size, entry in sorted(entries):
        if total <= budget:
            break
        if entry == keep:
            continue
        if discard(entry):  # gone already: another session's budget took it
            removed.append(entry)
        total -= size
    return removed


def _entries(folder: Path, ours: Callable[[Path, str], bool]) -> list[tuple[float, int, Path]]:
    """(last used, bytes, path) of each entry in `folder` that `ours` recognises; entries removed
    meanwhile are skipped, and aside folders a kill left (`discard`) are removed now."""
    found = []
    for entry in _listing(folder):
        try:
            if _ASIDE in entry.name:
                if ours(entry, entry.name.split(_ASIDE)[0]):
                    shutil.rmtree(entry, ignore_errors=True)
            elif ours(entry, entry.name):
                size = sum(p.stat().st_size for p in entry.rglob("*") if p.is_file())
                used = (entry / LAST_USED).stat().st_mtime if (entry / LAST_USED).exists() else 0.0
                found.append((used, size, entry))
        except OSError:  # removed while measured: not an entry any more
            continue
    return found


def _listing(folder: Path) -> list[Path]:
    try:
        return list(folder.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []


def _is_digest(name: str) -> bool:
    return len(name) == 24 and all(c in "0123456789abcdef" for c in name)


def _is_whatif(entry: Path, name: str) -> bool:
    return _is_digest(name) and entry.is_dir() and not entry.is_symlink()
