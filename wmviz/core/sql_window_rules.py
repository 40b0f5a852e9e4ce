"""The glossary entries of SQL's slicing window aggregate (SQL-W1…SQL-W7), as data: (id, part,
meaning, code), taken in by `wmviz.core.rules.RULES`. docs/rules.md, "SQL window aggregates",
explains each at length under the same id."""

from __future__ import annotations

from wmviz.core.sql_windows import SqlWindowAggregate

WINDOWS = "SQL, window aggregate (TUMBLE, HOP, CUMULATE)"

SQL_WINDOW_RULES = (
    (
        "SQL-W1",
        WINDOWS,
        "A row lands in the one slice holding its time (TUMBLE: its window; HOP: a slide; "
        "CUMULATE: a step), cut in local time for a TIMESTAMP_LTZ attribute, and waits there.",
        SqlWindowAggregate.slice_end_of,
    ),
    (
        "SQL-W2",
        WINDOWS,
        "A window fires once, when the watermark reaches its end − 1 (as an instant of the session "
        "zone for LTZ), emitting one +I row unless no row reached it.",
        SqlWindowAggregate.fire_window,
    ),
    (
        "SQL-W3",
        WINDOWS,
        "A row whose slice's last window has fired is dropped and counted in numLateRecordsDropped "
        "(two-phase: once per merged partial).",
        SqlWindowAggregate.drop_late,
    ),
    (
        "SQL-W4",
        WINDOWS,
        "A row whose slice has fired but whose slice still belongs to a window not fired is added "
        "to those windows; nothing emitted is retracted.",
        SqlWindowAggregate.add_late,
    ),
    (
        "SQL-W5",
        WINDOWS,
        "Two-phase: the local stage folds rows per key and slice and sends the partials only at a "
        "watermark that fires its earliest buffered slice, before that watermark.",
        SqlWindowAggregate.flush_local,
    ),
    (
        "SQL-W6",
        WINDOWS,
        "Rows reach state, and their windows' timers are registered, only when a watermark fires "
        "the earliest slice in the buffer; the registration order orders keys firing together.",
        SqlWindowAggregate.advance_progress,
    ),
    (
        "SQL-W7",
        WINDOWS,
        "Firing a HOP window that held rows registers the key's next window; CUMULATE registers its "
        "next step up to its largest size.",
        SqlWindowAggregate.register_next,
    ),
)
"""(id, part, meaning, implementing method), in glossary order."""
