"""Issue 33's fuzz round (bench/fuzz.py --targets newest): each finding as its smallest input, run
through the command line, ending in one clean line naming file, line and field (exit 2). The
hand attack beside the round (what the fuzz does not reach: `--stage-traces`, `lag --vertex`, the
cost of a rows file's partitions, a MATCH_RECOGNIZE or a window join of one key, a long plan) is
here too; a budget is set low through its `WMVIZ_*` setting so the test stays fast."""

from __future__ import annotations

import json
import shutil

from tests.support import paths
from wmviz.cli.commands import main

DATA = paths.DATA / "sql"


def _run(capsys, *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().err


def test_an_appended_recordings_header_whose_notes_are_not_a_list_is_exit_2(tmp_path, capsys):
    # recording-lines #0: `"notes": 5` in the header line was TypeError in job_lines (exit 1).
    header = {"format": "wmviz-job/1", "layout": "lines", "notes": 5, "vertices": [], "edges": []}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(header) + "\n")
    code, err = _run(capsys, "lag", str(path))
    assert code == 2
    assert "r.json: line 1: `notes` 5 is not a list" in err


def test_a_proc_ms_going_back_in_a_rows_file_is_exit_2_not_an_unreadable_trace(tmp_path, capsys):
    # sqlreplay #44: a row's proc_ms before the clock so far: `--trace-out` wrote a trace that
    # `validate` refused (proc_ms decreasing); the replay now refuses the rows file's line.
    rows = [json.loads(line) for line in (DATA / "window_rank.rows.jsonl").read_text().splitlines()]
    rows[2]["proc_ms"] = 5_000
    rows[4]["proc_ms"] = 10
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    shutil.copy(DATA / "window_rank.plan.json", tmp_path / "plan.json")
    code, err = _run(
        capsys, "sql", "replay", str(tmp_path / "plan.json"), str(tmp_path / "rows.jsonl"),
        "--trace-out", str(tmp_path / "t.jsonl"),
    )  # fmt: skip
    assert code == 2
    assert "rows.jsonl, line 5, field 'proc_ms': 10 is before the processing clock's 5200 ms" in err
    assert not (tmp_path / "t.jsonl").exists()


def test_a_processing_clock_at_the_largest_time_is_exit_2(tmp_path, capsys):
    rows = [json.loads(line) for line in (DATA / "window_rank.rows.jsonl").read_text().splitlines()]
    rows[0]["proc_ms"] = 2**63 - 1
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, err = _run(
        capsys, "sql", "replay", str(DATA / "window_rank.plan.json"), str(tmp_path / "rows.jsonl")
    )
    assert code == 2
    assert (
        "rows.jsonl, line 2: the processing clock (9223372036854775807 ms) plus one watermark interval" in err
    )


def test_a_partition_count_in_superscript_digits_is_exit_2(capsys):
    # plan #1939: `--partitions orders=²` passed str.isdigit and int() raised ValueError (exit 1).
    plan = str(DATA / "orders_payments_window.plan.json")
    code, err = _run(capsys, "plan", plan, "--partitions", "orders=²")
    assert code == 2
    assert "--partitions 'orders=²': expected TABLE=N with N a whole number of at least 1" in err


def test_a_row_an_sql_operator_cannot_take_names_the_rows_files_line_and_field(tmp_path, capsys):
    # sqlreplay #344: a text under SUM is the operator's ScenarioError, which the command line
    # told as a trace's row (`args.trace`): AttributeError (exit 1).
    text = (DATA / "orders_payments_window.rows.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in text]
    at = next(i for i, r in enumerate(rows) if "refunded" in r.get("row", {}))
    rows[at]["row"]["refunded"] = "0000-01-01 00:00:00"
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    plan = str(DATA / "orders_payments_window.plan.json")
    code, err = _run(capsys, "sql", "replay", plan, str(tmp_path / "rows.jsonl"))
    assert code == 2
    said = f"rows.jsonl, line {at + 1}, field 'refunded': '0000-01-01 00:00:00' is not a number"
    assert said in err


def test_a_text_among_numbers_under_a_window_topns_order_by_names_its_line_and_field(tmp_path, capsys):
    # sqlreplay #7880 (the 100,000-input round, seed 1): a price of text among numbers reached
    # Python's `<` in the Window TopN's sort: TypeError (exit 1).
    rows = [json.loads(line) for line in (DATA / "window_rank.rows.jsonl").read_text().splitlines()]
    rows[8]["row"]["price"] = "+292278994-08-17 07:12:55.807"
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    plan = str(DATA / "window_rank.plan.json")
    code, err = _run(capsys, "sql", "replay", plan, str(tmp_path / "rows.jsonl"))
    assert code == 2
    assert "rows.jsonl, line 9, field 'price': '+292278994-08-17 07:12:55.807' cannot be ordered" in err


# ---- by hand: `sql replay --stage-traces DIR` with a hostile DIR ------------------------------------


def _stage_replay(tmp_path, capsys, stages) -> tuple[int, str, str]:
    from tests.flink.test_sql_chain_flink import SCRIPT, all_rows

    rows = tmp_path / "rows.jsonl"
    rows.write_text("".join(json.dumps(line) + "\n" for line in all_rows()))
    plan = str(DATA / f"{SCRIPT}.plan.json")
    code = main(["sql", "replay", plan, str(rows), "--stage-traces", str(stages)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_a_stage_traces_folder_that_cannot_be_made_is_exit_2_naming_the_option(tmp_path, capsys):
    # Under a file, a link to nowhere, a name past the system's limit: mkdir's or stat's OSError
    # reached main (internal error, exit 1).
    (tmp_path / "afile").write_text("x")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    cases = {
        tmp_path / "afile" / "sub": "cannot make the folder: Not a directory",
        tmp_path / "dangling": "cannot make the folder: File exists",
        tmp_path / ("x" * 300): "cannot make the folder: File name too long",
    }
    for stages, said in cases.items():
        code, _, err = _stage_replay(tmp_path, capsys, stages)
        assert code == 2, err
        assert f"--stage-traces {stages}: {said}" in err


def test_a_stage_trace_that_is_a_link_to_an_input_refuses_before_writing_any(tmp_path, capsys):
    # A stage file linked to the rows file was refused, but only after the stages before it were
    # written: every stage file is checked first now.
    stages = tmp_path / "stages"
    stages.mkdir()
    (stages / "stage-19.jsonl").symlink_to(tmp_path / "rows.jsonl")
    code, out, err = _stage_replay(tmp_path, capsys, stages)
    assert code == 2
    assert "stage-19.jsonl holds the rows" in err
    assert "wrote" not in out
    assert sorted(p.name for p in stages.iterdir()) == ["stage-19.jsonl"]


# ---- by hand: `wmviz lag --vertex` --------------------------------------------------------------


def test_a_vertex_that_matches_none_is_told_in_a_line_of_bounded_length(tmp_path, capsys):
    # `--vertex` of 1 MB was echoed whole, and a job of 5,000 vertices listed every name: a
    # one-line error of megabytes.
    sample = paths.REPO / "sample_data" / "jobs" / "silent-split-holds-the-whole-job.json"
    body = json.loads(sample.read_text())
    one = body["vertices"][0]
    body["vertices"] += [{**one, "id": f"v{i}", "name": f"Map {i} " + "m" * 200} for i in range(5_000)]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(body))
    code, err = _run(capsys, "lag", str(path), "--vertex", "x" * 1_000_000)
    assert code == 2
    assert err.startswith("error: --vertex 'xxxxxxxx") and "…" in err
    assert "matches none of the vertices: ['Join: orders x payments'" in err
    assert "and 4,984 more" in err
    assert len(err) < 6_000


# ---- by hand: `sql replay` rows files: the replay's cost bounded --------------------------------


def test_partitions_times_lines_past_the_replay_budget_is_exit_2_naming_the_partitions_line(
    tmp_path, capsys, monkeypatch
):
    # sqlreplay #18266 (a "hang" at load 20: 4,096 partitions × 110 lines, 3.5 CPU-s): the replay
    # looks at every split at every step and `--out` records each. 4,096 partitions × 1,000 lines
    # (60 KB) took 50 CPU-s and 2.6 GB and wrote a 160 MB recording. The budget here is 40,000.
    monkeypatch.setenv("WMVIZ_MAX_REPLAY_SPLIT_STEPS", "40000")
    plan = str(DATA / "window_rank.plan.json")
    rows = [json.loads(line) for line in (DATA / "window_rank.rows.jsonl").read_text().splitlines()]
    table = rows[0]["table"]
    lines = [{"table": table, "partitions": 4096}, *(rows * (100 // len(rows) + 1))[:100]]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    code, err = _run(
        capsys, "sql", "replay", plan, str(tmp_path / "rows.jsonl"), "--out", str(tmp_path / "j.json")
    )
    assert code == 2
    assert (
        "rows.jsonl, line 1, field 'partitions': 4,096 partitions over 101 lines are 413,696 split-steps, "
        "more than a replay computes: 40,000 (WMVIZ_MAX_REPLAY_SPLIT_STEPS)"
    ) in err
    assert not (tmp_path / "j.json").exists()
    lines[0]["partitions"] = 300  # 30,300: within the budget, replayed
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    assert _run(capsys, "sql", "replay", plan, str(tmp_path / "rows.jsonl"))[0] == 0


def _falling(n: int) -> str:
    """`n` falling prices of one symbol at one time (`A D+ U` keeps a partial match from every row,
    and no WITHIN can end one), then a row of another symbol that moves the watermark past them."""
    rows = [{"sym": "a", "price": 1_000 - i, "ts": "2024-01-01 00:00:01"} for i in range(n)]
    rows.append({"sym": "b", "price": 1, "ts": "2024-01-01 00:00:09"})
    return "".join(json.dumps({"table": "ticks", "row": row}) + "\n" for row in rows)


def test_a_match_recognize_holding_more_rows_than_the_budget_is_exit_2_naming_the_row(
    tmp_path, capsys, monkeypatch
):
    # A MATCH_RECOGNIZE's partial matches each held their rows and every row visited all of them:
    # 200 falling prices (10 KB) took 5.5 CPU-s, 400 over 100 s. Here the budget is 300 held rows:
    # 24 rows hold 300, the 25th would hold 325.
    monkeypatch.setenv("WMVIZ_MAX_MATCH_ROWS", "300")
    plan = str(DATA / "match_basic.plan.json")
    (tmp_path / "rows.jsonl").write_text(_falling(40))
    code, err = _run(capsys, "sql", "replay", plan, str(tmp_path / "rows.jsonl"))
    assert code == 2
    assert (
        "rows.jsonl, line 25, field 'sym': the MATCH_RECOGNIZE of this partition would hold 325 rows "
        "in its partial matches, more than wmviz simulates: 300 (WMVIZ_MAX_MATCH_ROWS)"
    ) in err
    (tmp_path / "rows.jsonl").write_text(_falling(24))
    assert _run(capsys, "sql", "replay", plan, str(tmp_path / "rows.jsonl"))[0] == 0


def _one_key(n: int) -> str:
    """`n` orders and `n` clicks of one user in one 5-second window, then a pair that closes it."""
    rows = []
    for i in range(n):
        rows.append(
            {
                "table": "orders",
                "row": {"user_id": "u", "order_id": str(i), "amount": i, "ts": "2026-01-01 00:00:01"},
            }
        )
        rows.append({"table": "clicks", "row": {"user_id": "u", "page": "p", "ts": "2026-01-01 00:00:01"}})
    rows.append(
        {
            "table": "orders",
            "row": {"user_id": "v", "order_id": "x", "amount": 1, "ts": "2026-01-01 00:00:30"},
        }
    )
    rows.append({"table": "clicks", "row": {"user_id": "v", "page": "p", "ts": "2026-01-01 00:00:30"}})
    return "".join(json.dumps(row) + "\n" for row in rows)


def test_a_window_join_window_past_the_budget_is_exit_2_naming_its_last_row(tmp_path, capsys, monkeypatch):
    # A window join emits every pair of a key's rows of one window: 300 a side (30 KB) were 90,000
    # rows and 10 CPU-s, 2,000 a side would be 4,000,000. Here the budget is 400 pairs.
    monkeypatch.setenv("WMVIZ_MAX_JOIN_WINDOW_ROWS", "400")
    plan = str(DATA / "winjoin_inner_tumble.plan.json")
    (tmp_path / "rows.jsonl").write_text(_one_key(21))
    code, err = _run(capsys, "sql", "replay", plan, str(tmp_path / "rows.jsonl"))
    assert code == 2
    assert (
        "rows.jsonl, line 42, field 'user_id': this window of the window join would emit 441 rows (its left "
        "rows times its right rows of one key), more than wmviz simulates: 400 (WMVIZ_MAX_JOIN_WINDOW_ROWS)"
    ) in err
    (tmp_path / "rows.jsonl").write_text(_one_key(20))
    assert _run(capsys, "sql", "replay", plan, str(tmp_path / "rows.jsonl"))[0] == 0


def test_a_long_chain_of_calcs_is_replayed_and_sends_what_the_short_plan_sends(tmp_path, capsys):
    # Last stop's open item: a COMPILE PLAN of a 3,000-Calc chain held `sql replay` over 65 CPU-s
    # before reading a row (the set-up walked every edge for every node reached from every node);
    # now ~12 CPU-s on a quiet machine. Its cost is a benchmark's to measure (docs/benchmarks.md):
    # a bound in CPU-s here failed beside a second job (32 CPU-s for 1,500 Calcs). This asserts
    # what must hold however busy the machine: 300 pass-through Calcs change nothing a sink gets.
    plan = json.loads((DATA / "window_rank.plan.json").read_text())
    rows = str(DATA / "window_rank.rows.jsonl")
    assert main(["sql", "replay", str(DATA / "window_rank.plan.json"), rows, "--json"]) == 0
    short = _sink_rows(capsys.readouterr().out)
    calc = next(n for n in plan["nodes"] if n["id"] == 6)
    edges = [e for e in plan["edges"] if (e["source"], e["target"]) != (6, 7)]
    prev = 6
    for node_id in range(100, 400):
        plan["nodes"].append({**calc, "id": node_id})
        edges.append(
            {"source": prev, "target": node_id, "shuffle": {"type": "FORWARD"}, "shuffleMode": "PIPELINED"}
        )
        prev = node_id
    plan["edges"] = [
        *edges,
        {"source": prev, "target": 7, "shuffle": {"type": "FORWARD"}, "shuffleMode": "PIPELINED"},
    ]
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    code = main(["sql", "replay", str(tmp_path / "plan.json"), rows, "--json"])
    long = capsys.readouterr()
    assert code == 0, long.err
    assert _sink_rows(long.out) == short and len(short) >= 3


def _sink_rows(printed: str) -> list[str]:
    """The rows a replay printed for its sinks (not each node's watermark: a longer plan has more)."""
    return [line for line in printed.splitlines() if line.startswith('{"sink"')]


def _rows_with(tmp_path, line: int, **cells: object) -> str:
    """The silent-partition incident's rows with `cells` changed in row `line` (1-based)."""
    rows = (DATA / "incident_silent_partition.rows.jsonl").read_text().splitlines()
    row = json.loads(rows[line - 1])
    row["row"].update(cells)
    rows[line - 1] = json.dumps(row)
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(rows) + "\n")
    return str(path)


def test_an_explain_cut_short_so_one_table_is_scanned_twice_unmet_is_exit_2(tmp_path, capsys):
    # sqlreplay #34100: an EXPLAIN without its "== Optimized Execution Plan ==" heading reads as two
    # scans of `clicks` that never meet: `(source,) = members` was ValueError (exit 1).
    text = (DATA / "incident_silent_partition.explain.txt").read_text()
    assert "== Optimized Execution Plan ==\n" in text
    plan = tmp_path / "plan.txt"
    plan.write_text(text.replace("== Optimized Execution Plan ==\n", "", 1))
    rows = _rows_with(tmp_path, 14, url=True)
    code, err = _run(capsys, "sql", "replay", str(plan), rows, "--json", "--out", str(tmp_path / "job.json"))
    assert code == 2, err
    assert "table clicks is read by 2 scans whose rows never meet" in err
    assert not (tmp_path / "job.json").exists()


def test_a_row_at_the_last_timestamp_whose_window_ends_past_year_9999_is_exit_2(tmp_path, capsys):
    # sqlreplay #43058: a TUMBLE window over 9999-12-31 23:59:59.999 ends at 10000-01-01, which
    # `timestamp_text` could not print: OverflowError (exit 1).
    rows = _rows_with(tmp_path, 10, ts="9999-12-31 23:59:59.999")
    plan = str(DATA / "incident_silent_partition.plan.json")
    code, err = _run(capsys, "sql", "replay", plan, rows, "--json")
    assert code == 2, err
    assert "is past 9999-12-31 23:59:59.999, the last TIMESTAMP(3) value" in err


def test_a_calc_reading_a_field_its_input_row_lacks_is_a_route_not_replayed(tmp_path, capsys):
    # sqlreplay #43778: an aggregate whose outputType is not a row type has no fields, and the Calc
    # after it read field 1 of an empty row: IndexError in `rex.evaluate` (exit 1). The route is now
    # refused once, by name, and the replay goes on.
    plan = json.loads((DATA / "incident_silent_partition.plan.json").read_text())
    plan["nodes"][3]["outputType"] = 1_000_000_000
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    rows = str(DATA / "incident_silent_partition.rows.jsonl")
    out_path = str(tmp_path / "t.jsonl")
    code = main(["sql", "replay", str(tmp_path / "plan.json"), rows, "--trace-out", out_path])
    out = capsys.readouterr()
    assert code == 0, out.err
    assert "are not replayed: plan node 5 reads field 1 of a row of 0 fields" in out.out + out.err


def test_a_point_at_the_smallest_time_converts_to_an_arrow_file_that_reads_back_alike(tmp_path, capsys):
    # recording-json #43380: a point at MIN (-2^63) before points after 1970: the columnar reader's
    # order check subtracted neighbours, the difference overflowed int64 and read as time running
    # back, so `convert` wrote a file its own reader refused. Now the two forms answer alike.
    sample = paths.REPO / "sample_data" / "jobs" / "silent-split-holds-the-whole-job.json"
    job = json.loads(sample.read_text())
    series = next(s for s in job["series"] if s["vertex"] == "d4" and s["metric"] == "currentOutputWatermark")
    series["points"][0][0] = -(2**63)
    (tmp_path / "rec.json").write_text(json.dumps(job))
    assert main(["convert", str(tmp_path / "rec.json"), str(tmp_path / "rec.arrow")]) == 0
    capsys.readouterr()
    answers = []
    for name in ("rec.json", "rec.arrow"):
        assert main(["blame", str(tmp_path / name), "--json"]) == 0
        answers.append(capsys.readouterr().out)
    assert answers[0] == answers[1]


def test_the_default_split_step_budget_holds_a_replay_under_the_fuzzs_cpu_limit(tmp_path, capsys):
    # sqlreplay #94898 and #46454 (the round's last part: over 10 CPU-s each): 4,096 partitions ×
    # 143 lines (585,728 split-steps) and × 371 lines (1.5M) fitted the first default, 2,000,000,
    # and took 6.5 and 18 CPU-s (a 59 MB `--out`). The default is now 500,000 (~6 CPU-s).
    plan = str(DATA / "window_rank.plan.json")
    rows = [json.loads(line) for line in (DATA / "window_rank.rows.jsonl").read_text().splitlines()]
    lines = [{"table": rows[0]["table"], "partitions": 4096}, *(rows * (142 // len(rows) + 1))[:142]]
    (tmp_path / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    code, err = _run(capsys, "sql", "replay", plan, str(tmp_path / "rows.jsonl"))
    assert code == 2
    assert "585,728 split-steps, more than a replay computes: 500,000 (WMVIZ_MAX_REPLAY_SPLIT_STEPS)" in err
