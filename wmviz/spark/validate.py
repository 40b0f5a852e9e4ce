"""The Spark reader's whole-file checks and its issue list, identical to `TraceBuilder.finish`'s.

Rows become *facts* (what the whole-file checks need, valid row or not): fast rows give them
natively, slow rows from the pure validator. From there everything is a Spark aggregation or window
function, worded by the pure code's message functions (`wmviz.trace.validate`). Only counts,
per-(instance, input) summaries and at most `MAX_ISSUES` issues reach the driver.

Issue order is the pure reader's: by row, file-level issues first; within a row, the row's own issues
in the order the validator found them, then the `seq`, `proc_ms` and generator checks, in the order
`finish` runs them.

For a valid file the work is: one aggregation over the rows (the fast rows' summaries and the number
of slow ones), the slow path if any, then one job per whole-file check that applies (`seq` ties when
rows carry `seq`, `proc_ms` order when they carry `proc_ms`, generated channels with a generator).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from wmviz.spark.pyrows import OUT_DDL
from wmviz.spark.sources import UTF8_REASON, Plan
from wmviz.trace.errors import IssueCollector, TraceIssue, TraceValidationError
from wmviz.trace.validate import (
    NO_ROWS_REASON,
    generated_watermark_reason,
    header_missing_reason,
    proc_ms_decrease_reason,
    seq_missing_reason,
    seq_reused_reason,
)

FACTS = ("row", "seq", "seq_ok", "instance", "input", "kind", "channel", "proc_ms", "valid")
TYPED = ("event_ms", "watermark_ms", "status", "key", "value_json", "payload_json")
ISSUE_DDL = (
    "row long, phase int, idx int, col string, reason string, code string, a long, b long, c long, s string"
)
PHASE_ROW, PHASE_SEQ, PHASE_PROC, PHASE_GEN = 0, 1, 2, 3
_NO_OP_PARTITIONS = 1 << 30  # more than any input has: `coalesce` keeps the partitions as they are
ROW_COLUMNS = (
    "instance",
    "input",
    "row",
    "order",
    "seq",
    "kind",
    "channel",
    "event_ms",
    "watermark_ms",
    "status",
    "proc_ms",
    "key",
    "value_json",
    "payload_json",
)


@dataclass
class Stats:
    """A summary of facts (per instance and input, or per slow-path record type), mergeable."""

    n: int = 0
    n_valid: int = 0
    min_row: int | None = None
    min_seq: int | None = None
    max_channel: int | None = None
    n_seq: int = 0
    n_seq_bad: int = 0
    n_proc: int = 0
    first_seq_row: int | None = None

    def merge(self, r: Any) -> None:
        for name in ("n", "n_valid", "n_seq", "n_seq_bad", "n_proc"):
            setattr(self, name, getattr(self, name) + (r[name] or 0))
        for name, pick in (("min_row", min), ("min_seq", min), ("max_channel", max), ("first_seq_row", min)):
            mine, theirs = getattr(self, name), r[name]
            setattr(self, name, theirs if mine is None else mine if theirs is None else pick(mine, theirs))


def _stats(row: str = "row") -> list[Column]:
    """The aggregates of `Stats` over facts (`seq_ok`, `valid` and `input` as the slow path gives them)."""
    return [
        F.count(F.lit(1)).alias("n"),
        F.sum(F.col("valid").cast("long")).alias("n_valid"),
        F.min(row).alias("min_row"),
        F.min("seq").alias("min_seq"),
        # `_max_channel` only learns from rows whose input is known (the facts say "" otherwise).
        F.max(F.when(F.col("input") != "", F.col("channel"))).alias("max_channel"),
        F.count("seq").alias("n_seq"),
        F.sum((~F.col("seq_ok")).cast("long")).alias("n_seq_bad"),
        F.count("proc_ms").alias("n_proc"),
        F.min(F.when(F.col("seq").isNotNull() | ~F.col("seq_ok"), F.col(row))).alias("first_seq_row"),
    ]


@dataclass
class Result:
    """A valid trace: its rows and the driver-side summaries `SparkTrace` holds."""

    rows: DataFrame
    instances: list[str]
    valve_channels: dict[tuple[str, str], int]
    row_count: int


class Checker:
    """Runs a `Plan`: the slow path, the whole-file checks, and either a `Result` or the error."""

    def __init__(self, plan: Plan, collector: IssueCollector):
        self.plan = plan
        self.params = plan.params
        self.source = plan.params.source
        self.unit = plan.params.unit
        self.collector = collector
        self.py: DataFrame | None = None
        self.all_fast = False  # set once the first job found no row for the slow path

    def run(self) -> Result:
        try:
            return self._run()
        except BaseException:
            self._release()
            raise

    def _release(self) -> None:
        if self.py is not None:
            self.py.unpersist()
            self.py = None

    # --- the steps --------------------------------------------------------------------------------

    def _run(self) -> Result:
        stats: dict[tuple[str, str], Stats] = {}
        slow, late = self._summarize_fast(stats)
        self.all_fast = not slow and self.plan.py_all is None
        by_type: dict[str, list[Any]] = {}
        if slow or self.plan.py_all is not None:
            by_type = self._run_slow(stats)
            late = None  # the order check saw the fast rows only: run it again on every row
        counts = {t: sum(r["n"] for r in records) for t, records in by_type.items()}
        self._fail_if_fatal(by_type.get("X", []))

        facts = self._facts()
        n_facts = sum(s.n for s in stats.values())
        total = self.collector.total + counts.get("I", 0)
        file_level = []
        if n_facts == 0 and total == 0:
            file_level.append(TraceIssue(self.source, None, None, NO_ROWS_REASON))
        file_level += self._header_missing(by_type.get("H", []))
        total += len(file_level)

        checks: list[DataFrame] = []
        any_seq = any(s.n_seq or s.n_seq_bad for s in stats.values())
        broken = False
        if any_seq:
            first = min(s.first_seq_row for s in stats.values() if s.first_seq_row is not None)
            missing = sum(s.n - s.n_seq - s.n_seq_bad for s in stats.values())
            if missing:
                checks.append(self._seq_missing(facts, first))
            dups = self._seq_duplicates(facts)
            reused = dups.agg(F.sum(F.col("n") - 1)).first()[0] or 0
            if reused:
                checks.append(self._seq_reused(facts, dups))
            broken = bool(missing or reused or any(s.n_seq_bad for s in stats.values()))
            total += missing + reused
        # Arrival order: by `seq` when rows carry it (and it is sound), else file order.
        order = F.col("seq") if any_seq and not broken else F.col("row")
        if not broken and any(s.n_proc for s in stats.values()):
            proc = self._proc_ms(facts, order)
            late = proc.count() if late is None else late
            if late:
                checks.append(proc)
                total += late
        generated = self._generated(facts, order)
        if generated is not None:
            n = generated.count()
            if n:
                checks.append(generated)
                total += n
        if total:
            issues = self._row_issues()
            for check in checks:
                issues = issues.unionByName(check)
            self._fail(issues, file_level, total)
        return self._result(stats, any_seq, counts)

    def _summarize_fast(self, stats: dict[tuple[str, str], Stats]) -> tuple[int, int | None]:
        """One job over the file: the fast rows' summaries, how many rows need the slow path, and how
        many fast rows break the `proc_ms` order (None if no row can carry `proc_ms`).

        The order check is a window over each instance in `coalesce(seq, row)` order, which is the
        arrival order whenever it matters (if `seq` is present but unsound, its count is dropped).
        """
        base = self.plan.base
        if base is None:
            return 0, None
        fast = F.col("_fast")
        keys = [F.when(fast, F.col(name)).alias(name) for name in ("instance", "input")]
        facts = base.select(
            *keys, "_fast", F.col("_row").alias("row"), "seq", "channel", "proc_ms",
            F.lit(True).alias("seq_ok"), F.lit(True).alias("valid"),
        )  # fmt: skip
        # A no-op coalesce ends the codegen stage here: the validation above may be too big for
        # whole-stage codegen (see reader._limit_method_size), the aggregation below is not.
        facts = facts.coalesce(_NO_OP_PARTITIONS)
        extra = []
        if self.plan.proc_possible:
            before = Window.partitionBy("instance").orderBy("_o").rowsBetween(Window.unboundedPreceding, -1)
            facts = facts.withColumn("_o", F.coalesce("seq", "row"))
            late = fast & (F.col("proc_ms") < F.max("proc_ms").over(before))
            facts = facts.withColumn("_late", F.coalesce(late, F.lit(False)))
            extra.append(F.sum(F.col("_late").cast("long")).alias("n_late"))
        slow, n_late = 0, None
        for r in facts.groupBy("instance", "input").agg(*_stats(), *extra).collect():
            if r["instance"] is None:
                slow = r["n"]
                continue
            stats.setdefault((r["instance"], r["input"]), Stats()).merge(r)
            if extra:
                n_late = (n_late or 0) + r["n_late"]
        return slow, (n_late or 0) if extra else None

    def _run_slow(self, stats: dict[tuple[str, str], Stats]) -> dict[str, list[Any]]:
        """Run the slow path (kept, as later jobs read it) and summarize it in one job, by record type."""
        plan = self.plan
        source = plan.py_all if plan.py_all is not None else plan.base.filter(~F.col("_fast"))
        if plan.py_columns:
            source = source.select(*[F.expr(sql).alias(name) for name, sql in plan.py_columns.items()])
        self.py = source.mapInArrow(plan.py_fn, OUT_DDL).persist(StorageLevel.MEMORY_AND_DISK)
        is_fact, is_header = F.col("t") == "F", F.col("t") == "H"
        keys = [
            F.when(is_fact, F.col("instance")).when(is_header, F.col("col")).alias("k1"),
            F.when(is_fact, F.col("input")).when(is_header, F.col("reason")).alias("k2"),
        ]
        summary = self.py.groupBy("t", *keys).agg(
            *_stats(),
            F.min_by("idx", "row").alias("first_idx"),
            F.min_by("reason", "row").alias("first_reason"),
        )
        by_type: dict[str, list[Any]] = {}
        for r in summary.collect():
            by_type.setdefault(r["t"], []).append(r)
            if r["t"] == "F":
                stats.setdefault((r["k1"], r["k2"]), Stats()).merge(r)
        return by_type

    def _fail_if_fatal(self, fatal: list[Any]) -> None:
        """The pure CSV reader stops at bad UTF-8 or a broken record; then only earlier rows count."""
        last, issue = None, None
        if self.plan.csv_cutoff is not None:
            last = self.plan.csv_cutoff
            issue = TraceIssue(self.source, last + 1, None, UTF8_REASON)
        if fatal:
            row = fatal[0]["min_row"]
            if last is None or row <= last:
                last, issue = row - 1, TraceIssue(self.source, row, None, fatal[0]["first_reason"])
        if issue is not None:
            issues = self._row_issues().filter(F.col("row") <= last)
            self._fail(issues, [issue], self.collector.total + issues.count() + 1)

    # --- facts and issues ------------------------------------------------------------------------

    def _facts(self) -> DataFrame:
        """Every row's facts and typed columns: the fast rows', then the slow path's.

        When no row needed the slow path every row is fast, so no filter on `_fast` is needed: later
        queries then compute only the columns they read (`rows.count()` only counts).
        """
        parts = []
        if self.plan.base is not None:
            fast = self.plan.base if self.all_fast else self.plan.base.filter("_fast")
            parts.append(
                fast.select(
                    F.col("_row").alias("row"),
                    "seq",
                    F.lit(True).alias("seq_ok"),
                    "instance",
                    "input",
                    "kind",
                    "channel",
                    "proc_ms",
                    F.lit(True).alias("valid"),
                    *TYPED,
                )
            )
        if self.py is not None:
            parts.append(self.py.filter(F.col("t") == "F").select(*FACTS, *TYPED))
        facts = parts[0]
        for part in parts[1:]:
            facts = facts.unionByName(part)
        return facts

    def _row_issues(self) -> DataFrame:
        """The slow path's row issues (the fast path finds none), in the common issue layout."""
        if self.py is None:
            spark = self.plan.base.sparkSession
            return spark.createDataFrame([], ISSUE_DDL)
        return self.py.filter(F.col("t") == "I").selectExpr(
            "row", f"{PHASE_ROW} AS phase", "idx", "col", "reason", "CAST(NULL AS STRING) AS code",
            "CAST(NULL AS BIGINT) AS a", "CAST(NULL AS BIGINT) AS b", "CAST(NULL AS BIGINT) AS c",
            "CAST(NULL AS STRING) AS s",
        )  # fmt: skip

    def _header_missing(self, records: list[Any]) -> list[TraceIssue]:
        """`finish`'s header/schema issues: columns and their kinds, each in order of first need."""
        columns: dict[str, list[Any]] = {}
        for r in records:
            columns.setdefault(r["k1"], []).append(r)
        ordered = sorted(columns.items(), key=lambda kv: min((r["min_row"], r["first_idx"]) for r in kv[1]))
        issues = []
        for column, labels in ordered:
            labels.sort(key=lambda r: r["min_row"])
            reason = header_missing_reason(self.unit, [r["k2"] for r in labels], labels[0]["min_row"])
            issues.append(TraceIssue(self.source, self.params.header_row, column, reason))
        return issues

    def _seq_missing(self, facts: DataFrame, first: int) -> DataFrame:
        rows = facts.filter(F.col("seq").isNull() & F.col("seq_ok"))
        return _structured(rows, PHASE_SEQ, "seq", "seq_missing", a=F.lit(first))

    @staticmethod
    def _seq_duplicates(facts: DataFrame) -> DataFrame:
        """Every `seq` used more than once, with its first row (file order) and use count."""
        with_seq = facts.filter(F.col("seq").isNotNull())
        counted = with_seq.groupBy("seq").agg(F.min("row").alias("first"), F.count(F.lit(1)).alias("n"))
        return counted.filter("n > 1")

    def _seq_reused(self, facts: DataFrame, dups: DataFrame) -> DataFrame:
        rows = facts.filter(F.col("seq").isNotNull()).join(dups.select("seq", "first"), "seq")
        rows = rows.filter(F.col("row") != F.col("first"))
        return _structured(rows, PHASE_SEQ, "seq", "seq_reused", a=F.col("seq"), b=F.col("first"))

    def _proc_ms(self, facts: DataFrame, order: Column) -> DataFrame:
        """`_check_proc_ms`: a proc_ms below the instance's highest so far, in arrival order."""
        before = Window.partitionBy("instance").orderBy("_o").rowsBetween(Window.unboundedPreceding, -1)
        timed = facts.filter(F.col("proc_ms").isNotNull()).select(
            "row", "instance", "proc_ms", order.alias("_o")
        )
        # The highest earlier proc_ms and, among equal ones, the latest row: the pure check's `highest`.
        timed = timed.withColumn("_prev", F.max(F.struct("proc_ms", "_o", "row")).over(before))
        late = timed.filter(F.col("proc_ms") < F.col("_prev.proc_ms"))
        prev = {"a": F.col("proc_ms"), "b": F.col("_prev.proc_ms"), "c": F.col("_prev.row")}
        return _structured(late, PHASE_PROC, "proc_ms", "proc", **prev, s=F.col("instance"))

    def _generated(self, facts: DataFrame, order: Column) -> DataFrame | None:
        """`_check_generated_channels`: explicit watermarks on channels that carry records."""
        if not self.params.config_ok or self.params.config.generator is None:
            return None
        keys = ["instance", "input", "channel"]
        records = facts.filter((F.col("kind") == "record") & F.col("channel").isNotNull())
        first = records.groupBy(*keys).agg(F.min_by("row", order).alias("first"))
        marks = facts.filter((F.col("kind") == "watermark") & F.col("channel").isNotNull()).join(first, keys)
        return _structured(marks, PHASE_GEN, "kind", "generated", a=F.col("channel"), b=F.col("first"))

    def _reason(self, r: Any) -> str:
        code = r["code"]
        if code is None:
            return r["reason"]
        if code == "seq_missing":
            return seq_missing_reason(self.unit, r["a"])
        if code == "seq_reused":
            return seq_reused_reason(r["a"], self.unit, r["b"])
        if code == "proc":
            return proc_ms_decrease_reason(r["a"], r["b"], self.unit, r["c"], r["s"])
        return generated_watermark_reason(r["a"], self.unit, r["b"])

    def _fail(self, issues: DataFrame, extra: list[TraceIssue], total: int) -> None:
        """Raise the error: the driver's issues, `extra` (file-level or fatal) and the earliest rows'."""
        cap = self.collector.cap
        top = issues.orderBy("row", "phase", "idx").limit(cap).collect()
        found = [TraceIssue(self.source, r["row"], r["col"], self._reason(r)) for r in top]
        kept = sorted([*self.collector.error().issues, *extra, *found], key=_sort_key)
        self._release()
        raise TraceValidationError(kept[:cap], total)

    # --- the valid trace --------------------------------------------------------------------------

    def _result(self, stats: dict[tuple[str, str], Stats], any_seq: bool, counts: dict[str, int]) -> Result:
        params = self.params
        first = {pair: (s.min_seq if any_seq else s.min_row) for pair, s in stats.items()}
        pairs = sorted(stats, key=lambda pair: first[pair])
        instances = list(dict.fromkeys(instance for instance, _ in pairs))
        highest: dict[str, int] = {}
        for (_, input_name), s in stats.items():
            if s.max_channel is not None:
                highest[input_name] = max(highest.get(input_name, -1), s.max_channel)
        compact = {}
        if self.plan.compact_counts is not None:
            compact = {r["instance"]: r["count"] for r in self.plan.compact_counts.collect()}
        channels = {}
        for instance, input_name in pairs:  # `TraceBuilder._channels`
            limit = params.config.channels.get(input_name) if params.config_ok else None
            if limit is None:
                limit = compact.get(instance)
            channels[(instance, input_name)] = limit if limit is not None else highest.get(input_name, 0) + 1
        if not counts.get("F", 0):
            self._release()  # nothing valid came from the slow path: the rows need only the fast one
        rows = self._facts().selectExpr(
            "instance", "input", "row", "coalesce(seq, row) AS order", "seq", "kind",
            "CAST(channel AS INT) AS channel", "event_ms", "watermark_ms", "status", "proc_ms", "key",
            "value_json", "payload_json",
        )  # fmt: skip
        return Result(rows, instances, channels, sum(s.n for s in stats.values()))


def _structured(rows: DataFrame, phase: int, column: str, code: str, **args: Column) -> DataFrame:
    """Issues of a whole-file check with their message's parts; only the kept ones get a text."""
    parts = [
        (args[n] if n in args else F.lit(None)).cast("string" if n == "s" else "long").alias(n)
        for n in ("a", "b", "c", "s")
    ]
    return rows.select(
        "row",
        F.lit(phase).alias("phase"),
        F.lit(0).alias("idx"),
        F.lit(column).alias("col"),
        F.lit(None).cast("string").alias("reason"),
        F.lit(code).alias("code"),
        *parts,
    )


def _sort_key(issue: TraceIssue) -> tuple[bool, int]:
    return (issue.row is not None, issue.row or 0)
