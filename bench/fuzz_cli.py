"""Running one fuzz input through the command line, in this process, and classing what it did.

A surface input is a few files and the arguments of one `wmviz` command; it runs through
`wmviz.cli.commands.main` (with `--debug`, so an internal error prints its traceback) inside the
scratch folder. Exit 2 (or argparse's usage exit) is a clean error; exit 1 is a traceback (or over
memory for a MemoryError); exit 0 is accepted once the output it wrote reads back: a trace must
validate, a job recording must read (else "unreadable output").
"""

from __future__ import annotations

import contextlib
import io
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from fuzz_pool import ACCEPTED, CLEAN, MEMORY, TRACEBACK, UNREADABLE, Outcome, describe

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)')


@dataclass(frozen=True)
class SurfaceCase:
    """One input of a surface: its files by name, the command's arguments, how it was made."""

    index: int
    fmt: str
    data: tuple[tuple[str, bytes], ...]
    args: tuple[str, ...]
    mutations: tuple[str, ...]

    def files(self) -> dict[str, bytes]:
        """The files the command reads, by name (relative to the scratch folder)."""
        return dict(self.data)

    def note(self) -> str:
        """How the input was made, and the command to run it again from the saved folder."""
        return f"target: {self.fmt}\nmutations: {'; '.join(self.mutations)}\nargs: {list(self.args)}"


Check = Callable[[Path], str | None]
"""Why an output written by a command that exited 0 is unreadable (None if it reads)."""


def trace_check(path: Path) -> str | None:
    """The imported trace must validate (a CSV's config is beside it)."""
    from wmviz.record.output import config_beside
    from wmviz.trace.errors import TraceValidationError
    from wmviz.trace.readers import read_trace

    if not path.is_file():
        return f"exit 0 but no {path.name} was written"
    config = config_beside(path) if path.suffix.lower() == ".csv" else None
    try:
        read_trace(path, config)
    except TraceValidationError as err:
        return f"the written trace is refused: {str(err).splitlines()[0][:300]}"
    return None


def recording_check(path: Path) -> str | None:
    """The job recording must read back."""
    from wmviz.record.job import JobFormatError, read_recording

    if not path.is_file():
        return f"exit 0 but no {path.name} was written"
    try:
        read_recording(path)
    except JobFormatError as err:
        return f"the written recording is refused: {str(err)[:300]}"
    return None


def internal_error(stderr: str) -> Outcome:
    """Exit 1: the message and the last frames of the --debug traceback."""
    message = next((line for line in reversed(stderr.splitlines()) if line.startswith("internal error")), "")
    frames = _FRAME.findall(stderr)[-6:]
    where = " <- ".join(f"{Path(f).name}:{line} {name}" for f, line, name in reversed(frames))
    cls = MEMORY if "MemoryError" in message else TRACEBACK
    return cls, f"{message[:400]} at {where}"


def run_cli(case: SurfaceCase, folder: str, check: Check | None = None, out: str | None = None) -> Outcome:
    """Run `wmviz <args>` in `folder` with the case's files there; class the outcome."""
    from wmviz.cli.commands import main

    here = os.getcwd()
    for name, data in case.data:
        Path(folder, name).write_bytes(data)
    stdout, stderr = io.StringIO(), io.StringIO()
    os.chdir(folder)
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code = main(["--debug", *case.args])
            except SystemExit as exit_:  # argparse's usage error
                code = 2 if exit_.code not in (0, None) else 0
        return _classed(code, stderr.getvalue(), check, Path(folder, out) if out else None)
    except MemoryError:
        return MEMORY, "MemoryError"
    except Exception as err:  # raised past main's own handlers
        return TRACEBACK, describe(err)
    finally:
        os.chdir(here)


def _classed(code: int, stderr: str, check: Check | None, out: Path | None) -> Outcome:
    if code == 2:
        return CLEAN, stderr.strip().splitlines()[0][:300] if stderr.strip() else "exit 2"
    if code == 1:
        return internal_error(stderr)
    if code != 0:
        return TRACEBACK, f"exit {code}: {stderr.strip()[-300:]}"
    if check is not None and out is not None:
        problem = check(out)
        if problem:
            return UNREADABLE, problem
    return ACCEPTED, ""
