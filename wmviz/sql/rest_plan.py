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

from wmviz.core.sql_value import json_type
from wmviz.record.job import JobFormatError
from wmviz.record.job_plan import plan_of
from wmviz.sql.errors import PlanError, check_count, check_depth
from wmviz.sql.explain import DigestNode, digest_node, read_tree
from wmviz.sql.model import Edge, SqlJob, ordered_edges
from wmviz.sql.scans import digest_sources


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
    """The job a REST plan describes: the vertices, their parallelism and their input edges as the
    recorder reads them (`wmviz.record.job.plan_of`, one reading of this answer for all of wmviz),
    and each vertex's chain of operators from its description."""
    plan = plan_object(doc)
    if plan is None:
        raise PlanError("the answer", "has no 'plan' object with 'nodes'")
    check_count("vertices", len(plan["nodes"]))
    named = doc.get("vertices", [])
    if not isinstance(named, list):
        raise PlanError("the answer field 'vertices'", f"is {json_type(named)}, not an array")
    for index, vertex in enumerate(named):  # plan_of reads each vertex's id and name
        if not isinstance(vertex, dict) or not all(isinstance(vertex.get(k), str) for k in ("id", "name")):
            raise PlanError(f"the answer field 'vertices'[{index}]", "is no object with an 'id' and a 'name'")
    try:
        vertices, vertex_edges = plan_of({"plan": plan, "vertices": named}, "the plan")
    except JobFormatError as err:
        raise PlanError("", str(err)) from None
    chains: dict[str, list[DigestNode]] = {}
    next_id = 1
    for index, raw in enumerate(plan["nodes"]):
        vertex_id, lines = _vertex(raw, index)
        chain, next_id = read_tree(lines, next_id)
        if not chain:
            raise PlanError(f"nodes[{index}] (vertex {vertex_id}) field 'description'", "names no operator")
        chains[vertex_id] = chain
    check_count("operators", sum(len(c) for c in chains.values()))
    width = {v.id: v.parallelism for v in vertices}
    between = ordered_edges(
        [(chains[e.source][-1].id, chains[e.target][0].id, e.strategy) for e in vertex_edges]
    )
    edges = (*_chain_edges(chains), *between)
    nodes = tuple(
        digest_node(n.id, n.text, None, width[vertex_id])
        for vertex_id, chain in chains.items()
        for n in chain
    )
    return SqlJob(
        "rest-plan",
        nodes,
        edges,
        digest_sources(nodes, edges, {}),
        input_order_known=False,
        notes=(
            "a REST plan does not say which input of a join is the left one: inputs are numbered "
            "as the JobManager lists its input gates (docs/whole-job.md)",
            "a REST plan does not carry a table's options or connector",
        ),
    )


def _vertex(vertex: object, index: int) -> tuple[str, list[tuple[int, str]]]:
    """A vertex's id and its description's lines (numbered from 1 within the description)."""
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
    return vertex_id, lines


def _chain_edges(chains: dict[str, list[DigestNode]]) -> list[Edge]:
    """Within a vertex the head feeds the operators drawn below it."""
    edges: list[Edge] = []
    for chain in chains.values():
        for node in chain:
            edges.extend(Edge(node.id, child, 0, "FORWARD (chained)") for child in node.children)
    return edges
