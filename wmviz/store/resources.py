"""Where wmviz finds the files it ships besides its modules: the app page, the built-in incidents
and the docs the page shows.

In a source checkout they sit beside the package (`app.py`, `sample_data/`, `docs/`); an installed
wheel carries them inside it (`wmviz/_app/app.py`, `wmviz/sample_data/`, `wmviz/docs/`, mapped there
by pyproject.toml and read with `importlib.resources`). Both are looked up at fixed places, never
by walking up directories.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent.parent  # wmviz/, this module sits in wmviz/store/
_CHECKOUT = _PACKAGE.parent


def _shipped(package: str, name: str) -> Path | None:
    try:
        found = resources.files(package) / name
    except ModuleNotFoundError:
        return None
    return Path(str(found)) if found.is_file() or found.is_dir() else None


def app_page() -> Path:
    """The Streamlit page (`streamlit run` it)."""
    local = _CHECKOUT / "app.py"
    if local.is_file():
        return local
    shipped = _shipped("wmviz._app", "app.py")
    if shipped is None:
        raise FileNotFoundError("wmviz's app.py is missing from this installation")
    return shipped


def sample_data() -> Path:
    """The folder of built-in incidents (trace, config, story)."""
    local = _CHECKOUT / "sample_data"
    if local.is_dir():
        return local
    shipped = _PACKAGE / "sample_data"
    if shipped.is_dir():
        return shipped
    raise FileNotFoundError("wmviz's sample_data is missing from this installation")


def doc_text(name: str) -> str:
    """The text of one of wmviz's docs (`trace-format.md`, ...): the checkout's `docs/`, else the
    copy the wheel carries (`wmviz.docs`). A FileNotFoundError names the doc when neither has it."""
    local = _CHECKOUT / "docs" / name
    if local.is_file():
        return local.read_text(encoding="utf-8")
    try:
        return (resources.files("wmviz.docs") / name).read_text(encoding="utf-8")
    except (ModuleNotFoundError, FileNotFoundError):
        raise FileNotFoundError(f"wmviz's docs/{name} is missing from this installation") from None
