"""The glossary entries of SQL's Window TopN and Window Deduplication (SQL-R1…SQL-R5), as data:
(id, part, meaning, code), taken in by `wmviz.core.rules.RULES`. docs/rules.md, "SQL Window TopN
and Window Deduplication", explains each at length under the same id."""

from __future__ import annotations

from wmviz.core.sql_window_rank import SqlWindowRank

RANK = "SQL, Window TopN and Window Deduplication (TUMBLE, HOP, CUMULATE)"

SQL_WINDOW_RANK_RULES = (
    (
        "SQL-R1",
        RANK,
        "A row (over HOP or CUMULATE: a copy) whose window has fired on arrival (watermark ≥ its end "
        "− 1) is dropped and counted in numLateRecordsDropped; a TUMBLE row has no other window.",
        SqlWindowRank.drop_late,
    ),
    (
        "SQL-R2",
        RANK,
        "Rows wait in a buffer per key and window until a watermark fires the earliest window in "
        "it; the whole buffer then reaches state and registers its windows' timers in first-arrival "
        "order, which orders keys firing together.",
        SqlWindowRank.flush,
    ),
    (
        "SQL-R3",
        RANK,
        "TopN: at the window's end its rows are sorted by the ORDER BY columns (equal keys in "
        "arrival order) and the first N emitted as +I rows, rn 1…N; nothing is retracted.",
        SqlWindowRank.emit_top,
    ),
    (
        "SQL-R4",
        RANK,
        "Deduplication: keep first (ORDER BY the row time ASC) replaces the kept row only with a "
        "strictly earlier one; keep last (DESC) with one not earlier, so a tie goes to the later "
        "arrival; one +I row per key at the window's end.",
        SqlWindowRank.replaces,
    ),
    (
        "SQL-R5",
        RANK,
        "Over HOP and CUMULATE the table function copies a row into each of its windows (HOP: latest "
        "start first; CUMULATE: smallest end first); each copy is judged on its own window, a late "
        "copy dropped and counted once, the others kept.",
        SqlWindowRank.window_ends_of,
    ),
)
"""(id, part, meaning, implementing method), in glossary order."""
