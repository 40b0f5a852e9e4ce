"""`wmviz late TRACE [--json] [--fate F] [--late-only]`: the late-row ledger (docs/late-rows.md).

One line per record an operator received: the watermark it arrived under (`CURRENT_WATERMARK(ts)`
there), how far behind it was, what became of it, in which operator, under which rule and metric,
and where it ended. A run's trace (`wmviz record`, `wmviz sql replay --trace-out`) is a trace too.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from wmviz.analysis.late_ledger import LedgerRow, build_ledger, operator_name, parse_fate, select
from wmviz.cli.errors import BadInput
from wmviz.cli.inputs import load
from wmviz.core.errors import BadValue
from wmviz.core.scenario import Kind, NoOperator
from wmviz.core.simulate import simulate
from wmviz.core.types import Profile
from wmviz.view.timefmt import MODES, TimeFormat, duration, trace_origin


def add_late_parser(sub) -> None:
    """The `late` subcommand."""
    p = sub.add_parser(
        "late", help="the late-row ledger: each record's watermark on arrival and what became of it"
    )
    p.add_argument(
        "trace", type=Path, help="trace file (or a run's trace): .csv, .jsonl, .parquet or compact"
    )
    p.add_argument("--config", type=Path, help="scenario config (JSON); overrides an in-file config line")
    p.add_argument("--profile", choices=[p.value for p in Profile], help="semantics profile")
    p.add_argument("--json", action="store_true", help="JSON Lines: one object per record, times as ms")
    p.add_argument("--fate", help="only this fate: kept, added-late or dropped")
    p.add_argument(
        "--late-only",
        action="store_true",
        help="only records behind the watermark on arrival, or not simply kept",
    )
    p.add_argument("--instance", help="only this instance")
    p.add_argument(
        "--time", choices=MODES, default="utc", help="how times read (as `explain`): utc, relative or ms"
    )
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def cmd_late(args: argparse.Namespace) -> None:
    """Print the ledger as a table, or as JSON Lines."""
    try:
        fate = parse_fate(args.fate) if args.fate is not None else None
    except BadValue as err:
        raise BadInput(f"--fate {err}") from None
    trace = load(args)
    if args.instance is not None and args.instance not in trace.instances:
        raise BadInput(
            f"no instance {args.instance!r} in {trace.source}; it has {', '.join(trace.instances)}"
        )
    profile = Profile.parse(args.profile) if args.profile else None
    ledger = build_ledger(simulate(trace, profile), operator_name(trace.config))
    shown = select(ledger, fate=fate, instance=args.instance, late_only=args.late_only)
    times = TimeFormat(args.time, origin_ms=trace_origin(trace), short=args.time == "utc")
    if args.json:
        for entry in shown:
            print(json.dumps(entry.as_json(times)))
        return
    if not ledger:
        if isinstance(trace.config.operator, NoOperator):
            print(_NOTHING_TEXT)
        else:
            records = any(row.kind is Kind.RECORD for row in trace.rows)
            print(_NOTHING_DECIDED if records else _NOTHING_REACHED)
        return
    for line in ledger_lines(shown, len(ledger), times, multi=len(trace.instances) > 1):
        print(line)


_NOTHING_TEXT = (
    "no ledger: this run has no operator (operator.type none), so nothing decides a record's fate; "
    "records only pass the valve"
)
_NOTHING_REACHED = "no ledger: no record reached the operator"
_NOTHING_DECIDED = (
    "no ledger: the operator decided no record's fate by the end of the input: every record it "
    "received still waits in its state (for a watermark that never came)"
)


HEADER = ("step", "row", "input", "event time", "watermark", "behind", "fate", "operator", "rule", "metric")


def ledger_lines(shown: list[LedgerRow], total: int, times: TimeFormat, *, multi: bool) -> list[str]:
    """The ledger as a table a person reads: a header, one line per record with its reason and
    where it ended below it, then a count."""
    lines: list[str] = []
    if times.day is not None and times.shows_instants:
        lines.append(f"# times are {times.zone_label} on {times.day} unless dated")
    cells = [_cells(entry, times, multi) for entry in shown]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(HEADER)]
    lines.append("  ".join(h.ljust(w) for h, w in zip(HEADER, widths, strict=True)).rstrip())
    for entry, row in zip(shown, cells, strict=True):
        lines.append("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
        lines.append(f"    why: {entry.fate.why.text(times)}")
        if entry.decided_later:
            lines.append(f"    {entry.decided_later}")
        for ending in entry.endings:
            lines.append(f"    → step {ending.step}: {ending.text(times)}")
    counts: dict[str, int] = {}
    for entry in shown:
        counts[entry.fate.fate.value] = counts.get(entry.fate.fate.value, 0) + 1
    summary = ", ".join(f"{n} {name}" for name, n in counts.items()) or "none"
    lines.append(f"{len(shown)} of {total} records shown: {summary}")
    return lines


def _cells(entry: LedgerRow, times: TimeFormat, multi: bool) -> tuple[str, ...]:
    row = entry.fate.row
    step = f"{entry.instance}:{entry.step}" if multi else str(entry.step)
    channel = f"{row.input}/{row.channel}" if row.channel is not None else row.input
    watermark = entry.watermark_text(times)
    behind = duration(entry.lateness_ms) if entry.lateness_ms is not None else "-"
    event = times(entry.event_ms) if entry.event_ms is not None else "-"
    metric = entry.fate.metric or "-"
    return (step, str(entry.row), channel, event, watermark, behind, entry.fate.fate.value, entry.operator,
            entry.fate.rule, metric)  # fmt: skip
