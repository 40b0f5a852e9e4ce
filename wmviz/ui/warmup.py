"""A new server's first visitor should not wait for imports the server could have made before the
visitor came: `wmviz app` makes them while the browser is still loading Streamlit's page.

Measured (docs/benchmarks.md, "The first page, profiled"): a new server answers its health check
about 1 s after launch; the browser then loads Streamlit's own page for 1-2 s before it asks for
the first script run; and three quarters of that run is importing pandas, pyarrow, Plotly and the
page's modules. `run_app` (what `wmviz app` runs) serves the page in this process and, as soon as
the server accepts sessions, imports what the page imports in a thread (`warm_up`).

Two threads importing at once can deadlock on a cycle of module locks (CPython then raises in one
of them), so the page imports nothing of its own alongside the warm-up: its first import,
`wmviz.ui.warmed`, waits for it to end (`wait`). Without a warm-up (`streamlit run app.py`, every
test) that wait returns at once.
"""

from __future__ import annotations

import ast
import importlib
import sys
import threading
import time
from pathlib import Path

WAIT_LIMIT_S = 120.0
"""The longest the page waits for a warm-up (imports of a few seconds even at load 20)."""

POLL_S = 0.05

WAITER = "wmviz.ui.warmed"
"""The page's first import, whose body is `wait()`: the one import the warm-up must not make."""

_started = threading.Event()
_over = threading.Event()


def page_imports(page: Path) -> list[str]:
    """The modules the page's top-level import statements name, in the page's order: `import a.b`
    names `a.b`; `from a import b` names `a`, then `a.b` where `b` is a module (the page's panels
    are modules of `wmviz.ui`)."""
    names: list[str] = []
    for node in ast.parse(page.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.append(node.module)
            names.extend(f"{node.module}.{alias.name}" for alias in node.names)
    return [name for name in names if name != "__future__"]


def warm_up(page: Path) -> list[str]:
    """Import what `page` imports, in its order, in this thread. Returns the names that are no
    module (`from m import function`) or failed: the page's own import reports a real failure."""
    skipped = []
    for name in page_imports(page):
        if name == WAITER:  # imported here, it would wait for this very thread to end
            continue
        try:
            importlib.import_module(name)
        except Exception:  # the page's own import says what is wrong, and where
            skipped.append(name)
    return skipped


def _accepting_sessions() -> bool:
    from streamlit.runtime import Runtime
    from streamlit.runtime.runtime import RuntimeState

    return Runtime.exists() and Runtime.instance().state is not RuntimeState.INITIAL


def start_when_serving(page: Path) -> threading.Thread:
    """`warm_up` in a daemon thread, begun once this process's Streamlit server accepts sessions
    (before that it would take the interpreter from the server's own start)."""

    def run() -> None:
        try:
            while not _accepting_sessions():
                time.sleep(POLL_S)
            warm_up(page)
        finally:
            _over.set()

    _started.set()  # before any session can exist: the first one waits
    thread = threading.Thread(target=run, name="wmviz-warm-up", daemon=True)
    thread.start()
    return thread


def wait() -> None:
    """Return once a started warm-up is over (at most `WAIT_LIMIT_S`); at once if none started."""
    if _started.is_set():
        _over.wait(WAIT_LIMIT_S)


def run_app(page: Path, streamlit_args: list[str]) -> None:
    """`streamlit run page *streamlit_args`, served by this process, with the warm-up."""
    from streamlit.web import cli as streamlit_cli

    start_when_serving(page)
    sys.argv = ["streamlit", "run", str(page), *streamlit_args]
    streamlit_cli.main(prog_name="streamlit")
