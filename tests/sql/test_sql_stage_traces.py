"""Operators in series in the late-row ledger (issue 29): `wmviz sql replay --stage-traces DIR`
writes, for each operator fed by another SQL operator, the trace it ran (the rows and watermarks the
operator before it sent), and `wmviz late` on that trace names the operator and rule for every row
it dropped, as many as the replay's drop lines count for it. No JVM: the rows are the ones the
differential suite runs for real (`tests/flink/test_sql_chain_flink.py`), where the second
operators do drop late rows."""

from __future__ import annotations

import json
from collections import Counter

from tests.flink.test_sql_chain_flink import SCRIPT, all_rows
from tests.support import paths
from wmviz.cli import main

PLAN = paths.DATA / "sql" / f"{SCRIPT}.plan.json"


def replay(tmp_path, capsys) -> tuple[list[dict], dict[str, list[dict]]]:
    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(line) + "\n" for line in all_rows()))
    stages = tmp_path / "stages"
    assert main(["sql", "replay", str(PLAN), str(rows), "--json", "--stage-traces", str(stages)]) == 0
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]
    ledgers = {}
    for trace in sorted(stages.glob("stage-*.jsonl")):
        assert main(["late", str(trace), "--json"]) == 0
        ledgers[trace.name] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    return lines, ledgers


def test_every_late_row_of_an_operator_in_series_is_in_its_ledger(tmp_path, capsys):
    lines, ledgers = replay(tmp_path, capsys)
    drops = Counter()
    for line in lines:
        if "metric" in line:
            drops[line["operator"]] += line["delta"]
    in_ledgers = Counter()
    for ledger in ledgers.values():
        for row in ledger:
            if row["fate"] == "dropped" and row["metric"] == "numLateRecordsDropped":
                assert row["rule"] and row["why"], row
                in_ledgers[row["instance"]] += 1
    stage_names = {row["instance"] for ledger in ledgers.values() for row in ledger}
    assert len(ledgers) == 4 and len(stage_names) == 4  # the four chains' second operators
    from_stages = {name: count for name, count in drops.items() if name in stage_names}
    assert from_stages, "the rows should make a second operator drop late rows"
    assert in_ledgers == Counter(from_stages)


def test_a_job_without_operators_in_series_says_so(tmp_path, capsys):
    plan = paths.DATA / "sql" / "win_tumble.plan.json"
    rows = tmp_path / "rows.jsonl"
    rows.write_text("")
    stages = tmp_path / "stages"
    code = main(["sql", "replay", str(plan), str(rows), "--stage-traces", str(stages)])
    out = capsys.readouterr().out
    assert code == 0 and "no operator in series" in out and not stages.exists()
