"""What each operator config type says as a type rather than a field (its `operator.type` name, its
inputs), and the mark of a SQL operator's config."""

from __future__ import annotations

from typing import ClassVar


class OperatorKind:
    """What each operator type says as a type rather than a field: its name in a config's
    `operator.type`, and the inputs a trace may name for it."""

    __slots__ = ()
    type_name: ClassVar[str]
    inputs: ClassVar[tuple[str, ...]] = ("0",)
    """The canonical `input` names, in order."""

    @classmethod
    def canonical_input(cls, name: str) -> str | None:
        """The canonical input a trace's (or a config's `channels`) input name means, or None if
        the operator has no such input."""
        return "0" if name == "0" else None


class SqlOperatorKind(OperatorKind):
    """A SQL operator's config: `wmviz.core.sql_operators` builds the operator it configures, which
    keeps the contract `wmviz.core.sql_rows` states."""

    __slots__ = ()
