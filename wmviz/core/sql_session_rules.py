"""The SESSION window aggregation's rules of the glossary (`wmviz.core.rules`), as data: (id, part,
meaning, code). docs/rules.md, "SQL's SESSION window", explains each at length under the same id."""

from __future__ import annotations

from wmviz.core.sql_session import SqlSessionOperator

SESSION = "SQL, SESSION window aggregate"

SQL_SESSION_RULES = (
    (
        "SQL-S1",
        SESSION,
        "A row at t opens the session [t, t + gap) of its partition key (all rows share one list "
        "without PARTITION BY).",
        SqlSessionOperator.session_of_row,
    ),
    (
        "SQL-S2",
        SESSION,
        "The new session merges with the live session just before and just after it when they "
        "overlap or touch; a row behind the watermark that touches an open session is added and "
        "can move its start back.",
        SqlSessionOperator.add_window,
    ),
    (
        "SQL-S3",
        SESSION,
        "Late is judged after the merge: a session whose end − 1 is at or behind the watermark "
        "(allowed lateness 0) drops its row, counted in numLateRecordsDropped.",
        SqlSessionOperator.session_has_fired,
    ),
    (
        "SQL-S4",
        SESSION,
        "A row that lands goes through every aggregate call of its session's state (NULLs skipped).",
        SqlSessionOperator.accumulate,
    ),
    (
        "SQL-S5",
        SESSION,
        "Each row that lands registers its session's timer at end − 1; a merge registers the merged "
        "session's, then deletes the swallowed ones'.",
        SqlSessionOperator.register_firing,
    ),
    (
        "SQL-S6",
        SESSION,
        "At its timer a session emits one +I (keys, aggregates, window columns), never revised, "
        "and is forgotten; sessions due at one watermark fire in the timer heap's order.",
        SqlSessionOperator.fire_session,
    ),
    (
        "SQL-S7",
        SESSION,
        "The watermark passes on unchanged after the sessions it fired.",
        SqlSessionOperator.output_watermark,
    ),
)
"""(id, part, meaning, implementing method), in glossary order."""
