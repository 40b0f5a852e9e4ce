"""Regenerate `tests/data/sql/NAME.plan.json` and `NAME.explain.txt` with Flink's own planner.

    python -m tools.flink.sql.regen_fixtures [NAME ...]

Each `NAME.sql` of `PLANNED` is compiled by `wmviz.sql.planner.compile_scripts` (the real Flink
2.3.0 planner, one JVM for all) and its COMPILE PLAN JSON and EXPLAIN text are written beside
it. `REFUSED` scripts are ones Flink's planner refuses; nothing is written for them (the tests
check the refusal). `--rest` also runs `orders_payments_window` on a MiniCluster and saves its
REST `/jobs/:jid/plan` and `/jobs/:jid` answers (see `tools.flink.sql.run`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from wmviz.disk.atomic import write_file
from wmviz.sql.planner import SqlScriptError, compile_scripts

DATA = Path(__file__).resolve().parents[3] / "tests" / "data" / "sql"

PLANNED = (
    "orders_payments_window",
    "alignment_group",
    "hint_precedence",
    "ltz_rowtime",
    "filesystem_assigner",
    "minibatch",
    "source_watermark",
    "incident_silent_partition",
    "incident_silent_partition_fixed",
    "session_partitioned",
    "session_global",
    "temporal_rates",
    "buffer_ops",
    "incident_cumulate_late",
    "incident_quiet_rates",
    "window_rank",
    "window_dedup",
    "window_dedup_first",
    "window_rank_ltz",
    "incident_over_drops",
    "incident_cumulate_dead_letter",
    "win_tumble",
    "win_hop_one_phase",
    "win_cumulate",
    "win_cumulate_one_phase",
    "join_rows_inner",
    "join_rows_left",
    "winjoin_inner_tumble",
    "winjoin_left_hop",
    "winjoin_right_cumulate",
    "winjoin_full_tumble",
    "winjoin_semi_tumble",
    "winjoin_anti_hop",
    "winjoin_all",
    "chain_series",
    "window_rank_sliding",
    "match_basic",
    "match_quant",
    "match_greedy",
)
"""Scripts Flink plans: each gets a .plan.json and an .explain.txt."""

REFUSED: tuple[str, ...] = ()
"""Scripts Flink's planner refuses (the tests assert where and why). SOURCE_WATERMARK() on a Kafka
table is not one: the planner pushes the call down; only the running job fails."""


def regenerate(names: Sequence[str]) -> None:
    """Write NAME.plan.json and NAME.explain.txt of each script (one JVM for all of them)."""
    results = compile_scripts([DATA / f"{name}.sql" for name in names])
    for name, compiled in zip(names, results):
        if isinstance(compiled, SqlScriptError):
            raise compiled
        write_file(DATA / f"{name}.plan.json", (compiled.plan_json.rstrip("\n") + "\n").encode())
        write_file(DATA / f"{name}.explain.txt", (compiled.explain.rstrip("\n") + "\n").encode())
        print(f"{name}: written")


def main(argv: Sequence[str] | None = None) -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("names", nargs="*", help=f"scripts to regenerate (default: {', '.join(PLANNED)})")
    parser.add_argument("--rest", action="store_true", help="also save job (1)'s REST plan")
    args = parser.parse_args(argv)
    unknown = [name for name in args.names if name not in PLANNED]
    if unknown:
        print(f"{', '.join(unknown)}: not one of {', '.join(PLANNED)}", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        regenerate(args.names or PLANNED)
    except SqlScriptError as e:
        print(str(e), file=sys.stderr)
        return 2
    print(f"planned in {time.monotonic() - started:.1f} s")
    if args.rest:
        from tools.flink.sql.run import save_rest_plan

        save_rest_plan(DATA / "orders_payments_window.sql", DATA / "orders_payments_window")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
