"""The minimal page: it opens on the FLINK-38477 incident and shows every step with its narration."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from tests.conftest import REPO


def open_app() -> AppTest:
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=30)
    app.run()
    assert not app.exception, app.exception
    return app


def test_app_opens_on_the_flink_38477_incident_with_one_row_per_step_and_the_max_jump_narrated():
    app = open_app()
    assert app.title[0].value.startswith("FLINK-38477")
    table = app.dataframe[0].value
    assert len(table) == 8
    assert table["emitted"].iloc[-1] == "WMAX"
    assert "replayed as WMAX@2" in table["what happened"].iloc[2]


def test_switching_the_profile_to_flip_38477_changes_the_last_step_to_an_idle_status():
    app = open_app()
    app.sidebar.selectbox[1].select("flip-38477").run()
    table = app.dataframe[0].value
    assert table["emitted"].iloc[-1] == "S:IDLE"
    assert "flip-38477" in app.caption[0].value


def test_every_built_in_scenario_renders_without_error():
    app = open_app()
    for name in app.sidebar.selectbox[0].options:
        app.sidebar.selectbox[0].select(name).run()
        assert not app.exception, name
        assert len(app.dataframe[0].value) > 0
