"""The rule glossary (wmviz/core/rules.py) is complete and docs/rules.md explains exactly it: every
rule the narration, an account or a rule method names has one entry, under the same id on both."""

from __future__ import annotations

import inspect
import re

import pytest

from tests.conftest import REPO, valve_cases
from wmviz.core import narrate as narrate_module
from wmviz.core.account import account_step
from wmviz.core.interval_join import IntervalJoin
from wmviz.core.narrate import cited_rules, narrate
from wmviz.core.rules import GLOSSARY, RULES, rule_id, rules_named, step_rules
from wmviz.core.scenario import Kind, ScenarioConfig, Trace, TraceRow
from wmviz.core.simulate import simulate
from wmviz.core.types import ChannelOutOfRange, Profile, Status, parse_input
from wmviz.core.valve import Outcome, Routine, Valve

DOC = REPO / "docs" / "rules.md"
# How the narration cites a rule: an id with a digit in parentheses, `(S1b)`, or a named routine.
# (A watermark, `W10@0` or `emit W5`, is never in parentheses; `(MAX)` has no digit.)
CITED = re.compile(r"\(([A-Z]{1,2}\d+[a-z]?)\)|\b(TRY-[WS]|EMIT-M(?:IN|AX)|REPLAY-MAX|CAND)\b")


def documented() -> dict[str, str]:
    """docs/rules.md's rules: `### <id>` heading → the section under it (up to the next heading; the
    `## ` parts without ids, such as the windows at the end, belong to no rule)."""
    sections = re.split(r"^### ", DOC.read_text("utf-8"), flags=re.MULTILINE)[1:]
    return {s.split("\n", 1)[0].strip(): s.split("\n", 1)[1].split("\n## ", 1)[0] for s in sections}


def cited_in(text: str) -> set[str]:
    return {a or b for a, b in CITED.findall(text)}


def every_valve_account():
    """An account of every input of every conformance case under every profile."""
    for case in valve_cases():
        for profile in Profile:
            valve = Valve(case["channels"], profile)
            for step in case["steps"]:
                for token in step["in"]:
                    try:
                        yield account_step(valve, parse_input(token))
                    except ChannelOutOfRange:
                        continue


def test_the_glossary_has_each_id_once_each_with_a_meaning_and_core_code():
    assert len(GLOSSARY) == len(RULES)
    for rule in RULES:
        assert rule.meaning.endswith(".") and len(rule.meaning) > 20, rule.id
        assert rule.where.startswith("wmviz.core."), rule.id


def test_docs_rules_md_documents_exactly_the_glossarys_ids_each_with_its_implementing_method():
    docs = documented()
    assert sorted(docs) == sorted(GLOSSARY), "docs/rules.md and wmviz/core/rules.py list different ids"
    for rule_name, section in docs.items():
        assert f"Implemented by `{GLOSSARY[rule_name].where}`." in section, rule_name
        assert len(section.split()) > 12, f"{rule_name}: say what the rule means"


def test_every_rule_a_valve_branch_or_routine_names_is_in_the_glossary():
    names = [name for outcome in Outcome for name in outcome.rules] + [r.value for r in Routine]
    assert {rule_id(n) for n in names} <= set(GLOSSARY)


def test_every_id_the_narration_cites_is_in_the_glossary_and_in_what_the_legend_explains():
    """Narrated over every branch of the valve (the conformance cases reach each one), under every
    profile: the ids the text cites are among `cited_rules`, which are all in the glossary."""
    reached = set()
    for acc in every_valve_account():
        reached.add(acc.outcome)
        text, cited = narrate(acc), cited_rules(acc)
        assert cited_in(text) <= set(cited), (text, cited)
        assert set(cited) <= set(GLOSSARY), cited
    assert reached == set(Outcome)


def test_the_narrations_source_cites_no_id_the_glossary_lacks():
    """Also the branches no case reaches: every id written into the narration's code."""
    assert cited_in(inspect.getsource(narrate_module)) <= set(GLOSSARY)


def test_every_rule_method_of_the_valve_and_the_join_is_named_after_a_glossary_id():
    prefix = re.compile(r"^(w\d|s\d[ab]?|fw\d|fs\d|a\d|c\d|e\d+)_")
    methods = [n for cls in (Valve, IntervalJoin) for n in vars(cls) if prefix.match(n)]
    assert len(methods) >= 15
    ids = {i.upper() for i in GLOSSARY}
    for name in methods:
        match = prefix.match(name)
        assert match is not None and match.group(1).upper() in ids, name


def test_a_missing_rule_is_an_error_not_a_silent_gap():
    with pytest.raises(KeyError):
        rules_named(["S1b", "S9"])


def test_the_legend_of_a_step_explains_each_rule_its_narration_cites_once_in_order():
    """The pure function behind the page's legend: the IDLE step of two channels, where the idle
    channel held the minimum (S1, S1b, then EMIT-MIN)."""
    rows = (
        TraceRow(row=1, kind=Kind.WATERMARK, channel=0, watermark_ms=7),
        TraceRow(row=2, kind=Kind.WATERMARK, channel=1, watermark_ms=5),
        TraceRow(row=3, kind=Kind.STATUS, channel=1, status=Status.IDLE),
    )
    trace = Trace("legend", rows, ScenarioConfig(channels={"0": 2}), {("0", "0"): 2})
    results = list(simulate(trace, explain=True))
    legend = step_rules(results[2])
    assert [r.id for r in legend] == ["S1", "S1b", "EMIT-MIN"]
    assert cited_in("; ".join(narrate(vs.account) for vs in results[2].valve_steps if vs.account)) <= {
        r.id for r in legend
    }
    assert legend[1].meaning == GLOSSARY["S1b"].meaning
    assert [r.id for r in step_rules(results[0])] == ["W3", "W4", "W5", "EMIT-MIN"]


def test_every_rule_a_built_in_incidents_story_cites_is_in_the_glossary():
    """Stories cite rules in parentheses, `(W3, W5)` or `(A5, E2)`: each such id is explained."""
    rule_like = re.compile(r"^(JW\d|FW\d|FS\d|[WSACE]\d{1,2}[ab]?|TRY-[WS]|EMIT-M(?:IN|AX)|CAND|REPLAY-MAX)$")
    cited = set()
    for story in sorted((REPO / "sample_data").glob("*.md")):
        for group in re.findall(r"\(([^()]*)\)", story.read_text("utf-8")):
            cited |= {w for w in re.split(r"[\s,;]+", group) if rule_like.match(w)}
    assert len(cited) >= 10
    assert cited <= set(GLOSSARY), cited - set(GLOSSARY)
