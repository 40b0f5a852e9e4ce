"""Flink's digest text, read: a node's `Name(key=[value], …)` and a watermark expression in any of
its spellings, brought to one small tree (`Ref`, `Lit`, `Call`) that `to_expr` turns into the typed
tree of `wmviz.core.sql_expr`.

COMPILE PLAN's RexNode JSON is brought to the same tree (`rex_tree`, with `row_fields` naming a
row type's fields), so which expression shapes wmviz evaluates is decided once, here, for all three
inputs. The digests come in two spellings:
prefix (`-(ts, 5000:INTERVAL SECOND)`, `CAST($1):TIMESTAMP(3)`, a pushed-down watermark's digest)
and infix (`(ts - 5000:INTERVAL SECOND)`, `CAST(ts AS TIMESTAMP(3))`, most other operators').
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from wmviz.core.errors import BadInputError
from wmviz.core.sql_expr import CastTo, Column, Expr, Shifted, ToTimestampLtz, TypeKind, UnsupportedExpression
from wmviz.core.sql_value import json_type
from wmviz.sql.errors import PlanError


@dataclass(frozen=True, slots=True)
class Ref:
    """A column, by name."""

    name: str


@dataclass(frozen=True, slots=True)
class Lit:
    """A literal: its text and its type's text (`5000`, `INTERVAL SECOND`)."""

    value: str
    type_text: str = ""


@dataclass(frozen=True, slots=True)
class Call:
    """An operator or function call: `op` upper-case (`-`, `CAST`, `TO_TIMESTAMP_LTZ`), and the
    result type's text where the spelling gives one (a CAST's target)."""

    op: str
    args: tuple[Tree, ...]
    type_text: str = ""


Tree = Ref | Lit | Call

ACCEPTED = (
    "wmviz evaluates a column, column ± interval, CAST and TO_TIMESTAMP_LTZ of the rowtime column; "
    "this one is refused, not guessed"
)
_MS_PER_UNIT = {"MILLISECOND": 1, "SECOND": 1000, "MINUTE": 60_000, "HOUR": 3_600_000, "DAY": 86_400_000}
TRANSPARENT = frozenset({"REINTERPRET", "AS"})
"""Calls that only mark a column as the time attribute; the value passes through unchanged."""


def to_expr(tree: Tree, table: str) -> Expr:
    """The typed expression of a tree, or UnsupportedExpression naming the shape refused."""
    if isinstance(tree, Ref):
        return Column(tree.name)
    if isinstance(tree, Call):
        if tree.op in ("-", "+") and len(tree.args) == 2 and isinstance(tree.args[1], Lit):
            by = interval_ms(tree.args[1])
            if by is not None:
                return Shifted(to_expr(tree.args[0], table), -by if tree.op == "-" else by)
        if tree.op == "CAST" and len(tree.args) == 1:
            target = cast_target(tree.type_text)
            if target is not None:
                return CastTo(to_expr(tree.args[0], table), *target)
        last = tree.args[1] if len(tree.args) == 2 else None
        if tree.op == "TO_TIMESTAMP_LTZ" and isinstance(last, Lit) and last.value in ("0", "3"):
            return ToTimestampLtz(to_expr(tree.args[0], table), 0 if last.value == "0" else 3)
        if tree.op in TRANSPARENT and len(tree.args) == 1:
            return to_expr(tree.args[0], table)
    raise UnsupportedExpression(f"watermark expression {shape(tree)} of table {table}: {ACCEPTED}")


def shape(tree: Tree) -> str:
    """The outermost shape of a tree, for a refusal: `CEIL(...)`, `*(...)`, a literal's text."""
    if isinstance(tree, Call):
        return f"{tree.op}(...)"
    return tree.name if isinstance(tree, Ref) else f"{tree.value}:{tree.type_text}"


def interval_ms(lit: Lit) -> int | None:
    """A day-to-second interval literal's milliseconds (Flink writes them in ms whatever the
    unit); None for any other literal, a year-to-month interval among them (months)."""
    kind = lit.type_text.upper()
    if not kind.startswith("INTERVAL") or "YEAR" in kind or "MONTH" in kind:
        return None
    try:
        return int(lit.value)
    except ValueError:
        return None


def cast_target(type_text: str) -> tuple[Literal["TIMESTAMP", "TIMESTAMP_LTZ"], int] | None:
    """The target of a CAST wmviz evaluates (TIMESTAMP or TIMESTAMP_LTZ) and its precision."""
    kind = time_kind(type_text)
    precision = re.search(r"\((\d+)\)", type_text)
    digits = int(precision.group(1)) if precision else 3
    if kind == "TIMESTAMP":
        return "TIMESTAMP", digits
    if kind == "TIMESTAMP_LTZ":
        return "TIMESTAMP_LTZ", digits
    return None


def time_kind(type_text: str) -> TypeKind | None:
    """The kind of a type's text: `TIMESTAMP(3) WITH LOCAL TIME ZONE`, `TIMESTAMP_LTZ(3)` and
    `TIMESTAMP_WITH_LOCAL_TIME_ZONE` are TIMESTAMP_LTZ; `TIMESTAMP(3)` and
    `TIMESTAMP_WITHOUT_TIME_ZONE` TIMESTAMP; integer types NUMBER; anything else None."""
    text = type_text.upper().replace("*ROWTIME*", "").strip()
    if text.startswith("TIMESTAMP"):
        local = "LOCAL" in text or text.startswith("TIMESTAMP_LTZ")
        return "TIMESTAMP_LTZ" if local else "TIMESTAMP"
    if re.match(r"(BIGINT|INTEGER|INT|SMALLINT|TINYINT)\b", text):
        return "NUMBER"
    return None


def render(tree: Tree) -> str:
    """A tree as SQL writes it (`ts - INTERVAL '5' SECOND`): the same text whichever input it came
    from, for a person to read and compare with the DDL."""
    if isinstance(tree, Ref):
        return tree.name
    if isinstance(tree, Lit):
        ms = interval_ms(tree)
        return render_interval(ms) if ms is not None else tree.value
    args = [render(a) for a in tree.args]
    if tree.op in ("-", "+", "*", "/") and len(args) == 2:
        return f"{args[0]} {tree.op} {args[1]}"
    if tree.op == "CAST" and len(args) == 1:
        return f"CAST({args[0]} AS {tree.type_text})"
    return f"{tree.op}({', '.join(args)})"


def render_interval(ms: int) -> str:
    """`INTERVAL '5' SECOND` for 5000 ms, in the largest unit that divides it."""
    for unit in ("DAY", "HOUR", "MINUTE", "SECOND"):
        if ms % _MS_PER_UNIT[unit] == 0:
            return f"INTERVAL '{ms // _MS_PER_UNIT[unit]}' {unit}"
    return f"INTERVAL '{ms / 1000:.3f}' SECOND"


# --- digest text ------------------------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<num>-?\d+(?:\.\d+)?)|(?P<name>`(?:[^`]|``)*`|\$?[A-Za-z_][\w$.]*|\$\d+)|(?P<p>[(),:+\-*/=<>]))"
)


class DigestSyntaxError(BadInputError, ValueError):
    """Digest text wmviz cannot read as an expression."""


class _Parser:
    """A recursive-descent reader of one expression's digest text."""

    def __init__(self, text: str, fields: Mapping[int, str]) -> None:
        self.text = text
        self.pos = 0
        self.fields = fields

    def peek(self) -> tuple[str, str] | None:
        match = _TOKEN.match(self.text, self.pos)
        if not match or match.end() == match.start():
            return None
        kind = match.lastgroup or ""
        return kind, match.group(kind)

    def take(self) -> tuple[str, str]:
        match = _TOKEN.match(self.text, self.pos)
        if not match or not match.lastgroup:
            raise DigestSyntaxError(f"cannot read {self.text[self.pos :]!r}")
        self.pos = match.end()
        return match.lastgroup, match.group(match.lastgroup)

    def expect(self, token: str) -> None:
        _, value = self.take()
        if value != token:
            raise DigestSyntaxError(f"expected {token!r}, found {value!r} in {self.text!r}")

    def type_text(self) -> str:
        """The text of a type, up to a `,` or `)` outside parentheses."""
        depth, start = 0, self.pos
        while self.pos < len(self.text):
            char = self.text[self.pos]
            if char in ",)" and depth == 0:
                break
            depth += {"(": 1, ")": -1}.get(char, 0)
            self.pos += 1
        return self.text[start : self.pos].strip()

    def expression(self) -> Tree:
        kind, value = self.take()
        if value == "(":
            return self.infix()
        if kind == "num":
            return self.literal(value)
        if kind == "p" and value in "+-*/" and self.peek() == ("p", "("):
            self.take()
            return self.call(value)
        if kind != "name":
            raise DigestSyntaxError(f"unexpected {value!r} in {self.text!r}")
        if self.peek() == ("p", "("):
            self.take()
            return self.call(value.upper())
        return self.reference(value)

    def literal(self, value: str) -> Tree:
        if self.peek() == ("p", ":"):
            self.take()
            return Lit(value, self.type_text())
        return Lit(value)

    def reference(self, name: str) -> Tree:
        if name.startswith("$") and name[1:].isdigit():
            index = int(name[1:])
            if index not in self.fields:
                raise DigestSyntaxError(f"{name} names input field {index}, which the digest does not list")
            return Ref(self.fields[index])
        return Ref(name.strip("`").replace("``", "`"))

    def infix(self) -> Tree:
        left = self.expression()
        _, op = self.take()
        if op == ")":
            return left
        right = self.expression()
        self.expect(")")
        return Call(op.upper(), (left, right))

    def call(self, op: str) -> Tree:
        args: list[Tree] = []
        type_text = ""
        while self.peek() != ("p", ")"):
            args.append(self.expression())
            if self.peek() == ("name", "AS"):
                self.take()
                type_text = self.type_text()
            if self.peek() == ("p", ","):
                self.take()
        self.expect(")")
        if self.peek() == ("p", ":"):  # Calcite's `CAST($1):TIMESTAMP(3)`
            self.take()
            type_text = self.type_text()
        return Call(op, tuple(args), type_text)


def parse_expression(text: str, fields: Mapping[int, str] | None = None) -> Tree:
    """A digest's expression text as a tree; `fields` names the `$N` input references."""
    parser = _Parser(text.strip(), fields or {})
    tree = parser.expression()
    if parser.pos < len(parser.text.rstrip()):
        raise DigestSyntaxError(f"unexpected {parser.text[parser.pos :]!r} after the expression")
    return tree


def split_top(text: str, angle: bool = False) -> list[str]:
    """`text` split at the commas outside brackets, parentheses and quotes (and `<…>` with
    `angle`, for a row type's fields), each part stripped."""
    opening, closing = ("([{<", ")]}>") if angle else ("([{", ")]}")
    parts, depth, quote, start = [], 0, "", 0
    for i, char in enumerate(text):
        if quote:
            quote = "" if char == quote else quote
        elif char in "'\"`":
            quote = char
        elif char in opening:
            depth += 1
        elif char in closing and depth:
            depth -= 1
        elif char == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    tail = text[start:].strip()
    return [*parts, tail] if tail or parts else []


def attributes(parts: list[str]) -> dict[str, str]:
    """`key=[value]` (or `key=value`) parts as a dict; the brackets around a value are removed."""
    found: dict[str, str] = {}
    for part in parts:
        key, eq, value = part.partition("=")
        if not eq or not re.fullmatch(r"[\w.$]+", key.strip()):
            continue
        value = value.strip()
        if value.startswith("[") and value.endswith("]"):
            value = value[1:-1]
        found.setdefault(key.strip(), value)
    return found


def node_digest(text: str) -> tuple[str, dict[str, str]]:
    """A node digest `Name(key=[value], …)` as its name and attributes."""
    text = text.strip()
    name, paren, rest = text.partition("(")
    if not paren:
        return name.strip(), {}
    return name.strip(), attributes(split_top(rest[:-1] if rest.endswith(")") else rest))


def duration_ms(text: str) -> int | None:
    """A duration as digests print it (`5 s`, `10 min`, `1 h`, `500 ms`, `1000ms`, `PT5S`), in ms."""
    text = text.strip()
    iso = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?", text)
    if iso and text != "PT":
        hours, minutes, seconds = (float(g) if g else 0.0 for g in iso.groups())
        return round(hours * 3_600_000 + minutes * 60_000 + seconds * 1000)
    match = re.fullmatch(r"(\d+)\s*(ms|s|min|h|d)?", text)
    if not match:
        return None
    unit = {"ms": 1, "s": 1000, "min": 60_000, "h": 3_600_000, "d": 86_400_000, None: 1}[match.group(2)]
    return int(match.group(1)) * unit


# --- COMPILE PLAN's JSON spelling -----------------------------------------------------------------


def row_fields(row_type: object) -> list[tuple[str, str]]:
    """A row type's fields as (name, type text): from `ROW<\\`a\\` INT, …>` or from
    `{"type": "ROW", "fields": [{"name", "fieldType"}]}`."""
    if isinstance(row_type, dict):
        found = []
        listed = row_type.get("fields")
        for entry in listed if isinstance(listed, list) else []:
            if isinstance(entry, dict):
                found.append((str(entry.get("name")), type_text(entry.get("fieldType"))))
        return found
    if not isinstance(row_type, str):
        return []
    text = row_type.strip()
    if text.endswith("NOT NULL"):
        text = text[: -len("NOT NULL")].strip()
    if not (text.startswith("ROW<") and text.endswith(">")):
        return []
    found = []
    for part in split_top(text[4:-1], angle=True):
        name, _, rest = part[1:].partition("`") if part.startswith("`") else part.partition(" ")
        found.append((name, rest.strip()))
    return found


def type_text(value: object) -> str:
    """A logical type's text, from its string or its object form (`{"type": "TIMESTAMP_…"}`)."""
    if isinstance(value, dict):
        return str(value.get("type", ""))
    return str(value or "")


def rex_tree(rex: object, fields: list[tuple[str, str]], where: str) -> Tree:
    """A RexNode (JSON) as the digest tree, input references named by `fields`."""
    if not isinstance(rex, dict):
        raise PlanError(where, f"is {json_type(rex)}, not a RexNode object")
    kind = rex.get("kind")
    if kind == "INPUT_REF":
        index = rex.get("inputIndex")
        if not isinstance(index, int) or not 0 <= index < len(fields):
            raise PlanError(where, f"refers to input field {index!r}, which the input row has not")
        return Ref(fields[index][0])
    if kind == "LITERAL":
        return Lit(str(rex.get("value")), type_text(rex.get("type")))
    if kind == "CALL":
        name = str(rex.get("internalName") or rex.get("systemName") or rex.get("catalogName") or "?")
        op = name.strip("$").rsplit("$", 1)[0] if name.startswith("$") else name
        operands = rex.get("operands", [])
        if not isinstance(operands, list):
            raise PlanError(where, f"has operands that are {json_type(operands)}, not an array")
        args = tuple(rex_tree(o, fields, where) for o in operands)
        return Call(op.upper(), args, type_text(rex.get("type")))
    return Call(str(kind or "?"), ())
