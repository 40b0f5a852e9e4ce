"""One SparkSession per process: local[*] by default, a cluster via --master or WMVIZ_SPARK_MASTER."""

from __future__ import annotations

import os
import sys
import tempfile
import threading
import zipfile
from pathlib import Path

from pyspark.sql import SparkSession

_LOCK = threading.Lock()
_SESSION: SparkSession | None = None
DEFAULT_MASTER = "local[*]"


def spark_master(master: str | None = None) -> str:
    """The master URL: the argument, else $WMVIZ_SPARK_MASTER, else local[*]."""
    return master or os.environ.get("WMVIZ_SPARK_MASTER") or DEFAULT_MASTER


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
        builder = (
            SparkSession.builder.appName("wmviz")
            .master(url)
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.sql.shuffle.partitions", os.environ.get("WMVIZ_SHUFFLE_PARTITIONS", "4"))
            .config("spark.sql.execution.arrow.pyspark.enabled", "true")
            .config("spark.sql.session.timeZone", "UTC")
            .config("spark.driver.memory", os.environ.get("WMVIZ_DRIVER_MEMORY", "2g"))
        )
        _SESSION = builder.getOrCreate()
        _SESSION.sparkContext.setLogLevel("ERROR")
        if not (url.startswith("local") and _installed()):
            # The workers must run this very code: ship the package as a zip, Spark's standard way
            # for Python code (its executors put it on their path). A wmviz installed here needs
            # nothing shipped to local workers, which then also use its compiled modules.
            _SESSION.sparkContext.addPyFile(str(package_zip()))
        return _SESSION


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
