"""A plan file read whatever its kind, told by its content (docs/sql.md §Three ways to get a plan):
a COMPILE PLAN (JSON with `flinkVersion`, `nodes`, `edges`), a REST plan (`{"jid", "name",
"nodes"}`, or `/jobs/:jid` with `plan`), EXPLAIN output (`== Optimized Execution Plan ==`), or a
`.sql` script, which Flink's own planner compiles (`wmviz.sql.planner.compile_script`).

For a script wmviz knows more than any plan says: the options each table was written with, the
OPTIONS hints and the SET statements, so every value's origin is exact. The planner's COMPILE PLAN
says what Flink decided; where wmviz's reading of the options (`wmviz.sql.sources`) gives another
value, Flink's wins and a note says so.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol

from wmviz.sql import sources
from wmviz.sql.errors import PlanError, check_size, parse_json
from wmviz.sql.explain import is_explain, read_explain
from wmviz.sql.lint import recognised_planner_error
from wmviz.sql.model import Origin, Setting, SourceTable, SqlJob
from wmviz.sql.plan_json import is_compile_plan, read_compile_plan
from wmviz.sql.rest_plan import plan_object, read_rest_plan
from wmviz.sql.scans import scan_attributes

SHAPES = (
    "a COMPILE PLAN ({'flinkVersion', 'nodes', 'edges'}), a REST plan ({'jid', 'name', 'nodes'}) "
    "or a /jobs/:jid answer ({'plan': …})"
)


class WrittenTable(Protocol):
    """A table as the script wrote it (`CompiledScript.tables`: name, connector, options, line)."""

    name: str
    connector: str | None
    options: Mapping[str, str]


class CompiledScript(Protocol):
    """What `wmviz.sql.planner.compile_script` returns: the planner's COMPILE PLAN JSON text, the
    tables as written, the SET statements (`key`, `value`, `line`; later ones win) and the OPTIONS
    hints (`table` as written, `line`, `options`)."""

    plan_json: str
    tables: Any
    config: Any
    hints: Any


def read_plan_text(text: str, name: str = "") -> SqlJob:
    """A plan's text, its kind told by its content."""
    stripped = text.lstrip()
    if stripped.startswith(("{", "[")):
        doc = parse_json(text)
        if is_compile_plan(doc):
            return read_compile_plan(doc)
        if plan_object(doc) is not None:
            return read_rest_plan(doc)
        keys = ", ".join(repr(k) for k in list(doc)[:6]) if isinstance(doc, dict) else "an array"
        raise PlanError("line 1:1", f"JSON of another shape (it has {keys or 'nothing'}); expected {SHAPES}")
    if is_explain(text):
        return read_explain(text)
    raise PlanError(
        "line 1", f"is neither JSON ({SHAPES}) nor EXPLAIN output ('== Optimized Execution Plan ==')"
    )


def read_plan_file(path: Path) -> SqlJob:
    """A plan file of any kind, or a `.sql` script through Flink's planner."""
    check_size(path.stat().st_size)
    if path.suffix.lower() == ".sql":
        return read_script(path)
    data = path.read_bytes()
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise PlanError(f"byte {err.start}", "is not UTF-8 text") from None
    return read_plan_text(text, path.name)


def read_script(path: Path) -> SqlJob:
    """A `.sql` script compiled by Flink's own planner (another room's work: imported only here)."""
    # The planner is another room's module, imported only when a script is read (and by name, so
    # this file type-checks before it lands): wmviz.sql.planner.compile_script(path) -> CompiledScript.
    try:
        planner = importlib.import_module("wmviz.sql.planner")
    except ModuleNotFoundError:
        raise PlanError(
            "", "reading a .sql script needs Flink's planner (wmviz.sql.planner), not in this wmviz"
        ) from None
    try:
        compiled = planner.compile_script(path)
    except (ValueError, RuntimeError, OSError) as err:
        message = str(getattr(err, "message", err))
        line, column = getattr(err, "line", None), getattr(err, "column", None)
        if line is None:  # the planner could not run at all (no Java, no jars)
            raise PlanError("", f"cannot compile the script: {message}") from None
        lint = recognised_planner_error(message)
        said = lint.message if lint else f"the planner refused the script: {message}"
        raise PlanError(f"line {line}:{column}", said) from None
    return job_from_compiled(compiled)


def _last_name(name: str) -> str:
    """A table name as written (`db.orders`, `` `orders` ``) by its own name."""
    return name.rsplit(".", 1)[-1].strip("`")


def _tables(compiled: CompiledScript) -> dict[str, WrittenTable]:
    tables = compiled.tables
    if isinstance(tables, Mapping):
        return {_last_name(str(k)): v for k, v in tables.items()}
    return {_last_name(str(t.name)): t for t in tables}


def _config(compiled: CompiledScript) -> dict[str, str]:
    """The SET statements as key → value (a later SET of a key wins, as in Flink)."""
    config = compiled.config
    if isinstance(config, Mapping):
        return {str(k): str(v) for k, v in config.items()}
    return {str(s.key): str(s.value) for s in config}


def _hints(compiled: CompiledScript) -> dict[str, dict[str, str]]:
    """The OPTIONS hints per table; two references of one table with hints merge, a later one
    winning (wmviz reads one watermark per table)."""
    hints = compiled.hints
    if isinstance(hints, Mapping):
        return {_last_name(str(k)): dict(v) for k, v in hints.items()}
    merged: dict[str, dict[str, str]] = {}
    for hint in hints:
        merged.setdefault(_last_name(str(hint.table)), {}).update(hint.options)
    return merged


def job_from_compiled(compiled: CompiledScript) -> SqlJob:
    """The job of a compiled script: the plan's graph, with every source's values given their exact
    origin from the options, hints and SETs the script wrote."""
    plan = compiled.plan_json
    job = read_compile_plan(parse_json(plan) if isinstance(plan, str) else plan)
    config = _config(compiled)
    tables, hints = _tables(compiled), _hints(compiled)
    notes = list(job.notes)
    refined = tuple(
        _refine(
            s,
            scan_attributes(job.node(s.node_id).digest),
            tables.get(s.table),
            hints.get(s.table, {}),
            config,
            notes,
        )
        for s in job.sources
    )
    zone = config.get(sources.LOCAL_TIME_ZONE)
    return dataclasses.replace(
        job,
        input_kind="sql",
        sources=refined,
        global_options=config,
        local_time_zone=Setting(zone, Origin.GLOBAL) if zone else job.local_time_zone,
        notes=tuple(notes),
    )


def _written(table: WrittenTable | None, hints: Mapping[str, str]) -> dict[str, Setting[Any]]:
    """The `scan.watermark.*` values the script gives a table, a hint beating the table's option."""
    values: dict[str, Setting[Any]] = {}
    options = table.options if table is not None else {}
    for key in sources.OPTION_RULES:
        for given, origin in ((hints, Origin.HINT), (options, Origin.TABLE)):
            if key in given:
                try:
                    values[key] = Setting(sources.parse_option(key, given[key]), origin)
                except ValueError as err:
                    raise PlanError(f"option '{key}'", str(err)) from None
                break
    return values


def _refine(
    source: SourceTable,
    digest: Mapping[str, str],
    table: WrittenTable | None,
    hints: Mapping[str, str],
    config: Mapping[str, str],
    notes: list[str],
) -> SourceTable:
    values = _written(table, hints)
    shown = {
        k: Setting(v, Origin.HINT if k in hints else Origin.TABLE)
        for given in ((table.options if table is not None else {}), hints)
        for k, v in given.items()
        if k.startswith("scan.watermark.")
    }
    try:
        global_idle = sources.global_idle_timeout(config)
    except ValueError as err:
        raise PlanError(f"SET '{sources.GLOBAL_IDLE}'", str(err)) from None
    common: dict[str, Any] = {
        "connector": Setting(table.connector if table is not None else None, Origin.TABLE),
        "watermark_options": shown,
        "options_known": table is not None,
    }
    if source.where == "assigner":
        return dataclasses.replace(source, **common, idle_timeout_ms=global_idle)
    if source.where != "source":
        return dataclasses.replace(source, **common)
    mine = {
        "emit": sources.emit(values),
        "idle_timeout_ms": sources.idle_timeout(values, global_idle),
        "alignment": sources.alignment(values),
    }
    return dataclasses.replace(source, **common, **_as_flink_planned(source, mine, digest, notes))


def _as_flink_planned(
    source: SourceTable, mine: dict[str, Any], digest: Mapping[str, str], notes: list[str]
) -> dict[str, Any]:
    """wmviz's reading of the script checked against what Flink's planner printed for the scan
    (`idletimeout=[…]`, `watermarkEmitStrategy=[…]` in its digest, computed by Flink's own code):
    where they differ, Flink's value is kept and a note says so."""
    if "watermark" not in digest:
        return mine
    idle = digest.get("idletimeout")
    flink: dict[str, object] = {"idle_timeout_ms": int(idle) if idle and idle.isdigit() else None}
    if "watermarkEmitStrategy" in digest:
        flink["emit"] = digest["watermarkEmitStrategy"]
    for name, value in flink.items():
        setting = mine[name]
        if setting.value != value:
            notes.append(
                f"table {source.table}: wmviz reads {name} {setting.value!r} from the script, "
                f"Flink's planner planned {value!r}; Flink wins"
            )
            mine[name] = Setting(value, setting.origin, "as Flink's planner planned it")
    return mine
