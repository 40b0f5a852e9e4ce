"""The fuzzer (`bench/fuzz.py`): a seeded slice finds only accepted inputs and clean errors, and the
harness itself can fail: a planted crash, hang, allocation or bad writer lands in its own class."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "bench"
sys.path.insert(0, str(BENCH))

import fuzz  # noqa: E402
from fuzz_inputs import FORMATS, make_input  # noqa: E402

SLICE = 2000  # ~40 s on one core; `python bench/fuzz.py --n 100000` is the full run


def test_a_seeded_slice_of_every_format_is_only_accepted_or_clean_errors(tmp_path):
    summary = fuzz.run_fuzz(SLICE, seed=13, jobs=1, time_limit=10, memory_mb=2048, out=str(tmp_path))
    assert sum(summary.counts.values()) == SLICE
    assert summary.bad == 0, fuzz.report(summary, str(tmp_path))
    assert summary.counts[fuzz.ACCEPTED] >= SLICE // 20 and summary.counts[fuzz.CLEAN] >= SLICE // 2
    assert set(summary.by_format) == set(FORMATS)
    for counts in summary.by_format.values():
        assert counts[fuzz.ACCEPTED] and counts[fuzz.CLEAN]


def test_an_input_is_a_pure_function_of_seed_and_index():
    assert make_input(7, 123) == make_input(7, 123)
    assert make_input(7, 123) != make_input(8, 123)


def _crashing_reader(path, config_path):
    raise KeyError("planted")


def test_a_planted_crashing_reader_is_classified_as_traceback_and_saved(tmp_path):
    summary = fuzz.run_fuzz(12, seed=1, reader=_crashing_reader, out=str(tmp_path), keep=2)
    assert summary.counts == {fuzz.TRACEBACK: 12}
    index, detail = summary.examples[fuzz.TRACEBACK][0]
    assert "KeyError: 'planted'" in detail and "_crashing_reader" in detail
    saved = tmp_path / "traceback" / f"input-{index}.txt"
    assert "KeyError" in saved.read_text()
    assert len(list((tmp_path / "traceback").glob("*.txt"))) == 2


def _sleeping_reader(path, config_path):
    time.sleep(30)


def _allocating_reader(path, config_path):
    return bytearray(4 << 30)


def _dying_reader(path, config_path):
    os._exit(3)  # the worker ends without an answer, as a crash in native code would


@pytest.mark.parametrize(
    ("reader", "cls"),
    [(_sleeping_reader, fuzz.HANG), (_allocating_reader, fuzz.MEMORY), (_dying_reader, fuzz.CRASH)],
    ids=["hang", "memory", "crash"],
)
def test_a_planted_hang_allocation_or_crash_is_its_own_class_and_the_run_goes_on(reader, cls):
    summary = fuzz.run_fuzz(3, seed=1, reader=reader, time_limit=0.5, memory_mb=512)
    assert summary.counts == {cls: 3}


def _shrinking_reader(path, config_path):
    trace = fuzz.default_reader(path, config_path)
    if Path(path).stem == "again" and len(trace.rows) > 1:
        from wmviz.core.scenario import Trace

        return Trace(trace.source, tuple(trace.rows)[:-1], trace.config, trace.valve_channels)
    return trace


def test_a_writer_whose_file_reads_back_differently_is_a_round_trip_failure():
    summary = fuzz.run_fuzz(60, seed=2, reader=_shrinking_reader)
    assert summary.counts[fuzz.ROUND_TRIP] > 0
    assert set(summary.counts) <= {fuzz.ROUND_TRIP, fuzz.CLEAN, fuzz.ACCEPTED}
