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

from wmviz.core.errors import BadInputError
from wmviz.core.settings import MAX_PLAN_BYTES, MAX_PLAN_DEPTH, MAX_PLAN_NODES


class PlanError(BadInputError, ValueError):
    """A plan wmviz cannot read: `where` is the position in the file, `reason` what is wrong."""

    def __init__(self, where: str, reason: str) -> None:
        super().__init__(f"{where}: {reason}" if where else reason)
        self.where = where
        self.reason = reason


def check_size(size: int) -> None:
    """Refuse a file over MAX_PLAN_BYTES before it is read."""
    if size > (most := MAX_PLAN_BYTES.get()):
        raise PlanError(
            "",
            f"the file is {size:,} bytes, more than wmviz reads as a plan: {most:,} (WMVIZ_MAX_PLAN_BYTES)",
        )


def check_count(what: str, count: int) -> None:
    """Refuse more nodes or edges than MAX_PLAN_NODES."""
    if count > (most := MAX_PLAN_NODES.get()):
        raise PlanError(
            "",
            f"the plan has {count:,} {what}, more than wmviz reads: {most:,} (WMVIZ_MAX_PLAN_NODES)",
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
    depth, most = 0, MAX_PLAN_DEPTH.get()
    for match in (_BRACKET if json_text else _TEXT_BRACKET).finditer(scanned):
        depth += 1 if match.group() in "[{(" else -1
        if depth > most:
            raise PlanError(
                _line_col(text, match.start()),
                f"nested more than {most} levels deep, more than a plan needs (WMVIZ_MAX_PLAN_DEPTH)",
            )


def parse_json(text: str) -> Any:
    """JSON text decoded, after its nesting was checked against MAX_PLAN_DEPTH; a decoding error
    names the line and column."""
    check_depth(text, json_text=True)
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise PlanError(f"line {err.lineno}:{err.colno}", f"not JSON: {err.msg}") from None
