"""The repo's own docs say only what is true: every example of the trace-format reference
(docs/trace-format.md) is written to a file and checked, every `explain` and `validate` output it
or the README quotes is what the CLI prints, the interval join's bounds join exactly the rows its
table says, the README stays a front door that points users at the repo's own reference rather
than at a spec they do not have, and every relative link of the README, docs/ and tests/README.md
leads to a file (and heading) that exists."""

from __future__ import annotations

import re
import runpy
import shlex
from pathlib import Path

import pytest

from tests.conftest import REPO
from wmviz.cli import main
from wmviz.core.operator_log import JoinOutput
from wmviz.core.scenario import IntervalJoinConfig
from wmviz.core.simulate import simulate
from wmviz.trace.readers import read_trace

DOC = REPO / "docs" / "trace-format.md"
README = REPO / "README.md"
# `<!-- what: args -->` right before a fenced block.
BLOCK = re.compile(r"<!-- (example|run|explain|validate): ([^>]*?) -->\n```[a-z]*\n(.*?)\n```", re.DOTALL)


# `<!-- bounds: FILE -->` right before a table: right row time | left − right | "yes…"/"no…".
BOUNDS = re.compile(r"<!-- bounds: (\S+) -->\n((?:\|.*\|\n)+)")


def blocks(doc: Path = DOC) -> list[tuple[str, str, str]]:
    return [(m.group(1), m.group(2).strip(), m.group(3)) for m in BLOCK.finditer(doc.read_text("utf-8"))]


@pytest.fixture
def examples(tmp_path, monkeypatch):
    """Every example file of the doc, written into a fresh folder that is the working directory."""
    monkeypatch.chdir(tmp_path)
    for what, name, body in blocks():
        if what in ("example", "run"):
            (tmp_path / name).write_text(body + "\n", encoding="utf-8")
        if what == "run":
            runpy.run_path(str(tmp_path / name))
    return tmp_path


def test_the_doc_has_a_worked_example_per_format_and_per_operator():
    names = [name for what, name, _ in blocks() if what in ("example", "run")]
    text = DOC.read_text("utf-8")
    assert any(n.endswith(".csv") for n in names) and any(n.endswith(".jsonl") for n in names)
    assert "make_parquet.py" in names and "valve.jsonl" in names  # Parquet, compact
    for operator in ('"type": "window"', '"type": "interval_join"', '"generator"'):
        assert operator in text
    assert len([w for w, *_ in blocks() if w == "explain"]) >= 5


def test_every_example_trace_validates(examples, capsys):
    for path in sorted(examples.iterdir()):
        if path.suffix in (".csv", ".jsonl", ".parquet") and path.name != "bad.csv":
            config = path.with_suffix(".json")
            args = ["validate", str(path), *(["--config", str(config)] if config.is_file() else [])]
            assert main(args) == 0, capsys.readouterr()
            assert ": valid:" in capsys.readouterr().out


@pytest.mark.parametrize("args", [a for w, a, _ in blocks() if w == "explain"])
def test_every_quoted_explain_output_is_what_the_cli_prints(examples, capsys, args):
    expected = next(body for what, a, body in blocks() if what == "explain" and a == args)
    assert main(["explain", *shlex.split(args)]) == 0
    printed = capsys.readouterr().out.splitlines()
    for line in expected.splitlines():
        assert line in printed, f"{line!r} is not in the output of explain {args}"


@pytest.mark.parametrize("args", [a for w, a, _ in blocks() if w == "validate"])
def test_every_quoted_validation_error_is_what_the_cli_prints(examples, capsys, args):
    expected = next(body for what, a, body in blocks() if what == "validate" and a == args)
    assert main(["validate", *shlex.split(args)]) == 2
    captured = capsys.readouterr()
    printed = (captured.out + captured.err).splitlines()
    for line in expected.splitlines():
        assert line in printed


def test_the_readme_points_at_the_repos_own_reference_and_not_at_the_shared_spec():
    readme = README.read_text("utf-8")
    assert "docs/trace-format.md" in readme
    assert "shared/spec" not in readme and "trace-format.md §" not in readme


def section(number: int) -> str:
    """The text of the doc's `## <number>.` section."""
    text = DOC.read_text("utf-8")
    start = text.index(f"\n## {number}. ")
    return text[start : text.index("\n## ", start + 1)]


def test_the_config_table_states_the_join_bounds_in_flinks_convention():
    """left time − right time ∈ [lower, upper] (Flink's RowTimeIntervalJoin), never the reading
    that puts the right row in [t + lower, t + upper] around the left one."""
    config = section(2)
    assert "tL − tR lies in [lower, upper]" in config
    assert "from t − upper to t − lower" in config
    assert "[t + lower, t + upper]" not in config


def test_the_asymmetric_bounds_example_joins_exactly_the_rows_the_doc_says(examples):
    """The doc's table of which right rows join the left one, checked against the engine on the
    doc's own trace: a doc written in the other convention claims different rows and fails here."""
    found = BOUNDS.search(DOC.read_text("utf-8"))
    assert found is not None, "docs/trace-format.md has no <!-- bounds: --> table"
    trace = read_trace(examples / found.group(1))
    operator = trace.config.operator
    assert isinstance(operator, IntervalJoinConfig) and operator.lower_ms != -operator.upper_ms, "asymmetric"
    (left,) = [r.event_ms for r in trace.rows if r.input == "L"]
    claims = {}
    for line in found.group(2).splitlines()[2:]:  # after the header and its rule
        right, difference, verdict = (cell.strip() for cell in line.strip().strip("|").split("|"))
        assert int(difference.replace("−", "-")) == left - int(right), line
        claims[int(right)] = verdict.startswith("yes")
    assert sorted(claims) == sorted(r.event_ms for r in trace.rows if r.input == "R")
    assert True in claims.values() and False in claims.values()
    joined = {
        out.right.event_ms
        for result in simulate(trace)
        for out in result.emit
        if isinstance(out, JoinOutput) and out.left is not None and out.right is not None
    }
    assert joined == {right for right, yes in claims.items() if yes}


def test_the_readme_is_a_front_door_with_its_two_commands_first():
    lines = README.read_text("utf-8").splitlines()
    assert len(lines) <= 250
    commands = [line.strip() for line in lines[:12] if line.startswith("    ")]
    assert commands[0] == 'pip install ".[app]" && wmviz app'
    # The test command is the one line CI runs, character for character.
    ci = (REPO / ".ci" / "run").read_text("utf-8").splitlines()
    assert commands[1] in [line.strip() for line in ci]
    assert commands[1] == "pip install -q -r requirements.txt -r requirements-dev.txt && python -m pytest"


@pytest.mark.parametrize("args", [a for w, a, _ in blocks(README) if w == "explain"])
def test_every_explain_output_the_readme_quotes_is_what_the_cli_prints(tmp_path, monkeypatch, capsys, args):
    monkeypatch.chdir(tmp_path)  # a built-in incident's name works from any folder
    expected = next(body for what, a, body in blocks(README) if what == "explain" and a == args)
    assert main(["explain", *shlex.split(args)]) == 0
    printed = capsys.readouterr().out.splitlines()
    for line in expected.splitlines():
        assert line in printed, f"{line!r} is not in the output of explain {args}"


def test_the_readme_quotes_an_explain_output():
    assert [a for w, a, _ in blocks(README) if w == "explain"]


LINKED_DOCS = [README, *sorted((REPO / "docs").glob("*.md")), REPO / "tests" / "README.md"]
# A markdown link or image, its text possibly wrapped over lines: the target without its title.
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
CODE = re.compile(r"```.*?```|`[^`\n]*`", re.DOTALL)


def heading_anchors(doc: Path) -> set[str]:
    """The anchors GitHub gives a file's headings: lower case, punctuation dropped, spaces as -."""
    text = re.sub(r"```.*?```", "", doc.read_text("utf-8"), flags=re.DOTALL) if doc.suffix == ".md" else ""
    headings = re.findall(r"^#+ (.+)$", text, re.MULTILINE)
    return {re.sub(r"[^\w\- ]", "", h.strip().lower()).replace(" ", "-") for h in headings}


@pytest.mark.parametrize("doc", LINKED_DOCS, ids=lambda d: str(d.relative_to(REPO)))
def test_every_relative_link_leads_to_a_file_and_heading_that_exist(doc):
    text = CODE.sub("", doc.read_text("utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # a web address, not ours to check offline
        path, _, anchor = target.partition("#")
        linked = (doc.parent / path).resolve() if path else doc
        if not linked.exists() or (anchor and anchor not in heading_anchors(linked)):
            broken.append(target)
    assert not broken, f"{doc.name} links to what does not exist: {broken}"
