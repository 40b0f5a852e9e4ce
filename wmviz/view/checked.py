"""What each operator was checked against: one claim per part of wmviz, for the page, `explain`
and the report.

A claim is only as good as the test behind it, so the numbers here are the ones the differential
suites run: the window, idleness and interval-join suites (tests/test_flink_*.py) take their
corpus sizes and seeds from this module, and `tests/repo/test_checked.py` checks that the valve
suite's own constants add up to `VALVE_RANDOM_TRACES`, that every suite runs exactly the count
claimed, and that every claim names a suite that exists. Change a suite's size here, and both
the test and the claim change with it. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

from wmviz.core.scenario import GeneratorConfig, IntervalJoinConfig, ScenarioConfig, WindowConfig
from wmviz.core.types import Profile

FLINK_RELEASE = "2.3.0"

VALVE_RANDOM_TRACES = 2700
"""tests/flink/test_flink_differential.py: N_TRACES general traces plus N_GAP_TRACES churn traces."""

WINDOW_TRACES = 1500
WINDOW_SEED_BASE = 7_000_000
"""tests/flink/test_flink_windows.py: seeded random window traces, seeds SEED_BASE … SEED_BASE + N − 1."""

SESSION_TRACES = 600
SESSION_SEED_BASE = 7_100_000
OFFSET_TRACES = 300
OFFSET_SEED_BASE = 7_200_000
"""tests/flink/test_flink_session_windows.py: seeded random session-window traces, and tumbling and
sliding traces with window offsets (tools/flink/window/session_corpus.py)."""

IDLENESS_TRACES = 1000
IDLENESS_SEED_BASE = 5_000_000
"""tests/flink/test_flink_idleness.py: seeded traces of records and clock ticks on 1–3 channels."""

SPLIT_TRACES = 1000
SPLIT_SEED_BASE = 6_000_000
"""tests/flink/test_flink_splits.py: seeded traces of records on 1–4 splits of one reader and clock ticks."""

LIFECYCLE_TRACES = 600
LIFECYCLE_SEED_BASE = 6_500_000
ALIGNMENT_TRACES = 300
ALIGNMENT_SEED_BASE = 7_300_000
"""tests/flink/test_flink_splits.py: seeded traces where splits are added, finish and are marked idle or
active, with records and clock ticks (tools/flink/record/split_lifecycle.py)."""

SQL_SOURCE_TRACES = 400
"""tests/flink/test_sql_model_flink.py: traces through the pushed-down SQL generator."""
SQL_ASSIGNER_TRACES = 400
SQL_MINIBATCH_TRACES = 200
"""tests/flink/test_sql_model_flink.py: traces through the SQL WatermarkAssigner and mini-batch assigner."""
INTERVAL_JOIN_TRACES = 1000
INTERVAL_JOIN_SEED_BASE = 3_000_000
"""tests/flink/test_flink_interval_join.py: seeded row-time join traces (4 join types, both inputs)."""

HASHMAP_SEQUENCES = 2000
"""tests/flink/test_flink_interval_join_hashmap.py: operation sequences on the JDK's HashMap<Long, …>."""


@dataclass(frozen=True)
class Claim:
    """What one part of wmviz was checked against, and by which test suite."""

    subject: str
    verified: bool
    """True: run side by side with the real Flink release (`FLINK_RELEASE`) and found equal."""
    statement: str
    suite: str | None = None
    """The test file that makes the claim true (None for what is only modelled)."""

    def line(self) -> str:
        """`valve: equal to Flink 2.3.0's StatusWatermarkValve on … (tests/…)`."""
        where = f" ({self.suite})" if self.suite else ""
        return f"{self.subject}: {self.statement}{where}"


def claims() -> tuple[Claim, ...]:
    """Every claim, in the order a pipeline meets the parts."""
    release = f"Flink {FLINK_RELEASE}"
    return (
        Claim(
            "generation and idleness",
            True,
            f"equal to {release}'s BoundedOutOfOrdernessWatermarks inside WatermarksWithIdleness "
            f"(manual clock) writing to the FLIP-27 source output, on {IDLENESS_TRACES:,} random traces "
            "of records and clock ticks: same watermarks, same IDLE, same ACTIVE (resume flip27-released)",
            "tests/flink/test_flink_idleness.py",
        ),
        Claim(
            "SQL pushed-down generator",
            True,
            f"equal to {release}'s GeneratedWatermarkGeneratorSupplier generator (on-event and on-periodic) "
            "inside WatermarksWithIdleness writing to the FLIP-27 source output, on "
            f"{SQL_SOURCE_TRACES:,} random traces: same watermarks, IDLE and ACTIVE",
            "tests/flink/test_sql_model_flink.py",
        ),
        Claim(
            "SQL watermark assigner",
            True,
            f"equal to {release}'s WatermarkAssignerOperator (manual processing-time clock, in a real "
            f"task) on {SQL_ASSIGNER_TRACES:,} random traces of rows, clock moves, upstream watermarks "
            "and statuses: same watermarks, IDLE and ACTIVE",
            "tests/flink/test_sql_model_flink.py",
        ),
        Claim(
            "SQL mini-batch assigner",
            True,
            f"equal to {release}'s RowTimeMiniBatchAssginerOperator on {SQL_MINIBATCH_TRACES:,} random "
            "watermark and status sequences",
            "tests/flink/test_sql_model_flink.py",
        ),
        Claim(
            "SQL window aggregate",
            True,
            f"TUMBLE, HOP and CUMULATE (one and two phases, LTZ zones across a daylight-saving change) "
            f"equal to real {release} SQL runs on random rows: every output row and late drop",
            "tests/flink/test_sql_windows_flink.py",
        ),
        Claim(
            "SQL window TopN and deduplication",
            True,
            f"Window TopN and Window Deduplication (keep first and last) over TUMBLE, HOP and CUMULATE "
            f"equal to real {release} SQL runs on random rows (ties, late rows, several keys; HOP and "
            "CUMULATE in tests/flink/test_sql_window_rank_sliding_flink.py): every output row and late drop",
            "tests/flink/test_sql_window_rank_flink.py",
        ),
        Claim(
            "SQL MATCH_RECOGNIZE",
            True,
            f"MATCH_RECOGNIZE (a concatenation of quantified variables, ONE ROW PER MATCH, SKIP PAST "
            f"LAST ROW / TO NEXT ROW, WITHIN) equal to real {release} SQL runs on random rows: every "
            "output row and late drop",
            "tests/flink/test_sql_match_flink.py",
        ),
        Claim(
            "SQL SESSION window",
            True,
            f"equal to real {release} SQL runs on random rows (rows bridging and merging into open "
            "sessions, late rows, partition keys): every output row and late drop",
            "tests/flink/test_sql_session_flink.py",
        ),
        Claim(
            "SQL temporal join",
            True,
            f"the event-time temporal join equal to real {release} SQL runs on random rows (version "
            "changes, late probe rows, a quiet build side, LEFT join): every output row",
            "tests/flink/test_sql_temporal_flink.py",
        ),
        Claim(
            "SQL window join",
            True,
            f"the window join over TUMBLE, HOP and CUMULATE (INNER, LEFT, RIGHT, FULL, SEMI, ANTI) equal "
            f"to real {release} SQL runs on random rows (late rows on either side, ties at window ends, "
            "a quiet side, HOP overlap): every output row, per-side late drop and watermark",
            "tests/flink/test_sql_window_join_flink.py",
        ),
        Claim(
            "SQL temporal join late probe rows (profile flink-master)",
            False,
            "modelled, not checked against a release: FLINK-39719 (apache/flink PR 28229, merged "
            "after 2.3.0) drops a probe row at or behind the watermark and counts it in "
            "numLateRecordsDropped (SQL-T8); no released jar has it",
            "tests/sql/test_sql_temporal_master.py",
        ),
        Claim(
            "SQL buffering operators",
            True,
            f"row-time OVER, deduplication and ORDER BY rowtime equal to real {release} SQL runs on "
            "random rows: every output row, changelog kind and late drop",
            "tests/flink/test_sql_buffer_flink.py",
        ),
        Claim(
            "split readers",
            True,
            f"equal to {release}'s split-local outputs of a FLIP-27 reader (one WatermarksWithIdleness "
            "around BoundedOutOfOrdernessWatermarks per split, WatermarkOutputMultiplexer, "
            f"WatermarkToDataOutput) on {SPLIT_TRACES:,} random traces of records on 1–4 splits: same "
            "watermarks, IDLE and ACTIVE from the reader, including the all-idle flush",
            "tests/flink/test_flink_splits.py",
        ),
        Claim(
            "splits that come and go",
            True,
            f"equal to {release}'s ProgressiveTimestampsAndWatermarks (the class a FLIP-27 SourceOperator "
            "runs: its main output, split outputs created and released, the idleness manager) on "
            f"{LIFECYCLE_TRACES:,} random traces of splits added, finished and marked idle or active, "
            "with zero to three splits at the start, periodic or punctuated generators, with and "
            "without an idle timeout: same watermarks, IDLE and ACTIVE from the reader. When a "
            "SourceReaderBase creates or releases a split's output is the trace's to say; not checked",
            "tests/flink/test_flink_splits.py",
        ),
        Claim(
            "watermark alignment",
            True,
            f"the source subtask's and its splits' side equal to {release}'s SourceOperator (FLIP-182 "
            "subtask, FLIP-217 splits, the sampling ring pipeline.watermark-alignment.buffer-size, idle "
            "splits left as they are, FLINK-35886's paused idleness clocks) on 8 named and "
            f"{ALIGNMENT_TRACES:,} random traces of 1-3 subtasks: same watermarks, IDLE and ACTIVE, same "
            "records read or held back, same paused splits and waiting subtasks after every row, same "
            "reported watermark. The coordinator's step (the group minimum + max drift) is modelled "
            "from the SourceCoordinator, not run; reports and announcement in one instant",
            "tests/flink/test_flink_alignment.py",
        ),
        Claim(
            "resume eager",
            False,
            "modelled on the SQL watermark assigner and the legacy source contexts (ACTIVE before the "
            "first record after idleness); not run against Flink",
        ),
        Claim(
            "valve (profile flink-1.x-2.x)",
            True,
            f"equal to {release}'s StatusWatermarkValve on {VALVE_RANDOM_TRACES:,} random traces and every "
            "conformance case, state compared after every input",
            "tests/flink/test_flink_differential.py",
        ),
        Claim(
            "valve (profiles flink-master, flip-38477)",
            False,
            "modelled from apache/flink master after FLINK-40475 and from the unmerged FLINK-38477 "
            "PR #27083; not run on those builds",
        ),
        Claim(
            "windows",
            True,
            f"equal to {release}'s WindowOperator (tumbling and sliding event-time windows, allowed "
            f"lateness, late side output, Java long arithmetic) on {WINDOW_TRACES:,} random traces: same "
            "firings (key, window, contents or count, late), late drops and their order per input, "
            "including the order of equal-timestamp timers of the heap timer service",
            "tests/flink/test_flink_windows.py",
        ),
        Claim(
            "session windows",
            True,
            f"equal to {release}'s WindowOperator with EventTimeSessionWindows.withGap and the default "
            f"trigger (merging of touching sessions, timers of merged sessions deleted, late records "
            f"merging into fired sessions, allowed lateness, late side output, Java long arithmetic, the "
            f"job failure on a merge past a capped cleanup time) on {SESSION_TRACES:,} random traces: same "
            "firings (key, session, contents in order or count, late), late drops and their order per "
            "input, and the same failing input",
            "tests/flink/test_flink_session_windows.py",
        ),
        Claim(
            "window offsets",
            True,
            f"equal to {release}'s TumblingEventTimeWindows.of(size, offset) and "
            f"SlidingEventTimeWindows.of(size, slide, offset) on {OFFSET_TRACES:,} random traces "
            "(negative, positive and Long.MIN_VALUE offsets): same firings and late drops per input",
            "tests/flink/test_flink_session_windows.py",
        ),
        Claim(
            "timer order",
            True,
            f"{release}'s default heap timer service (one binary heap per time domain, ties in the heap's "
            "order), checked on the event-time timers of the window, session-window and interval-join "
            "suites; the RocksDB timer service orders ties differently and is not modelled",
            "tests/flink/test_flink_windows.py",
        ),
        Claim(
            "interval join (row time, no hint)",
            True,
            f"equal to {release}'s released RowTimeIntervalJoin (flink-table-runtime) in "
            f"KeyedCoProcessOperatorWithWatermarkDelay, fed the trace's exact order of left and right "
            f"inputs through one real valve per input, on {INTERVAL_JOIN_TRACES:,} random traces of all four "
            "join types: same rows (kind, left, right, record timestamp) and output watermarks per input, "
            "in order, with the caches visited in Java HashMap order",
            "tests/flink/test_flink_interval_join.py",
        ),
        Claim(
            "cache iteration order",
            True,
            f"java.util.HashMap<Long, …>'s order (buckets, resizes, red-black tree bins) equal to the JDK's "
            f"on {HASHMAP_SEQUENCES:,} random operation sequences",
            "tests/flink/test_flink_interval_join_hashmap.py",
        ),
        Claim(
            "interval join (processing time)",
            False,
            "modelled from flink-table-runtime's ProcTimeIntervalJoin (docs/rules.md) and the recorded "
            "conformance cases; not run against the released operator",
            "tests/core/test_interval_join_cases.py",
        ),
        Claim(
            "EARLY_FIRE",
            False,
            "modelled from FLIP-497's unmerged PR; no Flink release has it",
        ),
        Claim(
            "two-input all-idle flush",
            True,
            f"{release}'s CombinedWatermarkStatus emits the largest input watermark once both inputs are "
            "idle (FLINK-38454 is in the release): equal to wmviz's default (operator.all_idle_flush on), "
            "which the interval-join suite runs; with it off wmviz differs from 2.3.0",
            "tests/flink/test_flink_interval_join.py",
        ),
    )


def claim_lines() -> list[str]:
    """One line per claim, verified ones marked `[checked]`, the rest `[modelled]`."""
    return [f"[{'checked' if c.verified else 'modelled'}] {c.line()}" for c in claims()]


def _generator_subjects(generator: GeneratorConfig) -> list[str]:
    """The claims a scenario's generator needs."""
    wanted = {
        "sql-source": ["SQL pushed-down generator"],
        "sql-assigner": ["SQL watermark assigner"],
        "source-watermark": [],
    }.get(generator.style, ["generation and idleness"])
    if generator.minibatch_interval_ms is not None:
        wanted.append("SQL mini-batch assigner")
    if generator.style == "sql-assigner":
        return wanted
    if generator.splits:
        wanted += ["split readers", "splits that come and go"]
    if generator.alignment is not None:
        wanted.append("watermark alignment")
    if (
        generator.resume == "eager"
        and generator.idle_timeout_ms is not None
        and generator.style == "datastream"
    ):
        wanted.append("resume eager")
    return wanted


def scenario_claims(config: ScenarioConfig, profile: Profile | None = None) -> tuple[Claim, ...]:
    """The claims that cover one scenario: its valve profile, its generator, its operator and hints.

    What a page, a report or `explain` should say about a trace, e.g. for the early-fire incident
    "EARLY_FIRE: modelled from FLIP-497's unmerged PR; no Flink release has it" beside the valve's
    and the join's checked claims, rather than one verification line for everything.
    """
    by_subject = {c.subject: c for c in claims()}
    profile = profile or config.profile
    wanted = list(dict.fromkeys(s for g in config.generator_configs() for s in _generator_subjects(g)))
    released = profile is Profile.FLINK_1X_2X
    wanted.append(
        "valve (profile flink-1.x-2.x)" if released else "valve (profiles flink-master, flip-38477)"
    )
    operator = config.operator
    if isinstance(operator, WindowConfig) and operator.session_gap_ms is not None:
        wanted += ["session windows", "timer order"]
    elif isinstance(operator, WindowConfig):
        wanted += ["windows", "window offsets"] if operator.offset_ms else ["windows"]
        wanted.append("timer order")
    elif isinstance(operator, IntervalJoinConfig):
        if operator.join_time == "rowtime":
            wanted += ["interval join (row time, no hint)", "cache iteration order", "timer order"]
        else:
            wanted.append("interval join (processing time)")
        if operator.early_fire_delay_ms is not None:
            wanted.append("EARLY_FIRE")
        wanted.append("two-input all-idle flush")
    if operator.type_name in SQL_OPERATOR_SUBJECTS:
        wanted.append(SQL_OPERATOR_SUBJECTS[operator.type_name])
    if operator.type_name == "temporal_join" and profile.drops_late_probe:
        wanted.append("SQL temporal join late probe rows (profile flink-master)")
    found = [by_subject[s] for s in wanted]
    if isinstance(operator, IntervalJoinConfig) and not operator.all_idle_flush:
        found[-1] = Claim(
            "two-input all-idle flush off",
            False,
            "no flush when both inputs are idle (the older two-input rule), chosen in this config; "
            f"Flink {FLINK_RELEASE} flushes",
        )
    return tuple(found)


SQL_OPERATOR_SUBJECTS = {
    "sql_window": "SQL window aggregate",
    "sql_session": "SQL SESSION window",
    "temporal_join": "SQL temporal join",
    "over_aggregate": "SQL buffering operators",
    "deduplicate": "SQL buffering operators",
    "temporal_sort": "SQL buffering operators",
    "window_rank": "SQL window TopN and deduplication",
    "window_dedup": "SQL window TopN and deduplication",
    "window_join": "SQL window join",
    "match": "SQL MATCH_RECOGNIZE",
}
"""The claim of each SQL operator type (its `operator.type`)."""


def summary(found: tuple[Claim, ...]) -> str:
    """One line for a page header: what was checked against Flink, and what is only modelled."""
    checked = [c.subject for c in found if c.verified]
    modelled = [f"{c.subject} ({c.statement})" for c in found if not c.verified]
    parts = []
    if checked:
        parts.append(f"checked against Flink {FLINK_RELEASE}: {', '.join(checked)}")
    if modelled:
        parts.append(f"modelled, not checked: {'; '.join(modelled)}")
    return ". ".join(parts)
