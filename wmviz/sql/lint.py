"""What a SQL job silently ignores or gets wrong about event time, said where a person looks.

Each check is declared once, as data (`CHECKS`: its code and its message template, like a
validation library's named checks), and run by one function over the `SqlJob`; a finding is the
code and the message filled in. `wmviz plan` prints them and `--json` lists them as
`{"code", "message"}`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from wmviz.core.sql_expr import result_kind
from wmviz.sql import sources
from wmviz.sql.model import Behaviour, Node, Origin, SourceTable, SqlJob

PARTITIONED = frozenset({"kafka", "upsert-kafka"})
"""Connectors whose splits are partitions that can fall quiet for good (a file or a generator ends
instead); a connector the input does not name is taken to be one."""


@dataclass(frozen=True, slots=True)
class Check:
    """One lint: its code and the template of its message (named fields)."""

    code: str
    template: str


CHECKS: dict[str, Check] = {
    c.code: c
    for c in (
        Check(
            "ignored-watermark-option",
            "table {table}: {options} {verb} no effect: {why}, and only a watermark pushed into the "
            "source reads the scan.watermark.* options",
        ),
        Check(
            "unseen-watermark-options",
            "table {table}: its watermark is made by a separate WatermarkAssigner, so any "
            "scan.watermark.* option its WITH clause sets has no effect; {input} does not show the "
            "table's options to check",
        ),
        Check(
            "no-idle-timeout",
            "table {table}: no idle timeout, and {partitions}: a partition that stops sending holds "
            "back its subtask's watermark and every window after it; set scan.watermark.idle-timeout "
            "(or table.exec.source.idle-timeout)",
        ),
        Check(
            "time-attribute-lost",
            "{node}: {what}; a regular join or aggregation before a window turns the rowtime into a "
            "plain TIMESTAMP, so the window cannot be planned on it: window each input first, or use "
            "an interval or window join, which keep the time attribute",
        ),
        Check(
            "ltz-window-dst",
            "{node}: windows on the TIMESTAMP_LTZ column {column} in table.local-time-zone {zone}: "
            "windows of a day or more follow the zone's clock, so on the days the clocks change they "
            "are 23 and 25 hours long",
        ),
        Check(
            "alignment-without-update-interval",
            "table {table}: watermark alignment (group {group}) without "
            "scan.watermark.alignment.update-interval: Flink takes the default 1 s; set it to say "
            "how often the sources report and are told the group's watermark",
        ),
        Check(
            "alignment-off",
            "table {table}: watermark alignment is configured but off: Flink aligns only with a "
            "group, a positive max drift and a positive update interval ({missing})",
        ),
        Check(
            "global-idle-timeout-unused",
            "table.exec.source.idle-timeout ({value}) has no effect: every source pushes down its "
            "own scan.watermark.idle-timeout ({tables})",
        ),
        Check(
            "source-watermark-fails",
            "table {table}: WATERMARK … AS SOURCE_WATERMARK(), {what}; in Flink 2.3.0 only a table "
            "made from a DataStream gives its own watermark, and a connector that takes watermarks "
            "(Kafka) gets the call pushed in as an ordinary expression, which throws when the job "
            "runs: declare an expression instead (ts - INTERVAL '5' SECOND)",
        ),
        Check("expression-refused", "{message}"),
        Check("planner-error", "the planner refused the script: {message}"),
    )
}


@dataclass(frozen=True, slots=True)
class Finding:
    """One lint finding: its code and its message."""

    code: str
    message: str

    def as_json(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def finding(code: str, **fields: object) -> Finding:
    """A finding of the check `code`, its message filled in from `fields`."""
    return Finding(code, CHECKS[code].template.format(**fields))


def lint(job: SqlJob) -> list[Finding]:
    """Every finding of every check, sources first in their order, then operators, then the job."""
    found: list[Finding] = [finding("planner-error", message=m) for m in job.planner_errors]
    for source in job.sources:
        found.extend(_source_findings(source, job))
    for node in job.nodes:
        found.extend(_window_findings(node, job))
    found.extend(_global_idle_unused(job))
    return found


def _source_findings(source: SourceTable, job: SqlJob) -> Iterator[Finding]:
    yield from _ignored_options(source, job)
    yield from _no_idle_timeout(source)
    yield from _alignment(source)
    if source.expression_text == "SOURCE_WATERMARK()" and source.where == "source":
        said = "but the plan pushes the call into the source as an ordinary watermark expression"
        yield finding("source-watermark-fails", table=source.table, what=said)
    elif source.where == "source-defined" and job.input_kind in ("explain", "rest-plan"):
        said = "and the digest cannot tell a source's own watermark from the call pushed into the source"
        yield finding("source-watermark-fails", table=source.table, what=said)
    elif source.expression_error:
        yield finding("expression-refused", message=source.expression_error)


def _ignored_options(source: SourceTable, job: SqlJob) -> Iterator[Finding]:
    if source.where == "source":
        return
    if source.watermark_options:
        shown = ", ".join(
            f"'{k}' = '{s.value}' ({s.origin.value})" for k, s in source.watermark_options.items()
        )
        yield finding(
            "ignored-watermark-option",
            table=source.table,
            options=shown,
            verb="has" if len(source.watermark_options) == 1 else "have",
            why=_why_not_pushed(source),
        )
    elif source.where == "assigner" and not source.options_known:
        said = {"explain": "EXPLAIN", "rest-plan": "a REST plan"}.get(job.input_kind, "the plan")
        yield finding("unseen-watermark-options", table=source.table, input=said)


def _why_not_pushed(source: SourceTable) -> str:
    connector = source.connector.value
    if source.where == "source-defined":
        return "the watermark is the source's own (SOURCE_WATERMARK())"
    if source.where is None:
        return "the table declares no watermark"
    if connector:  # the plan shows it: the connector did not take the watermark
        return (
            f"the {connector} connector does not take the watermark, so a separate WatermarkAssigner makes it"
        )
    return "a separate WatermarkAssigner makes the watermark"


def _no_idle_timeout(source: SourceTable) -> Iterator[Finding]:
    idle = source.idle_timeout_ms
    if source.where not in ("source", "assigner") or idle.value or idle.origin is Origin.UNKNOWN:
        return
    connector = source.connector.value
    if connector is not None and connector not in PARTITIONED:
        return  # bounded files and generators end rather than fall quiet
    if source.partitions is not None and source.parallelism is not None:
        if source.partitions <= source.parallelism and source.where == "assigner":
            return
        partitions = f"{source.partitions} partitions on {source.parallelism} subtasks"
    else:
        width = f"its {source.parallelism} subtasks" if source.parallelism else "its subtasks"
        partitions = (
            f"the input does not say how many partitions it reads (Kafka's count is rarely in a plan; "
            f"--partitions {source.table}=N tells wmviz): with more than {width}, or any quiet one"
        )
    yield finding("no-idle-timeout", table=source.table, partitions=partitions)


def _alignment(source: SourceTable) -> Iterator[Finding]:
    align = source.alignment
    if align is None or source.where != "source":
        return
    if not align.enabled:
        missing = [
            name
            for name, setting in (
                ("group", align.group),
                ("max drift", align.max_drift_ms),
                ("update interval", align.update_interval_ms),
            )
            if not setting.value
        ]
        yield finding("alignment-off", table=source.table, missing="no " + ", no ".join(missing))
    elif align.update_interval_ms.origin is Origin.DEFAULT:
        yield finding("alignment-without-update-interval", table=source.table, group=align.group.value)


_LOST = re.compile(
    r"(requires the timecol (?:is|to be) a time attribute|can only be defined on a time attribute|"
    r"Rowtime attributes must not be in the input rows of a regular join)",
    re.IGNORECASE,
)


def recognised_planner_error(message: str) -> Finding | None:
    """The lint a planner error stands for, where wmviz recognises it (a lost time attribute)."""
    for line in message.splitlines():  # the planner's own sentence, not the rule it was applying
        if _LOST.search(line):
            return finding("time-attribute-lost", node="the planner", what=line.strip().rstrip("."))
    return None


def _window_findings(node: Node, job: SqlJob) -> Iterator[Finding]:
    window = node.window
    if window is None or node.behaviour is not Behaviour.WINDOW:
        return
    if window.rowtime is False and not window.proctime:
        lost_after = [
            job.node(n).name for n in job.upstream(node.id) if job.node(n).behaviour is Behaviour.LOSES_TIME
        ]
        after = f" after {', '.join(sorted(lost_after))}" if lost_after else ""
        yield finding(
            "time-attribute-lost",
            node=node.name,
            what=f"its window is over {window.time_column}, not a time attribute{after}",
        )
    if _time_kind(node, job) == "TIMESTAMP_LTZ":
        zone = job.local_time_zone.value
        if zone is None or has_daylight_saving(zone):
            said = (
                f"{zone}, which has daylight saving"
                if zone
                else "'default' or unknown (the zone where the job runs: with daylight saving, as most have)"
            )
            column = time_column(node, job) or "(its time attribute)"
            yield finding("ltz-window-dst", node=node.name, column=column, zone=said)


def time_column(node: Node, job: SqlJob) -> str | None:
    """The column a window is over: its own, or the nearest upstream window's (a two-phase
    aggregate's global half names none)."""
    if node.window is not None and node.window.time_column is not None:
        return node.window.time_column
    current = node.id
    for _ in range(len(job.nodes)):
        inputs = job.inputs_of(current)
        if len(inputs) != 1:
            return None
        current = inputs[0].source
        window = job.node(current).window
        if window is not None and window.time_column is not None:
            return window.time_column
    return None


def _time_kind(node: Node, job: SqlJob) -> str | None:
    """A window's time kind: from the plan, or (from a digest, which prints no types) the kind of
    the watermark expression of the source whose rowtime the window is over: the one so named, or
    the only watermarked source upstream."""
    window = node.window
    if window is None or window.time_kind is not None:
        return window.time_kind if window else None
    upstream = job.upstream(node.id)
    candidates = [s for s in job.sources if s.expression is not None and s.node_id in upstream]
    column = time_column(node, job)
    named = [s for s in candidates if s.rowtime is not None and s.rowtime == column]
    kinds = set()
    for source in named or (candidates if len(candidates) == 1 else []):
        try:
            kinds.add(result_kind(source.expression, source.column_kinds))  # type: ignore[arg-type]
        except ValueError:
            return None
    return kinds.pop() if len(kinds) == 1 else None


def has_daylight_saving(zone: str) -> bool:
    """Whether a zone's offset changes over a year (sampled twice a month over 2024–2026); an
    unknown name or a fixed offset has none."""
    try:
        info = ZoneInfo(zone)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    offsets = {
        datetime(year, month, day, tzinfo=UTC).astimezone(info).utcoffset()
        for year in (2024, 2025, 2026)
        for month in range(1, 13)
        for day in (1, 15)
    }
    return len(offsets) > 1


def _global_idle_unused(job: SqlJob) -> Iterator[Finding]:
    value = job.global_options.get(sources.GLOBAL_IDLE)
    if not value or not job.sources:
        return
    own = (Origin.HINT, Origin.TABLE, Origin.HINT_OR_TABLE, Origin.PLAN)
    made = [s for s in job.sources if s.where is not None]
    if made and all(s.where == "source" and s.idle_timeout_ms.origin in own for s in made):
        tables = ", ".join(s.table for s in job.sources if s.where is not None)
        yield finding("global-idle-timeout-unused", value=value, tables=tables)
