"""Play follows the clock (issue 30, item 8: "Play at 2 steps/s ran at 0.6 steps/s").

Before, autoplay moved one step every second tick and then redrew the whole page, so every tick
moved exactly one step and a slow redraw slowed the play: 2 steps/s played at 0.6 on a quiet
machine and 0.35 at load 15. Now the step follows the clock (`controls.due_steps`): each tick moves
by the steps due since play began, so a redraw slower than a step is made up by a jump. These tests
assert that behaviour, not a rate: at 10 steps/s (a step every 100 ms, faster than the page redraws
on any machine) the steps the URL shows jump, and the play ends on the last step by itself; a pause
holds. However busy the machine, the outcome is the same, only later. The rate itself is measured by
`bench/play_rate.py` (figures in docs/benchmarks.md)."""

from __future__ import annotations

import itertools
import re

import pytest

from tests.browser import test_browser as tb
from tests.browser.test_browser import APP_IDLE, focus_page, open_view, url_step
from tests.support.app_server import streamlit_app

browser, page = tb.browser, tb.page

RESUMED = "scenario=resumed-partition-records-late&engine=local"  # the built-in with the most steps


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    """The app with Spark started only when a run needs it: no JVM takes the cores while Play runs."""
    tmp = tmp_path_factory.mktemp("wmviz-play")
    with streamlit_app(tmp, {"WMVIZ_CACHE": str(tmp / "cache"), "WMVIZ_SPARK_START": "lazy"}) as url:
        yield url


def choose_speed(page, speed: str) -> None:
    from playwright.sync_api import expect

    page.get_by_role("combobox", name="Play speed").click()
    page.keyboard.type(speed)
    expect(page.get_by_role("option", name=speed, exact=True)).to_be_visible()
    page.keyboard.press("Enter")
    page.locator(APP_IDLE).wait_for()


WATCH_STEPS = """() => {
    // Every step value the URL takes, in order, polled far faster than any tick.
    window.__steps = [];
    const read = () => Number(new URLSearchParams(location.search).get('step'));
    window.__watch = setInterval(() => {
        const step = read();
        if (window.__steps[window.__steps.length - 1] !== step) window.__steps.push(step);
    }, 10);
}"""

# Generous: only a stuck or stopped autoplay comes near it; a slow machine is merely later.
PATIENCE_MS = 180_000


def test_play_at_1_step_a_second_moves_then_pauses_where_space_was_pressed_and_holds(page, app_url):
    from playwright.sync_api import expect

    open_view(page, app_url, f"{RESUMED}&step=0", 0, 2)
    last = int(page.get_by_role("heading", name=re.compile(r"^Step 0 of \d+$")).inner_text().split()[-1])
    assert last >= 16, f"the incident has {last} steps: too few to see it move"
    choose_speed(page, "1 step/s")
    focus_page(page)
    page.evaluate(WATCH_STEPS)
    page.keyboard.press("Space")
    page.wait_for_function(
        "() => Number(new URLSearchParams(location.search).get('step')) >= 2", timeout=PATIENCE_MS, polling=50
    )
    page.keyboard.press("Space")
    expect(page.get_by_role("button", name=re.compile("^▶ Play"))).to_be_visible()
    page.locator(APP_IDLE).wait_for()
    paused_at = url_step(page)
    # Space was pressed at step 2 with the play a step a second: the pause lands long before the end.
    assert paused_at is not None and paused_at < last, (
        f"the play ran past the pause: {page.evaluate('() => window.__steps')}; "
        f"keys: {page.evaluate('() => window.__wmvizKeyLog')}"
    )
    page.wait_for_timeout(2500)  # over two steps' time at 1 step/s: a running autoplay would move
    page.locator(APP_IDLE).wait_for()
    assert url_step(page) == paused_at, "the step moved after the pause"


def test_play_at_10_steps_a_second_catches_up_by_jumps_and_stops_on_the_last_step(page, app_url):
    from playwright.sync_api import expect

    open_view(page, app_url, f"{RESUMED}&step=0", 0, 2)
    last = int(page.get_by_role("heading", name=re.compile(r"^Step 0 of \d+$")).inner_text().split()[-1])
    choose_speed(page, "10 steps/s")
    focus_page(page)
    page.evaluate(WATCH_STEPS)
    page.keyboard.press("Space")
    page.wait_for_function(
        f"() => Number(new URLSearchParams(location.search).get('step')) >= {last}",
        timeout=PATIENCE_MS,
        polling=50,
    )
    expect(page.get_by_role("button", name=re.compile("^▶ Play"))).to_be_visible()  # it stopped itself
    expect(page.get_by_role("heading", name=f"Step {last} of {last}")).to_be_visible()
    steps = page.evaluate("() => { clearInterval(window.__watch); return window.__steps; }")
    moves = [b - a for a, b in itertools.pairwise(steps)]
    assert steps[-1] == last and all(move > 0 for move in moves), steps
    # The old autoplay moved one step a tick whatever the clock said: no move was ever larger.
    assert max(moves) > 1, f"every tick moved one step: the play does not follow the clock ({steps})"
