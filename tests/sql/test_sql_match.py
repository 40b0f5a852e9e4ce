"""MATCH_RECOGNIZE without Flink: the pattern's spelling, the plan reader's refusals, the matcher's
rules on hand-made rows, and a hand-written input with its real Flink 2.3.0 run kept beside the
script (`tests/data/sql/match_basic.rows.jsonl` / `.flink.jsonl`, from `tools.flink.sql.run`),
replayed by `wmviz sql replay`'s own path. That input holds a row exactly on the watermark (late),
a late row of the other partition, two rows of one time whose arrival order decides the match, a
partial match discarded by WITHIN while a later one within the bound matches, and three rows of one
time forming a whole match. `match_greedy` keeps seeded rows and their real run for a pattern whose
conditions overlap (greedy loops deciding which variable takes a row). `test_sql_match_flink.py`
compares random rows against real Flink.
"""

from __future__ import annotations

import copy
import dataclasses
import json

import pytest

from tests.support import paths
from wmviz.core.sql_match import SqlMatch
from wmviz.core.sql_match_config import SqlMatchConfig, match_problems, parse_pattern, spell_pattern
from wmviz.core.sql_match_nfa import Matcher, Variable
from wmviz.sql.load import read_plan_file
from wmviz.sql.model import OperatorRefused
from wmviz.sql.plan_match import read_match
from wmviz.sql.replay import replay_states
from wmviz.sql.rowflow import replay_lines
from wmviz.sql.rows import read_input

DATA = paths.DATA / "sql"


def _replayed(name: str = "match_basic") -> tuple[list[dict], list[dict]]:
    job = read_plan_file(DATA / f"{name}.plan.json")
    rows = read_input(DATA / f"{name}.rows.jsonl")
    mine = [line.as_json() for line in replay_lines(job, rows, replay_states(job, rows))]
    lines = (DATA / f"{name}.flink.jsonl").read_text().splitlines()
    flink = [e for e in map(json.loads, lines) if "sink" in e or "metric" in e]
    return flink, mine


def test_the_hand_written_rows_equal_their_real_flink_run():
    flink, mine = _replayed()
    assert sum("sink" in e for e in flink) == 4
    assert sum("metric" in e for e in flink) == 2
    assert mine == flink


def test_overlapping_conditions_equal_their_real_flink_run():
    """`match_greedy`: M* takes rows B also wants, B{1,2} rows E also wants; seeded rows (seed 22 of
    `test_sql_match_flink.ticks_rows`, 80 lines) and their real run kept beside the script."""
    flink, mine = _replayed("match_greedy")
    assert sum("sink" in e for e in flink) == 12
    assert mine == flink


def test_greedy_loops_made_reluctant_fail_the_overlapping_run(monkeypatch):
    """SQL-MR5 without the greedy block (every variable branching): must fail."""
    monkeypatch.setattr(
        SqlMatchConfig,
        "variables",
        lambda self: tuple(dataclasses.replace(v, greedy=False) for v in parse_pattern(self.pattern)),
    )
    flink, mine = _replayed("match_greedy")
    assert mine != flink


def test_a_row_on_the_watermark_kept_fails_the_hand_written_run(monkeypatch):
    monkeypatch.setattr(SqlMatch, "mr1_is_late", lambda self, ts: ts < self.watermark_ms)
    flink, mine = _replayed()
    assert mine != flink


def test_rows_of_one_time_in_reverse_arrival_fail_the_hand_written_run(monkeypatch):
    real = SqlMatch.mr2_buffer

    def first(self, key, row, log):
        real(self, key, row, log)
        times = self.buffer[key]
        times[row.event_ms].insert(0, times[row.event_ms].pop())

    monkeypatch.setattr(SqlMatch, "mr2_buffer", first)
    flink, mine = _replayed()
    assert mine != flink


def test_within_ignored_fails_the_hand_written_run(monkeypatch):
    monkeypatch.setattr(Matcher, "mr4_advance_time", lambda self, time_ms: [])
    flink, mine = _replayed()
    assert mine != flink


@pytest.mark.parametrize(
    ("spelled", "variables"),
    [
        ("A D+ U", (Variable("A"), Variable("D", 1, None, True), Variable("U"))),
        ("S C? M*", (Variable("S"), Variable("C", 0, 1), Variable("M", 0, None, True))),
        ("X{2} Y{1,3} Z{2,}", (Variable("X", 2, 2), Variable("Y", 1, 3, True), Variable("Z", 2, None, True))),
    ],
)
def test_a_pattern_is_spelled_as_sql_and_read_back(spelled, variables):
    assert parse_pattern(spelled) == variables
    assert spell_pattern(variables) == spelled


@pytest.mark.parametrize(
    ("spelled", "words"),
    [("A (B|C)", "not a variable"), ("A A", "twice"), ("X{3,1}", "below"), ("", "no variable")],
)
def test_a_bad_pattern_is_named(spelled, words):
    ((where, why),) = match_problems({"pattern": spelled})
    assert where == "pattern" and words in why


def _spec_changed(change) -> OperatorRefused:
    job = read_plan_file(DATA / "match_basic.plan.json")
    node = next(n for n in job.nodes if n.flink_type == "stream-exec-match")
    spec = copy.deepcopy(dict(node.spec))
    change(spec["matchSpec"])
    changed = dataclasses.replace(node, spec=spec)
    with pytest.raises(OperatorRefused) as refused:
        read_match(changed, job)
    return refused.value


def test_the_plan_reader_refuses_what_it_does_not_model_by_name():
    words = {
        "ALL ROWS PER MATCH": lambda s: s.update(allRows=True),
        "SUBSET": lambda s: s.update(subsets={"X": ["A"]}),
        "SKIP TO FIRST/LAST": lambda s: s["after"].update(value="SKIP_TO_FIRST"),
        "reluctant": lambda s: s["pattern"]["operands"][0]["operands"][1]["operands"][3].update(value=True),
        "ORDER BY other than": lambda s: s["orderBy"]["fields"].append({"index": 1, "isAscending": True}),
    }
    for expected, change in words.items():
        assert expected in str(_spec_changed(change))


def test_a_completed_match_waits_for_an_earlier_partial_one():
    """SQL-MR7: in `A B+ C`, the match started at the second row completes while the one started
    at the first is still in its B loop; it leaves only once that earlier partial match dies."""

    def judge(variable, partial, row):
        start = partial.taken[0][2] if partial is not None else row
        if variable == "A":
            return True
        if variable == "B":
            first_b = partial is not None and partial.at == 0
            return row > partial.taken[-1][2] and (start != 3 or first_b)
        return start == 3  # C

    pattern = (Variable("A"), Variable("B", 1, None, True), Variable("C"))
    matcher = Matcher(pattern, "past_last_row", None, judge)
    assert [matcher.feed(ts, value) for ts, value in enumerate([1, 3, 4])] == [[], [], []]
    assert matcher.feed(3, 6) == []  # C of the match from 3, held back by the one from 1
    (released,) = matcher.feed(4, 0)  # the match from 1 dies: the held one leaves
    assert [value for _, _, value in released.taken] == [3, 4, 6]


def _replay_with_one_cell_changed(tmp_path, capsys, name: str, lines: int, line: int, old: str, new: str):
    """`wmviz sql replay` of match_basic on its first `lines` rows, `old` replaced by `new` on file
    line `line`, written as `name`: (exit code, stderr)."""
    from wmviz.cli import commands as cli

    kept = (DATA / "match_basic.rows.jsonl").read_text().splitlines()[:lines]
    assert old in kept[line - 1]
    kept[line - 1] = kept[line - 1].replace(old, new)
    rows = tmp_path / name
    rows.write_text("\n".join(kept) + "\n")
    code = cli.main(["sql", "replay", str(DATA / "match_basic.plan.json"), str(rows)])
    return code, capsys.readouterr().err


def test_a_row_a_define_cannot_compare_exits_2_naming_the_file_line_and_part(tmp_path, capsys):
    """A text price where DEFINE compares numbers: exit 2, the rows file, its line, DEFINE."""
    code, err = _replay_with_one_cell_changed(
        tmp_path, capsys, "bad.rows.jsonl", 3, 2, '"price": 8', '"price": "x"'
    )
    assert code == 2
    assert "bad.rows.jsonl, line 2, field 'DEFINE': cannot be compared" in err
    assert "Traceback" not in err


def test_a_bool_among_the_numbers_a_measure_computes_names_its_own_row_and_column(tmp_path, capsys):
    """`"price": true` on the third row (DEFINE compares it without complaint, Python's True being
    1): the MEASURES over the match fail, and the error names that row's line and `price`, not
    the MEASURES of the match's last row (line 6, before)."""
    code, err = _replay_with_one_cell_changed(
        tmp_path, capsys, "bool.rows.jsonl", 10**6, 3, '"price": 7', '"price": true'
    )
    assert code == 2
    assert "bool.rows.jsonl, line 3, field 'price': holds true (a boolean)" in err, err
    assert "Traceback" not in err


def test_a_watermark_with_no_rows_is_forwarded_unchanged():
    """CEPOperatorTest's watermark forwarding, keyed: watermark 42 and no rows leave watermark 42."""
    import wmviz.sql.plan_match  # noqa: F401  # the expressions' evaluator
    from wmviz.core.operator_log import OutputWatermark, StepLog
    from wmviz.core.timers import TimerService

    operator = SqlMatch(SqlMatchConfig(pattern="A B", partition_by=("k",)), TimerService())
    log = StepLog()
    operator.on_watermark(42, log)
    operator.output_watermark(42, log)
    assert log.timeline == [OutputWatermark(42)]


def test_the_operator_forwards_the_watermarks_of_the_real_run(capsys):
    """The output watermark: forwarded after the timers, each change at the real run's step."""
    from wmviz.cli import commands as cli

    rows = DATA / "match_basic.rows.jsonl"
    assert cli.main(["sql", "replay", str(DATA / "match_basic.plan.json"), str(rows), "--json"]) == 0
    mine = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    flink = [json.loads(line) for line in (DATA / "match_basic.flink.jsonl").read_text().splitlines()]

    def changes(events, match):
        return [(e["step"], e["watermark"]) for e in events if "watermark" in e and match(e)]

    want = changes(flink, lambda e: str(e.get("operator", "")).startswith("Match"))
    assert len(want) > 5
    assert changes(mine, lambda e: e.get("operator") == "Match") == want
