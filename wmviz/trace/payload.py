"""A trace row's payload (the columns wmviz does not interpret) as JSON text, and back.

Parquet payload columns can hold values JSON cannot (timestamps, decimals, bytes); they are kept as
tagged objects so the row a timeline or a Spark worker rebuilds equals the one the reader gave.
"""

from __future__ import annotations

import base64
import datetime as dt
import decimal
import json
from collections.abc import Callable, Iterable
from typing import Any

_TAG = "__wmviz_type__"


def _tagged(value: Any) -> Any:
    """`json.dumps` default: a non-JSON payload value as a tagged object `decode_payload` turns back."""
    if isinstance(value, dt.datetime):
        name = "timestamp" if type(value).__module__.startswith("pandas") else "datetime"
        return {_TAG: name, "v": value.isoformat()}
    if isinstance(value, dt.date | dt.time):
        return {_TAG: type(value).__name__, "v": value.isoformat()}
    if isinstance(value, decimal.Decimal):
        return {_TAG: "decimal", "v": str(value)}
    if isinstance(value, bytes):
        return {_TAG: "bytes", "v": base64.b64encode(value).decode("ascii")}
    raise TypeError(f"cannot keep a {type(value).__name__} payload value")


def _untag(obj: dict[str, Any]) -> Any:
    name = obj.get(_TAG)
    if name is None or len(obj) != 2:
        return obj
    text = obj["v"]
    if name == "timestamp":
        import pandas as pd

        return pd.Timestamp(text)
    decoders: dict[str, Callable[[str], Any]] = {
        "datetime": dt.datetime.fromisoformat,
        "date": dt.date.fromisoformat,
        "time": dt.time.fromisoformat,
        "decimal": decimal.Decimal,
        "bytes": base64.b64decode,
    }
    return decoders[name](text)


def encode_payload(payload: Iterable[tuple[str, Any]]) -> str:
    """`payload_json`: `json.dumps` of the `[name, value]` pairs (non-JSON values tagged)."""
    return json.dumps([[name, value] for name, value in payload], default=_tagged)


def decode_payload(text: str | None) -> tuple[tuple[str, Any], ...]:
    """The payload tuple back from `payload_json`."""
    if not text:
        return ()
    return tuple((name, value) for name, value in json.loads(text, object_hook=_untag))
