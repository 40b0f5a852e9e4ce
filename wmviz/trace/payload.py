"""A trace row's payload (the columns wmviz does not interpret) as JSON text, and back.

Parquet payload columns can hold values JSON cannot (timestamps, decimals, bytes, non-finite
floats); they are kept as tagged objects `{"__wmviz_type__": name, "v": text}` so the row a
timeline or a Spark worker rebuilds equals the one the reader gave. A user's own object that
happens to use the tag key is itself wrapped (`"object"`, its items as pairs), so no payload value
can pass for a tag: what comes back is always exactly what went in.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
import math
from collections.abc import Callable, Iterable
from typing import Any

_TAG = "__wmviz_type__"


def tagged_value(value: Any) -> Any:
    """`json.dumps` default: a non-JSON payload value as a tagged object `decode_payload` turns back."""
    if isinstance(value, dt.datetime):
        name = "timestamp" if type(value).__module__.startswith("pandas") else "datetime"
        return {_TAG: name, "v": value.isoformat()}
    if isinstance(value, dt.date | dt.time):
        return {_TAG: type(value).__name__, "v": value.isoformat()}
    if isinstance(value, dt.timedelta):
        return {_TAG: "timedelta", "v": [value.days, value.seconds, value.microseconds]}
    if isinstance(value, decimal.Decimal):
        return {_TAG: "decimal", "v": str(value)}
    if isinstance(value, bytes):
        return {_TAG: "bytes", "v": base64.b64encode(value).decode("ascii")}
    raise TypeError(f"cannot keep a {type(value).__name__} payload value")


def _escape(value: Any) -> Any:
    """Containers walked so a user's object with the tag key, or a non-finite float, is wrapped."""
    if isinstance(value, dict):
        items = [[str(k), _escape(v)] for k, v in value.items()]
        if _TAG in value:
            return {_TAG: "object", "v": items}
        return dict(items)
    if isinstance(value, list | tuple):
        return [_escape(v) for v in value]
    if isinstance(value, float) and not math.isfinite(value):
        return {_TAG: "float", "v": repr(value)}
    return value


def _timedelta(parts: list[int]) -> dt.timedelta:
    days, seconds, micros = parts
    return dt.timedelta(days=days, seconds=seconds, microseconds=micros)


def _timestamp(text: str) -> Any:
    import pandas as pd

    return pd.Timestamp(text)


_DECODERS: dict[str, Callable[[Any], Any]] = {
    "timestamp": _timestamp,
    "datetime": dt.datetime.fromisoformat,
    "date": dt.date.fromisoformat,
    "time": dt.time.fromisoformat,
    "timedelta": _timedelta,
    "decimal": decimal.Decimal,
    "bytes": base64.b64decode,
    "float": float,
    "object": dict,
}


def _untag(obj: dict[str, Any]) -> Any:
    name = obj.get(_TAG)
    if name is None:
        return obj
    decoder = _DECODERS.get(name) if len(obj) == 2 and "v" in obj else None
    if decoder is None:
        raise ValueError(f"payload JSON holds an unknown tagged value {name!r}: not written by wmviz")
    return decoder(obj["v"])


def payload_text(value: Any) -> str:
    """A payload value as a person reads it: JSON for what JSON holds, else the value's own text
    (a timestamp in ISO form, a decimal's digits, bytes as Python writes them)."""
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        if isinstance(value, dt.date | dt.time | dt.datetime):
            return value.isoformat()
        return str(value)


def encode_payload(payload: Iterable[tuple[str, Any]]) -> str | None:
    """`payload_json`: the `[name, value]` pairs as JSON text (non-JSON values tagged); None if none."""
    pairs = [[name, _escape(value)] for name, value in payload]
    if not pairs:
        return None
    return json.dumps(pairs, default=tagged_value, ensure_ascii=False, allow_nan=False)


def decode_payload(text: str | None) -> tuple[tuple[str, Any], ...]:
    """The payload tuple back from `payload_json`."""
    if not text:
        return ()
    return tuple((name, value) for name, value in json.loads(text, object_hook=_untag))
