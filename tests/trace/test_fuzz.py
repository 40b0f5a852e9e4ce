"""The fuzzer (`bench/fuzz.py`): a seeded slice of the readers finds only accepted inputs and clean
errors; a seeded slice of every newer surface (importers, recorder, blame, sweep, links, what-if
tokens, bundles) reaches both accepted inputs and clean errors on each; and the harness itself can
fail: a planted crash, hang, allocation, bad writer or unreadable output lands in its own class."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest

from tests.support import paths

BENCH = paths.REPO / "bench"
sys.path.insert(0, str(BENCH))

import fuzz  # noqa: E402
from fuzz_inputs import FORMATS, make_input  # noqa: E402

# 2,000 inputs (seed 13: 342 accepted, at least 20 of each format; 1,658 clean errors): 5,000 took 73
# CPU-s of a 30-minute CI run. `bench/fuzz.py --n 100000` is the full run.
SLICE = 2000


def test_a_seeded_slice_of_every_format_is_only_accepted_or_clean_errors(tmp_path):
    options = fuzz.PoolOptions(jobs=2, time_limit=10, memory_mb=2048, out=str(tmp_path))
    summary = fuzz.run_fuzz(SLICE, 13, options)
    assert sum(summary.counts.values()) == SLICE
    assert summary.bad == 0, fuzz.report(summary, str(tmp_path))
    assert summary.counts[fuzz.ACCEPTED] >= SLICE // 10 and summary.counts[fuzz.CLEAN] >= SLICE // 2
    assert set(summary.by_format) == set(FORMATS)
    for counts in summary.by_format.values():
        assert counts[fuzz.ACCEPTED] and counts[fuzz.CLEAN]


def test_an_input_is_a_pure_function_of_seed_and_index():
    assert make_input(7, 123) == make_input(7, 123)
    assert make_input(7, 123) != make_input(8, 123)


def _crashing_reader(path, config_path):
    raise KeyError("planted")


def test_a_planted_crashing_reader_is_classified_as_traceback_and_saved(tmp_path):
    summary = fuzz.run_fuzz(12, 1, fuzz.PoolOptions(out=str(tmp_path), keep=2), reader=_crashing_reader)
    assert summary.counts == {fuzz.TRACEBACK: 12}
    index, detail = summary.examples[fuzz.TRACEBACK][0]
    assert "KeyError: 'planted'" in detail and "_crashing_reader" in detail
    (saved,) = (tmp_path / "traceback").glob(f"*-{index}.txt")
    assert "KeyError" in saved.read_text()
    # the first `keep` of the class, and the first of each distinct signature (one per format here)
    saved_notes = list((tmp_path / "traceback").glob("*.txt"))
    assert len(saved_notes) == len(summary.examples[fuzz.TRACEBACK]) <= 2 + len(summary.signatures)
    assert all(len(indexes) for indexes in summary.signatures.values()) and len(saved_notes) < 12


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
    summary = fuzz.run_fuzz(3, 1, fuzz.PoolOptions(time_limit=0.5, memory_mb=512), reader=reader)
    assert summary.counts == {cls: 3}


def _raising_main(argv):
    raise KeyError("planted")


def _planted_traceback(case, folder):  # a command whose main raises (patched in the test)
    from fuzz_cli import SurfaceCase, run_cli

    return run_cli(SurfaceCase(case.index, case.fmt, (), ("sweep",), ()), folder)


def _planted_hang(case, folder):
    time.sleep(30)


def _planted_allocation(case, folder):
    return bytearray(4 << 30)


def _planted_death(case, folder):
    os._exit(3)


@pytest.mark.parametrize(
    ("runner", "cls"),
    [
        (_planted_traceback, fuzz.TRACEBACK),
        (_planted_hang, fuzz.HANG),
        (_planted_allocation, fuzz.MEMORY),
        (_planted_death, fuzz.CRASH),
    ],
    ids=["traceback", "hang", "memory", "crash"],
)
def test_a_planted_failure_of_a_waiting_target_is_classed_alike_in_the_wait_workers(runner, cls, monkeypatch):
    from fuzz_links import make_url

    monkeypatch.setattr("wmviz.cli.commands.main", _raising_main)  # the workers fork with it
    planted = fuzz.Surface("url", make_url, lambda case, folder: runner(case, folder), waiting=True)
    # Beside it, inputs that need no CPU (a real surface's could pass the 1.5 s wall limit on a
    # loaded machine and blur the counts).
    idle = fuzz.Surface("url", make_url, lambda case, folder: (fuzz.ACCEPTED, ""))
    mixed = fuzz.Mixed((planted, idle))
    got = []
    for wait_jobs in (0, 2):
        options = fuzz.PoolOptions(jobs=1, time_limit=0.5, memory_mb=512, wait_jobs=wait_jobs)
        summary = fuzz.run_pool(mixed, 6, 1, options, waits=fuzz.waits(mixed))
        assert summary.counts[cls] == 3 and summary.bad == 3, fuzz.report(summary, None)
        got.append(summary.counts)
    assert got[0] == got[1]
    assert [fuzz.waits(mixed)(i) for i in range(4)] == [True, False, True, False]


def _shrinking_reader(path, config_path):
    trace = fuzz.default_reader(path, config_path)
    if Path(path).stem == "again" and len(trace.rows) > 1:
        from wmviz.core.scenario import Trace

        return Trace(trace.source, tuple(trace.rows)[:-1], trace.config, trace.valve_channels)
    return trace


def test_a_writer_whose_file_reads_back_differently_is_a_round_trip_failure():
    summary = fuzz.run_fuzz(60, 2, reader=_shrinking_reader)
    assert summary.counts[fuzz.ROUND_TRIP] > 0
    assert set(summary.counts) <= {fuzz.ROUND_TRIP, fuzz.CLEAN, fuzz.ACCEPTED}


# ---- the newer surfaces -------------------------------------------------------------------------

PER_TARGET = 120  # 960 inputs over the eight surfaces: about a minute in two workers on this shared machine


@pytest.fixture(scope="module")
def surfaces_slice(tmp_path_factory):
    out = tmp_path_factory.mktemp("fuzz-surfaces")
    # A 6 s CPU limit (18 s of wall time): at load 20 a 3 s limit classed slow clean inputs as hangs.
    options = fuzz.PoolOptions(jobs=2, time_limit=6, memory_mb=2048, out=str(out), wait_jobs=2)
    summary = fuzz.run_fuzz(PER_TARGET * len(fuzz.NEW_SURFACES), 5, options, targets="new")
    return summary, str(out)


LABELS = [*fuzz.NEW_SURFACES, "prometheus-plan"]


@pytest.mark.parametrize("label", LABELS)
def test_a_seeded_slice_of_each_surface_reaches_accepted_inputs_and_clean_errors(surfaces_slice, label):
    summary, _ = surfaces_slice
    assert summary.done == PER_TARGET * len(fuzz.NEW_SURFACES)
    counts = summary.by_format[label]
    assert counts[fuzz.ACCEPTED] and counts[fuzz.CLEAN], (label, dict(counts))


@pytest.mark.parametrize("label", LABELS)
def test_a_seeded_slice_of_each_surface_finds_no_traceback_hang_or_unreadable_output(surfaces_slice, label):
    summary, out = surfaces_slice
    counts = summary.by_format[label]
    bad = {cls: n for cls, n in counts.items() if cls not in fuzz.GOOD}
    assert not bad, (label, bad, fuzz.report(summary, out))


def test_an_import_that_exits_0_with_a_trace_that_does_not_validate_is_unreadable_output(tmp_path):
    from fuzz_cli import SurfaceCase, run_cli, trace_check

    def forged(path):  # the import wrote its trace; a row of it is then broken
        path.write_text(path.read_text() + '{"kind": "nope"}\n')
        return trace_check(path)

    dump = b"0 0 1795514401247\n0 1 1795514402748\n1 0 1795514402900\n"
    args = ("import", "kafka", "dump.txt", "--parallelism", "2", "--out-of-orderness", "1s", "--topic", "t")
    case = SurfaceCase(0, "kafka", (("dump.txt", dump),), (*args, "--out", "out.jsonl"), ())
    assert run_cli(case, str(tmp_path), trace_check, "out.jsonl") == (fuzz.ACCEPTED, "")
    cls, detail = run_cli(case, str(tmp_path), forged, "out.jsonl")
    assert cls == fuzz.UNREADABLE and "refused" in detail


def test_the_fake_jobmanager_is_reached_only_on_127_0_0_1():
    import subprocess

    code = (
        "import sys, socket; sys.path.insert(0, 'bench'); from fuzz_jobmanager import loopback_only; "
        "loopback_only(); s = socket.socket()\n"
        "try:\n  s.connect(('10.255.255.1', 80))\nexcept PermissionError as e:\n  print('refused', e)\n"
        "try:\n  socket.getaddrinfo('example.com', 80)\nexcept PermissionError as e:\n  print('refused', e)"
    )
    root = BENCH.parent
    done = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=60)
    assert done.stdout.count("refused") == 2, done.stderr
