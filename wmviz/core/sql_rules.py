"""The SQL watermark rules of the glossary (`wmviz.core.rules`), as data: (id, part, meaning, code).

Kept beside the SQL modules so the glossary module stays one page; `rules.RULES` takes them in.
docs/rules.md, "SQL watermarks", explains each at length under the same id.
"""

from __future__ import annotations

from wmviz.core.channel_generators import makes_generators
from wmviz.core.splits import split_generator
from wmviz.core.sql_assigner import WatermarkAssigner, assigner_timer_interval_ms
from wmviz.core.sql_generator import SqlSourceGenerator
from wmviz.core.sql_minibatch import MiniBatchAssigner

SOURCE = "SQL, pushed into the source"
ASSIGNER = "SQL, WatermarkAssigner"
MINIBATCH = "SQL, mini-batch assigner"

SQL_RULES = (
    (
        "SQL-G1",
        SOURCE,
        "A pushed-down WATERMARK is the largest value its expression has given, nothing subtracted "
        "(DataStream's bounded out-of-orderness stays one below).",
        SqlSourceGenerator.see_record,
    ),
    (
        "SQL-G2",
        SOURCE,
        "It starts at Long.MIN_VALUE, which the source output never forwards; a row whose "
        "expression is NULL leaves it unchanged.",
        SqlSourceGenerator.candidate_watermark_ms,
    ),
    (
        "SQL-G3",
        SOURCE,
        "on-event: only a row that raises the watermark emits it; a row that does not writes "
        "nothing to its split.",
        SqlSourceGenerator.punctuated_watermark,
    ),
    (
        "SQL-G4",
        SOURCE,
        "on-periodic: the current value at every interval; one generator per split inside the "
        "FLIP-27 reader, with DataStream's idleness wrapper and alignment.",
        split_generator,
    ),
    (
        "SQL-SW",
        SOURCE,
        "SOURCE_WATERMARK(): no generator at all; the source's own watermarks pass through.",
        makes_generators,
    ),
    (
        "SQL-A1",
        ASSIGNER,
        "The separate assigner starts at 0 and emits only above its last watermark, so never a "
        "watermark at or below 0.",
        WatermarkAssigner.advance,
    ),
    (
        "SQL-A2",
        ASSIGNER,
        "One assigner per subtask takes the maximum of the expression over every row of the "
        "subtask, whatever partition it came from.",
        WatermarkAssigner.after_record,
    ),
    (
        "SQL-A3",
        ASSIGNER,
        "A row that lifts the candidate more than the interval above the last watermark emits it "
        "at once; a smaller rise waits for the timer.",
        WatermarkAssigner.eager_emission,
    ),
    (
        "SQL-A4",
        ASSIGNER,
        "At a timer at least one interval after the last periodic emission, the candidate is "
        "emitted if it is higher.",
        WatermarkAssigner.periodic_emission,
    ),
    (
        "SQL-A5",
        ASSIGNER,
        "With table.exec.source.idle-timeout: IDLE at the first timer a timeout or more after the "
        "quiet spell began (inclusive); the next row sends ACTIVE first.",
        WatermarkAssigner.idleness_check,
    ),
    (
        "SQL-A6",
        ASSIGNER,
        "Of the upstream watermarks only the end of input (MAX) passes, once; the others are dropped.",
        WatermarkAssigner.upstream_watermark,
    ),
    (
        "SQL-A7",
        ASSIGNER,
        "An upstream status passes through and becomes the assigner's own status.",
        WatermarkAssigner.upstream_status,
    ),
    (
        "SQL-A8",
        ASSIGNER,
        "One timer, every timer interval from the open: the smaller of interval and idle timeout "
        "when 5x apart, else a fifth of the smaller.",
        assigner_timer_interval_ms,
    ),
    (
        "SQL-M1",
        MINIBATCH,
        "The mini-batch assigner starts at 0 with its first boundary at interval − 1.",
        MiniBatchAssigner,
    ),
    (
        "SQL-M2",
        MINIBATCH,
        "A watermark passes once it reaches the next boundary; the boundary then moves to the end "
        "of the batch holding it (or the next one).",
        MiniBatchAssigner.advance,
    ),
    (
        "SQL-M3",
        MINIBATCH,
        "MAX passes at once, statuses pass unchanged, and at the end of input the held watermark "
        "is forwarded.",
        MiniBatchAssigner.on_watermark,
    ),
)
"""(id, part, meaning, implementing method or class), in glossary order."""
