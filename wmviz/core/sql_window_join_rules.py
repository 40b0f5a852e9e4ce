"""The glossary entries of SQL's window join (SQL-WJ1…SQL-WJ6), as data: (id, part, meaning, code),
taken in by `wmviz.core.rules.RULES`. docs/rules.md, "SQL window join", explains each at length
under the same id."""

from __future__ import annotations

from wmviz.core.sql_window_join import SqlWindowJoin

WINDOW_JOIN = "SQL, window join (TUMBLE, HOP, CUMULATE)"

SQL_WINDOW_JOIN_RULES = (
    (
        "SQL-WJ1",
        WINDOW_JOIN,
        "Each side's window table function copies a row into every window it belongs to (one TUMBLE "
        "window; HOP latest start first; CUMULATE shortest first), dropping none: the join takes "
        "each copy alone.",
        SqlWindowJoin.windows_of,
    ),
    (
        "SQL-WJ2",
        WINDOW_JOIN,
        "A copy whose window has fired (the combined watermark ≥ its end − 1) is dropped and counted "
        "on its side's metric, leftNumLateRecordsDropped or rightNumLateRecordsDropped (not "
        "numLateRecordsDropped); a HOP row's other copies still wait.",
        SqlWindowJoin.drop_late_copy,
    ),
    (
        "SQL-WJ3",
        WINDOW_JOIN,
        "Any other copy waits in its side's list for its key and window, and the key's timer at the "
        "window's end − 1 is registered; nothing is emitted on arrival.",
        SqlWindowJoin.keep_copy,
    ),
    (
        "SQL-WJ4",
        WINDOW_JOIN,
        "When the window's timer fires both lists are joined in arrival order (INNER, LEFT, RIGHT, "
        "FULL padding the unmatched outer rows with NULLs only now; SEMI/ANTI keep a left row with/"
        "without a match) and forgotten.",
        SqlWindowJoin.join_window,
    ),
    (
        "SQL-WJ5",
        WINDOW_JOIN,
        "A key with a NULL column matches nothing (the `=` of the ON clause filters NULLs): its rows "
        "share a window yet are padded (outer), dropped (inner, SEMI) or kept (ANTI).",
        SqlWindowJoin.null_key_matches_nothing,
    ),
    (
        "SQL-WJ6",
        WINDOW_JOIN,
        "The output watermark is the combined input watermark, forwarded after the due windows: a "
        "quiet side holds every window of both sides.",
        SqlWindowJoin.output_watermark,
    ),
)
