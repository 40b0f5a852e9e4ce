"""The rules of SQL's buffering operators (OVER, deduplication, ORDER BY rowtime) for the glossary
(`wmviz.core.rules`), as data: (id, part, meaning, code). docs/rules.md, "SQL operators that
buffer until the watermark", explains each under the same id.
"""

from __future__ import annotations

from wmviz.core.sql_dedup import Deduplicate
from wmviz.core.sql_over import OverAggregate
from wmviz.core.sql_over_bounded import BoundedOver
from wmviz.core.sql_sort import TemporalSort

OVER = "SQL, OVER aggregation"
DEDUP = "SQL, row-time deduplication"
SORT = "SQL, ORDER BY rowtime"

BUFFER_RULES = (
    (
        "SQL-O1",
        OVER,
        "A row whose time is not after the operator's watermark (ts <= W) is dropped and counted in "
        "numLateRecordsDropped.",
        OverAggregate.o1_is_late,
    ),
    (
        "SQL-O2",
        OVER,
        "A row on time waits under its key and timestamp; the first row of a timestamp registers "
        "that key's event-time timer at it.",
        OverAggregate.o2_wait,
    ),
    (
        "SQL-O3",
        OVER,
        "ROWS: at the timer the rows of one timestamp leave in arrival order, each with the "
        "aggregates up to and including itself.",
        OverAggregate.o3_rows,
    ),
    (
        "SQL-O4",
        OVER,
        "RANGE: at the timer all rows of one timestamp are taken first, then all leave with the "
        "same aggregates.",
        OverAggregate.o4_range,
    ),
    (
        "SQL-O5",
        OVER,
        "A bounded frame drops (and counts) a row whose time is not after the last timer that fired "
        "for its key; the watermark is not compared.",
        BoundedOver.o5_is_late,
    ),
    (
        "SQL-O6",
        OVER,
        "RANGE bounded: a cleanup timer 1.5 frames after a row, when no later row moved it, clears "
        "the key's state and its last fired time.",
        BoundedOver.o6_cleans,
    ),
    (
        "SQL-O7",
        OVER,
        "ROWS n PRECEDING: each row joins a frame of at most n + 1 rows (the oldest leaves) and "
        "leaves with the frame's aggregates.",
        BoundedOver.o7_rows_frame,
    ),
    (
        "SQL-O8",
        OVER,
        "RANGE bounded: rows more than the frame before the timestamp leave the state; the rows of "
        "the timestamp share the aggregates over the rest.",
        BoundedOver.o8_range_frame,
    ),
    (
        "SQL-D1",
        DEDUP,
        "Keep first, insert-only: a row strictly before the watermark (ts < W) is dropped and "
        "counted; a row at the watermark still waits.",
        Deduplicate.d1_is_late,
    ),
    (
        "SQL-D2",
        DEDUP,
        "Keep first, insert-only: once a key's row has left, every later row of it is ignored, uncounted.",
        Deduplicate.d2_already_emitted,
    ),
    (
        "SQL-D3",
        DEDUP,
        "Keep first, insert-only: only a strictly earlier row replaces the waiting one, moving the "
        "key's timer to its time.",
        Deduplicate.d3_replaces_candidate,
    ),
    (
        "SQL-D4",
        DEDUP,
        "Keep first, insert-only: when the watermark reaches the waiting row's time it leaves once as +I.",
        Deduplicate.d4_emit_first,
    ),
    (
        "SQL-D5",
        DEDUP,
        "Otherwise rows leave on arrival, nothing is late: +I first, then -U (if asked) and +U "
        "for a later (keep last) or earlier (keep first) row.",
        Deduplicate.d5_takes,
    ),
    (
        "SQL-SORT1",
        SORT,
        "A row whose time is not after the last timestamp the sort emitted is dropped; no metric "
        "counts it and the watermark is not compared.",
        TemporalSort.sort1_is_late,
    ),
    (
        "SQL-SORT2",
        SORT,
        "A row waits under its timestamp; the first row of a timestamp registers the timer there, "
        "which fires at the next watermark at or past it.",
        TemporalSort.sort2_wait,
    ),
    (
        "SQL-SORT3",
        SORT,
        "At the timer the rows of one timestamp leave ordered by the other ORDER BY columns "
        "(stable), and that time becomes the last emitted.",
        TemporalSort.sort3_emit,
    ),
)
