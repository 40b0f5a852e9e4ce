"""The config of SQL's MATCH_RECOGNIZE (`operator.type` match; wmviz/core/sql_match.py).

Kept apart from the operator so the config type can be named without importing the operator
(docs/sql.md, "Operators"). The pattern's structure, the skip strategy, the WITHIN bound and the
PARTITION BY keys are data; the DEFINE conditions and the MEASURES are expressions of the plan,
computed by the replay's one expression evaluator (`wmviz.sql.rex`) behind `MatchLogic`, which
the plan reader gives (the core computes no SQL expression of its own)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar, Protocol

from wmviz.core.fieldrules import choice, names, text
from wmviz.core.operator_kind import SqlOperatorKind
from wmviz.core.sql_match_nfa import Partial, Skip, Variable
from wmviz.core.sql_value import SqlValue

if TYPE_CHECKING:
    from wmviz.core.scenario import TraceRow


class MatchLogic(Protocol):
    """The DEFINE conditions and MEASURES of one MATCH_RECOGNIZE, over trace rows."""

    def define(self, variable: str, partial: Partial[TraceRow] | None, row: TraceRow) -> bool:
        """Whether `row` satisfies `variable`'s DEFINE, extending `partial` (None: a new match);
        a variable without DEFINE is TRUE, a NULL condition is not."""
        ...

    def measures(self, match: Partial[TraceRow]) -> tuple[tuple[str, SqlValue], ...]:
        """The MEASURES of a complete match, (name, value) in output order."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class SqlMatchConfig(SqlOperatorKind):
    """`operator.type` match: `MATCH_RECOGNIZE (PARTITION BY k ORDER BY rowtime MEASURES …
    ONE ROW PER MATCH AFTER MATCH SKIP … PATTERN (…) [WITHIN …] DEFINE …)` (Flink's CepOperator)."""

    type_name: ClassVar[str] = "match"
    partition_by: tuple[str, ...] = field(default=(), metadata=names("PARTITION BY: the key columns"))
    pattern: tuple[Variable, ...] = field(default=(), metadata=text("the pattern's variables in order"))
    skip: Skip = field(
        default="past_last_row",
        metadata=choice(Skip, "AFTER MATCH SKIP PAST LAST ROW or SKIP TO NEXT ROW"),
    )
    within_ms: int | None = field(default=None, metadata=text("WITHIN: the longest a match may span"))
    logic: MatchLogic | None = field(
        default=None, compare=False, metadata=text("DEFINE and MEASURES, read from the plan")
    )
