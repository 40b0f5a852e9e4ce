"""The settings the page's server is shipped with (the wheel itself, built and installed once, is
`test_wheel.py`'s)."""

from __future__ import annotations

from tests.conftest import REPO


def test_the_pages_streamlit_config_keeps_the_forced_collection_off():
    """Streamlit's full garbage collection after every script run was ~65 % of a busy server's CPU
    (docs/benchmarks.md): the config beside app.py, which the wheel ships, turns it off."""
    import tomllib

    config = tomllib.loads((REPO / ".streamlit" / "config.toml").read_text())
    assert config["runner"]["postScriptGC"] is False
    assert config["server"]["maxUploadSize"] >= 200  # wmviz refuses large traces itself, with a message
