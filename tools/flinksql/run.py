"""The replay oracle: run a SQL script for real (Flink 2.3.0 on a MiniCluster) on given rows.

    python -m tools.flinksql.run SCRIPT.sql ROWS.jsonl      # JSON Lines on stdout; exit 2 on bad input

ROWS.jsonl, in arrival order (the format `wmviz sql replay` takes): `{"table": NAME, "partition": N,
"row": {COLUMN: VALUE}}` (timestamps as `YYYY-MM-DD HH:MM:SS[.fff]` text, or numbers where the
column is a number; a TIMESTAMP_LTZ column also takes epoch milliseconds, and its text is read in
the session's `table.local-time-zone`), and `{"table": NAME, "partitions": N}` declaring a table's
partition count (default: 1 + the largest partition its rows name, 1 for a table with no rows), so
a silent partition can exist. Step = the 0-based index of the line; the end of input is step = the
number of lines, when every source finishes (as a bounded Kafka source does) and Flink emits the
final MAX watermark.

Every table of the script runs on the stand-in connector (`wmviz/sql/java`), one split per
partition, at parallelism 1, each line carried through the whole job before the next arrives
(`WmvizSqlRun.java` says how quiescence is detected and why it is deterministic). Processing time
is wall time: a line with `"proc_ms"` is refused, and an idle timeout shorter than the run's wall
time can fire during it (the tests use none, or a long one).

Output, in step order: `{"sink": NAME, "step": N, "kind": "+I"|"-U"|"+U"|"-D", "row": {…}}` for
every sink row (within a step, sorted by sink, each sink's rows in arrival order);
`{"step": N, "metric": "numLateRecordsDropped", "operator": NAME, "delta": K}` for every drop;
`{"step": N, "operator": NAME, "node": ID | null, "watermark": MS}` for every change of an
operator's current output watermark, and the same with `"split": SPLIT_ID` for each source split's
watermark. NAME is Flink's (simplified) operator name; `node` is the COMPILE PLAN node id: the
`[id]` in the name, or for a Kafka source (named `KafkaSource-<table>`) its table's scan node.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from wmviz.disk.atomic import write_file
from wmviz.sql import jars
from wmviz.sql.planner import PlannerUnavailable, SqlScriptError, java_sources

RUNNER_CLASS = "wmviz.flinksql.WmvizSqlRun"
RUNNER_SOURCES = sorted(Path(__file__).parent.glob("*.java"))
_KEYS_ROW = {"table", "partition", "row", "proc_ms"}
_KEYS_DECLARATION = {"table", "partitions"}


class RowsError(ValueError):
    """A bad line of the rows file: file, 1-based line, the key or column at fault."""

    def __init__(self, file: Path, line: int, column: str, message: str) -> None:
        super().__init__(f"{file}:{line}: {column}: {message}")
        self.file, self.line, self.column, self.message = file, line, column, message


class JobFailed(RuntimeError):
    """Flink's job failed while line `line` (1-based; len+1: the end of input) was carried through it."""

    def __init__(self, rows: Path, line: int, message: str) -> None:
        super().__init__(f"{rows}:{line}: {message}")
        self.rows, self.line, self.message = rows, line, message


def read_rows(path: Path) -> list[dict[str, Any]]:
    """The rows file's lines, each checked for shape (values are checked against columns in Java)."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise RowsError(path, 1, "file", f"cannot read: {e}") from None
    lines = []
    for number, raw in enumerate(text.splitlines(), start=1):
        try:
            line = json.loads(raw)
        except ValueError as e:
            raise RowsError(
                path, number, f"position {e.pos + 1 if hasattr(e, 'pos') else 1}", "not JSON"
            ) from None
        lines.append(_checked(path, number, line))
    return lines


def _checked(path: Path, number: int, line: Any) -> dict[str, Any]:
    if not isinstance(line, dict):
        raise RowsError(path, number, "line", "expected a JSON object")
    if not isinstance(line.get("table"), str):
        raise RowsError(path, number, "table", "expected the table's name as text")
    keys = _KEYS_DECLARATION if "partitions" in line else _KEYS_ROW
    extra = sorted(set(line) - keys)
    if extra:
        raise RowsError(path, number, extra[0], f"unexpected key (a line has {', '.join(sorted(keys))})")
    if "partitions" in line:
        if not _count(line["partitions"], 1):
            raise RowsError(path, number, "partitions", "expected a whole number ≥ 1")
        return line
    if "proc_ms" in line:
        raise RowsError(path, number, "proc_ms", "refused: processing time is wall time in the oracle")
    if not _count(line.get("partition"), 0):
        raise RowsError(path, number, "partition", "expected a whole number ≥ 0")
    if not isinstance(line.get("row"), dict):
        raise RowsError(path, number, "row", "expected an object of column values")
    return line


def _count(value: Any, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def runner_command() -> list[str]:
    """`java … WmvizSqlRun`, compiled once with the planner's Java half."""
    reason = jars.sql_unavailable_reason(download=False)
    paths = jars.sql_jar_paths(download=False)
    if reason or paths is None:
        raise PlannerUnavailable(f"the SQL oracle cannot run here: {reason}")
    classes = jars.compile_harness([*java_sources(), *RUNNER_SOURCES], RUNNER_CLASS, paths, tag="sqlrun-")
    return jars.java_command(RUNNER_CLASS, paths, classes)


def run_raw(script: Path, rows: Path, rest_port: int | None = None) -> dict[str, Any]:
    """The runner's whole answer: events, timing and (with `rest_port`) the REST answers."""
    text = script.read_text(encoding="utf-8")
    request = {"script": text, "lines": read_rows(rows), "rest_port": rest_port}
    proc = subprocess.run(
        runner_command(), input=json.dumps(request).encode(), capture_output=True, timeout=900
    )
    try:
        answer = json.loads(proc.stdout.decode("utf-8"))
    except ValueError:
        answer = None
    if proc.returncode != 0 or not isinstance(answer, dict):
        tail = proc.stderr.decode("utf-8", errors="replace")[-4000:]
        raise PlannerUnavailable(f"the SQL oracle exited {proc.returncode} without an answer:\n{tail}")
    error = answer.get("error")
    if error is not None:
        if error.get("where") == "rows":
            raise RowsError(rows, error["line"], str(error["column"]), error["message"])
        if error.get("where") == "job":
            raise JobFailed(rows, error["line"], error["message"])
        raise SqlScriptError(script, max(1, error["line"]), max(1, error["column"]), error["message"])
    return answer


def run_script(script: Path, rows: Path) -> list[dict[str, Any]]:
    """Every sink row, late drop and watermark change of a real run (see the module docstring)."""
    events: list[dict[str, Any]] = run_raw(script, rows)["events"]
    return events


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
        print("usage: python -m tools.flinksql.run SCRIPT.sql ROWS.jsonl", file=sys.stderr)
        return 2
    started = time.monotonic()
    try:
        answer = run_raw(Path(args[0]), Path(args[1]))
    except (SqlScriptError, RowsError, JobFailed, PlannerUnavailable) as e:
        print(str(e), file=sys.stderr)
        return 2
    for event in answer["events"]:
        print(json.dumps(event))
    print(f"ran in {time.monotonic() - started:.1f} s; {answer['timing_ms']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
