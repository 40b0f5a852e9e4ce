"""Where wmviz finds the files it ships besides its modules: the app page and the built-in incidents.

In a source checkout they sit beside the package (`app.py`, `sample_data/`); an installed wheel
carries them inside it (`wmviz/_app/app.py`, `wmviz/sample_data/`, mapped there by
pyproject.toml). Both are looked up at fixed places, never by walking up directories.
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
