"""Vertex and operator names as a person types them and as Flink's reporters spell them.

Flink writes one name three ways: as given (`Source: orders -> Map`), in REST metric ids with
' ', ':' and '.' replaced by '_' (cut at 80 characters), and in Prometheus label values with every
character outside [A-Za-z0-9:_] replaced by '_' (`Source:_orders____Map`). Names are compared by a
key that keeps only the letters and digits, so all three (and a user's typing) meet.
"""

from __future__ import annotations

import re

from wmviz.core.errors import BadValue

# The chain separator " -> " as given, and as the Prometheus label filter writes it.
_CHAIN = re.compile(r" -> |____")


def name_key(name: str) -> str:
    """The comparison key of a name: runs of anything but letters and digits become one '_'."""
    return re.sub(r"[^0-9A-Za-z]+", "_", name).strip("_").lower()


def chain_parts(task_name: str) -> list[str]:
    """The chained operators' names in a task (vertex) name, head first."""
    return [part for part in _CHAIN.split(task_name) if part]


def pick_name(names: list[str], wanted: str, option: str, what: str) -> str:
    """The one name equal to `wanted`, else the one whose key contains its key; a ValueError that
    lists every name found otherwise."""
    key = name_key(wanted)
    for pick in (
        [n for n in names if n == wanted],
        [n for n in names if name_key(n) == key],
        [n for n in names if key and key in name_key(n)],
    ):
        if len(pick) == 1:
            return pick[0]
        if len(pick) > 1:
            raise BadValue(f"{option} {_typed(wanted)} matches several {what}: {_listed(pick)}")
    raise BadValue(f"{option} {_typed(wanted)} matches none of the {what}: {_listed(sorted(names))}")


LISTED_NAMES = 20
"""The most names a message lists (a job of thousands of vertices would make it megabytes)."""


def _typed(wanted: str, most: int = 80) -> str:
    """What the user typed, quoted, cut at `most` characters (an option may hold a megabyte)."""
    return repr(wanted) if len(wanted) <= most else f"{wanted[:most]!r}…"


def _listed(names: list[str]) -> str:
    """The first `LISTED_NAMES` names, each cut as `_typed` cuts, and how many more there are."""
    shown = f"[{', '.join(_typed(n) for n in names[:LISTED_NAMES])}]"
    return shown if len(names) <= LISTED_NAMES else f"{shown} and {len(names) - LISTED_NAMES:,} more"
