"""What an accepted trace may cost the simulation: each limit is named in the error that stops a
run, and each is a setting declared in `core/settings.py`, read when a check or a message asks.

Without them a valid 44-byte config could ask for millions of windows per record (Flink itself only
refuses size / slide above 10,000,000 when the job is built), and the simulation would die with
MemoryError after minutes instead of saying which limit a row crossed. Everything else a trace
costs grows with its rows (one key per record, at most two timers per window and one per cached
join row), which the upload limit bounds.
"""

from __future__ import annotations

from wmviz.core import settings
from wmviz.core.settings import (
    MAX_ALIGNMENT_BUFFER,
    MAX_DURATION_DAYS,
    MAX_GENERATED_CHANNELS,
    MAX_IMPORT_ROWS,
    MAX_JOIN_WINDOW_ROWS,
    MAX_LIVE_WINDOWS,
    MAX_MATCH_ROWS,
    MAX_PAGE_SWEEP_ROW_RUNS,
    MAX_PAGE_SWEEPS,
    MAX_REST_ANSWER_BYTES,
    MAX_SUBTASKS,
    MAX_WINDOWS_PER_RECORD,
)

JAVA_INT_MAX = settings.JAVA_INT_MAX


# Why settings.MAX_WINDOWS_PER_RECORD (WMVIZ_MAX_WINDOWS_PER_RECORD) defaults as it does:
# The most windows one record may fall in (size / slide of a sliding window; an hour in one-minute
# slides is 60): each costs the record ~20 µs and two timer registrations in its transcript line, so
# a record costs at most ~20 ms (10,000 made 16 rows take 2.7 s and a 600-row file minutes).
# Why settings.MAX_LIVE_WINDOWS (WMVIZ_MAX_WINDOWS) defaults as it does:
# The most windows (key and window pairs) the window operator may hold at once: at ~16-40 µs and
# ~1 KB each, a run reaches the limit in a few seconds and 100 MB (1,000,000 took 39 s and 1 GB).
# Why settings.MAX_GENERATED_CHANNELS (WMVIZ_MAX_GENERATED_CHANNELS) defaults as it does:
# The most channels of one instance whose watermarks a generator makes: each periodic probe (up to
# 1,000 after one clock jump, plus one per idleness expiry) visits every one of them.
# Why settings.MAX_DURATION_DAYS (WMVIZ_MAX_DURATION_DAYS) defaults as it does:
# The longest duration an import or the recorder takes as an option (out-of-orderness, idleness,
# watermark interval, --every, --for): a year is beyond any job's timeout, and a bound keeps every
# time the trace derives from one (a record's time plus the idleness) a 64-bit long.


def max_duration_ms() -> int:
    """WMVIZ_MAX_DURATION_DAYS in milliseconds."""
    return MAX_DURATION_DAYS.get() * 86_400_000


# Why settings.MAX_IMPORT_ROWS (WMVIZ_MAX_IMPORT_ROWS) defaults as it does:
# The most rows an import builds (a dump's records, a metrics export's samples times subtasks): an
# import holds them in memory, at about 1 KB a row, before writing the trace whole; cut a larger
# input to a time range first.


def windows_per_record_reason(count: int) -> str:
    return (
        f"size / slide puts each record in {count:,} windows, more than wmviz simulates: "
        f"{MAX_WINDOWS_PER_RECORD.get():,} (WMVIZ_MAX_WINDOWS_PER_RECORD)"
    )


def live_windows_reason(count: int) -> str:
    return (
        f"the window operator would hold {count:,} windows at once, more than wmviz simulates: "
        f"{MAX_LIVE_WINDOWS.get():,} (WMVIZ_MAX_WINDOWS); the run stops here"
    )


# Why settings.MAX_MATCH_ROWS (WMVIZ_MAX_MATCH_ROWS) defaults as it does:
# Flink's NFA keeps a partial match per row that may still start one, sharing their rows in a
# buffer; wmviz's matcher holds each partial match's rows itself and every row reaching the pattern
# visits each of them. 200 falling prices of one symbol at one time under `A D+ U` (no WITHIN can
# end them) held 20,000 rows and took 5.5 CPU-s, 400 over 100 s: the cost grows as the cube of a run.
# 10,000 held rows keep a row under ~40 ms; a WITHIN bound keeps real patterns far below it.


def match_rows_reason(count: int) -> str:
    return (
        f"the MATCH_RECOGNIZE of this partition would hold {count:,} rows in its partial matches, more "
        f"than wmviz simulates: {MAX_MATCH_ROWS.get():,} (WMVIZ_MAX_MATCH_ROWS); the run stops here"
    )


# Why settings.MAX_JOIN_WINDOW_ROWS (WMVIZ_MAX_JOIN_WINDOW_ROWS) defaults as it does:
# A window join emits every pair of a key's left and right rows of one window when it fires, as
# Flink does: n rows a side of one key are n² output rows (300 a side, 30 KB of rows: 90,000 rows,
# 10 CPU-s; 2,000 a side would be 4,000,000 rows and gigabytes). Each costs ~100 µs and its line.


def join_window_rows_reason(count: int) -> str:
    return (
        f"this window of the window join would emit {count:,} rows (its left rows times its right rows "
        f"of one key), more than wmviz simulates: {MAX_JOIN_WINDOW_ROWS.get():,} "
        "(WMVIZ_MAX_JOIN_WINDOW_ROWS); the run stops here"
    )


def generated_channels_reason(count: int) -> str:
    return (
        f"a generator makes the watermarks of {count:,} channels of this instance, more than wmviz "
        f"simulates: {MAX_GENERATED_CHANNELS.get():,} (WMVIZ_MAX_GENERATED_CHANNELS)"
    )


def duration_reason(option: str, shown: str) -> str:
    most = MAX_DURATION_DAYS.get()
    return f"{option} {shown} is longer than wmviz takes: {most:,} days (WMVIZ_MAX_DURATION_DAYS)"


def import_rows_reason(what: str) -> str:
    return (
        f"{what} makes more than {MAX_IMPORT_ROWS.get():,} rows, more than an import builds "
        "(WMVIZ_MAX_IMPORT_ROWS); cut it to a time range first"
    )


# Why settings.MAX_ALIGNMENT_BUFFER (WMVIZ_MAX_ALIGNMENT_BUFFER) defaults as it does:
# The largest `alignment.buffer_size` a config may set. Flink reads the option as a Java int and
# builds each ring whole when the source starts: one boxed long (~20 bytes) per slot, for every split
# and every source subtask, so 10^9 is some 20 GB a split and the job dies of OutOfMemoryError before
# its first record; anything past Integer.MAX_VALUE is not an int at all. 10,000 updates is nearly
# three hours at the default 1 s interval, far beyond the round trip (3) the ring is for; wmviz's
# ring costs O(1) an update whatever the size (it holds runs of equal values).


def alignment_buffer_reason() -> str:
    return (
        "Flink builds a ring of this many boxed watermarks for every split and source subtask when "
        "the job starts (Flink reads the option as a Java int; 10^9 is some 20 GB a split), and "
        f"pausing waits this many update intervals: wmviz takes at most {MAX_ALIGNMENT_BUFFER.get():,} "
        "(WMVIZ_MAX_ALIGNMENT_BUFFER); Flink's default is 3"
    )


# Why settings.MAX_SUBTASKS (WMVIZ_MAX_SUBTASKS) defaults as it does:
# The most subtasks of one vertex the recorder reads (a JobManager's answer names the parallelism):
# each sample writes a row per subtask and channel, so 10^9 subtasks was a MemoryError before the
# first sample. Flink's own ceiling is 32,768; raise the limit for a job wider than 1,024.
# Why settings.MAX_REST_ANSWER_BYTES (WMVIZ_MAX_REST_ANSWER_BYTES) defaults as it does:
# The largest answer the recorder reads from a JobManager. The largest it asks for is a vertex's
# list of metric ids: some 100 ids of ~55 bytes per subtask for a chain of five operators, ~5 MB at
# MAX_SUBTASKS; decoded JSON costs ~30 bytes per byte read, so 60 MB of it cost 1.7 GB.


def subtasks_reason(vertex: str, count: int) -> str:
    most = MAX_SUBTASKS.get()
    return f"{vertex} has {count:,} subtasks, more than wmviz records: {most:,} (WMVIZ_MAX_SUBTASKS)"


def rest_answer_reason(size: str) -> str:
    return (
        f"the answer is {size}, larger than a JobManager's metrics answer needs to be: "
        f"{MAX_REST_ANSWER_BYTES.get():,} bytes (WMVIZ_MAX_REST_ANSWER_BYTES)"
    )


# Why settings.MAX_PAGE_SWEEP_ROW_RUNS (WMVIZ_MAX_PAGE_SWEEP_ROWS) defaults as it does:
# The most row runs (the trace's rows × the grid's combinations) a Tune sweep makes in the page's
# own process: each costs ~50–90 µs of the server's CPU holding the interpreter lock (5,000 rows ×
# 12 combinations took 5.2 s), so the budget is a few seconds. A larger sweep runs on Spark from the
# command line (`wmviz sweep … --engine spark`); the page says so rather than run it.
# Why settings.MAX_PAGE_SWEEPS (WMVIZ_MAX_PAGE_SWEEPS) defaults as it does:
# The most Tune sweeps one server runs at once: another person asking meanwhile is told to wait,
# so a handful of sweeps can never hold every core and the interpreter lock of a shared server.


def page_sweep_reason(rows: int, combinations: int) -> str:
    return (
        f"{rows:,} rows × {combinations:,} combinations are {rows * combinations:,} row runs, more than "
        f"the page sweeps in its own process: {MAX_PAGE_SWEEP_ROW_RUNS.get():,} (WMVIZ_MAX_PAGE_SWEEP_ROWS). "
        "Use fewer values, or run it on Spark: `python -m wmviz sweep TRACE --vary … --engine spark "
        "--out table.csv`"
    )


def page_sweeps_busy_reason() -> str:
    return (
        f"{MAX_PAGE_SWEEPS.get():,} sweeps are running on this server, the most it runs at once "
        "(WMVIZ_MAX_PAGE_SWEEPS): press Sweep again in a moment"
    )
