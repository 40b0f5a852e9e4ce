"""Regenerate `tests/data/sql/NAME.plan.json` and `NAME.explain.txt` with Flink's own planner.

    python -m tools.flinksql.regen_fixtures [NAME ...]

Each `NAME.sql` of `PLANNED` is compiled by `wmviz.sql.planner.compile_script` (the real Flink
2.3.0 planner, one JVM per script) and its COMPILE PLAN JSON and EXPLAIN text are written beside
it. `REFUSED` scripts are ones Flink's planner refuses; nothing is written for them (the tests
check the refusal). `--rest` also runs `orders_payments_window` on a MiniCluster and saves its
REST `/jobs/:jid/plan` and `/jobs/:jid` answers (see `tools.flinksql.run`).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from wmviz.disk.atomic import write_file
from wmviz.sql.planner import SqlScriptError, compile_script

DATA = Path(__file__).resolve().parents[2] / "tests" / "data" / "sql"

PLANNED = (
    "orders_payments_window",
    "alignment_group",
    "hint_precedence",
    "ltz_rowtime",
    "filesystem_assigner",
    "minibatch",
)
"""Scripts Flink plans: each gets a .plan.json and an .explain.txt."""

REFUSED = ("source_watermark",)
"""Scripts Flink's planner refuses (the tests assert where and why)."""


def regenerate(name: str) -> float:
    """Write NAME.plan.json and NAME.explain.txt; return the seconds the planner took."""
    start = time.monotonic()
    compiled = compile_script(DATA / f"{name}.sql")
    write_file(DATA / f"{name}.plan.json", (compiled.plan_json.rstrip("\n") + "\n").encode())
    write_file(DATA / f"{name}.explain.txt", (compiled.explain.rstrip("\n") + "\n").encode())
    return time.monotonic() - start


def main(argv: Sequence[str] | None = None) -> int:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("names", nargs="*", help=f"scripts to regenerate (default: {', '.join(PLANNED)})")
    parser.add_argument("--rest", action="store_true", help="also save job (1)'s REST plan")
    args = parser.parse_args(argv)
    for name in args.names or PLANNED:
        if name not in PLANNED:
            print(f"{name}: not one of {', '.join(PLANNED)}", file=sys.stderr)
            return 2
        try:
            seconds = regenerate(name)
        except SqlScriptError as e:
            print(str(e), file=sys.stderr)
            return 2
        print(f"{name}: {seconds:.1f} s")
    if args.rest:
        from tools.flinksql.run import save_rest_plan

        save_rest_plan(DATA / "orders_payments_window.sql", DATA / "orders_payments_window")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
