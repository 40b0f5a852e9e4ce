"""A bad plan, said once with its file and position, and what reading one may cost.

Every reader of `wmviz.sql` raises `PlanError` for an input it cannot read: the message names where
(`line 12:5` of a JSON file, `node 7 field "watermarkExpr"`, `line 3` of an EXPLAIN) and why; the
command line prints `FILE: WHERE: WHY` and exits 2. The limits follow `wmviz/core/budgets.py`: each
is named in the error that stops a read and settable by an environment variable.
"""

from __future__ import annotations

import json
import re
from typing import Any

from wmviz.core.budgets import _limit
from wmviz.core.errors import BadInputError

MAX_PLAN_BYTES = _limit("WMVIZ_MAX_PLAN_BYTES", 32 << 20)
"""The largest plan file wmviz reads: a COMPILE PLAN of a 200-operator job is ~2 MB of JSON, and
decoded JSON costs ~30 bytes of memory per byte read."""
MAX_PLAN_DEPTH = _limit("WMVIZ_MAX_PLAN_DEPTH", 200)
"""The deepest nesting of brackets a plan may have: a real plan's deepest RexNode is some 30 levels
down; Python's JSON reader would fail with RecursionError near 1,000."""
MAX_PLAN_NODES = _limit("WMVIZ_MAX_PLAN_NODES", 10_000)
"""The most operators (or edges) a plan may have."""


class PlanError(BadInputError, ValueError):
    """A plan wmviz cannot read: `where` is the position in the file, `reason` what is wrong."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}" if where else reason)
        self.where = where
        self.reason = reason


def check_size(size: int) -> None:
    """Refuse a file over MAX_PLAN_BYTES before it is read."""
    if size > MAX_PLAN_BYTES:
        raise PlanError(
            "",
            f"the file is {size:,} bytes, more than wmviz reads as a plan: {MAX_PLAN_BYTES:,} "
            "(WMVIZ_MAX_PLAN_BYTES)",
        )


def check_count(what: str, count: int) -> None:
    """Refuse more nodes or edges than MAX_PLAN_NODES."""
    if count > MAX_PLAN_NODES:
        raise PlanError(
            "",
            f"the plan has {count:,} {what}, more than wmviz reads: {MAX_PLAN_NODES:,} "
            "(WMVIZ_MAX_PLAN_NODES)",
        )


_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


def _line_col(text: str, offset: int) -> str:
    line = text.count("\n", 0, offset) + 1
    return f"line {line}:{offset - (text.rfind(chr(10), 0, offset) + 1) + 1}"


_TEXT_BRACKET = re.compile(r"[\[\](){}]")


def check_depth(text: str, json_text: bool = False) -> None:
    """Refuse brackets (and, in digest text, parentheses) nested deeper than MAX_PLAN_DEPTH,
    before a reader recurses into them; the error names the line and column."""
    scanned = _STRING.sub(lambda m: " " * len(m.group()), text) if json_text else text
    depth = 0
    for match in (_BRACKET if json_text else _TEXT_BRACKET).finditer(scanned):
        depth += 1 if match.group() in "[{(" else -1
        if depth > MAX_PLAN_DEPTH:
            raise PlanError(
                _line_col(text, match.start()),
                f"nested more than {MAX_PLAN_DEPTH} levels deep, more than a plan needs "
                "(WMVIZ_MAX_PLAN_DEPTH)",
            )


def parse_json(text: str) -> Any:
    """JSON text decoded, after its nesting was checked against MAX_PLAN_DEPTH; a decoding error
    names the line and column."""
    check_depth(text, json_text=True)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise PlanError(f"line {err.lineno}:{err.colno}", f"not JSON: {err.msg}") from None


def json_type(value: object) -> str:
    """A JSON value's type in JSON's words, for messages."""
    if value is None:
        return "null"
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean"}.get(
        type(value), "a number"
    )
