"""`python -m wmviz`: transcript, validate and explain a trace from the command line.

Exit codes: 0 ok (or a reader such as `head` closed the pipe), 2 bad input or usage (including a
missing, unreadable or folder path, `--out` on a file, a closed stdout, a limit crossed, a bad
`WMVIZ_*` setting): any error of wmviz's family (`wmviz.core.errors`), handled here once; 130
interrupted (Ctrl-C, one line); 1 internal error, i.e. anything else, which is a bug (a message; the
traceback only with --debug).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import signal
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path

from wmviz.cli.blame import add_blame_parser, cmd_blame
from wmviz.cli.convert import add_convert_parser, cmd_convert
from wmviz.cli.errors import BadInput
from wmviz.cli.inputs import check_files, load
from wmviz.cli.lag import add_lag_parser, cmd_lag
from wmviz.cli.late import add_late_parser, cmd_late
from wmviz.cli.plan import add_plan_parser, cmd_plan
from wmviz.cli.record import add_import_parser, add_record_parser, cmd_import, cmd_record
from wmviz.cli.sql import add_sql_parser, cmd_sql
from wmviz.cli.sweep import add_sweep_parser, cmd_sweep
from wmviz.core.errors import WmvizError
from wmviz.core.settings import check_all
from wmviz.core.simulate import simulate
from wmviz.core.story import explain_line
from wmviz.core.types import Profile
from wmviz.core.windows import ScenarioError
from wmviz.disk import OutputError, refuse_overlap
from wmviz.record.agreement import ReplayCheck, verdict
from wmviz.timeline.engine import Engine
from wmviz.timeline.local import build_timeline_local
from wmviz.timeline.meta import TimelineMeta
from wmviz.timeline.outdir import check_out_dir, timeline_out_dir
from wmviz.timeline.transcript import transcript_line
from wmviz.trace.errors import TraceValidationError
from wmviz.view.checked import scenario_claims
from wmviz.view.timefmt import MODES, TimeFormat, trace_origin

EXIT_OK, EXIT_INTERNAL, EXIT_BAD_INPUT, EXIT_INTERRUPTED = 0, 1, 2, 130


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(prog="wmviz", description="Replay Flink watermark-valve traces.")
    parser.add_argument("--debug", action="store_true", help="show tracebacks of internal errors")
    sub = parser.add_subparsers(dest="command", required=True)
    profiles = [p.value for p in Profile]

    def add_trace_args(p: argparse.ArgumentParser, *, profile: bool) -> None:
        p.add_argument("trace", type=Path, help="trace file: .csv, .jsonl, .parquet or compact valve JSONL")
        p.add_argument("--config", type=Path, help="scenario config (JSON); overrides an in-file config line")
        if profile:
            p.add_argument("--profile", choices=profiles, help="semantics profile (default: the config's)")
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)

    def add_engine_args(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--engine",
            choices=[Engine.LOCAL.value, Engine.SPARK.value],
            default="local",
            help="local: in this process; spark: a SparkSession (local[*] unless --master)",
        )
        p.add_argument("--master", help="Spark master URL (default: $WMVIZ_SPARK_MASTER or local[*])")

    transcript = sub.add_parser("transcript", help="the JSONL transcript: one JSON object per input element")
    add_trace_args(transcript, profile=True)
    add_engine_args(transcript)
    simulate_cmd = sub.add_parser("simulate", help="write the timeline dataset the UI reads")
    add_trace_args(simulate_cmd, profile=True)
    add_engine_args(simulate_cmd)
    simulate_cmd.add_argument(
        "--out",
        type=Path,
        required=True,
        help="output folder: new, empty, or a timeline wmviz wrote earlier (which it replaces)",
    )
    simulate_cmd.add_argument("--keyframe-every", type=int, default=1000, help="full state every K steps")
    add_trace_args(sub.add_parser("validate", help="check a trace and its config"), profile=False)
    explain = sub.add_parser("explain", help="one plain-English line per step")
    add_trace_args(explain, profile=True)
    explain.add_argument("--step", type=int, help="only this step (counted from 0 within an instance)")
    explain.add_argument("--instance", help="only this instance")
    explain.add_argument(
        "--time",
        choices=MODES,
        default="utc",
        help="how times read: utc (ISO date-times for epoch values, plain ms for small ones; the default), "
        "relative (+10m 5s from the trace's first time) or ms (the raw numbers)",
    )
    add_record_parser(sub)
    add_import_parser(sub)
    add_blame_parser(sub)
    add_lag_parser(sub)
    add_late_parser(sub)
    add_convert_parser(sub)
    add_sweep_parser(sub)
    add_plan_parser(sub)
    add_sql_parser(sub)
    sub.add_parser(
        "app",
        help="start the web app (streamlit run wmviz's app.py)",
        usage="wmviz app [STREAMLIT OPTION ...]",
        description="Start the page. Streamlit's own options are passed on to `streamlit run`, with or "
        "without a `--` before them: wmviz app --server.port 8599, or wmviz app -- --server.port 8599.",
    )
    for name, command in sub.choices.items():
        if name != "app":  # the app's unknown options are Streamlit's
            _debug_after(command)
    return parser


def _debug_after(parser: argparse.ArgumentParser) -> None:
    """`--debug` taken after a command (and its subcommands) too, not only before it."""
    if "--debug" not in parser._option_string_actions:
        parser.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                _debug_after(child)


def parse(argv: Sequence[str] | None) -> argparse.Namespace:
    """The parsed command line. `app` keeps every argument it does not know as Streamlit's own
    (`streamlit_args`, a leading `--` dropped, since `streamlit run app.py -- …` would hand them to
    the page's script instead of Streamlit); any other command refuses them as argparse does."""
    parser = build_parser()
    args, rest = parser.parse_known_args(argv)
    if args.command == "app":
        args.streamlit_args = rest[1:] if rest[:1] == ["--"] else rest
    elif rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit code."""
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, signal.default_int_handler)  # KeyboardInterrupt from here on
    args = parse(argv)
    if sys.stdout is None or sys.stdout.closed:
        print("error: standard output is closed; nothing to write to", file=sys.stderr)
        return EXIT_BAD_INPUT
    commands: dict[str, Callable[[argparse.Namespace], None]] = {
        "transcript": cmd_transcript,
        "simulate": cmd_simulate,
        "validate": cmd_validate,
        "explain": cmd_explain,
        "app": cmd_app,
        "record": cmd_record,
        "import": cmd_import,
        "blame": cmd_blame,
        "lag": cmd_lag,
        "late": cmd_late,
        "convert": cmd_convert,
        "sweep": cmd_sweep,
        "plan": cmd_plan,
        "sql": cmd_sql,
    }
    try:
        check_all()  # a bad WMVIZ_* value is one line and exit 2, whatever the command
        commands[args.command](args)
    except (WmvizError, OutputError) as err:
        for line in told(err, args):
            print(line, file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # A reader such as `head` went away; the output it wanted was written. Point stdout at
        # /dev/null so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as err:
        if args.debug:
            traceback.print_exc()
        print(
            f"internal error: {type(err).__name__}: {err} (run with --debug for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    return EXIT_OK


def told(err: WmvizError | OutputError, args: argparse.Namespace) -> list[str]:
    """What the command line says for an error of wmviz's family (or a write refused by
    `wmviz.disk`): one line, except for a trace's list of problems and a row the operator refused,
    which say what follows from them too."""
    if isinstance(err, TraceValidationError):
        return [str(err), f"{_plural(err.total, 'error')}; nothing was simulated"]
    if isinstance(err, ScenarioError) and isinstance(getattr(args, "trace", None), Path):
        # A trace's row; `wmviz sql replay` names its rows file's line itself (wmviz/cli/sql.py).
        return [
            f"{args.trace.name}:{err.row.row}: column {err.column}: {err.reason}",
            "the trace is valid, but the operator cannot process this row",
        ]
    return [f"error: {err}"]


def cmd_simulate(args: argparse.Namespace) -> None:
    """Write the timeline dataset to --out, with progress on stderr."""
    if args.keyframe_every < 1:
        raise BadInput("--keyframe-every must be at least 1")
    check_files(args)
    refuse_overlap([("the trace", args.trace), ("--config", args.config)], [], ("--out", args.out))
    started = time.perf_counter()
    check_out_dir(args.out)  # refused before a long read
    # The local engine reads the trace before the output is opened: a read error is the trace's.
    trace = load(args) if Engine(args.engine) is not Engine.SPARK else None
    with timeline_out_dir(args.out) as work:
        if trace is None:
            from wmviz.spark.run import spark_simulate

            meta = spark_simulate(
                args.trace, args.config, chosen_profile(args), work, args.master, args.keyframe_every
            )
        else:

            def progress(done: int, total: int) -> None:
                share = done / max(total, 1)
                print(f"[local] simulate: {done:,}/{total:,} rows ({share:.0%})", file=sys.stderr)

            meta = build_timeline_local(
                trace, work, chosen_profile(args), keyframe_every=args.keyframe_every, progress=progress
            )
    made = TimelineMeta.from_json(meta, f"{args.out}/meta.json")
    steps, instances = _plural(made.steps, "step"), _plural(len(made.instances), "instance")
    elapsed = time.perf_counter() - started
    print(f"{args.out}: timeline of {steps} over {instances} ({made.engine} engine, {elapsed:.1f} s)")


def chosen_profile(args: argparse.Namespace) -> Profile | None:
    """The --profile override, if given."""
    return Profile.parse(args.profile) if getattr(args, "profile", None) else None


def cmd_transcript(args: argparse.Namespace) -> None:
    """Print one transcript line per input element, every instance, in arrival order."""
    if Engine(args.engine) is Engine.SPARK:
        from wmviz.spark.run import spark_transcript

        check_files(args)
        for line in spark_transcript(args.trace, args.config, chosen_profile(args), args.master):
            sys.stdout.write(line + "\n")
        return
    trace = load(args)
    with_input = len({r.input for r in trace.rows}) > 1
    operator = not trace.config.valve_only
    out = sys.stdout
    for result in simulate(trace, chosen_profile(args)):
        out.write(transcript_line(result, with_input=with_input, operator=operator) + "\n")


def cmd_validate(args: argparse.Namespace) -> None:
    """Print a one-line summary of a valid trace (errors are raised and reported by main)."""
    trace = load(args)
    counts = sorted(set(trace.valve_channels.values()))
    channels = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    inputs = sorted({input_name for _, input_name in trace.valve_channels})
    print(
        f"{trace.source}: valid: {_plural(len(trace.rows), 'row')}, "
        f"{_plural(len(trace.instances), 'instance')}, input{'s' if len(inputs) > 1 else ''} "
        f"{', '.join(inputs)}, {channels} channels per valve, profile {trace.config.profile.value}"
    )


def cmd_explain(args: argparse.Namespace) -> None:
    """Print what happened at each step, in words."""
    trace = load(args)
    if args.instance is not None and args.instance not in trace.instances:
        raise BadInput(
            f"no instance {args.instance!r} in {trace.source}; it has {', '.join(trace.instances)}"
        )
    multi = len(trace.instances) > 1
    # Date-times on the trace's first day read as clock times; the one header line gives the date.
    times = TimeFormat(args.time, origin_ms=trace_origin(trace), short=args.time == "utc")
    if times.day is not None and args.time == "utc":
        print(f"# times are {times.zone_label} on {times.day} unless dated")
    steps: dict[str, int] = {}
    printed = 0
    replay = ReplayCheck()  # a recorded trace's check column (wmviz/record/agreement.py)
    for result in simulate(trace, chosen_profile(args), explain=True):
        steps[result.instance] = result.step + 1
        check = replay.observe(result)
        if args.instance not in (None, result.instance) or args.step not in (None, result.step):
            continue
        where = f" [instance {result.instance}]" if multi or args.instance else ""
        against = f"; {verdict(check, times)}" if check is not None else ""
        print(f"step {result.step}{where} {explain_line(result, times)}{against}")
        printed += 1
    for line in replay.summary(times):
        print(line)
    if args.step is not None and not printed:
        sizes = ", ".join(f"instance {i} has {_plural(n, 'step')}" for i, n in steps.items())
        raise BadInput(f"there is no step {args.step}: {sizes}")
    # The answer first, then what the narration was checked against (a paragraph per claim).
    for claim in scenario_claims(trace.config, chosen_profile(args) or trace.config.profile):
        print(f"# {'checked' if claim.verified else 'modelled'}: {claim.line()}")


def cmd_app(args: argparse.Namespace) -> None:
    """Replace this process with `streamlit run app.py` (the remaining arguments passed on), served
    with the page's imports made before the first visitor asks (`wmviz.ui.launch`)."""
    needed = ("streamlit", "plotly", "pyspark")  # what the page imports: the `app` extra
    missing = [name for name in needed if importlib.util.find_spec(name) is None]
    if missing:
        raise BadInput(f'the app needs {", ".join(missing)}, not installed here: pip install "wmviz[app]"')
    command = [sys.executable, "-m", "wmviz.ui.launch", *args.streamlit_args]
    sys.stdout.flush()
    os.execv(sys.executable, command)


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"


def console() -> None:
    """The `wmviz` console script."""
    sys.exit(main())


if __name__ == "__main__":
    console()
