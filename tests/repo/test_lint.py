"""The house style is enforced, not hoped for: the hooks of `.pre-commit-config.yaml` (ruff check,
ruff format --check, mypy over wmviz and app.py) must pass on the whole repository. The commands
are written once, in that file: this test reads them from it and runs each one, so a hook that
names a missing tool or fails fails here too. Their settings live in pyproject.toml."""

from __future__ import annotations

import ast
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
        assert hook["language"] == "unsupported", hook["id"]  # runs the installed tool
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


# --- session-state keys are named once ---------------------------------------------------------------

STATE_MODULE = REPO / "wmviz" / "ui" / "state.py"
_STATE_METHODS = {"get", "pop", "setdefault", "keys", "values", "items", "update", "clear", "to_dict"}


def state_keys() -> dict[str, str]:
    """wmviz.ui.state's constants, name -> key, read from its source (no Streamlit import)."""
    tree = ast.parse(STATE_MODULE.read_text(encoding="utf-8"))
    return {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.targets[0], ast.Name)
    }


def _is_session_state(node: ast.AST) -> bool:
    return isinstance(node, ast.Attribute) and node.attr == "session_state"


def _literal_key(node: ast.AST, widget_keys: set[str]) -> str | None:
    """The session-state key `node` spells as a literal, if it spells one."""
    if isinstance(node, ast.Attribute) and _is_session_state(node.value):
        return None if node.attr in _STATE_METHODS else f"session_state.{node.attr}"
    if isinstance(node, ast.keyword) and node.arg == "key" and isinstance(node.value, ast.Constant):
        # A widget keeps its value under its key: a state module's key is spelled there too.
        return f"key={node.value.value!r}" if node.value.value in widget_keys else None
    said = None
    if isinstance(node, ast.Subscript) and _is_session_state(node.value):
        said = node.slice  # session_state["k"]
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
        if _is_session_state(node.func.value) and node.func.attr in _STATE_METHODS:
            said = node.args[0]  # session_state.get("k"), .pop("k"), .setdefault("k", ...)
    elif isinstance(node, ast.Compare) and any(_is_session_state(c) for c in node.comparators):
        said = node.left  # "k" in session_state
    return repr(said.value) if isinstance(said, ast.Constant) and isinstance(said.value, str) else None


def spelled_keys(source: str, widget_keys: set[str]) -> list[tuple[int, str]]:
    """(line, what) of every session-state key `source` writes as a literal."""
    found = []
    for node in ast.walk(ast.parse(source)):
        what = _literal_key(node, widget_keys)
        if what is not None:
            found.append((getattr(node, "lineno", None) or node.value.lineno, what))
    return found


def test_the_state_module_names_each_session_key_once():
    keys = state_keys()
    assert len(keys) >= 20
    assert len(set(keys.values())) == len(keys), "two names for one key"


def test_no_module_spells_a_session_state_key():
    keys = set(state_keys().values())
    sources = [REPO / "app.py", *sorted((REPO / "wmviz").rglob("*.py"))]
    spelled = {
        f"{path.relative_to(REPO)}:{line}: {what}"
        for path in sources
        if path != STATE_MODULE
        for line, what in spelled_keys(path.read_text(encoding="utf-8"), keys)
    }
    assert not spelled, "use the wmviz.ui.state constant: " + ", ".join(sorted(spelled))


def test_every_named_key_is_used():
    text = "\n".join(
        p.read_text(encoding="utf-8") for p in [REPO / "app.py", *(REPO / "wmviz" / "ui").glob("*.py")]
    )
    unused = [name for name in state_keys() if f"state.{name}" not in text]
    assert not unused, f"keys no code uses: {unused}"


def test_the_key_check_finds_each_way_of_spelling_a_key():
    source = """
st.session_state["a"] = 1
st.session_state.get("b")
st.session_state.pop("c", None)
"d" in st.session_state
st.session_state.e
st.selectbox("x", [], key="step")
st.button("y", key="fwd")
st.session_state[state.STEP] = st.session_state.get(state.PLAYING)
"""
    found = sorted(what for _, what in spelled_keys(source, {"step"}))
    assert found == ["'a'", "'b'", "'c'", "'d'", "key='step'", "session_state.e"]
