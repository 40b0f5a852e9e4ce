"""`wmviz app` imports what the page imports before the first visitor asks for it (issue 30, Deliver
3: the first page spent three quarters of its first script run importing), and the page never
imports alongside that warm-up (two threads importing at once can deadlock on module locks).

How much sooner the page is usable is `bench/app_latency.py --only-first-page`'s to measure; these
check what happens, each in a new Python process (imports are per process).
"""

from __future__ import annotations

import os
import subprocess
import threading
import time

from tests.conftest import REPO
from tests.support.python_run import python_output
from tools.appserver import app_command, free_port, healthy, stop_group
from wmviz.ui.warmup import WAITER, page_imports


def test_the_page_s_imports_are_read_from_the_page_in_its_order_the_wait_first():
    names = page_imports(REPO / "app.py")
    ours = [name for name in names if name.startswith("wmviz")]
    assert ours[0] == WAITER  # before anything the warm-up imports
    assert "wmviz.ui.panels" in names and "streamlit" in names and "__future__" not in names
    assert names.index("wmviz.ui") < names.index("wmviz.ui.panels")


def test_the_warm_up_imports_what_the_page_needs_and_never_the_module_that_waits_for_it():
    out = python_output(
        "import sys\n"
        "from pathlib import Path\n"
        "from wmviz.ui.warmup import warm_up\n"
        f"skipped = warm_up(Path({str(REPO / 'app.py')!r}))\n"
        "print(sorted(m for m in ('pandas', 'pyarrow', 'plotly', 'wmviz.ui.panels', 'wmviz.ui.warmed')"
        " if m in sys.modules))\n"
        "print(all(name.rsplit('.', 1)[0] in sys.modules for name in skipped), len(skipped) > 0)\n"
    )
    imported, functions_only = out.splitlines()[-2:]
    assert imported == "['pandas', 'plotly', 'pyarrow', 'wmviz.ui.panels']"
    # What it skipped are names imported from a module (`from m import function`), not modules.
    assert functions_only == "True True"


PAGE_DURING_WARM_UP = r"""
import sys, threading, time
from pathlib import Path
sys.path.insert(0, {folder!r})
from wmviz.ui import warmup

warmup._accepting_sessions = lambda: True  # no Streamlit server here: the warm-up begins at once
thread = warmup.start_when_serving(Path({page!r}))
while "slow" not in sys.modules:  # the warm-up is inside the slow import now
    time.sleep(0.01)
page = {{}}
exec(Path({page!r}).read_text(), page)  # the page's script, as Streamlit runs it
thread.join()
print(page["seen_over"])
"""


def test_a_page_opened_while_the_warm_up_imports_waits_for_it_and_imports_nothing_twice(tmp_path):
    bodies = tmp_path / "bodies.txt"  # a line each time the slow module's body runs
    slow_body = f"import time\nopen({str(bodies)!r}, 'a').write('ran\\n')\ntime.sleep(1.5)\n"
    (tmp_path / "slow.py").write_text(slow_body)
    page = tmp_path / "page.py"
    page.write_text(
        f"import {WAITER}  # noqa: F401\n"
        "from wmviz.ui import warmup\n"
        "seen_over = warmup._over.is_set()\n"
        "import slow  # noqa: F401\n"
    )
    out = python_output(PAGE_DURING_WARM_UP.format(folder=str(tmp_path), page=str(page)))
    # The page's script went on only once the warm-up was over, and the slow module ran once.
    assert out.splitlines()[-1] == "True"
    assert bodies.read_text() == "ran\n"


def test_without_a_warm_up_the_page_does_not_wait():
    out = python_output(
        "import time\nstart = time.monotonic()\n"
        f"import {WAITER}\n"
        "from wmviz.ui.warmup import WAIT_LIMIT_S\n"
        "print(time.monotonic() - start < WAIT_LIMIT_S / 2)\n"
    )
    assert out.splitlines()[-1] == "True"


def test_wmviz_app_imports_the_page_before_anyone_visits(tmp_path):
    """Python reports each import as it ends (`-X importtime`, on stderr): the page's panels are
    imported with no browser ever connected. `streamlit run app.py` imports them on the first
    visit only, so this waits its bound and fails there."""
    port = free_port()
    env = {**os.environ, "WMVIZ_CACHE": str(tmp_path / "cache"), "WMVIZ_SPARK_START": "lazy"}
    env["PYTHONPROFILEIMPORTTIME"] = "1"
    process = subprocess.Popen(
        app_command(port), cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, start_new_session=True,
    )  # fmt: skip
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(process.stderr), daemon=True)
    reader.start()
    try:
        deadline = time.monotonic() + 300  # bounds a hang only: a busy machine is slow, not wrong
        while not any(line.rstrip().endswith("| wmviz.ui.panels") for line in list(lines)):
            assert process.poll() is None, "".join(lines[-40:])
            assert time.monotonic() < deadline, "the page's modules were not imported before a visit"
            time.sleep(0.2)
        assert healthy(f"http://127.0.0.1:{port}", timeout=30)  # and the server serves meanwhile
    finally:
        stop_group(process, 15, 15)
