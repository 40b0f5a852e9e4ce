"""`simulate` and `--engine spark|local` on the command line (issue 4)."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow.parquet as pq

from tests.conftest import REPO
from wmviz import cli
from wmviz.timeline.store import Timeline

sys.path.insert(0, str(REPO / "bench"))
from gen_trace import generate_table


def run_cli(capsys, *argv) -> tuple[int, str, str]:
    code = cli.main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def generated(tmp_path: Path, rows: int = 3000, instances: int = 40) -> tuple[Path, Path]:
    trace = tmp_path / "gen.parquet"
    pq.write_table(generate_table(rows, instances, 8, seed=4), trace)
    config = tmp_path / "gen.json"
    config.write_text('{"channels": {"0": 8}}')
    return trace, config


def test_simulate_local_writes_a_timeline_and_says_what_it_wrote(tmp_path, capsys):
    code, out, err = run_cli(
        capsys, "simulate", REPO / "sample_data" / "early-fire-left-join.jsonl", "--out", tmp_path / "tl"
    )
    assert code == 0, err
    assert "timeline of 10 steps over 1 instance (local engine" in out
    assert "[local] simulate: 10/10 rows (100%)" in err
    assert Timeline(tmp_path / "tl").meta["instances"] == {"0": 10}


def test_simulate_refuses_to_overwrite_a_directory_that_is_not_a_timeline(tmp_path, capsys):
    (tmp_path / "precious").mkdir()
    (tmp_path / "precious" / "notes.txt").write_text("keep me")
    code, _, err = run_cli(
        capsys,
        "simulate",
        REPO / "sample_data" / "early-fire-left-join.jsonl",
        "--out",
        tmp_path / "precious",
    )
    assert code == 2 and "not a wmviz timeline" in err
    assert (tmp_path / "precious" / "notes.txt").read_text() == "keep me"


def test_spark_and_local_engines_print_identical_transcripts_on_a_generated_multi_instance_trace(
    spark, tmp_path, capsys
):
    trace, config = generated(tmp_path)
    code_l, local, err_l = run_cli(capsys, "transcript", trace, "--config", config, "--engine", "local")
    code_s, remote, err_s = run_cli(capsys, "transcript", trace, "--config", config, "--engine", "spark")
    assert (code_l, code_s) == (0, 0), err_l + err_s
    assert remote.splitlines() == local.splitlines()
    assert len(local.splitlines()) == 3000


def test_spark_simulate_writes_the_same_steps_as_local(spark, tmp_path, capsys):
    trace, config = generated(tmp_path, rows=1500, instances=12)
    for engine in ("local", "spark"):
        code, _, err = run_cli(
            capsys,
            "simulate",
            trace,
            "--config",
            config,
            "--engine",
            engine,
            "--out",
            tmp_path / engine,
            "--keyframe-every",
            "50",
        )
        assert code == 0, err
    local, remote = Timeline(tmp_path / "local"), Timeline(tmp_path / "spark")
    assert remote.meta["instances"] == local.meta["instances"]
    assert remote.table("steps").to_pylist() == local.table("steps").to_pylist()


def test_a_bad_trace_through_the_spark_engine_gives_the_local_messages_and_exit_2(spark, tmp_path, capsys):
    trace = tmp_path / "bad.csv"
    trace.write_text("channel,kind,watermark_ms,status\n0,watermark,5,\n9,watermark,6,\n1,status,,PAUSED\n")
    config = tmp_path / "cfg.json"
    config.write_text('{"channels": {"0": 2}}')
    code_l, out_l, err_l = run_cli(capsys, "transcript", trace, "--config", config)
    code_s, out_s, err_s = run_cli(capsys, "transcript", trace, "--config", config, "--engine", "spark")
    assert (code_l, code_s) == (2, 2)
    assert (out_l, out_s) == ("", "")
    assert err_s == err_l
    assert "bad.csv:3: column channel:" in err_s and "bad.csv:4: column status:" in err_s
