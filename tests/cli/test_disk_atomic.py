"""wmviz.disk: an output appears whole or not at all, and what a killed run leaves is cleared.

The kill tests fork a child that writes an output with every system call the module makes
counted, and SIGKILLs itself just before the k-th one, for every k: the destination must then be
the old output or the new one, whole (or, without an atomic exchange, absent until the next
run's sweep puts one of them back), and the next run's sweep must leave nothing beside it.
"""

from __future__ import annotations

import errno
import fcntl
import os
import signal
import sys
from pathlib import Path

import pytest

from wmviz.disk import atomic
from wmviz.disk.atomic import GrowingFile, OutputError, replacing_file, replacing_folder
from wmviz.disk.overlap import refuse_overlap
from wmviz.disk.work import new_token, sweep, work_path

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork and renameat2")

OLD = {"a": "old a", "b/c": "old c", "b/d": "old d"}
NEW = {"a": "new a", "b/c": "new c", "e": "new e"}
COUNTED = ("open", "write", "close", "rename", "replace", "unlink", "rmdir", "mkdir", "fsync",
           "ftruncate", "fchmod", "listdir", "scandir", "lstat", "stat", "fstat")  # fmt: skip


def folder_state(path: Path) -> dict[str, str] | None:
    if not path.exists():
        return None
    return {str(p.relative_to(path)): p.read_text() for p in path.rglob("*") if p.is_file()}


def write_tree(path: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path / name, os.O_WRONLY | os.O_CREAT, 0o644)  # counted, as the writer's own calls
        os.write(fd, text.encode())
        os.close(fd)


def in_child(kill_at: int, action, exchange: bool) -> int:
    """Run `action` in a forked child killed just before its `kill_at`-th system call (0: never);
    the number of calls it made (when not killed) or -1."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: count, die at the chosen call, never return into pytest
        os.close(read)
        calls = [0]
        real_write = os.write

        def counted(func):
            def call(*args, **kwargs):
                calls[0] += 1
                if calls[0] == kill_at:
                    os.kill(os.getpid(), signal.SIGKILL)
                return func(*args, **kwargs)

            return call

        try:
            for name in COUNTED:
                setattr(os, name, counted(getattr(os, name)))
            fcntl.flock = counted(fcntl.flock)
            atomic.exchange = counted(atomic.exchange) if exchange else (lambda a, b: False)
            action()
            real_write(write, str(calls[0]).encode())
        finally:
            os._exit(0)
    os.close(write)
    _, status = os.waitpid(pid, 0)
    with os.fdopen(read) as pipe:
        told = pipe.read()
    return int(told) if os.WIFEXITED(status) and told else -1


def leftovers(dest: Path) -> list[str]:
    return sorted(n for n in os.listdir(dest.parent) if ".wmviz-" in n)


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
def test_a_folder_killed_before_any_system_call_is_old_or_new_and_the_next_run_clears_the_rest(
    tmp_path, exchange
):
    def action(dest: Path) -> None:
        with replacing_folder(dest) as work:
            write_tree(work, NEW)

    probe = tmp_path / "probe" / "out"
    probe.mkdir(parents=True)
    write_tree(probe, OLD)
    total = in_child(0, lambda: action(probe), exchange)
    assert total > 15 and folder_state(probe) == NEW
    outcomes = set()
    for k in range(1, total + 1):
        dest = tmp_path / f"k{k}" / "out"
        dest.mkdir(parents=True)
        write_tree(dest, OLD)
        assert in_child(k, lambda dest=dest: action(dest), exchange) == -1
        state = folder_state(dest)
        # With the exchange the folder is whole at every moment; with two renames it may be
        # absent between them, and the sweep puts a whole one back.
        assert state in ((OLD, NEW) if exchange else (OLD, NEW, None)), (k, state)
        sweep(dest)
        state = folder_state(dest)
        assert state in (OLD, NEW), (k, state)
        assert leftovers(dest) == [], (k, leftovers(dest))
        outcomes.add("new" if state == NEW else "old")
        action(dest)  # the next run writes over whatever it found
        assert folder_state(dest) == NEW and leftovers(dest) == []
    assert outcomes == {"old", "new"}


def test_a_file_killed_before_any_system_call_is_old_or_new_and_the_next_run_clears_the_rest(tmp_path):
    new = b"new content\n" * 1000

    def action(dest: Path) -> None:
        with replacing_file(dest) as stream:
            stream.write(new)

    (tmp_path / "probe.jsonl").write_bytes(b"old\n")
    total = in_child(0, lambda: action(tmp_path / "probe.jsonl"), True)
    for k in range(1, total + 1):
        dest = tmp_path / f"k{k}" / "out.jsonl"
        dest.parent.mkdir()
        dest.write_bytes(b"old\n")
        in_child(k, lambda dest=dest: action(dest), True)
        assert dest.read_bytes() in (b"old\n", new), k
        sweep(dest)
        assert leftovers(dest) == [], k


def test_a_growing_file_killed_anywhere_holds_whole_blocks(tmp_path):
    blocks = [f"sample {i}\n".encode() * 50 for i in range(6)]

    def action(dest: Path) -> None:
        grow = GrowingFile(dest, b"header\n")
        for block in blocks:
            grow.add(block)
        grow.close()

    (tmp_path / "probe.jsonl").write_bytes(b"an earlier recording\n")
    total = in_child(0, lambda: action(tmp_path / "probe.jsonl"), True)
    for k in range(1, total + 1):
        dest = tmp_path / f"k{k}" / "rec.jsonl"
        dest.parent.mkdir()
        dest.write_bytes(b"an earlier recording\n")
        in_child(k, lambda dest=dest: action(dest), True)
        data = dest.read_bytes()
        whole = [b"header\n" + b"".join(blocks[:n]) for n in range(1, len(blocks) + 1)]
        assert data == b"an earlier recording\n" or data in whole, k
        sweep(dest)
        assert leftovers(dest) == [], k


def test_a_growing_file_appears_with_its_first_block_and_not_at_all_without_one(tmp_path):
    dest = tmp_path / "r.jsonl"
    dest.write_text("earlier\n")
    grow = GrowingFile(dest, b"head\n")
    assert dest.read_text() == "earlier\n"
    assert grow.close() is False
    assert dest.read_text() == "earlier\n" and leftovers(dest) == []
    grow = GrowingFile(dest, b"head\n")
    grow.add(b"one\n")
    assert dest.read_text() == "head\none\n"
    grow.add(b"two\n")
    assert grow.close() is True and dest.read_text() == "head\none\ntwo\n"


def test_a_block_the_disk_refuses_is_cut_off_again(tmp_path, monkeypatch):
    dest = tmp_path / "r.jsonl"
    grow = GrowingFile(dest, b"head\n")
    grow.add(b"one\n")
    real_write = os.write

    def half_then_full(fd, data):
        if len(data) > 4:
            return real_write(fd, bytes(data[:3]))  # a short write, then the disk is full
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "write", half_then_full)
    with pytest.raises(OutputError, match=f"cannot write {dest}: No space left on device"):
        grow.add(b"two and more\n")
    monkeypatch.undo()
    grow.close()
    assert dest.read_text() == "head\none\n"


def test_a_failed_write_leaves_the_old_output_and_no_work_item(tmp_path):
    dest = tmp_path / "out"
    dest.mkdir()
    write_tree(dest, OLD)
    with pytest.raises(RuntimeError), replacing_folder(dest) as work:
        write_tree(work, NEW)
        raise RuntimeError("the run failed")
    assert folder_state(dest) == OLD and leftovers(dest) == []
    target = tmp_path / "f.csv"
    target.write_text("old")
    with pytest.raises(ValueError), replacing_file(target) as stream:
        stream.write(b"half")
        raise ValueError("bad row")
    assert target.read_text() == "old" and leftovers(target) == []


def test_the_sweep_leaves_living_work_and_anything_it_cannot_recognise(tmp_path):
    dest = tmp_path / "out.jsonl"
    keep = [
        tmp_path / f".out.jsonl.wmviz-work-{'0' * 20}",  # the pattern, but its check fails
        tmp_path / ".out.jsonl.wmviz-1234abcd",  # not the pattern
        work_path(tmp_path / "other.jsonl", new_token(tmp_path / "other.jsonl")),  # another output's
    ]
    for path in keep:
        path.write_text("someone's")
    dead = work_path(dest, new_token(dest))
    dead.write_text("left by a killed run")
    folder = work_path(dest, new_token(dest))
    folder.mkdir()  # a folder without its lock file is no run's: kept
    with replacing_file(dest) as stream:  # a living writer: its work file is locked
        living = [p for p in tmp_path.iterdir() if p.name.startswith(".out.jsonl.wmviz-work-")]
        sweep(dest)
        assert not dead.exists()
        assert all(p.exists() for p in living if p != dead)
        stream.write(b"x")
    assert all(p.exists() for p in keep) and folder.is_dir()


def test_an_output_that_is_an_input_is_refused_by_any_name(tmp_path):
    source = tmp_path / "dump.jsonl"
    source.write_text("data")
    (tmp_path / "link.jsonl").symlink_to(source)
    os.link(source, tmp_path / "hard.jsonl")
    names = ("link.jsonl", "hard.jsonl", "x/../dump.jsonl")
    for same in (source, *(tmp_path / name for name in names)):
        with pytest.raises(OutputError, match="is the same file as the dump"):
            refuse_overlap([("the dump", source)], [("--out", same)])
    with pytest.raises(OutputError, match=r"--samples .* and --out .* are the same file"):
        refuse_overlap([], [("--samples", tmp_path / "new.jsonl"), ("--out", tmp_path / "new.jsonl")])
    with pytest.raises(OutputError, match="holds the trace"):
        refuse_overlap([("the trace", source)], [], ("--out", tmp_path))
    refuse_overlap([("the dump", source)], [("--out", tmp_path / "other.jsonl")], ("--out", tmp_path / "tl"))


def test_a_file_behind_a_symbolic_link_is_replaced_through_it_and_a_folder_never_replaces_a_file(tmp_path):
    target = tmp_path / "real.jsonl"
    target.write_text("old")
    (tmp_path / "link.jsonl").symlink_to(target)
    with replacing_file(tmp_path / "link.jsonl") as stream:
        stream.write(b"new")
    assert (tmp_path / "link.jsonl").is_symlink() and target.read_text() == "new"
    plain = tmp_path / "plain"
    plain.write_text("a file")
    with pytest.raises(OutputError, match="Not a directory"), replacing_folder(plain) as work:
        (work / "x").write_text("x")
    assert plain.read_text() == "a file" and leftovers(plain) == []
