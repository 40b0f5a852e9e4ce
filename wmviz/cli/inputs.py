"""The trace and config a command names: checked to be readable files (or a built-in incident's
name), then read and validated. Every command that takes a trace reads it through here."""

from __future__ import annotations

import argparse
from pathlib import Path

from wmviz.cli.errors import BadInput
from wmviz.core.scenario import Trace
from wmviz.store.incidents import incident_files, incident_names
from wmviz.trace.readers import read_trace


def check_files(args: argparse.Namespace) -> None:
    """The trace and config named on the command line are files this process can read; a trace
    that is no file but a built-in incident's name (`flink-38477-zero-output`) is that incident's
    packaged trace, with its own config unless --config names one."""
    built_in = None if args.trace.exists() else incident_files(str(args.trace))
    if built_in is not None:
        args.trace, args.config = built_in[0], args.config or built_in[1]
    for path in (args.trace, args.config):
        if path is None:
            continue
        if path.is_dir():
            raise BadInput(f"{path}: is a folder, not a file")
        if not path.exists():
            raise BadInput(f"{path}: no such file{_hint(path, is_trace=path is args.trace)}")
        try:
            with open(path, "rb"):
                pass
        except OSError as exc:
            raise BadInput(f"{path}: cannot be read ({exc.strerror or exc})") from None


def load(args: argparse.Namespace) -> Trace:
    """Read and validate the trace (and config) named on the command line."""
    check_files(args)
    return read_trace(args.trace, args.config)


def _hint(path: Path, *, is_trace: bool) -> str:
    """What a missing trace may have meant: the built-in incident its file name names, or, for a
    bare name (no folder, no file suffix), the names of the built-in incidents to choose from."""
    if not is_trace:
        return ""
    if incident_files(path.name) is not None:
        return f" (to use the built-in incident, name it alone: {path.stem})"
    if path.name == str(path) and not path.suffix:
        return (
            f", and no built-in incident has that name; the built-in ones are: {', '.join(incident_names())}"
        )
    return ""
