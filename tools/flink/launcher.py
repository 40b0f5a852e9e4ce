"""The one way a harness starts a JVM on the real Flink 2.3.0 classes.

A harness is its Java sources, its main class, the jars it runs against and a cache tag. The
classpath comes from `wmviz.sql.jars` (the one place that finds and fetches the jars), the sources
are compiled once per version of their text (`compile_harness`), and every run goes through
`Harness.run` (a whole input in, the whole output back) or `Harness.start` (a process driven a line
at a time). Whatever fails is a `HarnessError` that names the harness: the jars it is missing, the
compiler's complaint, or its exit code and the tail of its standard error.
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from wmviz.sql.jars import (
    HarnessError,
    compile_harness,
    flink_jar_path,
    java_command,
    sql_jar_paths,
    sql_unavailable_reason,
    table_jar_paths,
    unavailable_reason,
)

STDERR_TAIL = 4000
"""How much of a failed JVM's standard error an error message carries."""


def dist_jars() -> list[Path] | None:
    """flink-dist alone: the DataStream runtime (valve, windows, sources, MiniCluster)."""
    jar = flink_jar_path()
    return None if jar is None else [jar]


def table_jars(download: bool = False) -> list[Path] | None:
    """flink-dist and the two table jars (the released SQL operators), or None if any is missing."""
    dist = flink_jar_path(download=download)
    table = table_jar_paths(download=download)
    return [dist, *table] if dist is not None and table is not None else None


def table_unavailable(download: bool = False) -> str | None:
    """Why the table jars' harnesses cannot run here (None if they can)."""
    reason = unavailable_reason(download=download)
    if reason:
        return reason
    if table_jar_paths(download=download) is None:
        return "flink-table-runtime / flink-table-api-java-uber 2.3.0 jars are missing from the cache"
    return None


def sql_jars() -> list[Path] | None:
    """Every jar Flink's SQL planner and runtime need (flink-dist first)."""
    return sql_jar_paths(download=False)


def no_jars() -> list[Path]:
    """No Flink jar: a harness of the JDK's own classes."""
    return []


@dataclass(frozen=True)
class Harness:
    """One Java harness: `name` is what its errors call it."""

    name: str
    sources: tuple[Path, ...]
    main_class: str
    tag: str
    jars: Callable[[], list[Path] | None] = dist_jars
    unavailable: Callable[[], str | None] = unavailable_reason
    bench: bool = False
    """Leave the JIT at its defaults (a benchmark or a long job wants C2, not a fast start)."""

    def command(self, *args: str, jars: Sequence[Path] | None = None) -> list[str]:
        """`java [flags] -cp <jars>:<classes> <main class> ARGS`, compiling the sources the first time
        (or after they changed). `jars` replaces the harness's own (a flink-dist named by a test)."""
        classpath = list(jars) if jars is not None else self.jars()
        if classpath is None:
            raise HarnessError(f"{self.name}: {self.unavailable() or 'the Flink jars are missing'}")
        classes = compile_harness(list(self.sources), self.main_class, classpath, tag=self.tag)
        return [*java_command(self.main_class, classpath, classes, bench=self.bench), *args]

    def run(
        self,
        *args: str,
        stdin: str | bytes | None = None,
        timeout: float | None = 900,
        jars: Sequence[Path] | None = None,
    ) -> subprocess.CompletedProcess:
        """Run to the end on `stdin` (text, or bytes for a binary answer); the finished process.
        A non-zero exit is a HarnessError with the tail of its standard error."""
        text = not isinstance(stdin, bytes)
        proc = subprocess.run(
            self.command(*args, jars=jars),
            input=stdin,
            capture_output=True,
            text=text,
            encoding="utf-8" if text else None,
            timeout=timeout,
        )
        if proc.returncode != 0:
            raise HarnessError(f"{self.name} exited {proc.returncode}:\n{self.stderr_tail(proc)}")
        return proc

    def start(self, *args: str, jars: Sequence[Path] | None = None) -> subprocess.Popen:
        """Start it to be driven a line at a time (text on stdin and stdout; stderr dropped)."""
        return subprocess.Popen(
            self.command(*args, jars=jars),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            encoding="utf-8",
        )

    @staticmethod
    def stderr_tail(proc: subprocess.CompletedProcess) -> str:
        """The end of a finished process's standard error, as text."""
        err = proc.stderr
        if isinstance(err, bytes):
            err = err.decode("utf-8", errors="replace")
        return (err or "")[-STDERR_TAIL:]


__all__ = [
    "Harness",
    "HarnessError",
    "dist_jars",
    "no_jars",
    "sql_jars",
    "sql_unavailable_reason",
    "table_jars",
    "table_unavailable",
]
