"""The reader target of the fuzzer: a hostile trace through reader → validation → simulation →
transcript → writers, the way the CLI takes it (`bench/fuzz.py --targets reader`).

An input (`bench/fuzz_inputs.py`) is read with `read_trace`; if accepted, simulated with every
transcript and `explain` line; then the accepted trace written in its own format and as JSON
Lines must read back to the same rows (else "round trip").
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fuzz_inputs import FuzzInput, make_input, seed_docs
from fuzz_pool import ACCEPTED, CLEAN, MEMORY, ROUND_TRIP, TRACEBACK, Outcome, describe

Reader = Callable[[str, str | None], Any]


def default_reader(path: str, config_path: str | None) -> Any:
    from wmviz.trace.readers import read_trace

    return read_trace(path, config_path)


# ---- one input -----------------------------------------------------------------------------------


def _row_key(row: Any, fmt: str) -> tuple[Any, ...]:
    """What a round trip must keep of a row: everything but its row number. Payload values compare
    as the writer's text where the format stores payload as text (CSV, Parquet) or the value is
    not JSON (a Parquet timestamp written to JSON Lines); a CSV `value` compares as its text."""
    from wmviz.trace.payload import payload_text
    from wmviz.trace.writers import _text

    def cell(name: str, value: Any) -> Any:
        if fmt in ("csv", "parquet"):
            return _text(name, value)
        return value if _is_json(value) else payload_text(value)

    payload = tuple((n, cell(n, v)) for n, v in row.payload)
    value = row.value
    if fmt == "csv" and value is not None:
        value = _text("value", value)
    return (row.seq, row.instance, row.input, row.channel, row.kind, row.event_ms, row.watermark_ms,
            row.status, row.proc_ms, row.key, value, payload)  # fmt: skip


def _is_json(value: Any) -> bool:
    import json

    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def _fits_compact(trace: Any) -> bool:
    return all(
        r.kind.value in ("watermark", "status") and r.input == "0" and r.seq is None
        and r.proc_ms is None and not r.payload
        for r in trace.rows
    )  # fmt: skip


def _round_trip(trace: Any, fmt: str, folder: str, reader: Reader) -> str | None:
    """Why the trace written in its own format, or as JSON Lines (what a download offers for any
    upload), does not read back the same (None if both do)."""
    formats = [fmt if fmt != "compact" or _fits_compact(trace) else "jsonl"]
    if formats[0] != "jsonl":
        formats.append("jsonl")
    for out_fmt in formats:
        problem = _write_and_read(trace, out_fmt, folder, reader)
        if problem:
            return f"{fmt} → {out_fmt}: {problem}"[:2000]
    return None


def _write_and_read(trace: Any, out_fmt: str, folder: str, reader: Reader) -> str | None:
    from wmviz.trace.config import parse_config
    from wmviz.trace.config_write import config_to_dict
    from wmviz.trace.writers import write_config, write_trace

    ext = {"csv": ".csv", "jsonl": ".jsonl", "compact": ".jsonl", "parquet": ".parquet"}[out_fmt]
    path = os.path.join(folder, "again" + ext)
    config_path = None
    if out_fmt == "csv":
        config_path = os.path.join(folder, "again-config.json")
        write_config(trace.config, config_path)
        write_trace(trace.rows, path, "csv")
    else:
        write_trace(trace, path, out_fmt)
    again = reader(path, config_path)
    if parse_config(config_to_dict(trace.config), "config") != trace.config or again.config != trace.config:
        return "the config reads back differently"
    if out_fmt == "compact":
        return None  # instances are renamed and regrouped by design (writers.py)
    before = [_row_key(r, out_fmt) for r in trace.rows]
    after = [_row_key(r, out_fmt) for r in again.rows]
    if len(before) != len(after):
        return f"{len(before)} rows became {len(after)}"
    for i, (a, b) in enumerate(zip(before, after, strict=True)):
        if a != b:
            return f"row {i}: {a!r} became {b!r}"
    return None


def _simulate_all(trace: Any) -> None:
    """Every step with its transcript and `explain` line (what those commands print)."""
    from wmviz.core.simulate import simulate
    from wmviz.core.story import explain_line
    from wmviz.timeline.transcript import transcript_line
    from wmviz.view.timefmt import TimeFormat, trace_origin

    with_input = len({r.input for r in trace.rows}) > 1
    operator = not trace.config.valve_only
    times = TimeFormat("utc", origin_ms=trace_origin(trace), short=True)
    for result in simulate(trace, explain=True):
        transcript_line(result, with_input=with_input, operator=operator)
        explain_line(result, times)


def _written_back(trace: Any, fmt: str, folder: str, reader: Reader) -> Outcome:
    """Accepted, or a round-trip failure: the writers' files must read back the same."""
    from wmviz.trace.errors import TraceValidationError

    try:
        problem = _round_trip(trace, fmt, folder, reader)
    except TraceValidationError as err:
        problem = f"the written file is refused: {str(err).splitlines()[0]}"
    except Exception as err:  # a writer that fails on what the reader accepted
        problem = f"the writer failed: {describe(err)}"
    return (ROUND_TRIP, problem) if problem else (ACCEPTED, "")


def write_files(case: Any, folder: str) -> dict[str, str]:
    """The case's files written into `folder`; their paths by name."""
    paths = {}
    for name, data in case.files().items():
        paths[name] = os.path.join(folder, name)
        with open(paths[name], "wb") as f:
            f.write(data)
    return paths


def clear(folder: str) -> None:
    """Empty the scratch folder (files and folders an input left)."""
    import shutil

    for name in os.listdir(folder):
        path = os.path.join(folder, name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path, ignore_errors=True)
        else:
            os.unlink(path)


def run_input(inp: FuzzInput, folder: str, reader: Reader = default_reader) -> Outcome:
    """(class, detail) of one input; `folder` is an empty scratch folder."""
    from wmviz.core.windows import ScenarioError
    from wmviz.trace.errors import TraceValidationError

    paths = write_files(inp, folder)
    path = paths["input" + os.path.splitext(inp.name)[1]]
    try:
        try:
            trace = reader(path, paths.get("config.json"))
            _simulate_all(trace)
        except (TraceValidationError, ScenarioError) as err:
            return CLEAN, str(err).split("\n", 1)[0]
        return _written_back(trace, inp.fmt, folder, reader)
    except MemoryError:
        return MEMORY, "MemoryError"
    except Exception as err:
        return TRACEBACK, describe(err)
    finally:
        clear(folder)


@dataclass
class ReaderTarget:
    """Traces in every format through `reader` (the CLI's `read_trace` unless a test plants one)."""

    reader: Reader = default_reader
    name: str = "reader"

    def make(self, seed: int, index: int) -> FuzzInput:
        return make_input(seed, index, seed_docs())

    def run(self, case: FuzzInput, folder: str) -> Outcome:
        return run_input(case, folder, self.reader)
