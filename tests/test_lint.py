"""The house style is enforced, not hoped for: ruff must be clean on the whole repo."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from tests.conftest import REPO


@pytest.mark.parametrize("command", [["check", "."], ["format", "--check", "."]], ids=["lint", "format"])
def test_ruff_is_clean_on_the_whole_repository(command):
    ruff = shutil.which("ruff")
    assert ruff, "ruff is in requirements-dev.txt; install it"
    result = subprocess.run([ruff, *command], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_clean_on_the_typed_core_trace_and_timeline():
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "wmviz/core", "wmviz/trace", "wmviz/timeline"],
        cwd=REPO,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
