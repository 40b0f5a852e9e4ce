"""`python -m wmviz blame RECORDING [--vertex NAME] [--at TIME] [--json]`: who holds the watermark."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from wmviz.analysis.blame import Blame, BlameError, Walker
from wmviz.cli.errors import BadInput
from wmviz.core.errors import BadValue
from wmviz.record.job import JobFormatError, JobRecording, Vertex, read_recording
from wmviz.record.names import pick_name
from wmviz.trace.timecells import parse_time_ms
from wmviz.view.timefmt import TimeFormat, duration


def add_blame_parser(sub) -> None:
    """The `blame` subcommand."""
    p = sub.add_parser(
        "blame", help="walk a job recording from a stalled vertex back to the source holding it"
    )
    recording_arguments(
        p,
        "start here",
        "the most downstream vertex whose output stands still at --at",
        '{"chain": [...] (root cause last), "stalled", "lag_ms", "lag_threshold_ms", "ending"}',
    )


def recording_arguments(p, vertex: str, default: str, json_shape: str) -> None:
    """The arguments every command over a job recording takes (blame, lag): the recording, a
    vertex, a moment and --json."""
    p.add_argument("recording", type=Path, help="a job recording (wmviz record / import prometheus --plan)")
    p.add_argument(
        "--vertex",
        help=f"{vertex}: a vertex name (as typed or as the reporter filters it) or id; default: {default}",
    )
    p.add_argument("--at", help="the moment: ISO 8601 or epoch ms (default: the last sample)")
    p.add_argument("--json", action="store_true", help=f"print {json_shape}")


def cmd_blame(args: argparse.Namespace) -> None:
    """Print the chain, one hop a line, or as JSON."""
    rec, at_ms = recording_and_moment(args)
    try:
        blame = Walker(rec).blame(pick_vertex(rec, args.vertex), at_ms)
    except (BadValue, BlameError) as err:
        raise BadInput(str(err)) from None
    if args.json:
        print(json.dumps(blame.as_json()))
        return
    for line in blame_lines(blame):
        print(line)


def recording_and_moment(args: argparse.Namespace) -> tuple[JobRecording, int | None]:
    """The recording `args.recording` names, read, and `--at` in epoch ms (None: not given);
    `BadInput` naming the file, or the flag, when either cannot be read."""
    if args.recording.is_dir():
        raise BadInput(f"{args.recording}: is a folder, not a file")
    if not args.recording.is_file():
        raise BadInput(f"{args.recording}: no such file")
    try:
        at_ms = parse_time_ms(args.at, sentinels=False) if args.at is not None else None
    except BadValue as err:
        raise BadInput(f"--at {err}") from None
    try:
        return read_recording(args.recording), at_ms
    except JobFormatError as err:  # its message names the file already, as the reader read it
        said, name = str(err), args.recording.name
        raise BadInput(said if said.startswith(name) else f"{name}: {said}") from None
    except OSError as err:
        raise BadInput(f"{args.recording}: {err}") from None


def pick_vertex(rec: JobRecording, text: str | None) -> Vertex | None:
    """The vertex `--vertex` names, by id or by name (as typed or as the reporter filters it);
    None when not given. `BadValue` naming the choices when it names none."""
    if text is None:
        return None
    by_id = {v.id: v for v in rec.vertices}
    by_name = {v.name: v for v in rec.vertices}
    return by_id.get(text) or by_name[pick_name(list(by_name), text, "--vertex", "vertices")]


def blame_lines(blame: Blame) -> list[str]:
    """The chain in words: one line a hop, then why it ends there (or that nothing is stalled)."""
    times = TimeFormat("utc")
    lines = [f"at {times(blame.at_ms)}:"]
    for hop in blame.chain:
        since = (
            f"since at least {times(hop.since_ms)} (the recording's first sample)"
            if hop.since_ms == blame.first_ms
            else f"since {times(hop.since_ms)}"
        )
        lines.append(
            f"  {hop.vertex!r} subtask {hop.subtask}: held by {hop.held_by} at {times(hop.watermark_ms)}, "
            f"{duration(hop.behind_ms)} behind the leading watermark, {since}"
        )
    lines.append(f"  → {blame.ending}")
    return lines
