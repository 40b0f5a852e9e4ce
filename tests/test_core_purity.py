"""The simulation core stays pure: no UI, Spark or plotting imports, and no wall clock."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parent.parent / "wmviz" / "core"
FORBIDDEN = ("streamlit", "pyspark", "plotly")
CORE_MODULES = sorted(f"wmviz.core.{p.stem}" for p in CORE.glob("*.py") if p.stem != "__init__")


def test_importing_every_core_module_loads_none_of_streamlit_pyspark_or_plotly():
    # A fresh interpreter, so modules other tests imported cannot hide an indirect import.
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in CORE_MODULES)
        + f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {FORBIDDEN!r})\n"
        + "print(','.join(bad))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=CORE.parent.parent
    )
    assert result.stdout.strip() == ""
    assert len(CORE_MODULES) >= 6


@pytest.mark.parametrize("path", sorted(CORE.glob("*.py")), ids=lambda p: p.name)
def test_core_module_source_neither_imports_forbidden_packages_nor_reads_the_wall_clock(path: Path):
    tree = ast.parse(path.read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""]
        else:
            names = []
        for name in names:
            assert name.split(".")[0] not in FORBIDDEN, f"{path.name} imports {name}"
            assert name.split(".")[0] not in ("time", "datetime"), (
                f"{path.name} imports {name}: no wall clock"
            )
        if isinstance(node, ast.Attribute) and node.attr in ("now", "utcnow", "today", "time_ns"):
            pytest.fail(f"{path.name}:{node.lineno} reads the wall clock ({node.attr})")
