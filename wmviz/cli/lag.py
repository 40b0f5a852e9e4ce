"""`python -m wmviz lag RECORDING [--vertex NAME] [--at TIME] [--json]`: how late the output is, and why."""

from __future__ import annotations

import argparse
import json

from wmviz.analysis.blame_answer import BlameError
from wmviz.analysis.lag_budget import Budget, LagBudget
from wmviz.cli.blame import pick_vertex, recording_and_moment, recording_arguments
from wmviz.cli.errors import BadInput
from wmviz.core.errors import BadValue
from wmviz.core.types import MAX_MS
from wmviz.view.timefmt import TimeFormat, duration


def add_lag_parser(sub) -> None:
    """The `lag` subcommand."""
    p = sub.add_parser(
        "lag", help="the freshness budget: how far a vertex's output is behind, split into its causes"
    )
    recording_arguments(
        p,
        "the output vertex",
        "where wmviz blame starts (the most downstream vertex standing still)",
        '{"total_ms", "reference", "parts": [{"cause", "ms", "kind", "where", "why"}], ...}',
    )


def cmd_lag(args: argparse.Namespace) -> None:
    """Print the budget as a table a person reads, or as JSON."""
    rec, at_ms = recording_and_moment(args)
    try:
        budget = LagBudget(rec).at(pick_vertex(rec, args.vertex), at_ms)
    except (BadValue, BlameError) as err:
        raise BadInput(str(err)) from None
    if args.json:
        print(json.dumps(budget.as_json()))
        return
    for line in budget_lines(budget):
        print(line)


def budget_lines(budget: Budget) -> list[str]:
    """The budget in words: the total, one line a cause (largest first), and the blame chain's end."""
    times = TimeFormat("utc")
    lines = [
        f"at {times(budget.at_ms)}: {budget.vertex!r} subtask {budget.subtask} is "
        f"{duration(budget.total_ms)} behind the {budget.reference} ({times(budget.reference_ms)}); "
        f"its watermark is {times(budget.watermark_ms)}",
    ]
    if not budget.parts:
        finished = budget.watermark_ms == MAX_MS
        lines.append(
            "  nothing: its watermark is MAX (the vertex has finished)"
            if finished
            else f"  nothing: its output is level with the {budget.reference}"
        )
        return lines
    width = max(len(p.cause) for p in budget.parts)
    for part in sorted(budget.parts, key=lambda p: -abs(p.ms)):
        share = f"{100 * part.ms / budget.total_ms:5.1f}%" if budget.total_ms else "    -"
        lines.append(
            f"  {part.cause:<{width}}  {duration(part.ms):>12}  {share}  {part.kind:<8}  "
            f"at {part.where}: {part.why}"
        )
    lines.append(f"  → {budget.blame.ending}")
    return lines
