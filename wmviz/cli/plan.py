"""`wmviz plan FILE [--json] [--out JOB.json]`: a Flink SQL job's plan, read and linted (docs/sql.md).

FILE is a COMPILE PLAN JSON, an EXPLAIN output, a REST plan (`/jobs/:jid/plan` or `/jobs/:jid`)
or a `.sql` script; its kind is told by its content. A bad plan is one line naming the file and
the position, exit 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path

from wmviz.cli.errors import BadInput
from wmviz.core.sql_expr import UnsupportedExpression
from wmviz.disk import refuse_overlap, write_file
from wmviz.sql import describe
from wmviz.sql.errors import PlanError
from wmviz.sql.lint import lint
from wmviz.sql.load import read_plan_file
from wmviz.sql.model import SqlJob


def add_plan_parser(sub) -> None:
    """The `plan` subcommand."""
    p = sub.add_parser(
        "plan",
        help="read a Flink SQL job's plan (COMPILE PLAN, EXPLAIN, REST plan or .sql): where each watermark "
        "is made, and what the job silently ignores",
    )
    p.add_argument("file", type=Path, help="COMPILE PLAN JSON, EXPLAIN text, REST plan JSON or a .sql script")
    p.add_argument("--json", action="store_true", help='print one object: {"sources": [...], "lint": [...]}')
    p.add_argument("--out", type=Path, help="write the job description (wmviz-sqljob/1) here")
    p.add_argument(
        "--partitions",
        action="append",
        default=[],
        metavar="TABLE=N",
        help="how many partitions a source table reads (a plan rarely says); repeat per table",
    )
    p.add_argument("--parallelism", type=int, help="the sources' parallelism, where the plan does not say it")


def _partitions(args: argparse.Namespace) -> dict[str, int]:
    found = {}
    for given in args.partitions:
        table, eq, count = given.partition("=")
        if not eq or not table or not (count.strip().isascii() and count.strip().isdigit()) or int(count) < 1:
            raise BadInput(f"--partitions {given!r}: expected TABLE=N with N a whole number of at least 1")
        found[table.strip()] = int(count)
    return found


def _with_counts(job: SqlJob, partitions: dict[str, int], parallelism: int | None) -> SqlJob:
    tables = {s.table for s in job.sources}
    unknown = sorted(set(partitions) - tables)
    if unknown:
        raise BadInput(
            f"--partitions names {', '.join(unknown)}; "
            f"the plan's source tables are {', '.join(sorted(tables))}"
        )
    if parallelism is not None and parallelism < 1:
        raise BadInput("--parallelism must be at least 1")
    sources = tuple(
        dataclasses.replace(
            s,
            partitions=partitions.get(s.table, s.partitions),
            parallelism=s.parallelism if s.parallelism is not None else parallelism,
        )
        for s in job.sources
    )
    return dataclasses.replace(job, sources=sources)


def cmd_plan(args: argparse.Namespace) -> None:
    """Print the job as a person reads it (or as JSON), and write --out."""
    path: Path = args.file
    if path.is_dir():
        raise BadInput(f"{path}: is a folder, not a file")
    if not path.exists():
        raise BadInput(f"{path}: no such file")
    if args.out is not None:
        refuse_overlap([("the plan", path)], [], ("--out", args.out))
    try:
        job = read_plan_file(path)
    except (PlanError, UnsupportedExpression) as err:
        raise BadInput(f"{path}: {err}") from None
    except OSError as err:
        raise BadInput(f"{path}: cannot be read ({err.strerror or err})") from None
    job = _with_counts(job, _partitions(args), args.parallelism)
    findings = lint(job)
    if args.out is not None:
        document = json.dumps(describe.job_document(job), indent=2) + "\n"
        write_file(args.out, document.encode("utf-8"))
    if args.json:
        print(json.dumps(describe.as_json(job, findings)))
        return
    for line in describe.lines(job, findings):
        print(line)
    if args.out is not None:
        print(f"wrote {args.out} ({describe.FORMAT})")
