"""Where the first page's server time goes: the page's first script run, Streamlit-free of a
browser, under cProfile, in a new process as a new server's first visitor meets it.

    python bench/first_page_profile.py              # cold (a fresh timeline cache), then warm
    python bench/first_page_profile.py --top 25

Each run is a new Python process (so imports are paid as a new server pays them) that runs
`app.py` once with Streamlit's AppTest (the bare URL: the default incident at step 0, in-process
engine, Spark never started) under cProfile, and prints the run's wall time, then the share of it
spent in each group (imports of pandas / pyarrow / plotly / streamlit / wmviz, the timeline's
build, the step's build, the figures' JSON) and the top functions by cumulative time. "warm" is the
same timeline cache again in a new process: what a second server (or a restarted one) reuses. The
browser's own work (loading Streamlit's page, drawing Plotly) is not in it: `bench/app_latency.py
--only-first-page` measures that.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

WRAPPER = """
import cProfile, runpy
profile = cProfile.Profile()
profile.enable()
try:
    runpy.run_path({app!r}, run_name="__main__")
finally:
    profile.disable()
    profile.dump_stats({out!r})
"""
"""The page's script as AppTest runs it, profiled in the script's own thread (cProfile sees one
thread: AppTest's waits are not the page's time)."""

CHILD = r"""
import pstats, sys, time
sys.path.insert(0, {repo!r})
started = time.perf_counter()
from streamlit.testing.v1 import AppTest
imported = time.perf_counter() - started
app = AppTest.from_file({wrapper!r}, default_timeout=300)
app.run()
wall = time.perf_counter() - started
assert not app.exception, app.exception
stats = pstats.Stats({out!r})
run = max(ct for (path, line, name), (cc, nc, tt, ct, callers) in stats.stats.items() if name == "run_path")
groups = {{"import pandas": "pandas/__init__.py:<module>", "import pyarrow": "pyarrow/__init__.py:<module>",
          "import plotly": "plotly/__init__.py:<module>", "import wmviz.ui": "wmviz/ui/__init__.py:<module>",
          "timeline (cache or build)": "loading.py:load_timeline",
          "the step's view": "step_cache.py:step_view",
          "figures to JSON": "plotly_chart.py:plotly_chart", "tables": "panels.py:channel_tables",
          "story strip": "panels.py:story_strip", "header claims": "checked.py:scenario_claims",
          "Tune (closed)": "tune_view.py:tune_panel", "export buttons": "export_view.py:export_buttons"}}
print(f"{label}: import streamlit {{imported:.2f}} s; the page's first script run {{run:.2f}} s "
      f"(under cProfile; {{wall:.2f}} s with AppTest's own work)")
found = {{}}
for (path, line, name), (cc, nc, tt, ct, callers) in stats.stats.items():
    where = f"{{path}}:{{name}}"
    for group, needle in groups.items():
        if where.endswith(needle) and ct > found.get(group, 0):
            found[group] = ct
for group, ct in sorted(found.items(), key=lambda kv: -kv[1]):
    print(f"  {{group:26}} {{ct:6.2f}} s  {{100 * ct / run:5.1f}} % of the script run")
stats.sort_stats("cumulative").print_stats({top})
"""


def main() -> None:
    raw = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=raw)
    parser.add_argument("--top", type=int, default=20)
    parser.add_argument("--root", type=Path, default=REPO, help="the checkout whose app.py is profiled")
    args = parser.parse_args()
    root = args.root.resolve()
    cache = Path(tempfile.mkdtemp(prefix="wmviz-profile-"))
    env = {**os.environ, "WMVIZ_CACHE": str(cache), "WMVIZ_SPARK_START": "lazy"}
    print(f"load average {os.getloadavg()[0]:.1f}")
    for label in ("cold", "warm"):
        out = cache / f"{label}.prof"
        wrapper = cache / f"profiled_{label}.py"
        wrapper.write_text(WRAPPER.format(app=str(root / "app.py"), out=str(out)))
        code = CHILD.format(repo=str(root), wrapper=str(wrapper), out=str(out), label=label, top=args.top)
        subprocess.run([sys.executable, "-c", code], cwd=root, env=env, check=True)
    print(f"load average {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
