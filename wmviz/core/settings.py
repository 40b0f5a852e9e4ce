"""Every `WMVIZ_*` setting, declared once as data: its name, type, default, bounds and meaning.

A setting is an environment variable, read when a caller asks for its value (`.get()`), never when
a module is imported: a bad value then is one `SettingError` naming the variable, the value and what
is expected, which the command line reports in one line (exit 2) and the page as a notice, instead
of a traceback from deep inside an import. `check_all()` reads every setting at once, so a face can
refuse a bad environment before it does anything. `docs/settings.md` lists these declarations; a
test holds the two together.

An unset variable, or one set to blanks, takes the default. The one exception is a text setting
whose empty value means something (`WMVIZ_DRIVER_JAVA_OPTIONS=` sets no JVM options at all).
Reading the environment is not reading the clock: the core stays deterministic for a given
environment.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from wmviz.core.errors import SettingError

Environment = Mapping[str, str]


@dataclass(frozen=True)
class Setting:
    """What every setting declares: its variable's name, its meaning, and its room (the folder
    whose behaviour it changes), by which the docs group them."""

    name: str
    meaning: str
    room: str

    def text(self, env: Environment | None = None) -> str | None:
        """The variable's value, stripped; None when it is unset or blank."""
        value = (os.environ if env is None else env).get(self.name, "").strip()
        return value or None

    def default_text(self) -> str:
        """The default as the docs write it."""
        raise NotImplementedError

    def expected(self) -> str:
        """What a value must be, as the error and the docs say it."""
        raise NotImplementedError

    def get(self, env: Environment | None = None) -> object:
        """The value, read now from `env` (default: the process's environment)."""
        raise NotImplementedError

    def check(self, env: Environment | None = None) -> None:
        """Read the value and drop it: raises SettingError for a bad one."""
        self.get(env)

    def __format__(self, spec: str) -> str:
        # `f"{MAX_CHANNELS:,}"` would quote the declaration, not the value: a message says the value.
        raise TypeError(f"format {self.name}'s value (.get()), not its declaration")


@dataclass(frozen=True)
class Whole(Setting):
    """A whole number within [low, high] (high None: no upper bound)."""

    default: int
    low: int = 1
    high: int | None = None
    unit: str = ""

    def get(self, env: Environment | None = None) -> int:
        text = self.text(env)
        if text is None:
            return self.default
        try:
            value = int(text)
        except ValueError:
            raise SettingError(self.name, text, self.expected()) from None
        if value < self.low or (self.high is not None and value > self.high):
            raise SettingError(self.name, text, self.expected())
        return value

    def expected(self) -> str:
        top = f"from {self.low:,} to {self.high:,}" if self.high is not None else f"of at least {self.low:,}"
        return f"a whole number {top}{f' ({self.unit})' if self.unit else ''}"

    def default_text(self) -> str:
        return f"{self.default:,}{f' {self.unit}' if self.unit else ''}"


@dataclass(frozen=True)
class Number(Setting):
    """A number (a fraction allowed) of at least `low` (or above it, when `above`)."""

    default: float
    low: float = 0.0
    above: bool = False
    unit: str = ""

    def get(self, env: Environment | None = None) -> float:
        text = self.text(env)
        if text is None:
            return self.default
        try:
            value = float(text)
        except ValueError:
            raise SettingError(self.name, text, self.expected()) from None
        if (
            not (value > self.low if self.above else value >= self.low)
            or value != value
            or value == float("inf")
        ):
            raise SettingError(self.name, text, self.expected())
        return value

    def expected(self) -> str:
        bound = f"above {self.low:g}" if self.above else f"of at least {self.low:g}"
        return f"a number {bound}{f' ({self.unit})' if self.unit else ''}"

    def default_text(self) -> str:
        return f"{self.default:g}{f' {self.unit}' if self.unit else ''}"


@dataclass(frozen=True)
class Choice(Setting):
    """One of a few words."""

    default: str
    choices: tuple[str, ...]

    def get(self, env: Environment | None = None) -> str:
        text = self.text(env)
        if text is None:
            return self.default
        if text not in self.choices:
            raise SettingError(self.name, text, self.expected())
        return text

    def expected(self) -> str:
        return "one of " + ", ".join(self.choices)

    def default_text(self) -> str:
        return self.default


@dataclass(frozen=True)
class Text(Setting):
    """Free text handed on as it is (a URL, a path, Spark's own spelling of a size); None when
    unset and there is no default. With `empty_is_value`, a variable set to nothing is the empty
    text rather than the default."""

    default: str | None = None
    empty_is_value: bool = False
    kind: str = "text"

    def get(self, env: Environment | None = None) -> str | None:
        source = os.environ if env is None else env
        if self.empty_is_value and self.name in source:
            return source[self.name].strip()
        text = self.text(env)
        return self.default if text is None else text

    def path(self, env: Environment | None = None) -> Path | None:
        """The value as a path, `~` expanded (None when unset)."""
        text = self.get(env)
        return Path(text).expanduser() if text else None

    def expected(self) -> str:
        return self.kind

    def default_text(self) -> str:
        return "(unset)" if self.default is None else (self.default or "(empty)")


# ---- the settings, by room ---------------------------------------------------------------------

JAVA_INT_MAX = (1 << 31) - 1

# What an accepted trace may cost the simulation (each named in the error that stops a run).
MAX_WINDOWS_PER_RECORD = Whole(
    "WMVIZ_MAX_WINDOWS_PER_RECORD",
    "The most windows one record may fall in (size / slide of a sliding window): each costs the record "
    "~20 µs and two timer registrations, so a record costs at most ~20 ms.",
    "core",
    default=1_000,
)
MAX_LIVE_WINDOWS = Whole(
    "WMVIZ_MAX_WINDOWS",
    "The most windows (key and window pairs) the window operator may hold at once: at ~16-40 µs and "
    "~1 KB each, a run reaches the limit in a few seconds and 100 MB.",
    "core",
    default=100_000,
)
MAX_MATCH_ROWS = Whole(
    "WMVIZ_MAX_MATCH_ROWS",
    "The most rows one partition's MATCH_RECOGNIZE may hold in its partial matches (a row may be in "
    "several): each row reaching the pattern visits every one, ~4 µs apiece, so a row costs ~40 ms.",
    "core",
    default=10_000,
)
MAX_JOIN_WINDOW_ROWS = Whole(
    "WMVIZ_MAX_JOIN_WINDOW_ROWS",
    "The most rows one window of one key of a SQL window join may emit (its left rows times its right "
    "rows): at ~100 µs a row, a window costs at most ~10 s.",
    "core",
    default=100_000,
)
MAX_GENERATED_CHANNELS = Whole(
    "WMVIZ_MAX_GENERATED_CHANNELS",
    "The most channels of one instance whose watermarks a generator makes: each periodic probe visits "
    "every one of them.",
    "core",
    default=1_024,
)
MAX_ALIGNMENT_BUFFER = Whole(
    "WMVIZ_MAX_ALIGNMENT_BUFFER",
    "The largest `alignment.buffer_size` a config may set: Flink builds a ring of this many boxed "
    "watermarks per split and source subtask when the job starts (it reads the option as a Java int).",
    "core",
    default=10_000,
    high=JAVA_INT_MAX,
)
MAX_DURATION_DAYS = Whole(
    "WMVIZ_MAX_DURATION_DAYS",
    "The longest duration an import or the recorder takes as an option (out-of-orderness, idleness, "
    "watermark interval, --every, --for): every time derived from one stays a 64-bit long.",
    "record",
    default=366,
    high=100_000,
    unit="days",
)
MAX_IMPORT_ROWS = Whole(
    "WMVIZ_MAX_IMPORT_ROWS",
    "The most rows an import builds (a dump's records, a metrics export's samples times subtasks), "
    "held in memory at about 1 KB a row before the trace is written whole.",
    "record",
    default=2_000_000,
)
MAX_SUBTASKS = Whole(
    "WMVIZ_MAX_SUBTASKS",
    "The most subtasks of one vertex the recorder reads (Flink's own ceiling is 32,768).",
    "record",
    default=1_024,
)
MAX_REST_ANSWER_BYTES = Whole(
    "WMVIZ_MAX_REST_ANSWER_BYTES",
    "The largest answer the recorder reads from a JobManager (decoded JSON costs ~30 bytes per byte).",
    "record",
    default=8 << 20,
    unit="bytes",
)
MAX_PAGE_SWEEP_ROW_RUNS = Whole(
    "WMVIZ_MAX_PAGE_SWEEP_ROWS",
    "The most row runs (rows × combinations) a Tune sweep makes in the page's own process; a larger "
    "sweep runs on Spark from the command line.",
    "ui",
    default=50_000,
)
MAX_PAGE_SWEEPS = Whole(
    "WMVIZ_MAX_PAGE_SWEEPS", "The most Tune sweeps one server runs at once.", "ui", default=2
)
MAX_SWEEP_COMBINATIONS = Whole(
    "WMVIZ_MAX_SWEEP_COMBINATIONS", "The most combinations one sweep may run.", "analysis", default=256
)

# The trace formats.
MAX_CHANNELS = Whole(
    "WMVIZ_MAX_CHANNELS",
    "The most channels a valve may have: Flink's largest max parallelism, so no real upstream "
    "exceeds it, and a 44-byte config cannot make wmviz allocate for two billion channels.",
    "trace",
    default=32_768,
)
MAX_CONFIG_KB = Whole(
    "WMVIZ_MAX_CONFIG_KB",
    "The largest config (a file, a JSON Lines config line, Parquet metadata) wmviz reads.",
    "trace",
    default=256,
    high=1 << 30,
    unit="KB",
)
MAX_SPLITS = Whole(
    "WMVIZ_MAX_SPLITS",
    "The most splits a config may name in all, and the most partitions a Kafka import reads.",
    "trace",
    default=100_000,
)

# A Flink SQL job's plan.
MAX_PLAN_BYTES = Whole(
    "WMVIZ_MAX_PLAN_BYTES", "The largest file wmviz reads as a plan.", "sql", default=32 << 20, unit="bytes"
)
MAX_PLAN_DEPTH = Whole(
    "WMVIZ_MAX_PLAN_DEPTH", "The deepest nesting of brackets a plan may have.", "sql", default=200
)
MAX_PLAN_NODES = Whole(
    "WMVIZ_MAX_PLAN_NODES", "The most nodes, or edges, a plan may have.", "sql", default=10_000
)
MAX_REPLAY_SPLIT_STEPS = Whole(
    "WMVIZ_MAX_REPLAY_SPLIT_STEPS",
    "The most partitions (of all tables) times lines a SQL rows file may have: a replay looks at "
    "every split at every step, and `--out` records each (~12 µs and ~600 bytes apiece): the default "
    "holds a replay near 6 CPU-s.",
    "sql",
    default=500_000,
)
FLINK_JAR = Text(
    "WMVIZ_FLINK_JAR",
    "The flink-dist 2.3.0 jar to run against, instead of the copy cached in ~/.cache/wmviz/flink.",
    "sql",
    kind="a path",
)

# The app's stores.
CACHE = Text(
    "WMVIZ_CACHE",
    "The folder the app keeps everything in (timelines, what-ifs, uploads); unset: ~/.cache/wmviz.",
    "store",
    kind="a path",
)
CACHE_MAX_MB = Number(
    "WMVIZ_CACHE_MAX_MB",
    "How much the stored timelines and what-ifs may take together; the least recently used go first.",
    "store",
    default=4096,
    unit="MB",
)
MAX_UPLOAD_MB = Whole(
    "WMVIZ_MAX_UPLOAD_MB", "The largest upload (or bundle) the app takes.", "store", default=200, unit="MB"
)
MAX_BUNDLE_MEMBERS = Whole(
    "WMVIZ_MAX_BUNDLE_MEMBERS", "The most files a bundle (a shared zip) may hold.", "store", default=64
)
SPARK_UPLOAD_MB = Number(
    "WMVIZ_SPARK_UPLOAD_MB",
    "Traces larger than this go to the Spark engine (under the `auto` engine, and uploads on the page).",
    "store",
    default=20,
    unit="MB",
)
SAMPLES = Text(
    "WMVIZ_SAMPLES",
    "The folder of built-in incidents the page offers, instead of the ones shipped with wmviz.",
    "ui",
    kind="a path",
)

# The Spark engine.
SPARK_MASTER = Text(
    "WMVIZ_SPARK_MASTER", "The Spark master URL when --master is not given.", "spark", default="local[*]"
)
SHUFFLE_PARTITIONS = Whole(
    "WMVIZ_SHUFFLE_PARTITIONS", "Spark's `spark.sql.shuffle.partitions`.", "spark", default=4
)
DRIVER_MEMORY = Text(
    "WMVIZ_DRIVER_MEMORY", "Spark's `spark.driver.memory` (Spark's spelling: 2g).", "spark", default="2g"
)
ARROW_BATCH_BYTES = Text(
    "WMVIZ_ARROW_BATCH_BYTES",
    "Spark's `spark.sql.execution.arrow.maxBytesPerBatch`: how much of a task's input goes to its "
    "Python worker as one Arrow batch (Spark's spelling: 16m).",
    "spark",
    default="16m",
)
DRIVER_JAVA_OPTIONS = Text(
    "WMVIZ_DRIVER_JAVA_OPTIONS",
    "Spark's `spark.driver.extraJavaOptions`; set to nothing for none.",
    "spark",
    default=(
        "-XX:G1HeapRegionSize=4m -XX:GCTimeRatio=4"
        " -XX:+IgnoreUnrecognizedVMOptions -XX:TrimNativeHeapInterval=2000"
    ),
    empty_is_value=True,
)
MAX_LIVE = Whole(
    "WMVIZ_MAX_LIVE", "The most live queries a server runs or starts at once.", "spark", default=4
)
LIVE_IDLE_S = Number(
    "WMVIZ_LIVE_IDLE_S",
    "A live query nobody has looked at for this long is stopped.",
    "spark",
    default=900,
    above=True,
    unit="s",
)
LIVE_QUEUE = Whole(
    "WMVIZ_LIVE_QUEUE", "The most clicks that wait for their live step (~30 s of steps).", "spark", default=64
)

# The page.
SPARK_START = Choice(
    "WMVIZ_SPARK_START",
    "When the page starts its SparkSession: `eager`, after the first page; `lazy`, when a run needs it.",
    "ui",
    default="eager",
    choices=("eager", "lazy"),
)
LIVE_WARM_UP = Choice(
    "WMVIZ_LIVE_WARM_UP",
    "Once Spark is ready, warm live mode with a one-step query (~12 s of background work): `on` or `off`.",
    "ui",
    default="on",
    choices=("on", "off"),
)
STEP_CACHE_MB = Number(
    "WMVIZ_STEP_CACHE_MB",
    "The server's cache of step views, in megabytes (0 keeps nothing).",
    "ui",
    default=64,
    unit="MB",
)
BASE_URL = Text(
    "WMVIZ_BASE_URL",
    "The page's address as links to it should read (behind a proxy that rewrites the host); unset: "
    "the address the browser used.",
    "ui",
    kind="a URL",
)

SETTINGS: tuple[Setting, ...] = tuple(
    value for value in list(globals().values()) if isinstance(value, Setting)
)
"""Every setting, in the order declared."""


def check_all(env: Environment | None = None) -> None:
    """Read every setting: raises the first bad one's SettingError."""
    for setting in SETTINGS:
        setting.check(env)


def bad_settings(env: Environment | None = None) -> list[SettingError]:
    """Every setting whose value is bad, each as its error (for the page's notice)."""
    found: list[SettingError] = []
    for setting in SETTINGS:
        try:
            setting.check(env)
        except SettingError as err:
            found.append(err)
    return found
