"""`python -m wmviz`: transcript, validate, explain, and the exit-code contract."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, case_id, valve_cases
from wmviz.cli import commands as cli
from wmviz.cli import inputs
from wmviz.core.types import MAX_MS, MIN_MS, Profile
from wmviz.store.incidents import built_in_incidents

CASES = [c for c in valve_cases() if not any("error" in s for s in c["steps"])]


def compact_trace(case: dict, path: Path) -> list[list[str]]:
    """Write a conformance case as a compact valve trace; return the tokens of each case step."""
    lines = [json.dumps({"channels": case["channels"]})]
    for step in case["steps"]:
        for token in step["in"]:
            body, _, ch = token.rpartition("@")
            if body.startswith("W"):
                value = body[1:]
                lines.append(
                    json.dumps({"ch": int(ch), "wm": value if value in ("MAX", "MIN") else int(value)})
                )
            else:
                lines.append(json.dumps({"ch": int(ch), "status": body}))
    path.write_text("\n".join(lines) + "\n")
    return [step["in"] for step in case["steps"]]


def expected_json(item: str) -> dict:
    if item.startswith("S:"):
        return {"status": item[2:]}
    value = item[1:]
    return {"wm": MAX_MS if value == "MAX" else MIN_MS if value == "MIN" else int(value)}


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("profile", list(Profile), ids=lambda p: p.value)
@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_transcript_of_each_conformance_case_as_a_compact_trace_prints_exactly_the_expected_emissions(
    case, profile, tmp_path, capsys
):
    steps = compact_trace(case, tmp_path / "case.jsonl")
    code, out, err = run_cli(capsys, "transcript", str(tmp_path / "case.jsonl"), "--profile", profile.value)
    assert code == 0, err
    records = [json.loads(line) for line in out.splitlines()]
    assert [r["step"] for r in records] == list(range(sum(len(s) for s in steps)))
    assert {r["instance"] for r in records} == {"0"}
    position = 0
    for tokens, step in zip(steps, case["steps"]):
        emitted = [o for r in records[position : position + len(tokens)] for o in r["out"]]
        position += len(tokens)
        assert emitted == [expected_json(i) for i in step["out"][profile.value]], f"{case_id(case)} {tokens}"


def test_transcript_lines_have_exactly_the_spec_keys_and_count_steps_per_instance(tmp_path, capsys):
    trace = tmp_path / "two.jsonl"
    trace.write_text(
        '{"channels": 1}\n{"ch": 0, "wm": 5}\n{"channels": 2}\n{"ch": 1, "wm": "MAX"}\n'
        '{"ch": 0, "status": "idle"}\n'
    )
    code, out, _ = run_cli(capsys, "transcript", str(trace))
    assert code == 0
    assert out.splitlines() == [
        '{"step": 0, "instance": "0", "out": [{"wm": 5}]}',
        '{"step": 0, "instance": "1", "out": []}',
        f'{{"step": 1, "instance": "1", "out": [{{"wm": {MAX_MS}}}]}}',
    ]


def test_validate_reports_a_bad_channel_on_line_3_and_an_unknown_status_on_line_4_and_exits_2(
    tmp_path, capsys
):
    trace = tmp_path / "bad.csv"
    trace.write_text("channel,kind,watermark_ms,status\n0,watermark,5,\n9,watermark,6,\n1,status,,PAUSED\n")
    config = tmp_path / "cfg.json"
    config.write_text('{"channels": {"0": 2}}')
    code, out, err = run_cli(capsys, "validate", str(trace), "--config", str(config))
    assert code == 2
    assert out == ""
    assert "bad.csv:3: column channel:" in err
    assert 'bad.csv:4: column status: "PAUSED" is not one of ACTIVE, IDLE, FINISHED' in err
    assert "2 errors; nothing was simulated" in err


def test_transcript_of_an_invalid_trace_prints_nothing_on_stdout_and_exits_2(tmp_path, capsys):
    trace = tmp_path / "broken.jsonl"
    trace.write_text('{"channels": 2}\n{"ch": 0, "wm": 5}\n{"ch": 0, "wm": \n')
    code, out, err = run_cli(capsys, "transcript", str(trace))
    assert (code, out) == (2, "")
    assert "broken.jsonl:3:" in err and "JSON" in err


def test_validate_of_a_good_trace_prints_one_summary_line_and_exits_0(capsys):
    sample = REPO / "sample_data" / "idle-partition-pins-watermark.csv"
    code, out, err = run_cli(capsys, "validate", str(sample), "--config", str(sample.with_suffix(".json")))
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        "idle-partition-pins-watermark.csv: valid: 12 rows, 2 instances, input 0, "
        "2 channels per valve, profile flink-1.x-2.x"
    ]


def test_explain_narrates_every_step_and_a_single_step_on_request(capsys):
    sample = REPO / "sample_data" / "order-dependent-final-watermark.jsonl"
    code, out, _ = run_cli(capsys, "explain", str(sample))
    assert code == 0
    header = [line for line in out.splitlines() if line.startswith("# ")]
    lines = [line for line in out.splitlines() if not line.startswith("# ")]
    # The answer first; then what the narration rests on: the valve of the released profile is checked.
    assert out.splitlines()[0].startswith("step 0 ") and out.splitlines()[-1] == header[-1]
    assert header == [
        "# checked: valve (profile flink-1.x-2.x): equal to Flink 2.3.0's StatusWatermarkValve on 2,700 "
        "random traces and every conformance case, state compared after every input "
        "(tests/flink/test_flink_differential.py)"
    ]
    assert len(lines) == 9
    assert lines[2].startswith("step 2 W70@2: ") and lines[2].endswith("is 50 → emit W50")
    code, out, _ = run_cli(capsys, "explain", str(sample), "--step", "8", "--profile", "flink-master")
    assert code == 0
    assert out.splitlines()[-1].startswith("# modelled: valve (profiles flink-master, flip-38477)")
    step = out.splitlines()[0]
    assert step.startswith("step 8 IDLE@1: ch1 ACTIVE → IDLE; no ACTIVE channel is left (S1a); flink-master")
    assert step.endswith("emits W100, S:IDLE")


def test_explain_of_a_step_that_does_not_exist_says_how_many_there_are_and_exits_2(capsys):
    sample = REPO / "sample_data" / "order-dependent-final-watermark.jsonl"
    code, _, err = run_cli(capsys, "explain", str(sample), "--step", "99")
    assert code == 2
    assert "there is no step 99: instance 0 has 9 steps" in err


def test_a_missing_file_is_bad_input_with_exit_2(tmp_path, capsys):
    code, _, err = run_cli(capsys, "transcript", str(tmp_path / "nope.csv"))
    assert code == 2 and "no such file" in err


@pytest.mark.parametrize("command", ["explain", "validate", "transcript"])
def test_a_built_in_incidents_name_is_its_packaged_trace_and_config_from_any_folder(
    command, tmp_path, monkeypatch, capsys
):
    # The CSV incident's channel count and instances come from its sibling config, so a name that
    # found the trace but not the config would print something else.
    sample = REPO / "sample_data" / "idle-partition-pins-watermark.csv"
    expected = run_cli(capsys, command, str(sample), "--config", str(sample.with_suffix(".json")))
    monkeypatch.chdir(tmp_path)
    assert run_cli(capsys, command, "idle-partition-pins-watermark") == expected
    assert run_cli(capsys, command, "idle-partition-pins-watermark.csv") == expected
    assert expected[0] == 0


def test_simulate_takes_a_built_in_incidents_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, out, err = run_cli(capsys, "simulate", "early-fire-left-join", "--out", "timeline")
    assert code == 0, err
    assert out.startswith("timeline: timeline of ") and (tmp_path / "timeline" / "meta.json").is_file()


def test_a_file_of_the_same_name_wins_over_the_built_in_incident(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    row = {"kind": "watermark", "channel": 0, "watermark_ms": 5}
    (tmp_path / "flink-38477-zero-output.jsonl").write_text(json.dumps(row) + "\n")
    code, out, _ = run_cli(capsys, "validate", "flink-38477-zero-output.jsonl")
    assert code == 0 and "valid: 1 row," in out


def test_a_missing_path_to_a_built_in_incident_says_how_to_name_it(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "explain", "sample_data/flink-38477-zero-output.jsonl")
    assert code == 2
    assert err == (
        "error: sample_data/flink-38477-zero-output.jsonl: no such file "
        "(to use the built-in incident, name it alone: flink-38477-zero-output)\n"
    )
    # A bare name that is no file and no incident: the built-in names to choose from, in reading order.
    code, _, err = run_cli(capsys, "explain", "no-such-incident")
    assert (code, err) == (
        2,
        "error: no-such-incident: no such file, and no built-in incident has that name; the built-in "
        f"ones are: {', '.join(built_in_incidents())}\n",
    )
    assert err.index("flink-38477-zero-output") < err.index("early-fire-left-join")
    code, _, err = run_cli(capsys, "explain", "no-such.csv")  # a file name: a file was meant
    assert (code, err) == (2, "error: no-such.csv: no such file\n")


def test_the_app_without_its_extra_is_one_line_naming_the_extra_and_exit_2(monkeypatch, capsys):
    def no_exec(*_args):
        raise AssertionError("streamlit must not be started")

    monkeypatch.setattr(cli.os, "execv", no_exec)
    monkeypatch.setitem(sys.modules, "streamlit", None)  # what an install without [app] has
    code, out, err = run_cli(capsys, "app")
    assert (code, out) == (2, "")
    assert err == 'error: the app needs streamlit, not installed here: pip install "wmviz[app]"\n'
    monkeypatch.setitem(sys.modules, "pyspark", None)
    code, _, err = run_cli(capsys, "app")
    assert code == 2 and "needs streamlit, pyspark, not installed here" in err


def test_the_app_passes_streamlit_s_options_on_with_or_without_a_double_dash(monkeypatch, capsys):
    started: list[list[str]] = []

    def exec_streamlit(_python, command):
        started.append(command)
        raise SystemExit(0)  # where the real execv never returns

    monkeypatch.setattr(cli.os, "execv", exec_streamlit)
    for argv in (["app", "--server.port", "8599"], ["app", "--", "--server.port", "8599"]):
        with pytest.raises(SystemExit):
            run_cli(capsys, *argv)
        command = started.pop()
        assert command[1:3] == ["-m", "wmviz.ui.launch"] and command[3:] == ["--server.port", "8599"], argv
    with pytest.raises(SystemExit):
        run_cli(capsys, "app")
    assert started.pop()[3:] == []
    # Any other command still refuses what it does not know, as a usage error.
    with pytest.raises(SystemExit) as usage:
        run_cli(capsys, "validate", "flink-38477-zero-output", "--server.port", "8599")
    assert usage.value.code == 2 and "unrecognized arguments: --server.port 8599" in capsys.readouterr().err


def test_the_usage_names_the_command_a_person_types():
    result = subprocess.run(
        [sys.executable, "-m", "wmviz", "--help"], capture_output=True, text=True, cwd=REPO
    )
    assert result.returncode == 0 and result.stdout.startswith("usage: wmviz ")
    result = subprocess.run(
        [sys.executable, "-m", "wmviz", "app", "--help"], capture_output=True, text=True, cwd=REPO
    )
    assert result.returncode == 0 and "wmviz app --server.port 8599" in " ".join(result.stdout.split())


def test_an_internal_error_exits_1_with_a_message_and_no_traceback_unless_debug(monkeypatch, capsys):
    def boom(*_args, **_kwargs):
        raise RuntimeError("kaboom")

    monkeypatch.setattr(cli, "simulate", boom)
    sample = str(REPO / "sample_data" / "flink-38477-zero-output.jsonl")
    code, _, err = run_cli(capsys, "transcript", sample)
    assert code == 1
    assert "internal error: RuntimeError: kaboom" in err and "Traceback" not in err
    code, _, err = run_cli(capsys, "--debug", "transcript", sample)
    assert code == 1 and "Traceback" in err


def test_usage_errors_exit_2_through_the_real_module_entry_point():
    for argv in ([], ["transcript"], ["transcript", "x.csv", "--profile", "flink-9"], ["frobnicate"]):
        result = subprocess.run(
            [sys.executable, "-m", "wmviz", *argv], capture_output=True, text=True, cwd=REPO
        )
        assert result.returncode == 2, argv
        assert "usage:" in result.stderr


def test_module_entry_point_prints_the_transcript_of_the_flink_38477_incident():
    sample = REPO / "sample_data" / "flink-38477-zero-output.jsonl"
    result = subprocess.run(
        [sys.executable, "-m", "wmviz", "transcript", str(sample)],
        capture_output=True,
        text=True,
        cwd=REPO,
        check=True,
    )
    last = json.loads(result.stdout.splitlines()[-1])
    assert last == {"step": 7, "instance": "0", "out": [{"wm": MAX_MS}]}


# --- simulate --out: only into an empty folder or a timeline wmviz wrote ------------------------------

SAMPLE = REPO / "sample_data" / "early-fire-left-join.jsonl"


def test_simulate_writes_a_marked_timeline_and_says_what_it_wrote(tmp_path, capsys):
    from wmviz.timeline.outdir import MARKER
    from wmviz.timeline.store import Timeline

    code, out, err = run_cli(capsys, "simulate", str(SAMPLE), "--out", str(tmp_path / "tl"))
    assert code == 0, err
    assert "timeline of 10 steps over 1 instance (local engine" in out
    assert "[local] simulate: 10/10 rows (100%)" in err
    assert Timeline(tmp_path / "tl").meta.instances == {"0": 10}
    assert (tmp_path / "tl" / MARKER).is_file()
    code, _, err = run_cli(capsys, "simulate", str(SAMPLE), "--out", str(tmp_path / "tl"))
    assert code == 0, err  # its own timeline is replaced


def test_simulate_never_touches_a_folder_it_did_not_write(tmp_path, capsys):
    precious = tmp_path / "src"
    precious.mkdir()
    (precious / "notes.txt").write_text("keep me")
    (precious / "meta.json").write_text("{}")  # looking like a timeline is not enough
    code, _, err = run_cli(capsys, "simulate", str(SAMPLE), "--out", str(precious))
    assert code == 2 and "not a timeline wmviz wrote" in err
    assert sorted(p.name for p in precious.iterdir()) == ["meta.json", "notes.txt"]


def test_simulate_refuses_a_wmviz_timeline_that_someone_added_files_to(tmp_path, capsys):
    out = tmp_path / "tl"
    assert run_cli(capsys, "simulate", str(SAMPLE), "--out", str(out))[0] == 0
    (out / "notes.txt").write_text("mine")
    code, _, err = run_cli(capsys, "simulate", str(SAMPLE), "--out", str(out))
    assert code == 2 and "holds files wmviz did not write (notes.txt)" in err
    assert (out / "notes.txt").read_text() == "mine" and (out / "meta.json").is_file()


def test_simulate_to_a_file_exits_2_and_leaves_it(tmp_path, capsys):
    target = tmp_path / "out.txt"
    target.write_text("data")
    code, _, err = run_cli(capsys, "simulate", str(SAMPLE), "--out", str(target))
    assert code == 2 and "is a file, not a folder" in err
    assert target.read_text() == "data"


def test_an_invalid_trace_leaves_an_earlier_timeline_as_it_was(tmp_path, capsys):
    out = tmp_path / "tl"
    assert run_cli(capsys, "simulate", str(SAMPLE), "--out", str(out))[0] == 0
    before = sorted(p.relative_to(out) for p in out.rglob("*"))
    bad = tmp_path / "bad.csv"
    bad.write_text("kind,channel\nbogus,0\n")
    assert run_cli(capsys, "simulate", str(bad), "--out", str(out))[0] == 2
    assert sorted(p.relative_to(out) for p in out.rglob("*")) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".tl.wmviz-")]


# --- exit codes for what the operating system says --------------------------------------------------


def test_a_folder_or_an_unreadable_file_is_bad_input_with_exit_2(tmp_path, capsys, monkeypatch):
    code, _, err = run_cli(capsys, "validate", str(tmp_path))
    assert code == 2 and "is a folder, not a file" in err
    locked = tmp_path / "locked.csv"
    locked.write_text("kind\n")

    def refused(path, *args, **kwargs):
        raise PermissionError(13, "Permission denied", str(path))

    # Tests run as root in CI, where chmod 000 would not stop a read: refuse the open instead.
    monkeypatch.setattr(inputs, "open", refused, raising=False)
    code, _, err = run_cli(capsys, "validate", str(locked))
    assert code == 2 and f"{locked}: cannot be read (Permission denied)" in err


def test_ctrl_c_exits_130_with_one_line(monkeypatch, capsys):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "cmd_validate", interrupted)
    code, _, err = run_cli(capsys, "validate", str(SAMPLE))
    assert code == 130 and err == "interrupted\n"


def test_a_closed_stdout_exits_2_with_a_message():
    result = subprocess.run(
        [sys.executable, "-m", "wmviz", "transcript", str(SAMPLE)],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        check=False,
        preexec_fn=lambda: os.close(1),
    )
    assert result.returncode == 2 and "standard output is closed" in result.stderr


def _interrupt_when(tmp_path: Path, ready) -> subprocess.CompletedProcess[str]:
    """Run a long transcript as a real process and send it SIGINT once `ready(process)` holds."""
    import signal
    import time

    trace = tmp_path / "long.jsonl"
    rows = (json.dumps({"kind": "watermark", "channel": i % 4, "watermark_ms": i}) for i in range(50_000))
    trace.write_text("\n".join(rows) + "\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "wmviz", "transcript", str(trace)],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal's Ctrl-C
    )
    deadline = time.monotonic() + 60
    while not ready(process) and time.monotonic() < deadline:
        time.sleep(0.01)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    return subprocess.CompletedProcess(process.args, process.returncode, out, err)


def test_a_real_ctrl_c_while_the_cli_still_imports_is_one_line_and_exit_130(tmp_path):
    def arrow_loading(process) -> bool:  # Arrow is first loaded by importing the CLI
        maps = Path(f"/proc/{process.pid}/maps")
        return maps.exists() and "libarrow" in maps.read_text()

    result = _interrupt_when(tmp_path, arrow_loading)
    assert (result.returncode, result.stderr) == (130, "interrupted\n")


def test_a_real_ctrl_c_in_the_middle_of_a_transcript_is_one_line_and_exit_130(tmp_path):
    result = _interrupt_when(tmp_path, lambda process: bool(process.stdout.readline()))
    assert (result.returncode, result.stderr) == (130, "interrupted\n")
