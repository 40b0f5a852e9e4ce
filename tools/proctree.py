"""The processes below a process, read from /proc (Linux): what a test or a benchmark that starts
servers, JVMs and browsers needs to measure or wait for them. One walk, for all of them."""

from __future__ import annotations

from pathlib import Path


def stat_fields(pid: int) -> list[str] | None:
    """`/proc/<pid>/stat` after the command name (state, ppid, …; utime is index 11), or None for a
    process gone meanwhile."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def descendants(pid: int) -> list[int]:
    """Every process below `pid` (children, their children, …), each parent before its children. A
    process in a session of its own is still below its parent; one adopted by init is not."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and (fields := stat_fields(int(entry.name))) is not None:
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child)
    return found
