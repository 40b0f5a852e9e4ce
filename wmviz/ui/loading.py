"""Getting a timeline on screen (Streamlit): start Spark once, simulate with a visible progress bar,
and keep what was loaded for the next step.

The simulation runs in a worker thread while the script thread draws its progress: Spark reports
progress from its own polling thread, which may not touch Streamlit elements.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import streamlit as st

from wmviz.incidents import Incident, built_in_incidents
from wmviz.timeline.cursor import InstanceCursor
from wmviz.timeline.store import Timeline
from wmviz.ui.figures import heatmap_matrix
from wmviz.ui.figures_heatmap import input_frontier
from wmviz.ui.model import trace_times
from wmviz.ui.runs import RunRequest, cache_root, run_timeline


def incidents(root: Path) -> dict[str, Incident]:
    """The incidents in `root`, read again only when a file there changes (reading them validates
    every trace, which for a large one takes seconds: too slow for every step)."""
    stamp = tuple(sorted((p.name, p.stat().st_mtime_ns) for p in root.iterdir()))
    return _incidents(str(root), stamp)


@st.cache_resource(show_spinner=False, max_entries=4)
def _incidents(root: str, stamp: tuple) -> dict[str, Incident]:
    return built_in_incidents(Path(root))


@st.cache_resource(show_spinner=False)
def spark_session():
    """The process's SparkSession (one per server, shared by every browser session)."""
    from wmviz.spark.session import get_spark

    return get_spark()


def load_timeline(request: RunRequest, what: str) -> Timeline:
    """The timeline of `request`: from the cache, or simulated now with a status box and progress bar."""
    target = cache_root() / request.digest()
    if (target / "meta.json").is_file():
        return Timeline(target)
    box = st.empty()  # cleared when done: the page below must not move down for good
    with box.status(f"Simulating {what} on the {request.engine} engine…", expanded=True) as status:
        if request.engine == "spark":
            status.write("Starting the local SparkSession (about 10 s, once per server)…")
            spark_session()
            status.write("Spark is up; running the simulation job.")
        bar = st.progress(0.0, text="waiting for the first report")
        state: dict = {"fraction": 0.0, "line": "starting", "error": None, "timeline": None}

        def work() -> None:
            try:
                state["timeline"] = run_timeline(request, lambda f, line: state.update(fraction=f, line=line))
            except BaseException as exc:  # shown to the user below, never swallowed
                state["error"] = exc

        worker = threading.Thread(target=work, daemon=True)
        worker.start()
        while worker.is_alive():
            bar.progress(min(state["fraction"], 1.0), text=state["line"])
            time.sleep(0.2)
        worker.join()
        if state["error"] is not None:
            status.update(label="The simulation failed", state="error")
            raise state["error"]
        bar.progress(1.0, text=state["line"])
        status.update(
            label=f"Simulated {what} on the {request.engine} engine", state="complete", expanded=False
        )
    box.empty()
    return state["timeline"]


@st.cache_resource(show_spinner=False, max_entries=16)
def instance_cursor(path: str, instance: str) -> InstanceCursor:
    """One instance's steps in memory (kept per timeline and instance for the next step)."""
    return InstanceCursor(Timeline(Path(path)), instance)


@st.cache_resource(show_spinner=False, max_entries=16)
def overview_matrix(path: str) -> tuple[pd.DataFrame, np.ndarray]:
    """Every instance's output watermark over arrival order, bucketed (the overview heatmap's input),
    and the newest input time seen up to each bucket (what "absolute" lag is measured against)."""
    import pyarrow.dataset as ds

    steps = ds.dataset(Path(path) / "table=steps", format="parquet")
    table = steps.to_table(columns=["instance", "order", "output_wm", "event_ms", "watermark_ms"]).to_pandas()
    matrix = heatmap_matrix(table)
    return matrix, input_frontier(table, np.asarray(matrix.columns, dtype=np.int64))


@st.cache_resource(show_spinner=False, max_entries=16)
def time_origin(path: str) -> int | None:
    """The run's first time (the smallest finite event, watermark or processing time over every
    instance): the origin of relative times, the same for every instance."""
    import pyarrow.dataset as ds

    steps = ds.dataset(Path(path) / "table=steps", format="parquet")
    return trace_times(steps.to_table(columns=["event_ms", "watermark_ms", "proc_ms"]))


@st.cache_resource(show_spinner=False, max_entries=16)
def histories(path: str, instance: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The channel and output histories the watermark chart draws (independent of the step)."""
    cursor = instance_cursor(path, instance)
    return cursor.channel_history(), cursor.output_history()
