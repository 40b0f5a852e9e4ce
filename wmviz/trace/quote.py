"""Values quoted for error messages: as they would appear in JSON, shortened.

Every message that names a bad cell or config value quotes it through `show`, so a user sees the
same spelling of a value whichever reader, check or importer found it.
"""

from __future__ import annotations

import json
from typing import Any


def show(value: Any, limit: int = 60) -> str:
    """`value` as it would appear in JSON (strings quoted), shortened for messages."""
    try:
        text = json.dumps(value, ensure_ascii=False, allow_nan=True)
    except (TypeError, ValueError):
        text = repr(value)
    # Half of a UTF-16 pair (from a JSON escape) is no character: spelled as its escape, so the
    # message can be printed and stored.
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    return text
