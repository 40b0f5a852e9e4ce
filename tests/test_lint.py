"""The house style is enforced, not hoped for: the hooks of `.pre-commit-config.yaml` (ruff check,
ruff format --check, mypy over wmviz and app.py) must pass on the whole repository. The commands
are written once, in that file: this test reads them from it and runs each one, so a hook that
names a missing tool or fails fails here too. Their settings live in pyproject.toml."""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import sys
import tomllib

import pytest
import yaml

from tests.conftest import REPO

HOOKS_FILE = REPO / ".pre-commit-config.yaml"


def local_hooks() -> list[dict]:
    config = yaml.safe_load(HOOKS_FILE.read_text(encoding="utf-8"))
    repos = config["repos"]
    # A hook repository would be fetched over the network on first use; the tools pinned in
    # requirements-dev.txt are already here.
    assert [r["repo"] for r in repos] == ["local"], "only `repo: local` hooks"
    return repos[0]["hooks"]


def python_module(entry: str) -> str:
    words = shlex.split(entry)
    assert words[:2] == ["python", "-m"], f"a hook runs `python -m TOOL ...`, not {entry!r}"
    return words[2]


def test_the_hooks_are_the_checks_the_house_relies_on():
    hooks = local_hooks()
    assert [h["id"] for h in hooks] == ["ruff-check", "ruff-format", "mypy"]
    for hook in hooks:
        assert hook["language"] == "system", hook["id"]
        assert set(hook) <= {"id", "name", "entry", "language", "types_or", "pass_filenames"}, hook["id"]
        module = python_module(hook["entry"])
        assert importlib.util.find_spec(module), f"{module} is in requirements-dev.txt; install it"
    mypy = next(h for h in hooks if h["id"] == "mypy")
    # mypy judges the configured files together; given only the changed files it would miss an
    # error a change causes elsewhere.
    assert mypy["pass_filenames"] is False


@pytest.mark.parametrize("hook", local_hooks(), ids=lambda h: h["id"])
def test_each_hook_passes_on_the_whole_repository(hook):
    # Without file names ruff checks the whole repository and mypy the files pyproject.toml names
    # (wmviz and app.py), incrementally: its cache (.mypy_cache) makes a second run take seconds.
    command = [sys.executable, *shlex.split(hook["entry"])[1:]]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_is_configured_over_the_whole_package_and_the_page():
    # The mypy hook passes no file names: what it checks is what pyproject.toml says.
    mypy = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["mypy"]
    assert mypy["files"] == ["wmviz", "app.py"]
    assert "ignore_missing_imports" not in mypy, "an untyped import is allowed by name, in an override"
