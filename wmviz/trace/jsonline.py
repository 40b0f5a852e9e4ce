"""One JSON Lines line decoded strictly, within bounds a hostile file cannot stretch.

A line must be one JSON object with unique keys, nested at most `MAX_DEPTH` deep, with integers of
at most `MAX_INT_DIGITS` digits and finite numbers only: JSON has no NaN or infinity, and `1e999`
(which Python would read as infinity) is refused rather than turned into MAX.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from wmviz.core.errors import BadInputError
from wmviz.trace.quote import show

MAX_DEPTH = 64
MAX_INT_DIGITS = 400
_DECODED_NON_OBJECT = 4096
"""A line that is not an object is decoded (for its message) only up to this length."""


class JsonLineError(BadInputError, ValueError):
    """A line that is not a usable JSON object; the message is what the user reads, and `line`
    the line of a multi-line document where the decoder stopped."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


def is_compact_header(obj: Any) -> bool:
    """Whether a decoded JSON line is a compact `{"channels": N}` header.

    A line with a `kind` is a regular trace row that merely has a payload column named `channels`.
    """
    return isinstance(obj, dict) and "channels" in obj and "kind" not in obj


def decode_json_line(raw: bytes, *, first: bool = False) -> dict[str, Any] | None:
    """The object on one line; None for a blank line or a `#` / `//` comment.

    `first`: the file's first line, which may start with a UTF-8 byte-order mark.
    """
    try:
        line = raw.decode("utf-8-sig" if first else "utf-8").strip()
    except UnicodeDecodeError:
        raise JsonLineError("line is not valid UTF-8 text") from None
    if not line or line.startswith(("#", "//")):
        return None
    if not line.startswith("{") and len(line) > _DECODED_NON_OBJECT:
        # Not an object, whatever it holds: decoding 40 MB of `[],[],…` first held ~1 GB.
        raise JsonLineError(f"line is not a JSON object: it begins {line[:40]}…")
    try:
        obj = loads_strict(line)
    except JsonLineError as exc:
        raise JsonLineError(f"line is not valid JSON: {exc}") from None
    if not isinstance(obj, dict):
        raise JsonLineError(f"line is not a JSON object: {show(obj)}")
    return obj


def loads_strict(text: str) -> Any:
    """Any JSON text wmviz reads (a line, a config file, file metadata, a bundle's view) decoded
    within the same bounds; JsonLineError(reason) otherwise."""
    depth = nesting_depth(text)
    if depth > MAX_DEPTH:
        raise JsonLineError(f"nested {depth} deep; the limit is {MAX_DEPTH}")
    try:
        obj = json.loads(
            text,
            object_pairs_hook=_unique_keys,
            parse_constant=_reject_constant,
            parse_int=_bounded_int,
            parse_float=_finite_float,
        )
    except ValueError as exc:
        raise JsonLineError(getattr(exc, "msg", None) or str(exc), getattr(exc, "lineno", None)) from None
    if _SURROGATE_ESCAPE.search(text):
        _refuse_lone_surrogates(obj)
    return obj


_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _refuse_lone_surrogates(value: Any) -> None:
    """JSON may escape half of a UTF-16 pair (`"\\ud800"`), which is no character: such text could
    be neither shown, stored as Arrow text nor written back as UTF-8."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            half = value[exc.start]
            raise JsonLineError(
                f"the string {show(value)} holds \\u{ord(half):04x}, half of a UTF-16 surrogate pair, "
                "which is not a character"
            ) from None
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse_lone_surrogates(key)
            _refuse_lone_surrogates(item)
    elif isinstance(value, list):
        for item in value:
            _refuse_lone_surrogates(item)


def nesting_depth(text: str) -> int:
    """How deep brackets nest in `text`, strings skipped (only counted when it could matter)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return 0
    depth = deepest = 0
    in_string = escaped = False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif char in "]}":
            depth -= 1
    return deepest


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # A repeated key would otherwise silently keep only its last value.
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"key {json.dumps(key, ensure_ascii=False)[:60]} appears twice")
        result[key] = value
    return result


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def _bounded_int(text: str) -> int:
    if len(text) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text):,} digits; the limit is {MAX_INT_DIGITS}")
    return int(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{_short(text)} is beyond the range of a double")
    return value


def _short(text: str) -> str:
    return text if len(text) <= 60 else text[:59] + "…"
