"""The trace and config a command names: checked to be readable files (or a built-in incident's
name), then read and validated. Every command that takes a trace reads it through here."""

from __future__ import annotations

import argparse

from wmviz.cli.errors import BadInput
from wmviz.core.scenario import Trace
from wmviz.store.incidents import incident_files
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
            named_built_in = path is args.trace and incident_files(path.name) is not None
            hint = f" (to use the built-in incident, name it alone: {path.stem})" if named_built_in else ""
            raise BadInput(f"{path}: no such file{hint}")
        try:
            with open(path, "rb"):
                pass
        except OSError as exc:
            raise BadInput(f"{path}: cannot be read ({exc.strerror or exc})") from None


def load(args: argparse.Namespace) -> Trace:
    """Read and validate the trace (and config) named on the command line."""
    check_files(args)
    return read_trace(args.trace, args.config)
