"""`EXPLAIN` output read into a `SqlJob` (docs/sql.md §EXPLAIN), and the digest trees it shares with
a running job's REST plan.

The `== Optimized Execution Plan ==` section is read (the `== Optimized Physical Plan ==` one when
it is the only one): one tree per sink, blank lines between, the sink first and its inputs below,
`:-` the left input and `+-` the last. A scan's digest says where its watermark is made
(`watermark=[…]`: pushed into the source; `SOURCE_WATERMARK()`: the source's own; none, with a
`WatermarkAssigner` above it: a separate assigner), the idle timeout in effect (`idletimeout=[…]`),
`watermarkEmitStrategy=[…]` and `watermarkAlignment=[group, drift, interval]`. EXPLAIN does not
print a table's options, so `scan.watermark.*` options a table declares are unseen, except those
an OPTIONS hint gives, which the `== Abstract Syntax Tree ==` prints with the scan.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from wmviz.core.sql_expr import Column, Expr, ToTimestampLtz, TypeKind, UnsupportedExpression
from wmviz.sql import sources
from wmviz.sql.digest import (
    DigestSyntaxError,
    attributes,
    duration_ms,
    node_digest,
    parse_expression,
    render,
    split_top,
    to_expr,
)
from wmviz.sql.errors import PlanError, check_count, check_depth
from wmviz.sql.model import (
    ASSIGNER_EMITS,
    BY_DIGEST,
    Behaviour,
    Edge,
    Node,
    Origin,
    Setting,
    SourceTable,
    SqlJob,
)
from wmviz.sql.plan_nodes import join_bounds_from_digest, node_name, runtime_name, window_from_digest

SECTIONS = ("== Optimized Execution Plan ==", "== Optimized Physical Plan ==")
_TREE = re.compile(r"^((?:[ :|]  )*)(?:([+:])- )?(.*)$")


def is_explain(text: str) -> bool:
    """Whether text looks like EXPLAIN output (it has one of EXPLAIN's section headers)."""
    return "== Abstract Syntax Tree ==" in text or any(s in text for s in SECTIONS)


@dataclass
class DigestNode:
    """One line of a digest tree: its text, its line number and the node ids of its children."""

    id: str
    text: str
    line: int
    depth: int
    children: list[str] = field(default_factory=list)


def read_tree(lines: list[tuple[int, str]], next_id: int) -> tuple[list[DigestNode], int]:
    """Digest lines (line number, text) of one tree as nodes, each listing its children in order;
    `(reuse_id=[N])` after a digest marks a node other lines reuse (`Reused(reference_id=[N])`, as
    Flink 2.3.0's EXPLAIN prints a shared source), `[N]:` before one numbers a REST operator."""
    nodes: list[DigestNode] = []
    stack: list[DigestNode] = []
    for line_no, raw in lines:
        match = _TREE.match(raw.rstrip())
        assert match is not None  # the pattern matches any line
        depth = len(match.group(1)) // 3 + (1 if match.group(2) else 0)
        text = match.group(3).strip()
        own = re.match(r"^\[(\d+)\]:\s*", text)  # a REST description's operator number
        node_id = own.group(1) if own else f"n{next_id}"
        text = text[own.end() :] if own else text
        marked = re.search(r"\(reuse_id=\[(\d+)\]\)$", text)  # EXPLAIN: a node other lines reuse
        if marked:
            node_id, text = f"#{marked.group(1)}", text[: marked.start()]
        next_id += 1
        node = DigestNode(node_id, text, line_no, depth)
        while stack and stack[-1].depth >= depth:
            stack.pop()
        if stack:
            stack[-1].children.append(node_id)
        elif nodes:
            raise PlanError(f"line {line_no}", f"starts a second tree without a blank line: {text[:60]!r}")
        stack.append(node)
        nodes.append(node)
    return nodes, next_id


def reused_id(text: str) -> str | None:
    """The node a `Reused(reference_id=[N])` line stands for."""
    match = re.fullmatch(r"Reused\(reference_id=\[(\d+)\]\)", text.strip())
    return f"#{match.group(1)}" if match else None


def section_lines(text: str) -> tuple[list[tuple[int, str]], str]:
    """The lines of the execution plan section (or the physical one), and the section's name."""
    lines = text.splitlines()
    headers = [(i, line.strip()) for i, line in enumerate(lines) if line.startswith("== ")]
    for wanted in SECTIONS:
        start = next((i for i, h in headers if h == wanted), None)
        if start is None:
            continue
        end = next((i for i, _ in headers if i > start), len(lines))
        return [(i + 1, lines[i]) for i in range(start + 1, end)], wanted
    found = ", ".join(f"{h!r} (line {i + 1})" for i, h in headers) or "no section header at all"
    raise PlanError("line 1", f"has no '{SECTIONS[0]}' section; found {found}")


def blocks(lines: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """Lines split at blank lines: one tree each."""
    found: list[list[tuple[int, str]]] = [[]]
    for line_no, line in lines:
        if line.strip():
            found[-1].append((line_no, line))
        elif found[-1]:
            found.append([])
    return [b for b in found if b]


def read_explain(text: str) -> SqlJob:
    """The job an EXPLAIN output describes."""
    check_depth(text)
    lines, section = section_lines(text)
    trees: list[DigestNode] = []
    next_id = 1
    for block in blocks(lines):
        tree, next_id = read_tree(block, next_id)
        trees.extend(tree)
    if not trees:
        raise PlanError(f"line {lines[0][0] - 1 if lines else 1}", f"the '{section}' section is empty")
    check_count("operators", len(trees))
    by_id = {n.id: n for n in trees}
    pairs: list[tuple[str, str, int]] = []
    for node in trees:  # EXPLAIN draws a node's inputs below it: the children feed the node
        for number, child in enumerate(node.children):
            reused = reused_id(by_id[child].text)
            if reused is not None and reused not in by_id:
                raise PlanError(
                    f"line {by_id[child].line}", f"reuses node [{reused}], which the plan does not mark"
                )
            pairs.append((reused or child, node.id, number))
    real = [n for n in trees if reused_id(n.text) is None]
    operators = tuple(digest_node(n.id, n.text, n.line) for n in real)
    edges = tuple(Edge(s, t, i) for s, t, i in pairs if s in by_id and reused_id(by_id[s].text) is None)
    hints = ast_hints(text)
    notes = (
        [] if section == SECTIONS[0] else [f"read from '{section}': the execution plan section is missing"]
    )
    return SqlJob(
        "explain",
        operators,
        edges,
        digest_sources(operators, edges, hints, ast_rowtimes(text)),
        notes=(*notes, "EXPLAIN does not print a table's options or connector: scan.watermark.* options "
               "declared in a table's WITH clause are not seen (OPTIONS hints are)"),
    )  # fmt: skip


def digest_node(node_id: str, text: str, line: int | None = None, parallelism: int | None = None) -> Node:
    """A node from its digest text: its kind by the digest's name, its table, window and bounds."""
    name, attrs = node_digest(text)
    kind = BY_DIGEST.get(name)
    runtime = runtime_name(text) if kind is None else None
    if runtime is not None:
        kind = BY_DIGEST[runtime[0]]
    behaviour = kind.behaviour if kind else Behaviour.PASSES
    table = runtime[1] if runtime else digest_table(name, attrs)
    bounds, early = join_bounds_from_digest(attrs) if behaviour is Behaviour.INTERVAL_JOIN else (None, None)
    batch = re.match(r"(\d+)\s*ms", attrs.get("interval", "")) if behaviour is Behaviour.MINI_BATCH else None
    return Node(
        node_id,
        kind.flink_type if kind else name,
        node_name(kind.label if kind else name, table),
        behaviour,
        digest=text,
        table=table,
        window=window_from_digest(attrs),  # a local window aggregate names the time column too
        join_bounds=bounds,
        early_fire_delay_ms=early,
        mini_batch_interval_ms=int(batch.group(1)) if batch else None,
        mini_batch_mode=attrs.get("mode") if batch else None,
        parallelism=parallelism,
    )


def digest_table(name: str, attrs: dict[str, str]) -> str | None:
    """The table a scan's `table=[[catalog, db, name, …]]` or a sink's `table=[catalog.db.name]` names."""
    text = attrs.get("table")
    if not text or name not in ("TableSourceScan", "Sink"):
        return None
    if text.startswith("[") and text.endswith("]"):
        parts = split_top(text[1:-1])
        return parts[2] if len(parts) > 2 else parts[-1]
    return text.rsplit(".", 1)[-1].strip("`")


def scan_attributes(text: str) -> dict[str, str]:
    """The `key=[value]` entries inside a scan's `table=[[…]]` (watermark, idletimeout, …)."""
    _, attrs = node_digest(text)
    inner = attrs.get("table", "")
    if inner.startswith("[") and inner.endswith("]"):
        return attributes(split_top(inner[1:-1]))
    return {}


def ast_hints(text: str) -> dict[str, dict[str, str]]:
    """OPTIONS hints per table, as the Abstract Syntax Tree prints them with a LogicalTableScan."""
    found: dict[str, dict[str, str]] = {}
    pattern = r"LogicalTableScan\(table=\[\[([^\]]*)\]\], hints=\[\[(.*)\]\]\]\)"
    for match in re.finditer(pattern, text):
        found.setdefault(split_top(match.group(1))[-1], {}).update(hint_options(match.group(2)))
    return found


def ast_rowtimes(text: str) -> dict[str, str]:
    """The rowtime column of each table, as the Abstract Syntax Tree prints it: a
    `LogicalWatermarkAssigner(rowtime=[ts], …)` above the table's `LogicalTableScan`."""
    lines = text.splitlines()
    found: dict[str, str] = {}
    for i, line in enumerate(lines):
        assigner = re.search(r"LogicalWatermarkAssigner\(rowtime=\[([^\]]+)\]", line)
        if not assigner:
            continue
        for below in lines[i + 1 :]:
            if assigner.start() >= len(below) - len(below.lstrip(" :|+-")):
                break  # back out of the assigner's subtree
            scan = re.search(r"LogicalTableScan\(table=\[\[([^\]]*)\]\]", below)
            if scan:
                found.setdefault(split_top(scan.group(1))[-1], assigner.group(1))
                break
    return found


def hint_options(text: str) -> dict[str, str]:
    """The options of the OPTIONS hints in a digest's `hints=[[[OPTIONS … options:{k=v, …}]]]`."""
    found = {}
    for options in re.findall(r"OPTIONS[^{]*options:\{([^}]*)\}", text):
        for pair in split_top(options):
            key, _, value = pair.partition("=")
            found[key.strip()] = value.strip()
    return found


def digest_sources(
    nodes: tuple[Node, ...],
    edges: tuple[Edge, ...],
    hints: dict[str, dict[str, str]],
    rowtimes: dict[str, str] | None = None,
) -> tuple[SourceTable, ...]:
    """Each scanned table's watermark, read from the digests (EXPLAIN and a REST plan)."""
    consumers: dict[str, list[str]] = {}
    for edge in edges:
        consumers.setdefault(edge.source, []).append(edge.target)
    by_id = {n.id: n for n in nodes}
    found = []
    for node in nodes:
        if node.behaviour is not Behaviour.SOURCE:
            continue
        table = node.table or node.id
        own = hint_options(node_digest(node.digest)[1].get("hints", ""))  # the scan's own digest
        hinted = {
            k: Setting(v, Origin.HINT)
            for k, v in {**hints.get(table, {}), **own}.items()
            if k.startswith("scan.watermark.")
        }
        common: dict[str, Any] = {
            "table": table,
            "node_id": node.id,
            "watermark_options": hinted,
            "parallelism": node.parallelism,
            "rowtime": (rowtimes or {}).get(table),
        }
        attrs = scan_attributes(node.digest)
        assigner = _assigner_after(node.id, consumers, by_id)
        if "watermark" in attrs:
            found.append(_pushed_down(common, attrs, hinted))
        elif assigner is not None:
            found.append(_assigned(common, assigner))
        elif runtime_name(node.digest) is not None:
            found.append(_runtime_named(common, _feeds_event_time(node.id, consumers, by_id)))
        else:
            found.append(SourceTable(**common, where=None))
    return tuple(found)


def _feeds_event_time(node_id: str, consumers: dict[str, list[str]], by_id: dict[str, Node]) -> bool:
    """Whether an event-time operator reads this node's watermarks with no assigner between (an
    interval join on row time, a window not known to be on processing time, a temporal join)."""
    seen, todo = set(), [node_id]
    while todo:
        for target in consumers.get(todo.pop(), []):
            node = by_id.get(target)
            if node is None or target in seen or node.behaviour is Behaviour.MAKES:
                continue
            seen.add(target)
            bounds, window = node.join_bounds, node.window
            if (bounds is not None and bounds.event_time) or node.behaviour is Behaviour.TEMPORAL_JOIN:
                return True
            if node.behaviour is Behaviour.WINDOW and window is not None and window.rowtime is not False:
                return True
            todo.append(target)
    return False


def _runtime_named(common: dict[str, Any], event_time_below: bool) -> SourceTable:
    """A source the connector built itself (Kafka): a running job names it, not its digest, so the
    expression and its settings are not in the plan. An event-time operator reading it with no
    assigner between says the watermark is made in the source (the planner keeps an assigner
    wherever the source does not take it)."""
    unknown = "a running job names this source, not its digest: the plan does not say"
    if not event_time_below:
        return SourceTable(**common, where=None, where_note=f"no event-time operator reads it; {unknown}")
    return SourceTable(
        **common,
        where="source",
        where_note="an event-time operator reads it with no WatermarkAssigner between",
        expression_text="",
        emit=Setting(None, Origin.UNKNOWN, unknown),
        idle_timeout_ms=Setting(None, Origin.UNKNOWN, unknown),
    )


def _assigner_after(node_id: str, consumers: dict[str, list[str]], by_id: dict[str, Node]) -> Node | None:
    current = node_id
    for _ in range(len(by_id)):
        after = consumers.get(current, [])
        if len(after) != 1 or after[0] not in by_id:
            return None
        node = by_id[after[0]]
        if node.behaviour is Behaviour.MAKES:
            return node
        if node.behaviour is not Behaviour.PASSES:
            return None
        current = node.id
    return None


def _expression(text: str, table: str) -> dict[str, Any]:
    try:
        tree = parse_expression(text)
    except DigestSyntaxError as err:
        return {"expression_text": text, "expression_error": f"watermark expression of table {table}: {err}"}
    try:
        expr = to_expr(tree, table)
    except UnsupportedExpression as err:
        return {"expression_text": render(tree), "expression_error": str(err)}
    return {"expression_text": render(tree), "expression": expr, "column_kinds": _known_kinds(expr)}


def _known_kinds(expr: Expr) -> dict[str, TypeKind]:
    """The column types a digest's expression gives away (a digest prints none): the column
    TO_TIMESTAMP_LTZ reads is a number; any other column's type stays unknown."""
    while not isinstance(expr, Column):
        if isinstance(expr, ToTimestampLtz) and isinstance(expr.operand, Column):
            return {expr.operand.name: "NUMBER"}
        expr = expr.operand
    return {}


def _pushed_down(
    common: dict[str, Any], attrs: dict[str, str], hinted: dict[str, Setting[str]]
) -> SourceTable:
    """A scan whose digest carries `watermark=[…]`: what the digest states, with origins only as
    far as it can tell them (a non-default value was set by a hint or the table; a hint the AST
    shows is a hint)."""
    if attrs["watermark"].strip().upper() == "SOURCE_WATERMARK()":
        return SourceTable(**common, where="source-defined", expression_text="SOURCE_WATERMARK()")
    values: dict[str, Setting[Any]] = {}
    emit = attrs.get("watermarkEmitStrategy")
    if emit:
        values[sources.EMIT] = Setting(emit, Origin.PLAN if emit == "on-periodic" else Origin.HINT_OR_TABLE)
    idle = attrs.get("idletimeout")
    idle_setting = Setting(
        int(idle) if idle and idle.isdigit() else None, Origin.PLAN if idle else Origin.DEFAULT
    )
    if idle_setting.value:
        idle_setting = Setting(
            idle_setting.value, Origin.PLAN, "the digest shows the value in effect, not whose it is"
        )
    align = split_top(attrs.get("watermarkAlignment", ""))
    if len(align) == 3:
        values[sources.GROUP] = Setting(align[0], Origin.HINT_OR_TABLE)
        values[sources.DRIFT] = Setting(duration_ms(align[1]), Origin.HINT_OR_TABLE)
        values[sources.UPDATE] = Setting(duration_ms(align[2]), Origin.PLAN)
    for key in hinted:  # the AST shows this value came from a hint
        if key in values:
            values[key] = Setting(values[key].value, Origin.HINT)
    if sources.IDLE in hinted and idle_setting.value:
        idle_setting = Setting(idle_setting.value, Origin.HINT)
    return SourceTable(
        **common,
        where="source",
        **_expression(attrs["watermark"], common["table"]),
        emit=sources.emit(values)
        if emit
        else Setting("on-periodic", Origin.DEFAULT, "no emit strategy in the digest"),
        idle_timeout_ms=idle_setting,
        alignment=sources.alignment(values),
    )


def _assigned(common: dict[str, Any], assigner: Node) -> SourceTable:
    _, attrs = node_digest(assigner.digest)
    return SourceTable(
        **{**common, "rowtime": attrs.get("rowtime") or common["rowtime"]},
        where="assigner",
        **_expression(attrs.get("watermark", ""), common["table"]),
        emit=Setting(None, Origin.DEFAULT, ASSIGNER_EMITS),
        idle_timeout_ms=Setting(
            None, Origin.UNKNOWN, "table.exec.source.idle-timeout where the job runs: the digest does not say"
        ),
    )
