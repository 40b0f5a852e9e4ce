"""`EXPLAIN` output read into a `SqlJob` (docs/sql.md §EXPLAIN), and the digest trees it shares with
a running job's REST plan.

The `== Optimized Execution Plan ==` section is read (the `== Optimized Physical Plan ==` one when
it is the only one): one tree per sink, blank lines between, the sink first and its inputs below,
`:-` the left input and `+-` the last. A scan's digest says where its watermark is made
(`watermark=[…]`: pushed into the source; `SOURCE_WATERMARK()`: the source's own; none, with a
`WatermarkAssigner` above it: a separate assigner), the idle timeout in effect (`idletimeout=[…]`),
`watermarkEmitStrategy=[…]` and `watermarkAlignment=[group, drift, interval]`. EXPLAIN does not
print a table's options, so `scan.watermark.*` options a table declares are unseen, except those
an OPTIONS hint gives, which the scan's digest and the `== Abstract Syntax Tree ==` print. The
scans are read by `wmviz.sql.scans`, for EXPLAIN and a REST plan alike.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wmviz.sql.digest import (
    node_digest,
    split_top,
)
from wmviz.sql.errors import PlanError, check_count, check_depth
from wmviz.sql.model import (
    BY_DIGEST,
    Behaviour,
    Edge,
    Node,
    SqlJob,
)
from wmviz.sql.plan_nodes import join_bounds_from_digest, node_name, runtime_name, window_from_digest
from wmviz.sql.scans import digest_sources, hint_options

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
