"""Where a server's live queries keep their files, and the sweep of what stopped servers left.

A micro-batch writes its offsets, its commit and its state: in memory (/dev/shm) where the system
has it, else beside the app's cache. Each server process has a folder of its own, named by its
process id, so a server never touches another's; a folder whose process is gone is removed when
the next server starts, but only one wmviz made (it holds `MARKER`): a folder of digits someone
else keeps there stays.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

SHM = Path("/dev/shm")
MARKER = ".wmviz-live"
"""The file wmviz writes into each server's folder: the sweep removes only folders that hold it."""


def live_base(fallback: Path, shm: Path = SHM) -> Path:
    """The folder every server's live folder sits in: `wmviz-live` in `shm` when it is there and
    writable, else `fallback`."""
    return shm / "wmviz-live" if shm.is_dir() and os.access(shm, os.W_OK) else fallback


def server_root(base: Path) -> Path:
    """This server process's folder under `base` (made, and marked as wmviz's, on first use)."""
    root = base / str(os.getpid())
    root.mkdir(parents=True, exist_ok=True)
    (root / MARKER).touch()
    return root


def new_work(root: Path) -> Path:
    """A fresh folder for one live run's query under `root` (this server's folder)."""
    return Path(tempfile.mkdtemp(prefix="live-", dir=root))


def sweep_stale(base: Path) -> list[Path]:
    """Remove the folders under `base` that servers now gone left: named by a process id that no
    longer runs, and marked as wmviz's. Returns what was removed."""
    removed = []
    for folder in base.glob("[0-9]*"):
        if not folder.name.isdigit() or int(folder.name) == os.getpid() or not (folder / MARKER).is_file():
            continue
        try:
            os.kill(int(folder.name), 0)
        except ProcessLookupError:
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
        except PermissionError:
            pass  # another user's running process
    return removed
