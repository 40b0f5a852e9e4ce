"""`wmviz sql replay JOB ROWS [--json]`: a SQL job replayed on its rows (docs/sql.md).

JOB is a `.sql` script (compiled by Flink's own planner) or any plan `wmviz plan` reads; ROWS is a
JSON Lines file of input rows in arrival order (`wmviz.sql.rows`). Every row a sink receives, every
late drop (`numLateRecordsDropped`, or a window join's per-side counter) and every node's watermark
change is printed at its step; what the model does not replay is said by name.
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from wmviz.cli.errors import BadInput
from wmviz.core.sql_expr import UnsupportedExpression
from wmviz.core.types import Profile
from wmviz.core.windows import ScenarioError
from wmviz.disk import refuse_overlap
from wmviz.record.job import write_recording
from wmviz.sql.chain import StageRun
from wmviz.sql.dead_letter import dead_letter_accounts
from wmviz.sql.errors import PlanError
from wmviz.sql.load import read_plan_file
from wmviz.sql.model import SqlJob
from wmviz.sql.recording import recording_of
from wmviz.sql.replay import ReplayRefused, WatermarkLine, group_trace, replay_states, watermark_changes
from wmviz.sql.rowflow import DropLine, SinkRow, replay_lines, rows_not_replayed
from wmviz.sql.rows import InputRow, ReplayInput, RowsFileError, read_input
from wmviz.trace.writers import write_trace
from wmviz.view.timefmt import TimeFormat


def add_sql_parser(sub) -> None:
    """The `sql` subcommand and its `replay` verb."""
    sql = sub.add_parser("sql", help="a Flink SQL job: replay its watermarks on its rows")
    verbs = sql.add_subparsers(dest="sql_command", required=True)
    replay = verbs.add_parser(
        "replay",
        help="replay a SQL job (a .sql script or a plan) on rows in arrival order: each operator's watermark",
    )
    replay.add_argument(
        "job", type=Path, help="a .sql script, a COMPILE PLAN JSON, EXPLAIN text or REST plan"
    )
    replay.add_argument("rows", type=Path, help='JSON Lines: {"table", "partition", "row": {...}} per line')
    replay.add_argument(
        "--json", action="store_true", help='JSON Lines: {"step", "operator", "node", "watermark"} per change'
    )
    replay.add_argument(
        "--out",
        type=Path,
        help="also write the replay as a job recording (wmviz-job/1): the graph page and blame read it",
    )
    replay.add_argument(
        "--trace-out",
        type=Path,
        help="also write the replay as a wmviz trace (.jsonl, with its config) the page steps through; "
        "for a job whose watermarks form one group",
    )
    replay.add_argument(
        "--stage-traces",
        type=Path,
        metavar="DIR",
        help="also write, into DIR, the trace each operator in series ran (fed by another SQL operator's "
        "rows and watermarks): `wmviz late` on one gives that operator's late-row ledger",
    )
    replay.add_argument("--profile", choices=[p.value for p in Profile], default=Profile.FLINK_1X_2X.value)


def cmd_sql(args: argparse.Namespace) -> None:
    """`sql replay`: read the job and the rows, replay, print (and write --out)."""
    job, rows = _inputs(args)
    try:
        _replay(job, rows, args)
    except ScenarioError as err:  # a row an operator cannot take: its row is the rows file's line
        raise BadInput(f"{args.rows}, line {err.row.row}, field {err.column!r}: {err.reason}") from None


def _replay(job: SqlJob, rows: ReplayInput, args: argparse.Namespace) -> None:
    if args.out is not None:
        refuse_overlap([("the job", args.job), ("the rows", args.rows)], [], ("--out", args.out))
    try:
        states = list(replay_states(job, rows, Profile.parse(args.profile)))
    except (RowsFileError, ReplayRefused) as err:
        raise BadInput(str(err)) from None
    if args.trace_out is not None:
        _write_trace(job, rows, args)
    if args.out is not None:
        running = [s for s in states if s.step < rows.end_step]
        write_recording(recording_of(job, running, args.job.stem), args.out)
    runs: dict[str, StageRun] = {}
    lines: list[Line] = [*replay_lines(job, rows, states, runs), *watermark_changes(job, states)]
    lines.sort(key=lambda line: line.step)  # stable: a step's rows, then its drops, then its watermarks
    _print(lines, rows_not_replayed(job), rows, args)
    if args.stage_traces is not None:
        _write_stage_traces(runs, args)
    for account in dead_letter_accounts(job, lines, states):
        print(json.dumps(account.as_json()) if args.json else account.sentence())


Line = SinkRow | DropLine | WatermarkLine


def _print(lines: list[Line], notes: list[str], rows: ReplayInput, args: argparse.Namespace) -> None:
    if args.json:
        for note in notes:
            print(json.dumps({"note": note}))
        for line in lines:
            print(json.dumps(line.as_json()))
        return
    for text in _readable(lines, rows):
        print(text)
    for note in notes:
        print(f"note: {note}")
    if args.out is not None:
        print(f"wrote {args.out} (a job recording: open it in the app, or `wmviz blame {args.out} --at ...`)")


def _write_trace(job: SqlJob, rows: ReplayInput, args: argparse.Namespace) -> None:
    refuse_overlap([("the job", args.job), ("the rows", args.rows)], [], ("--trace-out", args.trace_out))
    try:
        config, trace_rows = group_trace(job, rows, f"{args.job.stem} replayed on {args.rows.name}")
    except ReplayRefused as err:
        raise BadInput(f"--trace-out: {err}") from None
    write_trace(trace_rows, args.trace_out, "jsonl", config)


def _write_stage_traces(runs: dict[str, StageRun], args: argparse.Namespace) -> None:
    """Each operator in series as the trace it ran (`StageRun.stage_trace`), one file per plan node
    (`stage-<node>.jsonl`) in `--stage-traces`; said when the job has none."""
    out: Path = args.stage_traces
    if not runs:
        print(f"note: --stage-traces: no operator in series in {args.job.name}; nothing written")
        return
    try:
        if out.exists() and not out.is_dir():
            raise BadInput(f"--stage-traces {out}: is a file, not a folder")
        out.mkdir(parents=True, exist_ok=True)
    except OSError as err:  # under a file, a dangling link, a name too long, a folder it may not write
        reason = os.strerror(err.errno) if err.errno else str(err)
        raise BadInput(f"--stage-traces {out}: cannot make the folder: {reason}") from None
    stages = sorted(runs.items(), key=lambda item: int(item[0]) if item[0].isdigit() else 0)
    for node, _ in stages:  # every file checked before any is written: none or all
        path = out / f"stage-{node}.jsonl"
        refuse_overlap([("the job", args.job), ("the rows", args.rows)], [], ("--stage-traces", path))
    for node, run in stages:
        path = out / f"stage-{node}.jsonl"
        config, trace_rows = run.stage_trace()
        write_trace(trace_rows, path, "jsonl", config)
        print(f"wrote {path} ({run.spec.operator}: `wmviz late {path}` gives its late-row ledger)")


def _inputs(args: argparse.Namespace) -> tuple[SqlJob, ReplayInput]:
    for path in (args.job, args.rows):
        if path.is_dir():
            raise BadInput(f"{path}: is a folder, not a file")
        if not path.exists():
            raise BadInput(f"{path}: no such file")
    try:
        job = read_plan_file(args.job)
    except (PlanError, UnsupportedExpression) as err:
        raise BadInput(f"{args.job}: {err}") from None
    try:
        return job, read_input(args.rows)
    except RowsFileError as err:
        raise BadInput(str(err)) from None


def _readable(lines: list[Line], rows: ReplayInput) -> list[str]:
    """The replay as a person reads it: a heading per step naming its line, then each row a sink
    receives, each late drop and each node's new watermark."""
    times = TimeFormat()
    out: list[str] = []
    current = -1
    for line in lines:
        if line.step != current:
            current = line.step
            out.append(f"step {current} ({_what_arrived(rows, current)})")
        if isinstance(line, SinkRow):
            values = ", ".join(f"{name}={value}" for name, value in line.row)
            out.append(f"  {line.sink} receives {line.kind} ({values})")
        elif isinstance(line, DropLine):
            rows_word = "row" if line.delta == 1 else "rows"
            out.append(f"  {line.operator} drops {line.delta} late {rows_word} ({line.metric})")
        else:
            out.append(f"  {line.operator} [{line.node}]: watermark {times(line.watermark_ms)}")
    return out


def _what_arrived(rows: ReplayInput, step: int) -> str:
    if step >= len(rows.lines):
        return "end of input: every source finishes"
    line = rows.lines[step]
    if isinstance(line, InputRow):
        return f"line {line.line}: a row of {line.table}, partition {line.partition}"
    return f"line {line.line}: {line.table} has {line.partitions} partitions"
