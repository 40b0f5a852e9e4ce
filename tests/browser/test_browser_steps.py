"""Right and usable at every step (issue 23), in Chromium at 1440×900: the operator panel that
matters is the tab selected however the step is reached (a key, a button, a link), and
a key pressed while the page is still drawing is queued, never lost.

Uses test_browser's server, browser and helpers (the same app, Chromium and waits)."""

from __future__ import annotations

import re

import pytest

from tests.browser import test_browser as tb
from tests.browser.test_browser import focus_page, key_log, key_step, open_view, press, wait_rendered

# test_browser's fixtures: one app server per session, one Chromium per module, a fresh page per test.
app_url, browser, page = tb.app_url, tb.browser, tb.page

LATE_DATA = "scenario=late-data-allowed-lateness&engine=local"


def selected_tab(page) -> str:
    return page.locator('.st-key-operator [role="tab"][aria-selected="true"]').inner_text().strip()


def shown_because(page) -> str:
    return page.locator(".st-key-operator").get_by_text(re.compile(r"^Operator")).first.inner_text()


def test_the_operator_tab_that_matters_is_selected_on_every_way_of_reaching_a_step(page, app_url):
    """late-data-allowed-lateness: timers up to step 5, the window fires at 6 and 7, timers at 8, a
    drop at 9, a firing at 10."""
    from playwright.sync_api import expect

    _, charts = key_step("late-data-allowed-lateness")
    open_view(page, app_url, f"{LATE_DATA}&step=5", 5, charts)
    assert selected_tab(page) == "Timers"
    focus_page(page)
    press(page, "ArrowRight", 6, charts)  # a key
    assert "Windows shown because" in shown_because(page)
    expect(page.locator('.st-key-operator [role="tab"][aria-selected="true"]')).to_have_text("Windows")
    press(page, "ArrowRight", 7, charts)
    # A tab the person picks stays while the step stays; the next step selects what matters.
    page.locator(".st-key-operator").get_by_role("tab", name="Dropped records").click()
    wait_rendered(page, 7, charts)
    assert selected_tab(page) == "Dropped records"
    page.get_by_role("button", name=re.compile("^Forward")).click()  # a button
    wait_rendered(page, 8, charts)
    assert selected_tab(page) == "Timers"
    page.get_by_role("button", name=re.compile("^Forward")).click()
    wait_rendered(page, 9, charts)
    expect(page.locator('.st-key-operator [role="tab"][aria-selected="true"]')).to_have_text(
        "Dropped records"
    )
    focus_page(page)
    press(page, "End", 10, charts)
    expect(page.locator('.st-key-operator [role="tab"][aria-selected="true"]')).to_have_text("Windows")
    press(page, "Home", 0, charts)
    expect(page.locator('.st-key-operator [role="tab"][aria-selected="true"]')).to_have_text("Timers")


FLINK_38477 = "scenario=flink-38477-zero-output&engine=local"


def test_keys_pressed_while_the_page_draws_are_queued_never_lost(page, app_url):
    """Three Right presses at once, while the first one's rerun draws, end at step 3; a key pressed
    as soon as the page's listener is in place, before the step buttons are drawn, still acts."""
    charts = 2
    open_view(page, app_url, f"{FLINK_38477}&step=0", 0, charts)
    focus_page(page)
    for _ in range(3):
        page.keyboard.press("ArrowRight")  # no wait between: the 2nd and 3rd land mid-rerun
    wait_rendered(page, 3, charts)
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowLeft")
    wait_rendered(page, 1, charts)

    page.goto(f"{app_url}/?{FLINK_38477}&step=4", wait_until="commit")
    page.wait_for_function("() => window.__wmvizKeys === true", polling=20)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    wait_rendered(page, 6, charts)


def test_a_key_waits_for_a_step_button_a_slow_browser_has_not_drawn_yet(page, app_url):
    """A loaded browser draws a finished run seconds late: the script is idle and the step buttons
    are not there yet. Keys pressed then wait for them. (A CI run lost two such presses: a key was
    dropped once the idle page had lacked its button for 400 ms.) The buttons are hidden from the
    listener for 2 s here, as a slow browser leaves them undrawn."""
    charts = 2
    open_view(page, app_url, f"{FLINK_38477}&step=2", 2, charts)
    focus_page(page)
    page.evaluate(
        """() => {
            const boxes = [...document.querySelectorAll('.st-key-fwd')];
            const swap = (from, to) => boxes.forEach((box) => box.classList.replace(from, to));
            swap('st-key-fwd', 'st-key-fwd-undrawn');
            setTimeout(() => swap('st-key-fwd-undrawn', 'st-key-fwd'), 2000);
        }"""
    )
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    wait_rendered(page, 4, charts)
    assert [entry[1] for entry in key_log(page)].count("acted") == 2, key_log(page)


def test_a_second_key_waits_until_the_first_one_s_step_shows_however_late_the_server_starts_it(page, app_url):
    """Each step button's target is fixed when it is drawn, so a second click on the same drawing
    repeats the first (two Right presses made one step). Here the page's messages to the server are
    held for 6 s, as a loaded server starts a rerun late: the second key still waits until the first
    one's step shows, and the two make two steps. (The listener used to give a click 4 s.)"""
    charts = 2
    held: list = []
    holding = [False]

    def route(socket) -> None:
        server = socket.connect_to_server()

        def from_page(message) -> None:
            if holding[0]:
                held.append((server, message))
            else:
                server.send(message)

        socket.on_message(from_page)

    page.route_web_socket(re.compile(r"/_stcore/stream"), route)
    open_view(page, app_url, f"{FLINK_38477}&step=2", 2, charts)
    focus_page(page)
    holding[0] = True
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.wait_for_timeout(6000)  # longer than the 4 s the listener used to give a click
    holding[0] = False
    for server, message in held:
        server.send(message)
    wait_rendered(page, 4, charts)
    assert [entry[1] for entry in key_log(page)].count("acted") == 2, key_log(page)


@pytest.mark.spark
def test_live_inputs_sit_beside_the_output_and_channels_they_move(page, app_url):
    """Drive it live: the inject buttons are under the channel table, beside the output card, all
    on one 1440×900 screen (they were ~1,700 px below the output, past the chart and heap)."""
    from playwright.sync_api import expect

    caption = tb.drive_an_empty_valve_live(page, app_url)
    page.locator(".st-key-live_w_0_0 button").click()
    # The first step starts the query's Python workers: 44-57 s beside CPU hogs on 2 cores.
    expect(caption).to_contain_text("· 1 step(s)", timeout=tb.SPARK_READY_MS)
    page.locator(tb.APP_IDLE).wait_for()
    output = page.locator('[data-testid="stMetric"]').first
    for element in (output, page.locator(".st-key-channels"), page.locator(".st-key-live_w_0_1 button")):
        tb.on_screen(page, element)
    gap = page.locator(".st-key-live_inject").bounding_box()["y"] - output.bounding_box()["y"]
    assert gap < 600, gap


def panel_on_a_page(page, html: str) -> list[dict]:
    """The live input panel's function as `window.panel` on a page of `html` (no app, no Streamlit:
    the call orders below are played on it directly); returns one channel's rows for its data."""
    from wmviz.ui import live_clicks

    page.set_content(html)
    function = live_clicks._JS.replace("export default function", "function")
    page.add_script_tag(content=f"window.panel = {function}")
    button = {"key": "live_w_0_0", "text": "watermark", "action": "0.0", "disabled": False}
    return [{"key": "live_ch_0_0", "label": "ch 0", "buttons": [button]}]


def test_a_stale_call_s_cleanup_leaves_the_live_inputs_drawn(page):
    """Streamlit calls the input panel's function again on each rerun, on the same element, and
    runs the cleanup of a call whose module import was still pending when the rerun came, after
    the newer call reused the panel's box. That cleanup removed the box: on a loaded machine the
    live page showed no input buttons (a click waited out its 120 s). Only the newest call's
    cleanup, the unmount's, removes them."""
    rows = panel_on_a_page(page, "<div id=host></div>")
    drawn = page.evaluate(
        """(data) => {
          const args = {data, parentElement: document.getElementById("host"), setStateValue: () => {}};
          const count = () => document.querySelectorAll(".st-key-live_w_0_0 button").length;
          const stale = window.panel(args), newest = window.panel(args);
          stale();
          const afterStale = count();
          newest();
          return [afterStale, count()];
        }""",
        {"panel": "p", "keep": 50, "rows": rows},
    )
    assert drawn == [1, 0], drawn


def test_a_call_that_comes_after_its_mount_left_leaves_the_shown_inputs_drawn(page):
    """Streamlit calls a mount's function when its module import resolves, even if the element was
    unmounted meanwhile (its cleanup ran first, with nothing to clean). That late call hid the shown
    mount's buttons, and nothing called the shown mount again (its data is the same on every run):
    CI's live page had no input buttons for 120 s. A call on an element no longer in the page draws
    nothing and hides nothing."""
    rows = panel_on_a_page(page, "<div id=old></div><div id=new></div>")
    drawn = page.evaluate(
        """(data) => {
          const at = (id) => ({data, parentElement: document.getElementById(id), setStateValue: () => {}});
          const shown = (id) => document.querySelectorAll("#" + id + " .st-key-live_w_0_0 button").length;
          const gone = at("old");
          gone.parentElement.remove();  // unmounted while its import was pending
          const newest = window.panel(at("new"));
          const late = window.panel(gone);  // its import resolves: the call comes anyway
          const afterLate = shown("new");
          late();
          const afterItsCleanup = shown("new");
          newest();
          return [afterLate, afterItsCleanup, document.querySelectorAll(".wmviz-live-inputs").length];
        }""",
        {"panel": "p", "keep": 50, "rows": rows},
    )
    assert drawn == [1, 1, 0], drawn


def test_an_older_mount_called_last_then_unmounted_leaves_the_newest_inputs_drawn(page):
    """The panel moved: the page holds its old mount and its new one for a moment, and the box of the
    mount called last is the one shown. Streamlit calls a mount's function again, without its
    cleanup, when the element's fragment or data change; an old mount called after the new one took
    the box back, and its unmount then removed it: no input buttons at all. When the shown box's
    mount leaves, the newest mount still on the page shows its box again, in React's order: the
    element is gone before its cleanup runs (played the other way round, this test passed while
    the page was left with no buttons)."""
    rows = panel_on_a_page(page, "<div id=old></div><div id=new></div>")
    drawn = page.evaluate(
        """(data) => {
          const at = (id) => ({data, parentElement: document.getElementById(id), setStateValue: () => {}});
          const shown = (id) => document.querySelectorAll("#" + id + " .st-key-live_w_0_0 button").length;
          window.panel(at("old"));
          const newest = window.panel(at("new"));
          const oldAgain = window.panel(at("old"));  // the old mount called again, last
          const whileBoth = [shown("old"), shown("new")];
          // The old mount leaves: React removes its element, then runs its newest call's cleanup.
          document.getElementById("old").remove();
          oldAgain();
          const afterOld = shown("new");
          newest();  // and the new one's unmount removes its box
          return [whileBoth, afterOld, document.querySelectorAll(".wmviz-live-inputs").length];
        }""",
        {"panel": "p", "keep": 50, "rows": rows},
    )
    assert drawn == [[1, 0], 1, 0], drawn
