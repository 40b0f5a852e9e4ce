"""The glossary entries of SQL's MATCH_RECOGNIZE (SQL-MR1…SQL-MR8), as data: (id, part, meaning,
code), taken in by `wmviz.core.rules.RULES`. docs/rules.md, "SQL MATCH_RECOGNIZE", explains each
at length under the same id."""

from __future__ import annotations

from wmviz.core.sql_match import SqlMatch
from wmviz.core.sql_match_nfa import Matcher

MATCH = "SQL, MATCH_RECOGNIZE (CepOperator)"

SQL_MATCH_RULES = (
    (
        "SQL-MR1",
        MATCH,
        "A row whose time is not after the operator's current watermark is late: dropped and "
        "counted in numLateRecordsDropped.",
        SqlMatch.mr1_is_late,
    ),
    (
        "SQL-MR2",
        MATCH,
        "A row on time waits in its partition's buffer under its time; the first row of a time "
        "registers an event-time timer there.",
        SqlMatch.mr2_buffer,
    ),
    (
        "SQL-MR3",
        MATCH,
        "At any timer of a partition, every buffered time up to the watermark meets the pattern in "
        "time order, rows of one time in arrival order; then the pattern's clock moves to the "
        "watermark.",
        SqlMatch.mr3_feed,
    ),
    (
        "SQL-MR4",
        MATCH,
        "WITHIN: a partial match whose first row is the bound or more before the pattern's clock is "
        "discarded, with no output.",
        Matcher.mr4_advance_time,
    ),
    (
        "SQL-MR5",
        MATCH,
        "Strict contiguity: a row extends a partial match in its variable (within the quantifier) "
        "or in the next one once the minimum is held; a greedy loop that can take the row keeps "
        "later variables from it; every row may start a new match.",
        Matcher.mr5_steps,
    ),
    (
        "SQL-MR6",
        MATCH,
        "A match is complete when the variable that took its last row holds its minimum and every "
        "later variable may be empty.",
        Matcher.mr6_complete,
    ),
    (
        "SQL-MR7",
        MATCH,
        "Completed matches leave (+I, one row per match) in the order of their first row, each only "
        "once no live partial match started earlier; each one discards the matches starting at or "
        "before its last row (SKIP PAST LAST ROW) or its first row (SKIP TO NEXT ROW).",
        Matcher.mr7_release,
    ),
    (
        "SQL-MR8",
        MATCH,
        "A row no match holds any more and no emitted match took ends with no output: in no match, "
        "or discarded with its partial match by WITHIN.",
        SqlMatch.mr8_settle,
    ),
)
"""(id, part, meaning, implementing method), in glossary order."""
