"""An edit as a link's token: `encode_edit` turns a what-if edit into URL-safe text and
`decode_edit` reads it back, refusing anything else with a ValueError, since a link is user input.

Pure: no streamlit, pyspark or plotly.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping
from typing import Any

from wmviz.analysis.whatif_edit import CHANGEABLE, Change, Configure, Delete, Edit, Insert, enum_member
from wmviz.core.scenario import Kind
from wmviz.core.types import Status
from wmviz.trace.jsonline import JsonLineError, loads_strict

__all__ = ["TOKEN_LIMIT", "decode_edit", "encode_edit"]

TOKEN_LIMIT = 4096
"""The longest edit token a link may carry (a one-row edit is ~100 characters)."""
_INSERT_FIELDS = ("kind", "input", "channel", "watermark_ms", "status", "event_ms", "key", "value", "proc_ms")


def encode_edit(edit: Edit) -> str:
    """The edit as a URL-safe token (base64url of compact JSON, no padding): a link that carries it
    reproduces the what-if on any server that has the original trace, with nothing stored."""
    body: dict[str, Any] = {"instance": edit.instance, "step": edit.step}
    if isinstance(edit, Insert):
        body["op"] = "insert"
        body.update({name: _plain(getattr(edit, name)) for name in _INSERT_FIELDS})
    elif isinstance(edit, Delete):
        body["op"] = "delete"
    elif isinstance(edit, Change):
        body["op"] = "change"
        body["fields"] = {name: _plain(value) for name, value in sorted(edit.fields.items())}
    elif isinstance(edit, Configure):
        body["op"] = "configure"
        body["fields"] = dict(edit.fields)  # in the order given: they are set in that order
    else:
        raise TypeError(f"not an edit: {edit!r}")
    text = json.dumps(body, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return base64.urlsafe_b64encode(text.encode("utf-8")).decode("ascii").rstrip("=")


def decode_edit(token: str) -> Edit:
    """The edit a token from `encode_edit` carries; ValueError (saying what is wrong) for anything
    else: a link is user input."""
    body = _token_body(token)
    instance, step, op = body.get("instance"), body.get("step"), body.get("op")
    if not isinstance(instance, str) or not isinstance(step, int) or isinstance(step, bool) or step < 0:
        raise ValueError("the what-if token needs an instance (text) and a step (a number ≥ 0)")
    if op == "delete":
        return Delete(instance, step)
    if op == "insert":
        return _decoded_insert(instance, step, body)
    if op == "change":
        return _decoded_change(instance, step, body)
    if op == "configure":
        return _decoded_configure(body)
    raise ValueError(f"unknown what-if operation {op!r}")


def _token_body(token: str) -> dict[str, Any]:
    """The JSON object a token carries, read within wmviz's JSON bounds (a deep nest is refused,
    never recursed into)."""
    if not isinstance(token, str) or not token or len(token) > TOKEN_LIMIT:
        raise ValueError(f"a what-if token is 1 to {TOKEN_LIMIT} characters")
    if not re.fullmatch(r"[A-Za-z0-9_-]+", token):
        raise ValueError("a what-if token holds only letters, digits, '-' and '_'")
    try:
        body = loads_strict(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)).decode("utf-8"))
    except JsonLineError as exc:
        raise ValueError(f"the what-if token is not readable JSON ({exc})") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"the what-if token is not readable ({exc.__class__.__name__})") from None
    if not isinstance(body, dict):
        raise ValueError("the what-if token does not hold an edit")
    return body


def _decoded_insert(instance: str, step: int, body: dict[str, Any]) -> Insert:
    values: dict[str, Any] = {name: body.get(name) for name in _INSERT_FIELDS}
    _check_values(values)
    if values["kind"] is None or values["input"] is None:
        raise ValueError("an inserted row needs a kind and an input")
    values["kind"] = enum_member(Kind, values["kind"], "kind")
    values["status"] = enum_member(Status, values["status"], "status")
    return Insert(instance, step, **values)


def _decoded_change(instance: str, step: int, body: dict[str, Any]) -> Change:
    fields = body.get("fields")
    if not isinstance(fields, dict) or set(fields) - CHANGEABLE:
        raise ValueError(f"a change names fields among {', '.join(sorted(CHANGEABLE))}")
    _check_values(fields)
    fields = dict(fields)
    for name, cls in (("kind", Kind), ("status", Status)):
        if name in fields:
            fields[name] = enum_member(cls, fields[name], name)
    return Change(instance, step, fields)


def _decoded_configure(body: dict[str, Any]) -> Configure:
    fields = body.get("fields")
    if not isinstance(fields, dict) or not fields:
        raise ValueError("a config what-if names its fields by dotted path")
    _check_values(fields)
    return Configure(fields)


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Kind | Status) else value


def _check_values(values: Mapping[str, Any]) -> None:
    """Only JSON scalars of the right kind: the edited trace is validated like any file after."""
    for name, value in values.items():
        if name in ("channel", "watermark_ms", "event_ms", "proc_ms"):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)):
                raise ValueError(f"{name} must be a whole number, not {value!r}")
        elif name == "payload":
            if value is not None and not isinstance(value, dict | list):
                raise ValueError("payload must be an object")
        elif value is not None and not isinstance(value, str | int | float | bool):
            raise ValueError(f"{name} must be a plain value, not {type(value).__name__}")
