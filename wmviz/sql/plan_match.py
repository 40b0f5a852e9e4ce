"""The plan reader of MATCH_RECOGNIZE (`stream-exec-match`): a COMPILE PLAN node read into its core
config (`wmviz.core.sql_match_config.SqlMatchConfig`), its DEFINE conditions and MEASURES computed
by the replay's one expression evaluator (`wmviz.sql.rex`).

What the core does not model is refused by name (`OperatorRefused`), never approximated: ALL ROWS
PER MATCH, SKIP TO FIRST/LAST var, SUBSET, alternation and PERMUTE (Flink's planner refuses
these two itself), reluctant quantifiers, a secondary ORDER BY column, an ORDER BY that is not the
row-time attribute, and any expression `rex` does not compute.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wmviz.core.scenario import TraceRow
from wmviz.core.sql_match import LOGIC_MAKERS
from wmviz.core.sql_match_config import SqlMatchConfig, spell_pattern
from wmviz.core.sql_match_nfa import Partial, Variable
from wmviz.core.sql_rows import columns_of
from wmviz.core.sql_value import SqlValue
from wmviz.core.types import MIN_MS
from wmviz.sql import rex
from wmviz.sql.model import Node, OperatorRefused, SqlJob, fields_of
from wmviz.sql.plan_buffer import _input_fields, _is_rowtime, _order_fields

SKIPS = {"SKIP_PAST_LAST_ROW": "past_last_row", "SKIP_TO_NEXT_ROW": "to_next_row"}


def _refuse(node: Node, what: str) -> OperatorRefused:
    return OperatorRefused(f"{node.name} (plan node {node.id}): {what}")


def read_match(node: Node, job: SqlJob) -> SqlMatchConfig:
    """A MATCH_RECOGNIZE's config from its `matchSpec`."""
    fields = _input_fields(node, job)
    names = [str(f.get("name")) for f in fields]
    spec = node.spec.get("matchSpec")
    if not isinstance(spec, dict):
        raise _refuse(node, "has no matchSpec in the plan")
    if spec.get("allRows"):
        raise _refuse(node, "ALL ROWS PER MATCH is not modelled (ONE ROW PER MATCH is)")
    if spec.get("subsets"):
        raise _refuse(node, "SUBSET is not modelled")
    after = spec.get("after") or {}
    skip = SKIPS.get(str(after.get("value")))
    if after.get("kind") != "LITERAL" or skip is None:
        raise _refuse(node, "AFTER MATCH SKIP TO FIRST/LAST var is not modelled")
    order = _order_fields(node, spec.get("orderBy"))
    index = order[0].get("index")
    if len(order) != 1 or not isinstance(index, int) or not _is_rowtime(fields[index]):
        raise _refuse(node, "an ORDER BY other than the row-time attribute alone is not modelled")
    if order[0].get("isAscending") is not True:
        raise _refuse(node, "ORDER BY the time attribute DESC is not modelled")
    pattern = tuple(_variables(node, spec.get("pattern")))
    defines = spec.get("patternDefinitions") or {}
    where = f"{node.name} (plan node {node.id})"
    for condition in defines.values():
        rex.check(condition, f"{where} DEFINE")
    measures = spec.get("measures") or {}
    for measure in measures.values():
        rex.check(measure, f"{where} MEASURES")
    partition = tuple(names[i] for i in (spec.get("partition") or {}).get("fields") or [])
    outputs = fields_of(node)[len(partition) :]
    if set(outputs) != set(measures):
        raise _refuse(node, "its output is not its partition keys and MEASURES")
    return SqlMatchConfig(
        pattern=spell_pattern(pattern),
        partition_by=partition,
        skip=skip,  # type: ignore[arg-type]  # one of SKIPS' values
        within_ms=_within(node, spec.get("interval")),
        columns=tuple(names),
        defines=json.dumps({str(k): v for k, v in defines.items()}),
        measures=json.dumps([[name, measures[name]] for name in outputs]),
    )


def _variables(node: Node, rex_node: object) -> list[Variable]:
    """The pattern's variables in order: a concatenation of variables, each maybe quantified."""
    if not isinstance(rex_node, Mapping):
        raise _refuse(node, "its PATTERN is not in the plan")
    if rex_node.get("kind") == "LITERAL":
        return [Variable(str(rex_node.get("value")))]
    kind, name = rex_node.get("sqlKind"), rex_node.get("internalName")
    operands = list(rex_node.get("operands", ()))
    if kind == "PATTERN_CONCAT":
        return [v for operand in operands for v in _variables(node, operand)]
    if name == "$PATTERN_QUANTIFIER$1" and len(operands) == 4:
        inner, low, high, reluctant = (o.get("value") for o in operands)
        if operands[0].get("kind") != "LITERAL":
            raise _refuse(node, "a quantified group of variables is not modelled")
        if reluctant:
            raise _refuse(node, "a reluctant quantifier (`*?`, `+?`, …) is not modelled")
        low_n, high_n = int(str(low)), int(str(high))
        exact_or_optional = low_n == high_n or (low_n, high_n) == (0, 1)
        return [Variable(str(inner), low_n, None if high_n == -1 else high_n, not exact_or_optional)]
    raise _refuse(node, f"the pattern operator {kind or name} (alternation, PERMUTE, …) is not modelled")


def _within(node: Node, interval: object) -> int:
    if interval is None:
        return 0
    value = interval.get("value") if isinstance(interval, Mapping) else None
    try:
        return int(str(value))
    except ValueError:
        raise _refuse(node, f"its WITHIN {value!r} is not a number of milliseconds") from None


@dataclass(frozen=True, slots=True)
class PlanLogic:
    """DEFINE and MEASURES of one config, computed by `wmviz.sql.rex` over trace rows."""

    fields: tuple[str, ...]
    defines: Mapping[str, Any]
    measured: tuple[tuple[str, Any], ...]
    """(output name, MEASURES expression) in output order."""
    zone: str = "UTC"
    """Only CURRENT_WATERMARK compares a timestamp text with an instant; rex refuses it here."""

    @staticmethod
    def of(config: SqlMatchConfig) -> PlanLogic:
        """The logic of a config (read from a plan or a trace); OperatorRefused names an
        expression rex does not compute."""
        defines = json.loads(config.defines)
        measured = [(str(name), m) for name, m in json.loads(config.measures)]
        for condition in defines.values():
            rex.check(condition, "MATCH_RECOGNIZE DEFINE")
        for _, measure in measured:
            rex.check(measure, "MATCH_RECOGNIZE MEASURES")
        return PlanLogic(config.columns, defines, tuple(measured))

    def define(self, variable: str, partial: Partial[TraceRow] | None, row: TraceRow) -> bool:
        condition = self.defines.get(variable)
        if condition is None:
            return True
        taken = [] if partial is None else [(name, r) for name, _, r in partial.taken]
        taken.append((variable, row))
        context = self._context(taken)
        return rex.evaluate(condition, self._values(row), context) is True

    def measures(self, match: Partial[TraceRow]) -> tuple[tuple[str, SqlValue], ...]:
        taken = [(name, r) for name, _, r in match.taken]
        context = self._context(taken)
        last = self._values(taken[-1][1])
        return tuple((name, rex.sql_value(rex.evaluate(m, last, context))) for name, m in self.measured)

    def _values(self, row: TraceRow) -> Sequence[SqlValue]:
        values = columns_of(row)
        return tuple(values.get(name) for name in self.fields)

    def _context(self, taken: list[tuple[str, TraceRow]]) -> rex.Context:
        def rows(alpha: str) -> list[Sequence[SqlValue]]:
            return [self._values(r) for name, r in taken if alpha in ("*", name)]

        return rex.Context(watermark_ms=MIN_MS, zone=self.zone, pattern=rows)


if PlanLogic.of not in LOGIC_MAKERS:
    LOGIC_MAKERS.append(PlanLogic.of)
