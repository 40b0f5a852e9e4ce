"""Work items beside a destination: how they are named and locked, and the sweep that clears
those a killed run left behind.

Every output is first built beside its destination under a hidden name made for it,
`.<destination's name>.wmviz-work-<token>`. The token is 12 random hex digits and 8 hex digits of
a SHA-256 over the destination's name and those random digits: that check is how a later run
recognises an item wmviz made for this very destination (a name typed by someone else fails it),
and nothing without it is ever removed.

A living writer holds an exclusive `flock` on its item: a file on itself, a folder on a lock file
beside it (`<item>.lock`, renamed `<item>.commit` while a complete folder is being moved in
without an atomic exchange, see atomic.py). A lock dies with its process, so an item whose lock
can be taken was left by a run that is gone: `sweep` clears it, or finishes a cut move-in.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import secrets
import shutil
import stat
from pathlib import Path

TAG = ".wmviz-work-"
LOCK, COMMIT, ASIDE = ".lock", ".commit", ".old"
_RANDOM, _CHECK = 12, 8


def _check(dest_name: str, random: str) -> str:
    return hashlib.sha256(f"wmviz-work\0{dest_name}\0{random}".encode()).hexdigest()[:_CHECK]


def new_token(dest: Path) -> str:
    """A fresh token for a work item of `dest`."""
    random = secrets.token_hex(_RANDOM // 2)
    return random + _check(dest.name, random)


def work_path(dest: Path, token: str, suffix: str = "") -> Path:
    """The work item (or, with a suffix, its lock file or the old output moved aside) of `dest`."""
    return dest.parent / f".{dest.name}{TAG}{token}{suffix}"


def _parse(dest: Path, name: str) -> tuple[str, str] | None:
    """(token, suffix) of a work item name of `dest` whose check holds, else None."""
    prefix = f".{dest.name}{TAG}"
    if not name.startswith(prefix):
        return None
    rest = name[len(prefix) :]
    token, suffix = rest[: _RANDOM + _CHECK], rest[_RANDOM + _CHECK :]
    if suffix not in ("", LOCK, COMMIT, ASIDE) or len(token) != _RANDOM + _CHECK:
        return None
    if any(c not in "0123456789abcdef" for c in token):
        return None
    if _check(dest.name, token[:_RANDOM]) != token[_RANDOM:]:
        return None
    return token, suffix


def _names(path: Path, fd: int) -> bool:
    """Whether `path` still names the file open as `fd`."""
    try:
        here = os.lstat(path)
    except OSError:
        return False
    there = os.fstat(fd)
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def create_locked(path: Path, mode: int = 0o666) -> int:
    """A new file at `path`, open for writing and exclusively locked by this process.

    FileExistsError if the name is taken, or if a sweep removed the file before the lock was
    taken (the caller tries another token). `mode` is narrowed by the umask as for any new file.
    """
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, mode)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if not _names(path, fd):
            raise FileExistsError(f"{path} was removed before it was locked")
    except BaseException:
        os.close(fd)
        raise
    return fd


def new_locked(dest: Path, suffix: str = "") -> tuple[str, int]:
    """A token and a new locked file `work_path(dest, token, suffix)` (a few tries at most)."""
    for attempt in range(8):
        token = new_token(dest)
        try:
            return token, create_locked(work_path(dest, token, suffix))
        except FileExistsError:
            if attempt == 7:
                raise
    raise AssertionError("unreachable")


def _take_dead(path: Path) -> int | None:
    """The lock of a work file whose writer is gone (an open, locked fd), else None.

    Only a regular file of this user, still at `path` once locked, qualifies: a symbolic link, a
    folder, someone else's file or a file a living process holds is left alone.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid():
            raise BlockingIOError
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        if not _names(path, fd):
            raise BlockingIOError
    except OSError:
        os.close(fd)
        return None
    return fd


def remove(path: Path) -> bool:
    """Remove a work item (a file, or a folder and everything in it); True once it is gone."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError, IsADirectoryError, PermissionError):
            os.unlink(path)
    return not os.path.lexists(path)


def _work_items(dest: Path) -> dict[str, set[str]]:
    """The work items of `dest` beside it now: each token with the suffixes found for it."""
    try:
        names = os.listdir(dest.parent)
    except OSError:
        return {}
    items: dict[str, set[str]] = {}
    for name in names:
        parsed = _parse(dest, name)
        if parsed is not None:
            items.setdefault(parsed[0], set()).add(parsed[1])
    return items


def _clear_lone_file(item: Path) -> bool:
    """Remove a lone work file (a temporary file that is its own lock) whose writer is gone."""
    fd = _take_dead(item)
    if fd is None:
        return False
    try:
        return remove(item)
    finally:
        os.close(fd)


def _clear_locked(dest: Path, token: str, state: str) -> bool:
    """Clear a work item held by a lock file (`state` is its suffix) whose writer is gone,
    finishing a cut move-in first; True once the item, the old output and the lock are gone."""
    item, aside = work_path(dest, token), work_path(dest, token, ASIDE)
    lock = work_path(dest, token, state)
    fd = _take_dead(lock)
    if fd is None:
        return False  # its writer is alive
    try:
        if state == COMMIT:
            finish_move(item, aside, dest)
        gone = [remove(p) for p in (item, aside)]
        if not all(gone):
            return False
        os.unlink(lock)  # last: while anything is left, the lock file says whose it is
        return True
    finally:
        os.close(fd)


def sweep(dest: Path) -> list[str]:
    """Clear every work item of `dest` that a killed run left; the names cleared.

    A folder cut between its two renames (no atomic exchange: the old output moved aside, the new
    one not yet in, the lock file saying `.commit`) is finished first: the complete new folder,
    else the old one, goes back to `dest` while `dest` is absent or an empty folder.
    """
    dest = Path(dest)
    cleared: list[str] = []
    for token, suffixes in sorted(_work_items(dest).items()):
        state = COMMIT if COMMIT in suffixes else LOCK if LOCK in suffixes else None
        if state is not None:
            done = _clear_locked(dest, token, state)
        else:
            # A lone file: a temporary file of its own lock. A folder or an old output without
            # its lock file is never one a run of this module left: it stays.
            done = "" in suffixes and _clear_lone_file(work_path(dest, token))
        if done:
            cleared.append(work_path(dest, token).name)
    return cleared


def finish_move(item: Path, aside: Path, dest: Path) -> None:
    """Put a folder back at `dest` after a move-in cut between its two renames: the complete new
    one if it is still there, else the old one moved aside. Nothing happens while `dest` holds
    anything (a folder another run put there since wins)."""
    empty_folder = os.path.isdir(dest) and not os.path.islink(dest) and not os.listdir(dest)
    if os.path.lexists(dest) and not empty_folder:
        return
    for source in (item, aside):
        if os.path.isdir(source) and not os.path.islink(source):
            os.rename(source, dest)  # replaces an empty folder at `dest` in one step
            return
