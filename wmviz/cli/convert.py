"""`wmviz convert IN OUT`: a job recording from one form into the other (JSON <-> columnar).

The form to write is OUT's extension (.json: the readable export; .arrow: the columnar form, read
lazily, `wmviz.record.job_columnar`); IN is told by its bytes. Both are read and written by the one
reader and writer (`wmviz.record.job`), so what one form holds the other holds point for point.
An appended recording (what `record` writes) becomes a columnar one line by line
(`wmviz.record.job_stream`, the same line rules), so a day of a large job converts in bounded memory.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from wmviz.cli.errors import BadInput
from wmviz.cli.record_job import SUFFIXES, check_out, save, summary
from wmviz.disk import OutputError
from wmviz.record.job import JobFormatError, read_recording
from wmviz.record.job_stream import convert_lines, is_lines_file


def add_convert_parser(sub: argparse._SubParsersAction) -> None:
    """The `convert` command."""
    p = sub.add_parser("convert", help="write a job recording in the other form (.json <-> .arrow)")
    p.add_argument("recording", type=Path, help="a job recording (.json or columnar .arrow)")
    p.add_argument("out", type=Path, help="the recording to write: .json (readable) or .arrow (columnar)")


def cmd_convert(args: argparse.Namespace) -> None:
    """Read IN (either form), write OUT in the form its extension names; one line on what it holds."""
    check_out(args.out, [("the recording", args.recording)])
    if args.recording.is_dir():
        raise BadInput(f"{args.recording}: is a folder, not a file")
    if not args.recording.is_file():
        raise BadInput(f"{args.recording}: no such file")
    columnar = args.out.suffix.lower() == SUFFIXES["columnar"]
    try:
        if columnar and is_lines_file(args.recording):
            convert_lines(args.recording, args.out)  # line by line, whatever the file's length
            print(summary(read_recording(args.out), args.out))
            return
        rec = read_recording(args.recording)
    except JobFormatError as err:
        said, name = str(err), args.recording.name
        raise BadInput(said if said.startswith(name) else f"{name}: {said}") from None
    except OutputError as err:
        raise BadInput(str(err)) from None
    except OSError as err:
        raise BadInput(f"{args.recording}: {err}") from None
    save(rec, args.out, columnar)
    print(summary(rec, args.out))
