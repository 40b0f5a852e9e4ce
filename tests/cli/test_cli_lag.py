"""`wmviz lag`: the table a person reads, `--json`, and every bad input one line with exit 2."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.conftest import REPO
from wmviz import cli

RECORDING = REPO / "sample_data" / "jobs" / "silent-split-holds-the-whole-job.json"


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(["lag", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_table_names_the_total_and_each_cause_largest_first(capsys):
    code, out, err = run(capsys, str(RECORDING))
    assert code == 0 and not err
    lines = out.splitlines()
    assert lines[0] == (
        "at 2026-11-25 19:06:40.000Z: 'Window: revenue -> Sink: warehouse' subtask 0 is 5m 40.001s behind "
        "the wall clock (2026-11-25 19:06:40.000Z); its watermark is 2026-11-25 19:01:30.000Z"
    )
    causes = [line.split()[0] for line in lines[1:-1]]
    assert causes == ["stall", "window", "out-of-orderness"]
    assert "5m 4.999s" in lines[1] and "89.7%" in lines[1] and "measured" in lines[1]
    assert "at Source: orders subtask 2 split orders-5" in lines[1]
    assert "derived" in lines[2] and "derived" in lines[3]
    assert lines[-1] == "  → split 'orders-5' of source 'Source: orders' subtask 2 holds it"


def test_vertex_and_at_choose_the_output_and_the_moment(capsys):
    code, out, _ = run(
        capsys, str(RECORDING), "--vertex", "Join: orders x payments", "--at", "2026-11-25T18:58:20Z"
    )
    assert code == 0
    assert out.startswith("at 2026-11-25 18:58:20.000Z: 'Join: orders x payments' subtask 0 is 1m behind")
    assert "backlog" in out.splitlines()[1] and "Source: payments subtask 1" in out.splitlines()[1]


def test_json_holds_the_parts_that_add_up(capsys):
    code, out, _ = run(capsys, str(RECORDING), "--json")
    body = json.loads(out)
    assert code == 0 and body["reference"] == "wall clock"
    assert sum(p["ms"] for p in body["parts"]) == body["total_ms"] == 340_001
    assert {p["cause"]: p["kind"] for p in body["parts"]} == {
        "window": "derived",
        "out-of-orderness": "derived",
        "stall": "measured",
    }
    assert body["blame"]["chain"][-1]["split"] == "orders-5"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["nope.json"], "error: nope.json: no such file"),
        ([str(REPO)], f"error: {REPO}: is a folder, not a file"),
        ([str(RECORDING), "--at", "abc"], 'error: --at "abc" is not an epoch-ms integer or ISO-8601 time'),
        (
            [str(RECORDING), "--at", "2020-01-01T00:00:00Z"],
            "error: --at 1577836800000 is before the recording's first",
        ),
        ([str(RECORDING), "--vertex", "nope"], "error: --vertex 'nope' matches none of the vertices"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and not out
    assert err.startswith(message) and len(err.strip().splitlines()) == 1


def test_a_bad_config_names_file_and_field_and_exits_2(tmp_path):
    body = json.loads(RECORDING.read_text())
    body["config"]["vertices"]["d4"] = {"operator": {"type": "window", "size_ms": -5}}
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(body))
    proc = subprocess.run([sys.executable, "-m", "wmviz", "lag", str(bad)], capture_output=True, text=True)
    assert proc.returncode == 2 and not proc.stdout and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("error: bad.json: config.vertices.d4: field operator.size_ms")
    assert len(proc.stderr.strip().splitlines()) == 1


def test_the_output_docs_lag_md_quotes_is_what_the_cli_prints(capsys):
    doc = (REPO / "docs" / "lag.md").read_text()
    quoted = doc.split("```text\n", 1)[1].split("```", 1)[0]
    code, out, _ = run(capsys, str(RECORDING))
    assert code == 0 and out == quoted
