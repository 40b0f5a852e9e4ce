"""The replay oracle: run a SQL script for real (Flink 2.3.0 on a MiniCluster) on given rows.

    python -m tools.flink.sql.run SCRIPT.sql ROWS.jsonl      # JSON Lines on stdout; exit 2 on bad input

(`run_scripts` runs several (script, rows) pairs in one JVM, each exactly as it runs alone: the
tests batch their runs so the JVM starts once per module.)

ROWS.jsonl is the rows file `wmviz sql replay` takes, read by `wmviz.sql.rows` (its one reader):
`{"table": NAME, "partition": N, "row": {COLUMN: VALUE}}` lines in arrival order and
`{"table": NAME, "partitions": N}` partition counts. Values are read against the columns on the
Java side (`WmvizRows.java`): timestamps as `YYYY-MM-DD HH:MM:SS[.fff]` text, numbers where the
column is a number; a TIMESTAMP_LTZ column also takes epoch milliseconds, and its text is read in
the session's `table.local-time-zone`. A table no line names has 1 partition. Step = the 0-based
index of the line among the non-blank lines; the end of input is step = the number of lines, when
every source finishes (as a bounded Kafka source does) and Flink emits the final MAX watermark.

Every table of the script runs on the stand-in connector (`wmviz/sql/java`), one split per
partition, at parallelism 1, each line carried through the whole job before the next arrives
(`WmvizSqlRun.java` says how quiescence is detected and why it is deterministic). Processing time
is wall time: a line with `"proc_ms"` is refused, and an idle timeout shorter than the run's wall
time can fire during it (the tests use none, or a long one).

Output, in step order: `{"sink": NAME, "step": N, "kind": "+I"|"-U"|"+U"|"-D", "row": {…}}` for
every sink row (within a step, sorted by sink, each sink's rows in arrival order);
`{"step": N, "metric": METRIC, "operator": NAME, "delta": K}` for every drop, METRIC the counter
Flink bumped: `numLateRecordsDropped`, or a window join's `leftNumLateRecordsDropped` /
`rightNumLateRecordsDropped` (it counts each side apart; within a step and operator, by name);
`{"step": N, "operator": NAME, "node": ID | null, "watermark": MS}` for every change of an
operator's current output watermark, and the same with `"split": SPLIT_ID` for each source split's
watermark. NAME is Flink's (simplified) operator name; `node` is the COMPILE PLAN node id: the
`[id]` in the name, or for a Kafka source (named `KafkaSource-<table>`) its table's scan node.
"""

from __future__ import annotations

import json
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tools.flink.launcher import Harness, HarnessError, sql_jars
from wmviz.disk.atomic import write_file
from wmviz.sql import jars
from wmviz.sql.planner import PlannerUnavailable, SqlScriptError, java_sources
from wmviz.sql.rows import InputRow, ReplayInput, RowsFileError, read_input

RUNNER_CLASS = "wmviz.flinksql.WmvizSqlRun"
RUNNER_SOURCES = sorted(Path(__file__).parent.glob("*.java"))


class JobFailed(RuntimeError):
    """Flink's job failed while the line at file line `line` was carried through it (0: at start;
    past the last line: at the end of input)."""

    def __init__(self, rows: Path, line: int, message: str) -> None:
        super().__init__(f"{rows}, line {line}: {message}")
        self.rows, self.line, self.message = rows, line, message


def read_rows(path: Path) -> ReplayInput:
    """The rows file, read by `wmviz.sql.rows` (the one reader of the format, shared with
    `wmviz sql replay`); a line with `proc_ms` is refused, as processing time is wall time here."""
    replay = read_input(path)
    for line in replay.lines:
        if isinstance(line, InputRow) and line.proc_ms is not None:
            raise RowsFileError(str(path), line.line, "proc_ms", "is refused by the oracle (wall-clock time)")
    return replay


def _request(script: Path, rows: Path, rest_port: int | None) -> dict[str, Any]:
    """What the Java runner reads: the script, the lines (with their file line numbers), the counts."""
    replay = read_rows(rows)
    lines = [
        {"table": x.table, "partition": x.partition, "row": dict(x.values), "line": x.line}
        if isinstance(x, InputRow)
        else {"table": x.table, "partitions": x.partitions, "line": x.line}
        for x in replay.lines
    ]
    text = script.read_text(encoding="utf-8")
    return {"script": text, "lines": lines, "partitions": dict(replay.partitions), "rest_port": rest_port}


def oracle() -> Harness:
    """The runner as a harness: WmvizSqlRun compiled with the planner's Java half, on the SQL jars."""
    return Harness(
        "the SQL oracle",
        (*java_sources(), *RUNNER_SOURCES),
        RUNNER_CLASS,
        tag="sqlrun-",
        jars=sql_jars,
        unavailable=jars.sql_unavailable_reason,
    )


def runner_command() -> list[str]:
    """`java … WmvizSqlRun`, compiled once with the planner's Java half."""
    reason = jars.sql_unavailable_reason(download=False)
    if reason or jars.sql_jar_paths(download=False) is None:
        raise PlannerUnavailable(f"the SQL oracle cannot run here: {reason}")
    return oracle().command()


def _oracle(request: dict[str, Any]) -> dict[str, Any]:
    """Start the runner's JVM on one request (or one batch) and return its JSON answer."""
    runner_command()  # the jars are here and the runner compiled, or PlannerUnavailable says why
    data = json.dumps(request).encode()
    try:
        proc = oracle().run(stdin=data, timeout=900 * len(request.get("batch", [0])))
    except HarnessError as e:
        raise PlannerUnavailable(f"{e} (without an answer)") from e
    try:
        answer = json.loads(proc.stdout.decode("utf-8"))
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        raise PlannerUnavailable(f"the SQL oracle gave no answer:\n{Harness.stderr_tail(proc)}")
    return answer


def _checked(script: Path, rows: Path, answer: dict[str, Any]) -> dict[str, Any]:
    """The answer to one run, or the error it names raised against the file it is in."""
    error = answer.get("error")
    if error is not None:
        if error.get("where") == "rows":
            raise RowsFileError(str(rows), error["line"], str(error["column"]), error["message"])
        if error.get("where") == "job":
            raise JobFailed(rows, error["line"], error["message"])
        raise SqlScriptError(script, max(1, error["line"]), max(1, error["column"]), error["message"])
    return answer


def run_raw(script: Path, rows: Path, rest_port: int | None = None) -> dict[str, Any]:
    """The runner's whole answer: events, timing and (with `rest_port`) the REST answers."""
    return _checked(script, rows, _oracle(_request(script, rows, rest_port)))


def run_script(script: Path, rows: Path) -> list[dict[str, Any]]:
    """Every sink row, late drop and watermark change of a real run (see the module docstring)."""
    events: list[dict[str, Any]] = run_raw(script, rows)["events"]
    return events


def run_scripts(runs: Sequence[tuple[Path, Path]]) -> list[list[dict[str, Any]]]:
    """`run_script` of every (script, rows) pair, in order, all in one JVM: each run on its own
    MiniCluster with the feed and the metrics emptied before it, so each answers exactly as it does
    alone, while the JVM's start and the planner's cold first planning are paid once. The first
    run that fails raises as `run_script` would (every input file is read before the JVM starts)."""
    answers = _oracle({"batch": [_request(script, rows, None) for script, rows in runs]})["answers"]
    if len(answers) != len(runs):
        raise PlannerUnavailable(f"the SQL oracle answered {len(answers)} of {len(runs)} runs")
    return [_checked(script, rows, a)["events"] for (script, rows), a in zip(runs, answers, strict=True)]


def save_rest_plan(script: Path, stem: Path) -> None:
    """Run `script` on `<stem>.rows.jsonl` with REST on 127.0.0.1 and save the running job's
    `/jobs/:jid/plan` and `/jobs/:jid` answers as `<stem>.rest-plan.json` / `.rest-job.json`."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    answer = run_raw(script, stem.with_suffix(".rows.jsonl"), rest_port=port)
    for key, suffix in (("rest_plan", ".rest-plan.json"), ("rest_job", ".rest-job.json")):
        write_file(stem.with_suffix(suffix), (json.dumps(answer[key], indent=2) + "\n").encode())


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m tools.flink.sql.run SCRIPT.sql ROWS.jsonl", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        answer = run_raw(Path(args[0]), Path(args[1]))
    except (SqlScriptError, RowsFileError, JobFailed, PlannerUnavailable) as e:
        print(str(e), file=sys.stderr)
        return 2
    for event in answer["events"]:
        print(json.dumps(event))
    print(f"ran in {time.monotonic() - started:.1f} s; {answer['timing_ms']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
