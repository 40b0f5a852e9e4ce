"""One SparkSession per process: local[*] by default, a cluster via --master or WMVIZ_SPARK_MASTER."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import zipfile
from collections.abc import Mapping
from pathlib import Path

from pyspark import SparkConf, SparkContext
from pyspark.java_gateway import launch_gateway
from pyspark.sql import SparkSession

from wmviz.core import settings
from wmviz.spark.master import spark_master

_LOCK = threading.Lock()
_SESSION: SparkSession | None = None

# The driver JVM's memory, measured with bench/pipeline.py (Parquet, 1000 instances, 2 cores): its
# live heap after a GC stays ~65 MB from 1M to 10M rows, yet its peak RSS went from ~490 MB to
# ~1.04 GB. Each setting below is one cause of that growth, and each has its environment variable.
ARROW_BATCH_BYTES = settings.ARROW_BATCH_BYTES.default or ""
"""`spark.sql.execution.arrow.maxBytesPerBatch` ($WMVIZ_ARROW_BATCH_BYTES): how much of a task's
input the JVM turns into one Arrow batch for its Python worker. Unbounded (Spark counts 10,000
records), a task of the instance job got all its bucket blobs in one batch, i.e. its whole share of
the trace in native memory: ~215 MB a task at 10M rows, 433 MB with two tasks at once (NMT's
"Other"), ten times less at 1M. At 16 MB the blobs go over a few at a time (from_buckets joins them
all the same), and "Other" stays at 13 MB at 10M."""
DRIVER_JAVA_OPTIONS = settings.DRIVER_JAVA_OPTIONS.default or ""
"""`spark.driver.extraJavaOptions` ($WMVIZ_DRIVER_JAVA_OPTIONS; empty for none). With a 2 GB heap
G1 picks 1 MB regions, so every bucket blob (~1.6 MB here) is a humongous object: 54 of the 10M
run's 84 young GCs were forced by humongous allocations, and G1 grew the committed heap from 117 MB
to 473 MB (after-GC live stayed 66-68 MB). With 4 MB regions no GC was humongous, but G1 still grew
the heap to 312 MB because the GC-time share on two busy cores passed its 1/13 target; GCTimeRatio=4
(a 1/5 target) kept it at 148-216 MB, as at 1M, and keeps the 2 GB maximum for traces that need it.
The JVM's own native memory (NMT) then stayed flat, but RSS still rose ~80 MB above it at 10M:
native buffers freed back to glibc's malloc and kept; TrimNativeHeapInterval (JDK 17.0.9+, hence
IgnoreUnrecognizedVMOptions for older JDKs) hands them back every 2 s."""


def session_config(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The session's Spark settings, with the environment's overrides (a setting left empty by
    $WMVIZ_DRIVER_JAVA_OPTIONS is not set at all)."""
    config = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.shuffle.partitions": str(settings.SHUFFLE_PARTITIONS.get(env)),
        "spark.sql.execution.arrow.pyspark.enabled": "true",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.memory": settings.DRIVER_MEMORY.get(env) or "",
        "spark.sql.execution.arrow.maxBytesPerBatch": settings.ARROW_BATCH_BYTES.get(env) or "",
        "spark.driver.extraJavaOptions": settings.DRIVER_JAVA_OPTIONS.get(env) or "",
    }
    return {key: value for key, value in config.items() if value}


def get_spark(master: str | None = None) -> SparkSession:
    """The process's SparkSession, created on first use (about 10 s); later calls reuse it."""
    global _SESSION
    with _LOCK:
        if _SESSION is not None:
            return _SESSION
        # Python workers must run this interpreter (else they miss pyarrow), and a laptop's
        # hostname may not resolve: bind to loopback unless the user chose otherwise.
        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
        url = spark_master(master)
        if url.startswith("local"):
            os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        conf = SparkConf().setAppName("wmviz").setMaster(url).setAll(list(session_config().items()))
        _start_jvm_apart(conf)
        _SESSION = SparkSession.builder.config(conf=conf).getOrCreate()
        _SESSION.sparkContext.setLogLevel("ERROR")
        if not (url.startswith("local") and _installed()):
            # The workers must run this very code: ship the package as a zip, Spark's standard way
            # for Python code (its executors put it on their path). A wmviz installed here needs
            # nothing shipped to local workers, which then also use its compiled modules.
            _SESSION.sparkContext.addPyFile(str(package_zip()))
        return _SESSION


def _start_jvm_apart(conf: SparkConf) -> None:
    """Start Spark's JVM (once per process) in a process group of its own. Ctrl-C in a terminal
    signals the whole foreground group: pyspark keeps SIGINT from its JVM, but the Python workers
    the JVM forks take it back, so a Ctrl-C while a job ran (the app's warm-up) killed them
    mid-task and the JVM printed their failure as pages of Java stack traces. Apart, they hear
    nothing; this process stops the session itself (`SparkService.stop`), and the JVM still exits
    when this process does, on its closed stdin, as pyspark arranges."""
    if SparkContext._gateway is None:  # a session stopped and started again keeps its JVM
        SparkContext(conf=conf, gateway=launch_gateway(conf, popen_kwargs={"start_new_session": True}))


def _installed() -> bool:
    """Whether this wmviz is installed (so any Python worker of this interpreter imports it)."""
    package = Path(__file__).resolve().parent.parent
    return any(part in ("site-packages", "dist-packages") for part in package.parts)


_ZIP: Path | None = None


def package_zip() -> Path:
    """The wmviz package as a zip for `addPyFile` (built once per process, in the temp directory)."""
    global _ZIP
    package = Path(__file__).resolve().parent.parent
    target = Path(tempfile.gettempdir()) / f"wmviz-{os.getpid()}.zip"
    if target != _ZIP:
        _ZIP = target
        with zipfile.ZipFile(target, "w") as zf:
            for path in sorted(package.rglob("*")):
                if path.suffix in (".py", ".typed") and "__pycache__" not in path.parts:
                    zf.write(path, path.relative_to(package.parent))
    return target


def stop_spark() -> None:
    """Stop the session (tests and benchmarks that need a fresh one)."""
    global _SESSION
    with _LOCK:
        if _SESSION is not None:
            _SESSION.stop()
            _SESSION = None
