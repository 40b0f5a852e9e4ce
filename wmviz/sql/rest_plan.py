"""A running job's plan from the REST API read into a `SqlJob` (docs/sql.md §REST).

`GET /jobs/:jid/plan` answers `{"plan": {"jid", "name", "nodes": […]}}` (older versions the inner
object alone) and `GET /jobs/:jid` carries the same object under `plan`. Each node is a vertex: a
chain of operators whose digests its `description` lists, HTML-escaped with `<br/>` between lines,
the chain's head (upstream) first and each chained operator below the one feeding it, numbered
`[N]:`. A vertex's `inputs` name the vertices feeding its head. They do not say which input of a
two-input operator is the left one, so a REST plan's input order is marked as not known.
"""

from __future__ import annotations

import html
from typing import Any

from wmviz.sql.errors import PlanError, check_count, check_depth, json_type
from wmviz.sql.explain import DigestNode, digest_node, digest_sources, read_tree
from wmviz.sql.model import Edge, SqlJob


def plan_object(doc: object) -> dict[str, Any] | None:
    """The `{"jid", "name", "nodes"}` object of a REST answer, or None when it is none of them."""
    if not isinstance(doc, dict):
        return None
    inner = doc.get("plan")
    if isinstance(inner, dict) and isinstance(inner.get("nodes"), list):
        return inner
    nodes = doc.get("nodes")
    if isinstance(nodes, list) and ("jid" in doc or "name" in doc) and "edges" not in doc:
        return doc
    return None


def read_rest_plan(doc: dict[str, Any]) -> SqlJob:
    """The job a REST plan describes."""
    plan = plan_object(doc)
    if plan is None:
        raise PlanError("the answer", "has no 'plan' object with 'nodes'")
    vertices = plan["nodes"]
    check_count("vertices", len(vertices))
    chains: dict[str, list[DigestNode]] = {}
    parallelism: dict[str, int | None] = {}
    next_id = 1
    for index, vertex in enumerate(vertices):
        vertex_id, lines, width = _vertex(vertex, index)
        chain, next_id = read_tree(lines, next_id)
        if not chain:
            raise PlanError(f"nodes[{index}] (vertex {vertex_id}) field 'description'", "names no operator")
        chains[vertex_id] = chain
        parallelism[vertex_id] = width
    check_count("operators", sum(len(c) for c in chains.values()))
    edges = _chain_edges(chains) + _vertex_edges(vertices, chains)
    nodes = tuple(
        digest_node(n.id, n.text, None, parallelism[vertex_id])
        for vertex_id, chain in chains.items()
        for n in chain
    )
    return SqlJob(
        "rest-plan",
        nodes,
        tuple(edges),
        digest_sources(nodes, tuple(edges), {}),
        input_order_known=False,
        notes=(
            "a REST plan does not say which input of a join is the left one: inputs are numbered "
            "as the JobManager lists them",
            "a REST plan does not carry a table's options or connector",
        ),
    )


def _vertex(vertex: object, index: int) -> tuple[str, list[tuple[int, str]], int | None]:
    """A vertex's id, its description's lines (numbered from 1 within the description) and its
    parallelism."""
    where = f"nodes[{index}]"
    if not isinstance(vertex, dict):
        raise PlanError(where, f"is {json_type(vertex)}, not an object")
    vertex_id = vertex.get("id")
    if not isinstance(vertex_id, str):
        raise PlanError(where, "has no vertex 'id' (a string)")
    text = vertex.get("description")
    if not isinstance(text, str):
        raise PlanError(f"{where} (vertex {vertex_id})", "has no 'description' (a string)")
    unescaped = html.unescape(text.replace("<br/>", "\n"))
    try:
        check_depth(unescaped)
    except PlanError as err:
        raise PlanError(f"{where} (vertex {vertex_id}) field 'description' {err.where}", err.reason) from None
    lines = [(i + 1, line) for i, line in enumerate(unescaped.splitlines()) if line.strip()]
    width = vertex.get("parallelism")
    return vertex_id, lines, width if isinstance(width, int) and not isinstance(width, bool) else None


def _chain_edges(chains: dict[str, list[DigestNode]]) -> list[Edge]:
    """Within a vertex the head feeds the operators drawn below it."""
    edges: list[Edge] = []
    for chain in chains.values():
        for node in chain:
            edges.extend(Edge(node.id, child, 0, "FORWARD (chained)") for child in node.children)
    return edges


def _vertex_edges(vertices: list[Any], chains: dict[str, list[DigestNode]]) -> list[Edge]:
    """A vertex's inputs feed its head, from the last operator of each feeding vertex's chain."""
    edges: list[Edge] = []
    for index, vertex in enumerate(vertices):
        inputs = vertex.get("inputs") or []
        if not isinstance(inputs, list):
            raise PlanError(f"nodes[{index}] field 'inputs'", f"is {json_type(inputs)}, not an array")
        head = chains[vertex["id"]][0].id
        for number, entry in enumerate(inputs):
            source = entry.get("id") if isinstance(entry, dict) else None
            if not isinstance(source, str) or source not in chains:
                raise PlanError(
                    f"nodes[{index}] field 'inputs'[{number}]",
                    f"names vertex {source!r}, which the plan has not",
                )
            tail = chains[source][-1].id
            num = entry.get("num")
            edges.append(
                Edge(tail, head, num if isinstance(num, int) else number, str(entry.get("ship_strategy", "")))
            )
    return edges
