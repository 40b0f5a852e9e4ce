"""The simulation core stays pure (no UI, Spark or plotting imports, no wall clock), and the view
layer stays free of Streamlit and Spark, so the report and the CLI can use every view."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import paths

WMVIZ = paths.REPO / "wmviz"
CORE = WMVIZ / "core"
VIEW = WMVIZ / "view"
CORE_FORBIDDEN = ("streamlit", "pyspark", "plotly")
VIEW_FORBIDDEN = ("streamlit", "pyspark")


def modules_of(folder: Path) -> list[str]:
    """Every module below `folder` (subpackages included), as dotted names."""
    root = WMVIZ.parent
    return sorted(
        ".".join(p.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
        for p in folder.rglob("*.py")
    )


def loaded_after_importing(modules: list[str], forbidden: tuple[str, ...]) -> list[str]:
    # A fresh interpreter, so modules other tests imported cannot hide an indirect import.
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in modules)
        + f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {forbidden!r})\n"
        + "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=WMVIZ.parent
    )
    return [name for name in result.stdout.strip().split(",") if name]


def imported_names(path: Path) -> list[tuple[int, str]]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append((node.lineno, node.module or ""))
    return names


def test_importing_every_core_module_loads_none_of_streamlit_pyspark_or_plotly():
    modules = modules_of(CORE)
    assert "wmviz.core.java.javamap" in modules and len(modules) >= 6
    assert loaded_after_importing(modules, CORE_FORBIDDEN) == []


def test_importing_every_view_module_loads_neither_streamlit_nor_pyspark():
    modules = modules_of(VIEW)
    assert "wmviz.view.figures" in modules and len(modules) >= 6
    assert loaded_after_importing(modules, VIEW_FORBIDDEN) == []


ZONE_ARITHMETIC = {"sql_expr.py", "sql_window_time.py"}
"""Core modules that may import `datetime` for time-zone arithmetic alone (`table.local-time-zone`
offsets need a `datetime` to ask `zoneinfo`); the attribute check below still fails on any read of
the clock (`now`, `today`, ...), and `time` stays out everywhere."""


@pytest.mark.parametrize("path", sorted(CORE.rglob("*.py")), ids=lambda p: str(p.relative_to(CORE)))
def test_core_module_source_neither_imports_forbidden_packages_nor_reads_the_wall_clock(path: Path):
    for lineno, name in imported_names(path):
        top = name.split(".")[0]
        assert top not in CORE_FORBIDDEN, f"{path.name}:{lineno} imports {name}"
        clockish = ("time",) if path.name in ZONE_ARITHMETIC else ("time", "datetime")
        assert top not in clockish, f"{path.name}:{lineno} imports {name}: no wall clock"
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Attribute) and node.attr in ("now", "utcnow", "today", "time_ns"):
            pytest.fail(f"{path.name}:{node.lineno} reads the wall clock ({node.attr})")


@pytest.mark.parametrize("path", sorted(VIEW.rglob("*.py")), ids=lambda p: p.name)
def test_view_module_source_imports_neither_streamlit_nor_pyspark(path: Path):
    for lineno, name in imported_names(path):
        assert name.split(".")[0] not in VIEW_FORBIDDEN, f"{path.name}:{lineno} imports {name}"
