"""wmviz in the browser: pick a built-in incident and a profile, read what the valve did."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from wmviz.core.types import Profile
from wmviz.tables import steps_table
from wmviz.trace.readers import read_trace

SAMPLES = Path(__file__).resolve().parent / "sample_data"
TRACE_SUFFIXES = {".jsonl", ".csv", ".parquet"}


def built_in_scenarios() -> dict[str, Path]:
    """Trace files shipped in sample_data/, by file stem."""
    return {p.stem: p for p in sorted(SAMPLES.iterdir()) if p.suffix in TRACE_SUFFIXES}


def load_scenario(path: Path):
    """The validated trace, with its sibling .json config when there is one."""
    config = path.with_suffix(".json")
    return read_trace(path, config if config.is_file() else None)


def controls(scenarios: dict[str, Path]) -> tuple[str, Profile | None]:
    """Sidebar choices as plain values."""
    names = list(scenarios)
    default = names.index("flink-38477-zero-output") if "flink-38477-zero-output" in names else 0
    name = st.sidebar.selectbox("Incident", names, index=default)
    choice = st.sidebar.selectbox("Profile", ["from the scenario", *[p.value for p in Profile]])
    return name, None if choice == "from the scenario" else Profile.parse(choice)


def main() -> None:
    """Render the page."""
    st.set_page_config(page_title="wmviz", layout="wide")
    scenarios = built_in_scenarios()
    name, profile = controls(scenarios)
    trace = load_scenario(scenarios[name])
    effective = profile or trace.config.profile
    st.title(trace.config.name or name)
    st.caption(f"profile {effective.value}: {effective.describes}")
    st.text(trace.config.description)
    st.dataframe(steps_table(trace, profile), hide_index=True, use_container_width=True)


main()
