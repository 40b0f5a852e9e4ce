"""Where the tests find the repository and their data, wherever in tests/ a module lives: a test
module never builds a path from its own `__file__` (its room may change)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
"""The repository's root (tests/support/paths.py is two folders down)."""

DATA = REPO / "tests" / "data"
"""tests/data/: the fixtures every room reads."""
