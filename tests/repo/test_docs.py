"""The repo's own docs say only what is true: every example of the trace-format reference
(docs/trace-format.md) is written to a file and checked, every `explain` and `validate` output it
or the README quotes is what the CLI prints, the interval join's bounds join exactly the rows its
table says, the README stays a front door that points users at the repo's own reference rather
than at a spec they do not have, and every relative link of the README, docs/ and tests/README.md
leads to a file (and heading) that exists; and no file of the repo cites a spec a user's clone
does not have."""

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
    assert "trace-format.md §" not in readme  # and no outside spec: see the test below


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
    installs = "pip install -q -r requirements.txt -r requirements-dev.txt"
    assert commands[1] == f"{installs} && python -m pytest -n 3 --dist loadfile"


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


# The repo stands alone: a clone has none of the team's outside specs (the reference folder beside
# the repo), so nothing a user or developer reads may send them there. Built from pieces so this
# file does not match itself.
OUTSIDE_SPEC = re.compile(
    r"\b(?:" + "|".join(("valve", "windows-and-generation", "interval-join")) + r")\.md\b"
    r"|shared[/]spec|[.][.]/shared"
)
# A section sign must cite docs/trace-format.md (`trace-format.md §4`, `` `docs/trace-format.md` §5 ``,
# `trace-format.md §1 and §2`): any other section number is one of a document the reader lacks.
SECTION = re.compile(r"§\s?(\d+)")
CITES_TRACE_FORMAT = re.compile(r"trace-format\.md`?\)?\s?(?:§\s?\d+\s?(?:,|and|or|–)\s?)*$")
READ_BY_PEOPLE = ("wmviz", "app.py", "sample_data", "docs", "tests", "tools", "bench", "README.md", ".ci")
TEXT = {".py", ".md", ".json", ".jsonl", ".csv", ".txt", ".java", ".toml", ""}
NOT_READ = {"__pycache__", ".pytest_cache", ".hypothesis", "build", "target"}


def repo_texts():
    """(path relative to the repo, text) of every text file people read, build output left out."""
    for root in READ_BY_PEOPLE:
        top = REPO / root
        for path in sorted([top] if top.is_file() else top.rglob("*")):
            if path.is_file() and path.suffix in TEXT and not NOT_READ & set(path.parts):
                yield path.relative_to(REPO).as_posix(), path.read_text("utf-8", errors="replace")


def test_nothing_sends_a_reader_to_a_spec_outside_the_repo():
    """Rules are cited by their docs/rules.md ids, the trace format by docs/trace-format.md's
    sections; every other spec name or section number is a hit, listed with its line."""
    headings = set(re.findall(r"^## (\d+)\. ", DOC.read_text("utf-8"), flags=re.MULTILINE))
    hits, files = [], 0
    for name, text in repo_texts():
        files += 1
        for number, line in enumerate(text.splitlines(), 1):
            why = ["an outside spec"] if OUTSIDE_SPEC.search(line) else []
            for found in SECTION.finditer(line):
                own = name == "docs/trace-format.md" or CITES_TRACE_FORMAT.search(line[: found.start()])
                if not own or found.group(1) not in headings:
                    why.append(f"§{found.group(1)} is no section of docs/trace-format.md")
            if why:
                hits.append(f"{name}:{number}: {line.strip()[:100]} ({'; '.join(why)})")
    assert files > 200
    assert not hits, "\n".join(["references to documents the repo does not have:", *hits])


def test_the_reference_check_catches_each_kind_of_outside_reference():
    """The check above is not vacuous: each way of citing an outside spec is caught, the repo's own
    trace-format sections are not."""
    spec = "interval" + "-join.md"
    assert OUTSIDE_SPEC.search(f"(see {spec})") and OUTSIDE_SPEC.search("../" + "shared/x")
    assert not OUTSIDE_SPEC.search("docs/trace-format.md and docs/rules.md")
    assert CITES_TRACE_FORMAT.search("columns of `docs/trace-format.md` ")
    assert CITES_TRACE_FORMAT.search("(docs/trace-format.md §1 and ")
    assert not CITES_TRACE_FORMAT.search("rows lost to the ")
    assert not CITES_TRACE_FORMAT.search(f"{spec} \u00a78.1 or ")  # the sign written escaped
