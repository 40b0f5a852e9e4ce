"""What the recorder takes from a JobManager's answers, each checked for the shape Flink sends.

An answer of another shape (a list where an object belongs, a parallelism that is text or 10^9, a
metric id that is a number) is a RecordError naming the URL path and what was wrong, never a
KeyError or a MemoryError further on.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wmviz.core.budgets import subtasks_reason
from wmviz.core.settings import MAX_SUBTASKS
from wmviz.record.restclient import RecordError
from wmviz.trace.quote import show


class AnswerError(RecordError):
    """An answer that is not of the shape Flink's REST API gives."""


def _odd(path: str, what: str) -> AnswerError:
    return AnswerError(f"the answer to {path} is not what a Flink JobManager sends: {what}")


def obj(answer: Any, path: str) -> dict[str, Any]:
    if not isinstance(answer, dict):
        raise _odd(path, f"expected a JSON object, got {type(answer).__name__}")
    return answer


def items(answer: Any, path: str, what: str) -> list[dict[str, Any]]:
    """A list of JSON objects."""
    if not isinstance(answer, list) or not all(isinstance(item, dict) for item in answer):
        raise _odd(path, f"{what} is not a list of JSON objects")
    return answer


def text(item: dict[str, Any], key: str, path: str) -> str:
    value = item.get(key)
    if not isinstance(value, str):
        raise _odd(path, f"{key} {show(value)} is not a string")
    return value


def count(item: dict[str, Any], key: str, path: str, *, least: int = 0, most: int | None = None) -> int:
    """A whole number (a JSON integer, not a bool, text or float) in [least, most]."""
    value = item.get(key)
    if not isinstance(value, int) or isinstance(value, bool) or value < least:
        raise _odd(path, f"{key} {show(value)} is not a whole number >= {least}")
    if most is not None and value > most:
        raise _odd(path, f"{key} {value:,} is larger than {most:,}")
    return value


@dataclass(frozen=True, slots=True)
class VertexInfo:
    """A vertex as `/jobs/<job>` lists it."""

    id: str
    name: str
    parallelism: int


def job_state(answer: Any, path: str) -> str:
    return text(obj(answer, path), "state", path)


def vertices_of(answer: Any, path: str) -> list[VertexInfo]:
    """The job's vertices, each parallelism within the subtask budget."""
    listed = items(obj(answer, path).get("vertices", []), path, "vertices")
    out = []
    for item in listed:
        vertex = VertexInfo(
            text(item, "id", path), text(item, "name", path), count(item, "parallelism", path, least=1)
        )
        if vertex.parallelism > MAX_SUBTASKS.get():
            raise AnswerError(subtasks_reason(f"vertex {vertex.name!r}", vertex.parallelism))
        out.append(vertex)
    return out


def plan_inputs(answer: Any, path: str, vertex_id: str) -> list[tuple[str, str]]:
    """(upstream id, ship strategy) of each input of one vertex in `/jobs/<job>/plan`."""
    plan = obj(obj(answer, path).get("plan"), path)
    for node in items(plan.get("nodes"), path, "plan.nodes"):
        if node.get("id") == vertex_id:
            inputs = items(node.get("inputs", []), path, "a node's inputs")
            return [(text(i, "id", path), str(i.get("ship_strategy", "")).upper()) for i in inputs]
    raise _odd(path, f"the plan has no node {vertex_id!r}")


def metric_ids(answer: Any, path: str) -> list[str]:
    """The metric ids a vertex lists."""
    return [text(item, "id", path) for item in items(answer, path, "the metrics")]


def metric_values(answer: Any, path: str) -> list[tuple[str, Any]]:
    """(id, value) of each metric answered; a value not (yet) reported is left out."""
    out = []
    for item in items(answer, path, "the metrics"):
        value = item.get("value")
        if value in (None, ""):
            continue
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise _odd(path, f"metric {item.get('id')!r} has the value {value!r}, not a number")
        out.append((text(item, "id", path), value))
    return out


@dataclass(frozen=True, slots=True)
class SubtaskStates:
    """Per subtask index of one vertex: its attempt number, and which have FINISHED."""

    attempts: dict[int, int]
    finished: frozenset[int]


def subtask_states(answer: Any, path: str, parallelism: int | None = None) -> SubtaskStates:
    """`/jobs/<job>/vertices/<vertex>`'s subtasks, keyed by their index (not by answer order)."""
    attempts: dict[int, int] = {}
    finished: set[int] = set()
    most = MAX_SUBTASKS.get()
    for item in items(obj(answer, path).get("subtasks", []), path, "subtasks"):
        index = count(item, "subtask", path, most=min(parallelism or most, most) - 1)
        attempts[index] = count(item, "attempt", path) if "attempt" in item else 0
        if item.get("status") == "FINISHED":
            finished.add(index)
    return SubtaskStates(attempts, frozenset(finished))
