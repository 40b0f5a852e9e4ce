"""Outputs that appear whole or not at all: written beside the destination, renamed in when complete.

* `replacing_file`: a file written beside its destination, flushed to disk, then `os.replace`d onto
  it. A reader of the destination sees the earlier file or the new one, never a part.
* `GrowingFile`: a recording. It is written beside its destination until it holds its first
  block (a whole sample), then renamed onto it; every later block is appended by one write(2).
  A block the disk cannot take is cut off again, so the file holds whole blocks only.
* `replacing_folder`: a folder built beside its destination, then swapped in.

How a folder is swapped in, and what a kill between any two system calls leaves (every work item
is named and locked as work.py says, and the next run's `sweep` clears what a dead one left):

1. The lock file `<work>.lock` is created and locked, then the work folder `<work>` made and
   filled. A kill here leaves the destination as it was; the sweep removes both.
2. No destination yet: one rename(2) of `<work>` onto it. It appears whole or not at all.
3. A destination: renameat2(RENAME_EXCHANGE) swaps the two folders in one step (Linux, on ext4,
   xfs, btrfs, tmpfs, ...): the destination is the old folder up to that call and the new one
   from it; `<work>` now holds the old one and is removed, then the lock file. A kill during the
   removal leaves `<work>` and its lock file: the sweep removes them.
4. Where no exchange exists: the lock file is renamed `<work>.commit` (the new folder is
   complete), the destination renamed `<work>.old`, `<work>` renamed onto the destination, then
   `<work>.old` and the lock file removed. A kill after the first rename leaves the destination
   as it was or absent with both folders beside it; the sweep then renames `<work>` (else
   `<work>.old`) onto it, so the next run starts from a whole folder, new or old.

A write the disk refuses (full, over quota, read-only, an I/O error) is an `OutputError`,
"cannot write <destination>: <the system's reason>", after every work item is removed.
"""

from __future__ import annotations

import ctypes
import errno
import os
import stat
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import BinaryIO

from wmviz.disk.work import ASIDE, COMMIT, LOCK, finish_move, new_locked, remove, sweep, work_path

WRITE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO, errno.EROFS})
"""What a disk says when it cannot take a write: these end a command with OutputError."""


class OutputError(OSError):
    """An output that cannot be written, or must not be (it would overwrite an input). Whatever
    was at the destination before is as it was."""


def cannot_write(dest: Path, err: OSError) -> OutputError:
    """The error `cannot write DEST: <reason>`, the reason as the system words its number."""
    reason = os.strerror(err.errno) if err.errno else str(err)
    return OutputError(f"cannot write {dest}: {reason}")


def _keep_mode(fd: int, dest: Path) -> None:
    """Give a replacement the permission bits of the file it replaces."""
    with suppress(OSError):
        info = os.stat(dest)
        if stat.S_ISREG(info.st_mode):
            os.fchmod(fd, stat.S_IMODE(info.st_mode))


def _through_links(dest: Path) -> Path:
    """The file a symbolic link at `dest` points to: replaced as writing through the link would."""
    return Path(os.path.realpath(dest)) if os.path.islink(dest) else dest


def _new_temp(dest: Path) -> tuple[int, Path]:
    """A new, locked work file beside `dest`, after clearing what killed runs left there."""
    sweep(dest)
    try:
        token, fd = new_locked(dest)
    except OSError as err:
        raise cannot_write(dest, err) from err
    _keep_mode(fd, dest)
    return fd, work_path(dest, token)


@contextmanager
def replacing_file(dest: str | os.PathLike[str]) -> Iterator[BinaryIO]:
    """A binary stream whose bytes replace `dest` when the block ends without an exception.

    On an exception nothing at `dest` changes and the work file is removed; a write the disk
    refuses is raised as `OutputError`.
    """
    shown = Path(dest)
    dest = _through_links(shown)
    fd, temp = _new_temp(dest)
    stream = os.fdopen(fd, "wb", closefd=False)
    placed = False
    try:
        try:
            yield stream
        except OSError as err:
            if err.errno in WRITE_ERRNOS:
                raise cannot_write(shown, err) from err
            raise
        try:
            stream.flush()
            os.fsync(fd)
            os.replace(temp, dest)
        except OSError as err:
            raise cannot_write(shown, err) from err
        placed = True
    finally:
        with suppress(OSError):
            stream.close()  # its buffer may still hold what a full disk refused
        if not placed:
            remove(temp)
        os.close(fd)


def write_file(dest: str | os.PathLike[str], data: bytes) -> None:
    """Replace `dest` with `data`, whole (see `replacing_file`)."""
    with replacing_file(dest) as stream:
        stream.write(data)


class GrowingFile:
    """A file that grows by whole blocks and appears at its destination with its first one.

    Until then it is a work file beside `dest` (an earlier file at `dest` stays as it was); the
    first `add` renames it onto `dest`, and every block is one write(2) at the end, so a kill
    between two system calls leaves whole blocks only. A block the disk refuses is cut off again
    (the file is truncated to the blocks before it) and raised as `OutputError`.
    """

    def __init__(self, dest: str | os.PathLike[str], header: bytes = b"") -> None:
        self.dest = Path(dest)
        self._target = _through_links(self.dest)
        self._fd, self._temp = _new_temp(self._target)
        self.placed = False
        self.size = 0
        try:
            self._write_all(header)
        except OSError as err:
            self.close()
            raise cannot_write(self.dest, err) from err
        self.size = len(header)

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:  # one write(2) unless the disk fills up mid-way
            view = view[os.write(self._fd, view) :]

    def add(self, block: bytes) -> None:
        """Append one whole block (and move the file in with the first)."""
        try:
            self._write_all(block)
        except OSError as err:
            with suppress(OSError):
                os.ftruncate(self._fd, self.size)
            raise cannot_write(self.dest, err) from err
        self.size += len(block)
        if not self.placed:
            try:
                os.replace(self._temp, self._target)
            except OSError as err:
                raise cannot_write(self.dest, err) from err
            self.placed = True

    def close(self) -> bool:
        """Close the file; True if it reached its destination (else its work file is removed)."""
        if self._fd < 0:
            return self.placed
        if not self.placed:
            remove(self._temp)
        os.close(self._fd)
        self._fd = -1
        return self.placed


class _FolderSwap:
    """The work items of one `replacing_folder`: the work folder, the old output once moved aside,
    and the lock file, renamed `.commit` once the two-rename move-in (step 4) has begun."""

    def __init__(self, dest: Path, token: str) -> None:
        self.dest, self.token = dest, token
        self.work, self.aside = work_path(dest, token), work_path(dest, token, ASIDE)
        self.lock = work_path(dest, token, LOCK)

    def committing(self) -> bool:
        return self.lock.name.endswith(COMMIT)

    def move_in(self) -> None:
        """Steps 2 to 4: the complete work folder onto the destination."""
        dest, work = self.dest, self.work
        try:
            _fsync_tree(work)
            if not os.path.lexists(dest):
                os.rename(work, dest)  # step 2
            elif os.path.islink(dest) or not os.path.isdir(dest):
                raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), os.fspath(dest))
            elif not exchange(work, dest):  # step 3, else step 4:
                os.rename(self.lock, work_path(dest, self.token, COMMIT))
                self.lock = work_path(dest, self.token, COMMIT)
                os.rename(dest, self.aside)
                os.rename(work, dest)
        except BaseException as err:
            if self.committing():
                with suppress(OSError):
                    finish_move(work, self.aside, dest)  # cut between two renames: a whole folder goes back
            if isinstance(err, OSError):
                raise cannot_write(dest, err) from err
            raise

    def clean(self) -> None:
        """Remove what is left beside the destination, the lock file last."""
        # Cut between the two renames with no way back: everything stays for the next sweep.
        cut = self.committing() and not os.path.lexists(self.dest)
        if not cut and remove(self.work) and remove(self.aside):
            with suppress(OSError):
                os.unlink(self.lock)  # last: while anything is left, the lock file says whose it is


@contextmanager
def replacing_folder(
    dest: str | os.PathLike[str], check: Callable[[Path], None] | None = None
) -> Iterator[Path]:
    """An empty work folder whose content replaces `dest` when the block ends without an exception.

    `check(dest)` runs again just before the swap (a caller's rule about what it may replace).
    On an exception `dest` is as it was and the work folder is removed; a write the disk refuses
    is raised as `OutputError`. See the module's docstring for the swap and its recovery.
    """
    dest = Path(dest)
    sweep(dest)
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        token, lock_fd = new_locked(dest, LOCK)
    except OSError as err:
        raise cannot_write(dest, err) from err
    swap = _FolderSwap(dest, token)
    try:
        try:
            os.write(lock_fd, f"wmviz is writing {dest.name} in {swap.work.name}\n".encode())
            os.mkdir(swap.work)
            yield swap.work
        except OSError as err:
            if err.errno in WRITE_ERRNOS:
                raise cannot_write(dest, err) from err
            raise
        if check is not None:
            check(dest)
        swap.move_in()
    finally:
        swap.clean()
        os.close(lock_fd)


def _fsync_tree(folder: Path) -> None:
    """Flush every file of a finished folder to disk before it is moved in."""
    for root, _, files in os.walk(folder):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY | os.O_CLOEXEC)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)


_AT_FDCWD, _RENAME_EXCHANGE = -100, 2
_UNSUPPORTED = frozenset({errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP, errno.ENOTSUP})


def _renameat2() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        func = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    func.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    func.restype = ctypes.c_int
    return func


_RENAMEAT2 = _renameat2()


def exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (renameat2 RENAME_EXCHANGE); False where the system or the file
    system has no such call."""
    if _RENAMEAT2 is None:
        return False
    if _RENAMEAT2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    code = ctypes.get_errno()
    if code in _UNSUPPORTED:
        return False
    raise OSError(code, os.strerror(code), os.fspath(b))
