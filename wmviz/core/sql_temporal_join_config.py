"""`operator.type` temporal_join: the config of SQL's event-time temporal join
(`FROM probe JOIN build FOR SYSTEM_TIME AS OF probe.ts ON ...`), modelled by
`wmviz.core.sql_temporal_join`. Kept apart from the operator so `scenario.py` can name the config
without importing the operator."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

from wmviz.core.fieldrules import choice, names
from wmviz.core.operator_kind import SqlOperatorKind

TemporalJoinType = Literal["inner", "left"]
"""The joins Flink plans as an event-time temporal join (a RIGHT or FULL one is refused by Flink)."""

PROBE, BUILD = "L", "R"
"""The canonical input names: L the probe side (the stream), R the build side (the versioned table)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TemporalJoinConfig(SqlOperatorKind):
    """Flink SQL's event-time temporal join of a probe input L with a versioned table R: each L row
    waits until the combined watermark passes its time, then takes the R version valid at that time
    (docs/rules.md, "SQL temporal join", SQL-T1..SQL-T7)."""

    type_name: ClassVar[str] = "temporal_join"
    inputs: ClassVar[tuple[str, ...]] = (PROBE, BUILD)

    join_type: TemporalJoinType = field(
        default="inner",
        metadata=choice(TemporalJoinType, "inner: a probe row without a version emits nothing; left: NULLs"),
    )
    probe_key: tuple[str, ...] = field(metadata=names("the probe side's join-key columns, in key order"))
    build_key: tuple[str, ...] = field(
        metadata=names("the versioned table's join-key columns (its primary key), in key order")
    )
    build_columns: tuple[str, ...] = field(
        metadata=names("the versioned table's columns as its rows carry them, in output order")
    )
    build_fields: tuple[str, ...] = field(
        default=(),
        metadata=names(
            "the output's names of build_columns, position by position (Flink renames a clash with a"
            " probe column: currency becomes currency0); none: build_columns' own"
        ),
    )

    @property
    def build_output_names(self) -> tuple[str, ...]:
        """The output names of the build columns, in order."""
        return self.build_fields or self.build_columns

    @classmethod
    def canonical_input(cls, name: str) -> str | None:
        # `0`/`1` (and lower case) are accepted and mapped, as for the interval join, so two
        # spellings cannot split one side into two valves.
        return {"l": PROBE, "0": PROBE, "r": BUILD, "1": BUILD}.get(name.strip().lower())
