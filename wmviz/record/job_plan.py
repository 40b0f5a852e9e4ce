"""A job's plan, as Flink's REST API gives it (`/jobs/<id>/plan`, or `/jobs/<id>` with its
vertices), read into a job recording's vertices and edges; every odd node is a JobFormatError
naming the node by its place."""

from __future__ import annotations

import html
import re
from typing import Any

from wmviz.record.job import Edge, JobFormatError, Vertex, parallelism_of
from wmviz.record.names import chain_parts

_PLAN_NODE = '{"id": ..., "parallelism": N, "inputs": [{"id": ..., "ship_strategy": ...}]}'


def _plan_name(node: dict[str, Any]) -> str:
    """A vertex name from a plan node's description (HTML-escaped, lines as <br/>): a pretty
    description such as `[3]:Window(...)<br/>+- Sink: x` becomes `Window(...) -> Sink: x`."""
    text = html.unescape(str(node.get("description") or node.get("operator") or node["id"]))
    lines = [re.sub(r"^[\s+\-|]*(\[\d+\]:)?", "", line).strip() for line in text.split("<br/>")]
    return " -> ".join(line for line in lines if line)


def plan_of(body: Any, where: str = "plan") -> tuple[tuple[Vertex, ...], tuple[Edge, ...]]:
    """The vertices and edges of a `/jobs/:jid/plan` response, or of a `/jobs/:jid` response
    (whose `vertices` carry the names, and whose `plan` the edges).

    The plan does not say which logical input an edge feeds: an edge's `num` is its input gate's
    place, which on a real job is not its input's number (`wmviz.record.job_inputs`). Every edge
    is read into input 1 here; `job_inputs.assign_inputs` sets the inputs from the recorded values.
    """
    if not isinstance(body, dict):
        raise JobFormatError(f"{where}: expected a JSON object")
    plan = body.get("plan", body)
    nodes = plan.get("nodes") if isinstance(plan, dict) else None
    if not isinstance(nodes, list):
        raise JobFormatError(
            f'{where}: expected the /jobs/<id>/plan response, {{"plan": {{"nodes": [...]}}}}'
        )
    listed = body.get("vertices", [])
    if not isinstance(listed, list):
        raise JobFormatError(f"{where}: vertices is not a list")
    names = {str(v.get("id")): str(v.get("name")) for v in listed if isinstance(v, dict) and "name" in v}
    vertices, edges = [], []
    for index, node in enumerate(nodes):
        at = f"{where}: plan node {index}"
        inputs = node.get("inputs", []) if isinstance(node, dict) else None
        if not isinstance(inputs, list) or not all(isinstance(i, dict) and "id" in i for i in inputs):
            raise JobFormatError(f"{at} is not an object with inputs, each with an id ({_PLAN_NODE})")
        if "id" not in node or "parallelism" not in node:
            raise JobFormatError(f"{at} lacks `id` or `parallelism` ({_PLAN_NODE})")
        vid = str(node["id"])
        name = names.get(vid) or _plan_name(node)
        vertices.append(Vertex(vid, name, parallelism_of(node["parallelism"], at), tuple(chain_parts(name))))
        edges += [Edge(str(i["id"]), vid, str(i.get("ship_strategy", "")).upper()) for i in inputs]
    ids = {v.id for v in vertices}
    for edge in edges:
        if edge.source not in ids:
            raise JobFormatError(
                f"{where}: node {edge.target}'s input {edge.source!r} is not a node of the plan"
            )
    return tuple(vertices), tuple(edges)
