"""Compare mode and what-if in the app (AppTest): side by side, the first divergence, edits."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO
from tests.support.html_tables import channel_frames
from tests.support.markdown_text import shown
from wmviz.ui import state


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path / "timelines"))


def open_app(**query) -> AppTest:
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    app.query_params.update({"engine": "local", **query})
    app.run()
    assert not app.exception, app.exception
    return app


def open_whatif(app: AppTest) -> AppTest:
    """Open the what-if form's expander, as a click on it does: the step area reruns with it open."""
    app.session_state[state.WHATIF_OPEN] = True
    app.run()
    assert not app.exception, app.exception
    return app


def whatif_widgets(app: AppTest) -> list:
    """The form's widgets on the page now (its submit button, its radio and the step's inputs)."""
    keys = [w.key for w in (*app.button, *app.radio, *app.selectbox, *app.number_input, *app.text_input)]
    return [k for k in keys if k and k.startswith("whatif_")]


def test_a_closed_what_if_form_draws_none_of_its_widgets_and_an_open_one_stays_open_while_stepping():
    app = open_app(step="2")
    labels = [e.label for e in app.expander]
    assert "What if… (at step 2)" in labels and whatif_widgets(app) == []  # closed: the label alone
    open_whatif(app)
    drawn = {"whatif_submit", "whatif_action", "whatif_status"} | {
        f"whatif_{field}_2" for field in ("kind", "channel", "watermark", "event")
    }
    assert sorted(whatif_widgets(app)) == sorted(drawn)
    # The label names the step (a new step is a new expander), yet it stays open as the step moves.
    app.slider(key="step").set_value(3).run()
    assert "What if… (at step 3)" in [e.label for e in app.expander]
    assert app.session_state[state.WHATIF_OPEN] and "whatif_kind_3" in whatif_widgets(app)
    app.session_state[state.WHATIF_OPEN] = False  # closed again: the next step draws none of it
    app.slider(key="step").set_value(4).run()
    assert whatif_widgets(app) == [] and not app.session_state[state.WHATIF_OPEN]


def test_compare_mode_names_the_first_output_divergence_first_and_the_earlier_state_one_second():
    app = open_app(compare="flip-38477", step="0")
    banner = shown(app.warning[-1].value)
    assert banner.startswith("The outputs first differ at step 7: emissions, output watermark, output status")
    assert "output MAX ACTIVE" in banner and "output 25 IDLE" in banner
    app.button(key="goto_divergence").click().run()
    assert app.session_state["step"] == 7
    assert app.query_params["compare"] in ("flip-38477", ["flip-38477"])
    assert app.query_params["step"] in ("7", ["7"])
    assert app.button(key="goto_divergence").disabled
    # The state differs earlier (FINISHED@2 is a status here, a MAX watermark there): one click away.
    state = app.button(key="goto_state_divergence")
    assert state.label == "Go to the first state divergence (step 2)"
    state.click().run()
    assert app.session_state["step"] == 2


def test_compare_mode_keeps_the_chart_and_the_operator_panels_for_both_sides():
    app = open_app(scenario="early-fire-left-join", compare="flip-38477", step="7")
    charts = [e for e in app.get("plotly_chart")]
    assert len(charts) == 2  # one watermark chart per side
    labels = [t.label for t in app.tabs]
    assert labels.count("Join changelog") == 2 and labels.count("Timers") == 2


def test_the_two_sides_step_together_and_show_max_against_the_finished_status_at_step_7():
    app = open_app(compare="flip-38477", step="7")
    assert [m.value for m in app.metric] == ["MAX", "25"]
    left, right = (t.value for t in app.text if t.value.startswith("•"))
    assert "emit WMAX" in left and "emit WMAX" not in right


def test_a_profile_compared_with_itself_is_not_offered_and_identical_runs_say_so():
    app = open_app(compare="flink-master", step="0")
    options = app.sidebar.selectbox(key="compare").options
    assert "profile flink-1.x-2.x" not in options and "profile flink-master" in options
    assert any("identical at every step" in s.value for s in app.success)


def test_a_what_if_edit_re_simulates_and_compares_with_the_original():
    app = open_whatif(open_app(step="2"))
    app.radio(key="whatif_action").set_value("change this input")
    app.selectbox(key="whatif_kind_2").set_value("status")
    app.selectbox(key="whatif_status").set_value("IDLE")
    app.button(key="whatif_submit").click().run()
    assert not app.exception, app.exception
    assert app.session_state["compare"].startswith("whatif:")
    assert whatif_widgets(app) == []  # the edit is made: its form closes on the comparison
    assert any("IDLE@2" in shown(i.value) and "first differs at step 2" in i.value for i in app.info)
    app.slider(key="step").set_value(7).run()
    assert [m.value for m in app.metric] == ["MAX", "MAX"]  # idle instead of finished: still MAX
    assert app.query_params["compare"][0 if isinstance(app.query_params["compare"], list) else slice(None)]


def test_deleting_an_input_shifts_the_other_side_by_one_step():
    app = open_whatif(open_app(step="2"))
    app.radio(key="whatif_action").set_value("delete this input")
    app.button(key="whatif_submit").click().run()
    assert not app.exception, app.exception
    app.slider(key="step").set_value(2).run()
    assert any("deleted" in i.value for i in app.info)
    app.slider(key="step").set_value(4).run()
    left, right = (t.value for t in app.text if t.value.startswith("•"))
    assert "W20@0" in left and "W20@0" in right  # step 4 here is step 3 there


def test_an_edit_that_makes_the_trace_invalid_is_refused_with_the_reason():
    app = open_whatif(open_app(step="0"))
    app.radio(key="whatif_action").set_value("change this input")
    app.selectbox(key="whatif_kind_0").set_value("watermark")
    app.text_input(key="whatif_watermark_0").set_value("")
    app.button(key="whatif_submit").click().run()
    assert any("cannot be simulated" in e.value and "watermark_ms" in shown(e.value) for e in app.error)
    assert app.sidebar.selectbox(key="compare").value == "nothing"
    assert "whatif_submit" in whatif_widgets(app)  # still open, to correct the edit


def _right_side(app: AppTest) -> tuple:
    """What the compared run shows: its output values, its narration, its channel table."""
    metrics = [m.value for m in app.metric]
    texts = [t.value for t in app.text if t.value.startswith("•")]
    tables = channel_frames(app)
    return metrics[len(metrics) // 2 :], texts[-1], tables[-1].to_dict("list")


def test_a_what_if_link_opened_in_a_fresh_session_shows_what_its_sender_saw():
    sender = open_whatif(open_app(step="3"))
    sender.radio(key="whatif_action").set_value("insert an input before it")
    sender.selectbox(key="whatif_kind_3").set_value("status")
    sender.selectbox(key="whatif_status").set_value("IDLE")
    sender.number_input(key="whatif_channel_3").set_value(3)
    sender.button(key="whatif_submit").click().run()
    assert not sender.exception, sender.exception
    sender.slider(key="step").set_value(5).run()
    link = {k: sender.query_params[k] for k in sender.query_params}
    link = {k: v[0] if isinstance(v, list) else v for k, v in link.items()}
    assert link["compare"].startswith("whatif:") and link["step"] == "5"
    # A fresh session knows nothing of the sender's: the edit itself is in the link.
    receiver = open_app(**link)
    assert receiver.session_state["compare"] == link["compare"]
    label = receiver.sidebar.selectbox(key="compare")
    assert label.value == link["compare"] and "what-if: what if ch3" in label.format_func(label.value)
    assert _right_side(receiver) == _right_side(sender)
    assert not any("deleted" in i.value for i in receiver.info)


def test_a_link_with_a_what_if_that_does_not_fit_the_trace_says_so():
    from wmviz.analysis.whatif_edit import Delete
    from wmviz.analysis.whatif_token import encode_edit

    app = open_app(step="0", compare="whatif:" + encode_edit(Delete("0", 999)))
    assert any("cannot be applied" in e.value and "no step 999" in e.value for e in app.error)
    app = open_app(step="0", compare="whatif:!!!")
    assert any("cannot be applied" in e.value for e in app.error)
