"""What a person reads in a markdown element whose user text the app escaped (`wmviz.view.plain`)."""

from __future__ import annotations

import re


def shown(source: str) -> str:
    """The text of `source` with its backslash escapes resolved and its word joiners (which stop
    GFM's bare links) left out."""
    return re.sub(r"\\([!-/:-@\[-`{-~])", r"\1", source).replace("\u2060", "")
