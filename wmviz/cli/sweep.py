"""`wmviz sweep`: replay a trace over a grid of config values and write one row per combination.

The table is written beside its destination and renamed into place (`wmviz.disk`), so a reader
never sees half a table and an interrupted sweep leaves the old one. docs/sweep.md is the user's
guide.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

from wmviz.analysis.sweep import SweepError, Vary, grid, parse_vary, recommend, run_sweep
from wmviz.cli.errors import BadInput
from wmviz.disk.atomic import OutputError, cannot_write, replacing_file
from wmviz.disk.overlap import refuse_overlap
from wmviz.timeline.engine import Engine

FORMATS = (".csv", ".parquet", ".json")


def add_sweep_parser(sub: Any) -> None:
    """The `sweep` subcommand's arguments."""
    p = sub.add_parser("sweep", help="replay a trace over a grid of config values; one row per combination")
    p.add_argument("trace", type=Path, help="trace file: .csv, .jsonl, .parquet or compact valve JSONL")
    p.add_argument("--config", type=Path, help="scenario config (JSON); overrides an in-file config line")
    p.add_argument(
        "--vary",
        action="append",
        required=True,
        metavar="FIELD=V1,V2,…",
        help="a dotted config path and its values (numbers, durations such as 5s, none, words); repeatable",
    )
    p.add_argument(
        "--engine",
        choices=[e.value for e in (Engine.LOCAL, Engine.SPARK, Engine.AUTO)],
        default="local",
        help="local: in this process; spark: a SparkSession; auto: Spark for large traces",
    )
    p.add_argument("--master", help="Spark master URL (default: $WMVIZ_SPARK_MASTER or local[*])")
    p.add_argument("--out", type=Path, required=True, help="the table: .csv, .parquet or .json")
    p.add_argument(
        "--target-late-share",
        type=float,
        help="name the lowest-latency combination whose late share is at most this (e.g. 0.001)",
    )
    p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help=argparse.SUPPRESS)


def _varies(texts: list[str]) -> list[Vary]:
    try:
        varies = [parse_vary(text) for text in texts]
        grid(varies)  # the budget, before the trace is read
    except SweepError as err:
        raise BadInput(str(err)) from None
    return varies


def _check_out(out: Path, trace: Path, config: Path | None) -> None:
    if out.suffix.lower() not in FORMATS:
        raise BadInput(f"--out {out}: expected a .csv, .parquet or .json file")
    if out.is_dir():
        raise BadInput(f"--out {out}: is a folder, not a file")
    if not out.parent.is_dir():
        raise BadInput(f"--out {out}: no such folder {out.parent}")
    try:
        refuse_overlap([("the trace", trace), ("--config", config)], [("--out", out)])
    except OutputError as err:
        raise BadInput(str(err)) from None


def cmd_sweep(args: argparse.Namespace) -> None:
    """Run the sweep on the chosen engine, write the table, and say what it found."""
    from wmviz.cli.inputs import check_files, load

    varies = _varies(args.vary)
    _check_out(args.out, args.trace, args.config)
    target = args.target_late_share
    if target is not None and not (math.isfinite(target) and 0 <= target <= 1):
        raise BadInput(f"--target-late-share {target}: expected a share between 0 and 1, such as 0.001")
    check_files(args)
    started = time.perf_counter()
    engine = _engine(args.engine, args.trace)
    if engine is Engine.SPARK:
        from wmviz.spark.sweep import spark_sweep

        table = spark_sweep(args.trace, args.config, varies, args.master)
    else:
        trace = load(args)

        def progress(done: int, total: int) -> None:
            print(f"[local] sweep: {done:,}/{total:,} combinations ({done / total:.0%})", file=sys.stderr)

        table = run_sweep(trace, varies, progress)
    write_table(table, args.out)
    elapsed = time.perf_counter() - started
    records = table[0]["records"] if table else 0
    print(
        f"{args.out}: {len(table):,} combinations over {records:,} records ({engine} engine, {elapsed:.1f} s)"
    )
    if target is not None:
        print(recommendation_line(table, varies, target))


def _engine(engine: str, trace: Path) -> Engine:
    """The engine the sweep runs on: the run plan's rule (`auto` by the trace's size)."""
    from wmviz.store.plan import engine_for, is_large

    return engine_for(Engine(engine), is_large(trace))


def recommendation_line(table: list[dict[str, Any]], varies: list[Vary], target: float) -> str:
    """What `--target-late-share` found, in one line."""
    best = recommend(table, target)
    if best is None:
        lowest = min(row["late_share"] for row in table)
        return f"no combination keeps the late share at or below {target:g}; the lowest is {lowest:.4g}"
    chosen = ", ".join(f"{v.path}={_shown(best[v.path])}" for v in varies)
    p95, p50 = best["firing_delay_p95_ms"], best["firing_delay_p50_ms"]
    delay = "no firings" if p95 is None else f"firing delay p95 {p95:,} ms, p50 {p50:,} ms"
    share = f"late share {best['late_share']:.4g}"
    return f"lowest latency with late share ≤ {target:g}: {chosen} ({share}, {delay})"


def _shown(value: Any) -> str:
    return "none" if value is None else str(value).lower() if isinstance(value, bool) else str(value)


def write_table(table: list[dict[str, Any]], out: Path) -> None:
    """The table as CSV, Parquet or JSON (a list of row objects), by `out`'s suffix, whole or not at
    all (`wmviz.disk`: written beside it and renamed into place)."""
    try:
        with replacing_file(out) as stream:
            suffix = out.suffix.lower()
            if suffix == ".json":
                stream.write((json.dumps(table, indent=1) + "\n").encode("utf-8"))
            else:
                import pyarrow as pa

                arrow = pa.Table.from_pylist(table)
                if suffix == ".parquet":
                    import pyarrow.parquet as pq

                    pq.write_table(arrow, stream)
                else:
                    import pyarrow.csv as pacsv

                    pacsv.write_csv(arrow, stream)
    except OSError as exc:
        raise BadInput(str(exc if isinstance(exc, OutputError) else cannot_write(out, exc))) from None
