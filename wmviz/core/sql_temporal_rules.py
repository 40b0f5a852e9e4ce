"""The glossary's rules of SQL's event-time temporal join (`wmviz.core.rules` takes them in), as data:
(id, part, meaning, code). docs/rules.md, "SQL temporal join", explains each under the same id."""

from __future__ import annotations

from wmviz.core.sql_temporal_join import TemporalRowTimeJoin

TEMPORAL = "SQL, event-time temporal join"

SQL_TEMPORAL_RULES = (
    (
        "SQL-T1",
        TEMPORAL,
        "A probe row is never answered on arrival: it waits in its key's buffer until the combined "
        "watermark (the smaller of both inputs') reaches its time.",
        TemporalRowTimeJoin.t1_probe_waits,
    ),
    (
        "SQL-T2",
        TEMPORAL,
        "A probe row at or behind the watermark is buffered like any other in Flink 2.3.0 (no drop, "
        "no metric) and answered at the next advance against the versions still kept.",
        TemporalRowTimeJoin.t2_late_probe_buffered,
    ),
    (
        "SQL-T3",
        TEMPORAL,
        "A build row is its key's version from its time on; a row of the same time replaces it, and "
        "a version behind the watermark is stored without revising answers already given.",
        TemporalRowTimeJoin.t3_version_stored,
    ),
    (
        "SQL-T4",
        TEMPORAL,
        "When the key's timer fires, every waiting probe row at or below the watermark is answered in "
        "arrival order: the newest version at or before its time, else NULLs (LEFT) or nothing (inner).",
        TemporalRowTimeJoin.t4_release_due_probes,
    ),
    (
        "SQL-T5",
        TEMPORAL,
        "Then the key's versions older than its newest one at or below the watermark are removed; "
        "that one and any newer stay, so a later late probe row can find NULLs.",
        TemporalRowTimeJoin.t5_clean_versions,
    ),
    (
        "SQL-T6",
        TEMPORAL,
        "The output watermark is the combined input watermark, forwarded after the due timers: a "
        "quiet build side holds it and every probe row.",
        TemporalRowTimeJoin.output_watermark,
    ),
    (
        "SQL-T7",
        TEMPORAL,
        "One event-time timer per key, at the smallest row time since it last fired (an earlier row "
        "moves it, even behind the watermark); after firing, at the earliest probe row still waiting.",
        TemporalRowTimeJoin.t7_register_smallest_timer,
    ),
    (
        "SQL-T8",
        TEMPORAL,
        "flink-master only (FLINK-39719, after 2.3.0; modelled, not checked against a release): a probe "
        "row at or behind the combined watermark on arrival is dropped and counted, never joined or padded.",
        TemporalRowTimeJoin.t8_late_probe_dropped,
    ),
)
