"""A timeline's part files read so that every byte handed to Arrow is a byte wmviz wrote.

meta.json keeps each part file's size and SHA-256. A file is hashed whole once per process and
content (the memo is keyed by that digest, never by the file's name, size or times), and the same
pass keeps the SHA-256 of each BLOCK of it. Every later read hashes the blocks it touches and
compares them with those digests before the bytes leave this module, so a file changed on disk
after it was checked is refused by the read that would have served it, whatever its size, times
or inode say. A read costs a hash of the blocks it touches: at most two blocks more than it asked.
"""

from __future__ import annotations

import hashlib
import io
import os
import threading
from collections import OrderedDict
from pathlib import Path
from typing import Any

from wmviz.core.errors import BadInputError

BLOCK = 256 * 1024
_KEPT = 4096  # files whose block digests stay in memory (32 bytes per 256 KiB: 128 KB per GB)

_digests: OrderedDict[tuple[str, int], tuple[bytes, ...]] = OrderedDict()
_lock = threading.Lock()


class PartChanged(BadInputError, ValueError):
    """A part file that is not the one meta.json lists: changed, cut, or gone since it was written."""


def block_digests(file: io.RawIOBase, record: dict[str, Any], fresh: bool = False) -> tuple[bytes, ...]:
    """The SHA-256 of each BLOCK of the open `file`, once the whole file is checked against
    `record` (meta.json's size and SHA-256). Remembered per content; `fresh` hashes it again."""
    key = (str(record.get("sha256")), int(record.get("bytes", -1)))
    if not fresh:
        with _lock:
            if key in _digests:
                _digests.move_to_end(key)
                return _digests[key]
    whole, blocks, size = hashlib.sha256(), [], 0
    while block := os.pread(file.fileno(), BLOCK, size):
        whole.update(block)
        blocks.append(hashlib.sha256(block).digest())
        size += len(block)
    if (size, whole.hexdigest()) != (key[1], key[0]):
        raise PartChanged("changed on disk since wmviz wrote it (its size or SHA-256 differs from meta.json)")
    found = tuple(blocks)
    with _lock:
        _digests[key] = found
        _digests.move_to_end(key)
        while len(_digests) > _KEPT:
            _digests.popitem(last=False)
    return found


class CheckedPart(io.RawIOBase):
    """A part file open for Arrow (through `pyarrow.PythonFile`): every read checks the blocks it
    returns against the digests of the checked file. The file stays open until closed, so a part
    removed from the cache while it is being read is still read whole."""

    def __init__(self, path: Path, record: dict[str, Any]) -> None:
        super().__init__()
        try:
            self._file = open(path, "rb", buffering=0)  # noqa: SIM115 (closed by close())
        except FileNotFoundError:
            raise PartChanged("gone: the cache entry was removed while in use") from None
        try:
            self._digests = block_digests(self._file, record)
        except BaseException:
            self._file.close()
            raise
        self._size = int(record["bytes"])
        self._pos = 0
        self._kept = (-1, b"")  # the last block checked: a read continuing inside it is not hashed again
        self._read_lock = threading.Lock()

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._pos, io.SEEK_END: self._size}[whence]
        self._pos = max(0, base + offset)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, size: int | None = -1) -> bytes:
        with self._read_lock:
            start = self._pos
            end = self._size if size is None or size < 0 else min(self._size, start + size)
            if start >= end:
                return b""
            first, last = start // BLOCK, (end - 1) // BLOCK
            data = self._checked_blocks(first, last)
            self._pos = end
            return data[start - first * BLOCK : end - first * BLOCK]

    def readall(self) -> bytes:
        return self.read(-1)

    def _checked_blocks(self, first: int, last: int) -> bytes:
        """Blocks first..last, each compared with its digest (the kept block is not read again)."""
        pieces, index = [], first
        if self._kept[0] == first:
            pieces.append(self._kept[1])
            index += 1
        if index <= last:
            want = min(self._size, (last + 1) * BLOCK) - index * BLOCK
            raw = os.pread(self._file.fileno(), want, index * BLOCK)
            if len(raw) != want:
                raise PartChanged("changed on disk since it was checked (it is shorter now)")
            view = memoryview(raw)
            for i in range(index, last + 1):
                block = view[(i - index) * BLOCK : (i - index + 1) * BLOCK]
                if hashlib.sha256(block).digest() != self._digests[i]:
                    raise PartChanged(f"changed on disk since it was checked (block {i} differs)")
            pieces.append(raw)
            self._kept = (last, bytes(view[(last - index) * BLOCK :]))
        return pieces[0] if len(pieces) == 1 else b"".join(pieces)

    def close(self) -> None:
        if not self.closed:
            self._file.close()
        super().close()
