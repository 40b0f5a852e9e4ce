"""The config of SQL's MATCH_RECOGNIZE (`operator.type` match; wmviz/core/sql_match.py).

Kept apart from the operator so `wmviz.core.scenario` can name the config type without importing
the operator (docs/sql.md, "Operators"). Every field is data a trace can hold: the pattern spelled
as SQL writes it (`A D+ U`), the skip strategy, the WITHIN bound, the PARTITION BY keys, the
input's columns, and the DEFINE conditions and MEASURES as the COMPILE PLAN writes them (RexNode
JSON). Those expressions are computed by the replay's one expression evaluator (`wmviz.sql.rex`),
a floor above the core: it registers how it computes them in `wmviz.core.sql_match.LOGIC_MAKERS`
when imported, and the operator asks for it there (the core computes no SQL expression of its own)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import ClassVar

from wmviz.core.fieldrules import choice, millis, names, text
from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.sql_match_nfa import Skip, Variable

_TOKEN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(\+|\*|\?|\{(\d+)\}|\{(\d+),(\d*)\})?")


@dataclass(frozen=True, slots=True, kw_only=True)
class SqlMatchConfig(SqlOperatorKind):
    """`operator.type` match: `MATCH_RECOGNIZE (PARTITION BY k ORDER BY rowtime MEASURES …
    ONE ROW PER MATCH AFTER MATCH SKIP … PATTERN (…) [WITHIN …] DEFINE …)` (Flink's CepOperator)."""

    type_name: ClassVar[str] = "match"
    pattern: str = field(
        metadata=text(
            "PATTERN: variables in order, each with none or one quantifier (+ * ? {n} {n,} {n,m}),"
            " separated by spaces: `A D+ U`"
        )
    )
    partition_by: tuple[str, ...] = field(default=(), metadata=names("PARTITION BY: the key columns"))
    skip: Skip = field(
        default="past_last_row",
        metadata=choice(Skip, "AFTER MATCH SKIP PAST LAST ROW (past_last_row) or TO NEXT ROW (to_next_row)"),
    )
    within_ms: int = field(
        default=0, metadata=millis("WITHIN: the longest a match may span; 0: no bound", minimum=0)
    )
    columns: tuple[str, ...] = field(
        default=(),
        metadata=names("the input's columns in order (the plan's expressions read them by position)"),
    )
    defines: str = field(
        default="{}",
        metadata=text("DEFINE: {variable: condition} as the COMPILE PLAN writes the conditions (JSON)"),
    )
    measures: str = field(
        default="[]",
        metadata=text("MEASURES: [[output name, expression], ...] as the COMPILE PLAN writes them (JSON)"),
    )

    def variables(self) -> tuple[Variable, ...]:
        """The pattern's variables (`match_problems` has checked the spelling)."""
        return parse_pattern(self.pattern)


def parse_pattern(spelled: str) -> tuple[Variable, ...]:
    """`A D+ U` as variables; ValueError names the part that is not a variable and quantifier.
    Every quantifier but `?` and `{n}` is greedy, as Flink's planner makes it."""
    out: list[Variable] = []
    for part in spelled.split():
        found = _TOKEN.fullmatch(part)
        if found is None:
            raise ValueError(f"{part!r} is not a variable with none or one quantifier (+ * ? {{n}} {{n,m}})")
        name, quantifier, exact, low, high = found.groups()
        if quantifier is None:
            out.append(Variable(name))
        elif quantifier in ("+", "*"):
            out.append(Variable(name, 1 if quantifier == "+" else 0, None, greedy=True))
        elif quantifier == "?":
            out.append(Variable(name, 0, 1))
        elif exact is not None:
            out.append(Variable(name, int(exact), int(exact)))
        else:
            top = int(high) if high else None
            if top is not None and top < int(low):
                raise ValueError(f"{part!r}: the upper bound is below the lower one")
            out.append(Variable(name, int(low), top, greedy=True))
    if not out:
        raise ValueError("the pattern has no variable")
    if len({v.name for v in out}) != len(out):
        raise ValueError("a variable appears twice (Flink requires unique pattern variables)")
    return tuple(out)


def spell_pattern(variables: tuple[Variable, ...]) -> str:
    """Variables as `parse_pattern` reads them back."""

    def one(v: Variable) -> str:
        if (v.low, v.high) == (1, 1):
            return v.name
        if v.high is None:
            return v.name + ("+" if v.low == 1 else "*" if v.low == 0 else f"{{{v.low},}}")
        if (v.low, v.high) == (0, 1):
            return v.name + "?"
        return v.name + (f"{{{v.low}}}" if v.low == v.high else f"{{{v.low},{v.high}}}")

    return " ".join(one(v) for v in variables)


def match_problems(config_values: dict[str, object]) -> list[tuple[str, str]]:
    """The cross-field rules of the config, as (field, reason) pairs: a pattern that parses."""
    spelled = config_values.get("pattern")
    if not isinstance(spelled, str):
        return []
    try:
        parse_pattern(spelled)
    except ValueError as e:
        return [("pattern", str(e))]
    return []
