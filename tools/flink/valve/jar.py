"""Compile the valve harness against the Flink 2.3.0 distribution jar and drive the real valve.

Finding, fetching and compiling against the jars is `wmviz.sql.jars` (shared with the SQL
planner); its names are re-exported here. `--download` fetches every jar the tests and the SQL
planner need (flink-dist, the table jars, the planner loader) from one wheel.
"""

from __future__ import annotations

import argparse
import dataclasses
import re
import sys
import tempfile
from array import array
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from tools.flink.launcher import Harness
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
from wmviz.sql.jars import (
    FLINK_VERSION,
    JAR_ENV,
    JAR_NAME,
    PLANNER_JAR_NAME,
    SQL_JAR_NAMES,
    TABLE_JAR_NAMES,
    WHEEL_REQUIREMENT,
    HarnessError,
    cache_dir,
    compile_harness,
    flink_jar_path,
    java_command,
    java_tools,
    sql_jar_paths,
    table_jar_paths,
    unavailable_reason,
)

# The jar helpers live in wmviz/sql/jars.py (one implementation, shared with the SQL planner); the
# names above stay importable from here for the tools and tests that use them.
__all__ = [
    "FLINK_VERSION",
    "JAR_ENV",
    "JAR_NAME",
    "PLANNER_JAR_NAME",
    "SQL_JAR_NAMES",
    "TABLE_JAR_NAMES",
    "WHEEL_REQUIREMENT",
    "HarnessError",
    "cache_dir",
    "compile_harness",
    "flink_jar_path",
    "java_command",
    "java_tools",
    "sql_jar_paths",
    "table_jar_paths",
    "unavailable_reason",
]

HARNESS_CLASS = "org.apache.flink.streaming.runtime.watermarkstatus.WmvizValveHarness"
HARNESS_SOURCE = Path(__file__).with_name("WmvizValveHarness.java")
VALVE = Harness("the valve harness", (HARNESS_SOURCE,), HARNESS_CLASS, tag="")
VALVE_BENCH = dataclasses.replace(VALVE, bench=True)


def compiled_harness(jar: Path | None = None, bench: bool = False) -> list[str]:
    """The command prefix that runs the compiled valve harness: `java [flags] -cp <jar>:<classes> <class>`.

    Compiles `WmvizValveHarness.java` against the jar the first time (or after the source
    changed). `bench` leaves the JIT at its defaults, since the benchmark wants C2, not a fast
    start.
    """
    return (VALVE_BENCH if bench else VALVE).command(jars=None if jar is None else [jar])


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
    proc = VALVE.run(stdin="\n".join(lines) + "\n", timeout=timeout, jars=None if jar is None else [jar])
    replies = proc.stdout.splitlines()
    if len(replies) != len(lines):
        raise HarnessError(
            f"the valve harness answered {len(replies)} of {len(lines)} lines:\n{VALVE.stderr_tail(proc)}"
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
        jars = None if jar is None else [jar]
        proc = VALVE_BENCH.run("bench", str(path), str(warmup), str(rounds), timeout=None, jars=jars)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("bench ")), None)
    if line is None:
        raise HarnessError(f"no bench line in harness output:\n{proc.stdout}")
    return dict(re.findall(r"(\w+)=(\S+)", line))


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m tools.flink.valve.jar [--download]`: report (or fetch) the jar and compile the harness."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--download", action="store_true", help=f"fetch {WHEEL_REQUIREMENT} if missing")
    args = parser.parse_args(argv)
    jar = flink_jar_path(download=args.download)
    sql_jar_paths(download=args.download)  # the table and planner jars, from the same wheel
    reason = unavailable_reason()
    if jar is None or reason:
        print(f"unavailable: {reason}", file=sys.stderr)
        return 1
    print(f"jar: {jar}")
    print("harness: " + " ".join(compiled_harness(jar)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
