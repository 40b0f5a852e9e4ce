"""A `.sql` script compiled by Flink's own planner (the real Flink 2.3.0 table jars), never by a
parser of ours: `compile_script(path)` gives the `COMPILE PLAN` JSON and the `EXPLAIN` text of the
script's INSERTs planned together as one statement set, and what the plan reader needs to say where
each watermark value came from (the tables as written, every SET, every OPTIONS hint, Flink's
defaults).

The Java half (`wmviz/sql/java/`, compiled once into `~/.cache/wmviz/flink/classes-sql-…`) splits
the script where Flink's SQL lexer finds a semicolon, as Flink's SQL client does, runs each statement
into a table environment, and answers with one JSON object on stdout.

Connectors Flink cannot load here (Kafka, filesystem, anything else) are replaced by a stand-in
with the same watermark abilities: `kafka` / `upsert-kafka` take the watermark into the source
(SupportsWatermarkPushDown, as the released KafkaDynamicSource does), `filesystem` does not (the
planner keeps a separate `WatermarkAssigner`), an unknown connector does not either and its
`Table.known_connector` is False. No connector implements SupportsSourceWatermark (in released
Flink only the DataStream bridge's virtual table does), so `SOURCE_WATERMARK()` is refused by the
planner for every table a script declares, as it would be for real. The returned `plan_json` names
each table's connector as the user wrote it: the stand-in's identifier is replaced by the original
in the JSON text, so it reads as the user's connectors would have planned it.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wmviz.core.errors import BadInputError, Refused
from wmviz.sql import jars

JAVA_SOURCES = Path(__file__).with_name("java")
PLANNER_CLASS = "wmviz.flinksql.WmvizSqlPlanner"
_TIMEOUT_S = 300

OptionValue = str | int | bool | None
"""A Flink default or session value as the Java half reports it (durations in milliseconds)."""


class SqlScriptError(BadInputError, ValueError):
    """The script is wrong where Flink's parser, validator or planner says: file, line, column (1-based)."""

    def __init__(self, file: Path, line: int, column: int, message: str) -> None:
        super().__init__(f"{file}:{line}:{column}: {message}")
        self.file, self.line, self.column, self.message = file, line, column, message


class PlannerUnavailable(Refused, RuntimeError):
    """Java or the Flink jars are missing here: the message says what to install or set."""


@dataclass(frozen=True, slots=True)
class Column:
    """A column as Flink resolved it: `kind` physical, computed (with its SQL) or metadata."""

    name: str
    type: str
    kind: str
    expression: str | None = None
    metadata_key: str | None = None


@dataclass(frozen=True, slots=True)
class WatermarkSpec:
    """`WATERMARK FOR rowtime AS expression`, the expression as Flink prints it back as SQL."""

    rowtime: str
    expression: str


@dataclass(frozen=True, slots=True)
class Table:
    """A CREATE TABLE: its connector and options as written, and what its source can do.

    `stand_in`: the connector could not be loaded here and a stand-in with its abilities planned
    it. `known_connector`: False for a stand-in of a connector wmviz does not know (planned with no
    ability at all). `is_source`: the connector can be read (False for sink-only ones such as
    `print`); `pushes_down_watermark` / `supports_source_watermark` are None for those.
    """

    name: str
    identifier: str
    line: int
    column: int
    temporary: bool
    connector: str | None
    options: Mapping[str, str]
    columns: tuple[Column, ...]
    watermark: WatermarkSpec | None
    primary_key: tuple[str, ...]
    stand_in: bool
    known_connector: bool
    is_source: bool
    pushes_down_watermark: bool | None
    supports_source_watermark: bool | None


@dataclass(frozen=True, slots=True)
class Setting:
    """One `SET 'key' = 'value';` and its line."""

    key: str
    value: str
    line: int


@dataclass(frozen=True, slots=True)
class Hint:
    """One `/*+ OPTIONS(...) */` after a table reference (the name as written) and its position."""

    table: str
    line: int
    column: int
    options: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class CompiledScript:
    """What Flink's planner made of a script (see the module docstring).

    `defaults`: Flink's default of every watermark-related option (`scan.watermark.*`,
    `table.exec.source.idle-timeout`, `pipeline.auto-watermark-interval`, mini-batch, time zone),
    durations in ms. `session`: the session-wide value of each after the script's SETs (None for
    the per-table `scan.*` keys, which have no session value).
    """

    path: Path
    plan_json: str
    explain: str
    tables: tuple[Table, ...]
    config: tuple[Setting, ...]
    hints: tuple[Hint, ...]
    defaults: Mapping[str, OptionValue]
    session: Mapping[str, OptionValue]

    def table(self, name: str) -> Table:
        """The table of that name (KeyError if the script declares none)."""
        for table in self.tables:
            if table.name == name:
                return table
        raise KeyError(name)


def compile_script(path: Path, *, download: bool = True) -> CompiledScript:
    """Plan the script at `path` with Flink's planner (fetching the jars first if `download`).

    Raises SqlScriptError for a script Flink refuses (at the line and column of the script Flink
    points at) and PlannerUnavailable when Java or the jars are missing.
    """
    result = compile_scripts([path], download=download)[0]
    if isinstance(result, SqlScriptError):
        raise result
    return result


def compile_scripts(paths: Sequence[Path], *, download: bool = True) -> list[CompiledScript | SqlScriptError]:
    """Plan several scripts in one JVM (its start is most of the cost), each in a fresh session.

    Per script, its CompiledScript or the SqlScriptError Flink (or reading it) gave; raises
    PlannerUnavailable when Java or the jars are missing.
    """
    results: list[CompiledScript | SqlScriptError | None] = []
    texts: list[str] = []
    for path in paths:
        try:
            texts.append(_read(path))
            results.append(None)
        except SqlScriptError as e:
            results.append(e)
    answers = iter(_run_java(texts, download) if texts else [])
    return [r if r is not None else _compiled(path, next(answers)) for path, r in zip(paths, results)]


def _compiled(path: Path, answer: dict[str, Any]) -> CompiledScript | SqlScriptError:
    error = answer.get("error")
    if error is not None:
        line = max(1, int(error.get("line") or 1))
        column = max(1, int(error.get("column") or 1))
        return SqlScriptError(path, line, column, str(error.get("message")))
    return CompiledScript(
        path=path,
        plan_json=answer["plan_json"],
        explain=answer["explain"],
        tables=tuple(_table(t) for t in answer["tables"]),
        config=tuple(Setting(s["key"], s["value"], s["line"]) for s in answer["config"]),
        hints=tuple(Hint(h["table"], h["line"], h["column"], dict(h["options"])) for h in answer["hints"]),
        defaults=dict(answer["defaults"]),
        session=dict(answer["session"]),
    )


def _read(path: Path) -> str:
    """The script's text; an unreadable or non-UTF-8 file is a SqlScriptError at its position."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise SqlScriptError(path, 1, 1, f"cannot read the script: {e.strerror or e}") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        before = data[: e.start].decode("utf-8", errors="replace")
        line = before.count("\n") + 1
        column = len(before) - (before.rfind("\n") + 1) + 1
        raise SqlScriptError(path, line, column, "not UTF-8 text") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def planner_command(download: bool = True) -> list[str]:
    """`java … WmvizSqlPlanner`: compiles the Java half once; PlannerUnavailable if it cannot run."""
    reason = jars.sql_unavailable_reason(download=download)
    paths = jars.sql_jar_paths(download=False)
    if reason or paths is None:
        raise PlannerUnavailable(f"Flink's SQL planner cannot run here: {reason}")
    try:
        classes = jars.compile_harness(java_sources(), PLANNER_CLASS, paths, tag="sql-")
        return jars.java_command(PLANNER_CLASS, paths, classes)
    except jars.HarnessError as e:
        raise PlannerUnavailable(f"Flink's SQL planner cannot run here: {e}") from None


def java_sources() -> list[Path]:
    """The Java half's sources, in a stable order (the compile hash covers them)."""
    return sorted(JAVA_SOURCES.glob("*.java"))


def _run_java(texts: Sequence[str], download: bool) -> list[dict[str, Any]]:
    """Run the planner on the texts; its stdout is one JSON array (never human text to parse)."""
    proc = subprocess.run(
        planner_command(download),
        input=json.dumps(list(texts)).encode("utf-8"),
        capture_output=True,
        timeout=_TIMEOUT_S * max(1, len(texts)),
    )
    try:
        answers = json.loads(proc.stdout.decode("utf-8"))
    except ValueError:
        answers = None
    if proc.returncode != 0 or not isinstance(answers, list) or len(answers) != len(texts):
        tail = proc.stderr.decode("utf-8", errors="replace")[-3000:]
        raise PlannerUnavailable(f"Flink's SQL planner exited {proc.returncode} without an answer:\n{tail}")
    return answers


def _table(node: dict[str, Any]) -> Table:
    watermark = node.get("watermark")
    return Table(
        name=node["name"],
        identifier=node["identifier"],
        line=node["line"],
        column=node["column"],
        temporary=node["temporary"],
        connector=node.get("connector"),
        options=dict(node["options"]),
        columns=tuple(
            Column(c["name"], c["type"], c["kind"], c.get("expression"), c.get("metadata_key"))
            for c in node["columns"]
        ),
        watermark=WatermarkSpec(watermark["rowtime"], watermark["expression"]) if watermark else None,
        primary_key=tuple(node["primary_key"]),
        stand_in=node["stand_in"],
        known_connector=node["known_connector"],
        is_source=node["source"],
        pushes_down_watermark=node.get("pushes_down_watermark"),
        supports_source_watermark=node.get("supports_source_watermark"),
    )
