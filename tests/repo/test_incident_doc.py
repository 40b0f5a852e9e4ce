"""docs/from-incident-to-trace.md says only what is true: every command it quotes after a
`<!-- cli -->` marker runs on the committed fixtures, and every output line it quotes is printed."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

from tests.conftest import REPO

DOC = REPO / "docs" / "from-incident-to-trace.md"
BLOCK = re.compile(r"<!-- cli -->\n```console\n(.*?)\n```", re.DOTALL)


def sessions() -> list[list[tuple[str, list[str]]]]:
    """Per quoted console block: its commands, each with the output lines quoted after it."""
    out = []
    for block in BLOCK.findall(DOC.read_text("utf-8")):
        session: list[tuple[str, list[str]]] = []
        for line in block.splitlines():
            if line.startswith("$ "):
                session.append((line[2:], []))
            else:
                session[-1][1].append(line)
        out.append(session)
    return out


def test_the_doc_quotes_the_three_routes_and_its_screenshots_exist():
    text = DOC.read_text("utf-8")
    for command in (
        "python -m wmviz record",
        "python -m wmviz import prometheus",
        "python -m wmviz import kafka",
    ):
        assert command in text
    shots = re.findall(r"\(screenshots/([\w.-]+\.png)\)", text)
    assert len(shots) >= 2
    for shot in shots:
        assert (REPO / "docs" / "screenshots" / shot).is_file(), shot
    assert len(sessions()) >= 2


@pytest.mark.parametrize("session", sessions(), ids=lambda s: s[0][0].split()[3])
def test_every_quoted_command_prints_what_the_doc_says(session, tmp_path):
    for command, expected in session:
        args = shlex.split(command)
        assert args[:3] == ["python", "-m", "wmviz"], command
        args = [sys.executable, *args[1:]]
        args = [str(REPO / a) if a.startswith("tests/data/") else a for a in args]
        env = {**os.environ, "PYTHONPATH": str(REPO)}  # run from a scratch folder, as a user would
        proc = subprocess.run(args, cwd=tmp_path, env=env, capture_output=True, text=True)
        assert proc.returncode == 0, proc.stderr
        printed = (proc.stdout + proc.stderr).splitlines()
        for line in expected:
            assert line in printed, f"{line!r} is not in the output of {command}"
