"""A command never writes over a file it reads, nor two of its outputs over each other.

Paths are compared as the system sees them: the same file through a symbolic or hard link, a
relative path or `..` is the same file (`os.path.samefile` for files that exist, the resolved
paths for one that does not yet). A folder output must not hold any file the command reads.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from wmviz.disk.atomic import OutputError

Named = tuple[str, "str | os.PathLike[str] | None"]
"""A path and how the command line names it (`--out`, `the dump`, ...); None: not given."""


def _same(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def _inside(path: Path, folder: Path) -> bool:
    real, top = os.path.realpath(path), os.path.realpath(folder)
    return real == top or real.startswith(top.rstrip(os.sep) + os.sep)


def refuse_overlap(reads: Sequence[Named], writes: Sequence[Named], folder: Named | None = None) -> None:
    """`OutputError` naming both paths when an output (`writes`, or the output `folder`) is a file
    the command reads (`reads`), or two outputs are the same file."""
    given_reads = [(label, Path(p)) for label, p in reads if p is not None]
    given_writes = [(label, Path(p)) for label, p in writes if p is not None]
    for out_label, out in given_writes:
        for in_label, source in given_reads:
            if _same(out, source):
                raise OutputError(
                    f"{out_label} {out} is the same file as {in_label} {source}: a command never "
                    f"writes over a file it reads; give another {out_label}"
                )
    for i, (label, out) in enumerate(given_writes):
        for other_label, other in given_writes[i + 1 :]:
            if _same(out, other):
                raise OutputError(
                    f"{label} {out} and {other_label} {other} are the same file; give them different names"
                )
    if folder is not None and folder[1] is not None:
        label, top = folder[0], Path(folder[1])
        for in_label, source in given_reads:
            if _inside(source, top):
                raise OutputError(
                    f"{label} {top} holds {in_label} {source}: a command never writes over a file it "
                    f"reads; give another {label}"
                )
