"""Every engine on one corpus (`tests/support/corpus.py`): the same timeline for every valid trace, the same
words for every invalid one.

The engine fixture runs `python -m wmviz simulate` in-process with `--engine local` and (marker
`spark`) `--engine spark`; each valid case's timeline must equal the reference built directly by
the library (`read_trace` + `build_timeline_local`), table by table and state by state, and
match the case's known outputs; each invalid case must exit 2 with exactly its expected messages.
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.support.corpus import Case, invalid_cases, valid_cases
from wmviz.cli import commands as cli
from wmviz.timeline.local import build_timeline_local
from wmviz.timeline.recorder import decode_out
from wmviz.timeline.store import Timeline
from wmviz.timeline.tables import TABLES
from wmviz.trace import read_trace

VALID = valid_cases()
INVALID = invalid_cases()


@pytest.fixture(scope="module", params=["local", pytest.param("spark", marks=pytest.mark.spark)])
def engine(request):
    if request.param == "spark":
        request.getfixturevalue("spark")  # one warm session for the module
    return request.param


def simulate(engine: str, case: Case, folder: Path, capsys) -> tuple[int, str, Path]:
    path, config = case.materialize(folder / "in")
    out = folder / "out"
    argv = ["simulate", str(path), "--out", str(out), "--engine", engine, "--keyframe-every", "40"]
    if config is not None:
        argv += ["--config", str(config)]
    code = cli.main(argv)
    return code, capsys.readouterr().err, out


def assert_same_timeline(got: Timeline, want: Timeline) -> None:
    assert got.meta.instances == want.meta.instances
    assert got.meta.valve_channels == want.meta.valve_channels
    assert got.meta_json["rows"] == want.meta_json["rows"]
    for table in TABLES:
        a, b = got.table(table), want.table(table)
        assert (a is None) == (b is None), table
        if a is not None:
            assert a.equals(b), table
    rng = random.Random(0)
    for instance, n in got.meta.instances.items():
        for step in {-1, rng.randrange(n), n - 1}:
            assert (
                got.state_at(instance, step).pipeline.snapshot()
                == want.state_at(instance, step).pipeline.snapshot()
            )


@pytest.mark.parametrize("case", VALID, ids=lambda c: c.name)
def test_a_valid_trace_gives_the_reference_timeline(engine, case, tmp_path, capsys):
    code, err, out = simulate(engine, case, tmp_path, capsys)
    assert code == 0, err
    path, config = case.materialize(tmp_path / "ref-in")
    build_timeline_local(read_trace(path, config), tmp_path / "ref", keyframe_every=40)
    got = Timeline(out)
    assert got.meta.engine == engine
    assert_same_timeline(got, Timeline(tmp_path / "ref"))
    for instance, expected in case.outs.items():
        steps = got.table("steps", instance)
        assert [
            " ".join(f"W{o['wm']}" if "wm" in o else f"S:{o['status']}" for o in decode_out(t))
            for t in steps.column("out_json").to_pylist()
        ] == [_notation(e) for e in expected], instance


def _notation(expected: str) -> str:
    """A conformance `out` with MIN/MAX spelled as the numbers decode_out gives."""
    return expected.replace("WMAX", f"W{2**63 - 1}").replace("WMIN", f"W{-(2**63)}")


@pytest.mark.parametrize("case", INVALID, ids=lambda c: c.name)
def test_an_invalid_trace_exits_2_with_exactly_its_messages(engine, case, tmp_path, capsys):
    code, err, out = simulate(engine, case, tmp_path, capsys)
    assert code == 2, err
    lines = err.splitlines()
    shown = [line for line in lines if ":" in line and not line.startswith(("...", "["))][: len(case.issues)]
    assert tuple(shown) == case.issues
    total = case.total or len(case.issues)
    assert lines[-1] == f"{total:,} error{'s' if total != 1 else ''}; nothing was simulated"
    assert not out.exists()


def test_the_harness_fails_on_a_wrong_expectation(tmp_path, capsys):
    """An expectation off by one word is caught: the comparison is exact."""
    case = INVALID[0]
    wrong = Case(case.name, case.file, case.write, case.config, (case.issues[0].replace("bogus", "bogos"),))
    with pytest.raises(AssertionError):
        test_an_invalid_trace_exits_2_with_exactly_its_messages("local", wrong, tmp_path, capsys)


TRANSCRIPT_CASES = [c for i, c in enumerate(VALID) if i % 3 == 0 or c.name.startswith("seeded")]


@pytest.mark.parametrize("case", TRANSCRIPT_CASES, ids=lambda c: c.name)
def test_a_valid_trace_prints_the_reference_transcript(engine, case, tmp_path, capsys):
    from wmviz.core.simulate import simulate as run
    from wmviz.timeline.transcript import transcript_line

    path, config = case.materialize(tmp_path / "in")
    argv = ["transcript", str(path), "--engine", engine] + (["--config", str(config)] if config else [])
    code = cli.main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    trace = read_trace(path, config)
    with_input = len({r.input for r in trace.rows}) > 1
    operator = not trace.config.valve_only
    want = [transcript_line(r, with_input=with_input, operator=operator) for r in run(trace)]
    assert out.splitlines() == want
