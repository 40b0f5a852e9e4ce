"""Imports run down the house, never up or sideways (docs/architecture.md).

`ORDER` lists wmviz's floors from the bottom. A module may import its own folder and any folder on
a lower floor; a folder on its own floor or above is out of bounds. Every import statement of every
module is read, the ones inside a function or under `if TYPE_CHECKING` too, so a lazy import that
runs back up a floor fails here as surely as one at the top of a file.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.support import paths

ROOT = paths.REPO
WMVIZ = ROOT / "wmviz"

ORDER: tuple[tuple[str, ...], ...] = (
    ("wmviz", "core", "disk"),  # "wmviz": the package's own __init__.py, which holds the version
    ("trace",),
    ("timeline",),
    ("view", "record"),  # record: Flink's REST and Prometheus answers, Kafka, a job recording
    ("analysis", "sql"),  # sql: a Flink SQL job's plan, read and replayed (docs/sql.md)
    ("spark", "report"),
    ("store", "live"),  # live: live mode's lifecycle (its query, clicks, folders), below the page
    ("ui", "cli"),
    ("__main__", "app"),  # the two entry points: `python -m wmviz` and the Streamlit page
)
"""The floors, lowest first; the folders of one floor know nothing of each other."""

FLOOR = {folder: level for level, floor in enumerate(ORDER) for folder in floor}


def folder_of(path: Path) -> str:
    """The floor entry a source file belongs to: its folder under wmviz/, or `wmviz`, `__main__`,
    `app` for the package's own two modules and the page."""
    if path == ROOT / "app.py":
        return "app"
    parts = path.relative_to(WMVIZ).parts
    if len(parts) == 1:
        return "wmviz" if parts[0] == "__init__.py" else Path(parts[0]).stem
    return parts[0]


def _absolute(node: ast.ImportFrom, package: list[str]) -> str:
    """The module a `from` import names, a relative one resolved against the importing package."""
    if not node.level:
        return node.module or ""
    base = package[: len(package) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _target(module: str) -> str | None:
    """The floor entry a dotted wmviz module belongs to (a name that is no folder of ORDER is the
    root's, such as `wmviz.__version__`), or None outside wmviz."""
    parts = module.split(".")
    if parts[0] != "wmviz":
        return None
    return parts[1] if len(parts) > 1 and parts[1] in FLOOR else "wmviz"


def imported_floors(source: str, path: Path) -> list[tuple[int, str]]:
    """(line, floor entry) of every wmviz import in a module's source, wherever it sits."""
    package = [] if path == ROOT / "app.py" else list(path.relative_to(ROOT).parent.parts)
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            modules = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            # `from wmviz import view` names a folder; `from wmviz import __version__` the root.
            modules = [f"{base}.{a.name}" if base == "wmviz" else base for a in node.names]
        else:
            continue
        for module in modules:
            target = _target(module)
            if target is not None:
                found.append((node.lineno, target))
    return found


def violations(path: Path, source: str) -> list[str]:
    """Each import of `source` (the text of `path`) that reaches its own floor or one above."""
    here = folder_of(path)
    return [
        f"{path.relative_to(ROOT)}:{line}: {here} (floor {FLOOR[here]}) imports {target} "
        f"(floor {FLOOR[target]})"
        for line, target in imported_floors(source, path)
        if target != here and FLOOR[target] >= FLOOR[here]
    ]


def sources() -> list[Path]:
    return [*sorted(WMVIZ.rglob("*.py")), ROOT / "app.py"]


def test_every_folder_of_the_package_has_exactly_one_floor():
    folders = {p.name for p in WMVIZ.iterdir() if (p / "__init__.py").is_file()}
    listed = [folder for floor in ORDER for folder in floor]
    assert len(listed) == len(set(listed))
    assert {folder_of(p) for p in sources()} == set(listed)
    assert folders <= set(listed), f"place the new folder on a floor of ORDER: {folders - set(listed)}"


def test_no_module_imports_its_own_floor_or_a_floor_above():
    found = [v for path in sources() for v in violations(path, path.read_text(encoding="utf-8"))]
    assert found == []


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("wmviz/view/tune.py", "from wmviz.analysis.sweep import COUNTER_COLUMNS\n"),
        ("wmviz/view/tune.py", "def f():\n    import wmviz.analysis.sweep\n"),  # lazy
        ("wmviz/core/valve.py", "from wmviz import trace\n"),
        ("wmviz/ui/panels.py", "from wmviz.cli import errors\n"),  # sideways
        ("wmviz/record/job.py", "from ..analysis import blame\n"),  # relative
        ("wmviz/trace/config.py", "from wmviz.timeline.store import Timeline\n"),
    ],
)
def test_an_import_up_or_sideways_is_found(path: str, source: str):
    assert len(violations(ROOT / path, source)) == 1


@pytest.mark.parametrize(
    ("path", "source"),
    [
        ("wmviz/view/tune.py", "from wmviz.core.types import MIN_MS\nfrom wmviz.view import timefmt\n"),
        ("wmviz/timeline/store.py", "from wmviz import __version__\n"),
        ("wmviz/store/runs.py", "def f():\n    from wmviz.spark import run\n"),
        ("app.py", "from wmviz.ui import panels\nimport streamlit\n"),
    ],
)
def test_an_import_down_or_within_the_folder_is_allowed(path: str, source: str):
    assert violations(ROOT / path, source) == []


# --- no circle of modules, inside a folder either -----------------------------------------------


def module_of(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def imported_modules(path: Path, known: set[str]) -> set[str]:
    """The wmviz modules `path` imports anywhere in it (a name a `from` import takes counts when it
    is itself a module); package faces (`__init__`) are left out, as they only hand names on."""
    package = list(path.relative_to(ROOT).parent.parts)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = _absolute(node, package)
            found |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in found if name in known} - {module_of(path)}


def reachable(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = list(graph.get(start, ()))
    while todo:
        node = todo.pop()
        if node not in seen:
            seen.add(node)
            todo.extend(graph.get(node, ()))
    return seen


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every group of more than one module that reach each other through imports."""
    reach = {node: reachable(graph, node) for node in graph}
    groups = {tuple(sorted({node} | {o for o in reach[node] if node in reach.get(o, ())})) for node in graph}
    return sorted(list(group) for group in groups if len(group) > 1)


def module_graph() -> dict[str, set[str]]:
    faces = [p for p in WMVIZ.rglob("*.py") if p.name != "__init__.py"]
    known = {module_of(p) for p in faces}
    return {module_of(p): imported_modules(p, known) for p in faces}


def test_no_two_modules_import_each_other_even_lazily():
    assert circles(module_graph()) == []


def test_a_circle_through_a_lazy_import_is_found():
    graph = module_graph()
    graph["wmviz.cli.options"] = graph["wmviz.cli.options"] | {"wmviz.cli.record"}
    assert any({"wmviz.cli.options", "wmviz.cli.record"} <= set(group) for group in circles(graph))
