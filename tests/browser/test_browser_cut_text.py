"""Nothing cut at 1440×900 (issue 30, item 5): in Chromium, every table of every built-in incident,
at its key step and at its last step, with each operator tab shown in turn (timers, windows, the
join's changelog, drops), the split stage, the channels, the Late rows box; and the job graph page's
tables (the blame chain, every vertex's group, the lag's causes). A cell wider than its column, a
grid or table wider than its box, is cut (`tests.support.cut_text`).

Each incident's visit also checks that its key step shows above the fold at 1440×900
(`test_browser.check_the_key_step_is_above_the_fold`): one page load serves both checks.

Uses test_browser's server, browser and helpers (the same app, Chromium and waits)."""

from __future__ import annotations

import re

import pytest

from tests.browser import test_browser as tb
from tests.browser.test_browser import focus_page, key_step, open_view
from tests.support.cut_text import CUT_TEXT_JS, cut_text
from wmviz.store.incidents import built_in_incidents

# test_browser's fixtures: one app server per session, one Chromium per module, a fresh page per test.
app_url, browser, page = tb.app_url, tb.browser, tb.page

JOB = "silent-split-holds-the-whole-job"


OPERATOR = ".st-key-operator"
# What is cut once the page is settled: the script idle, the operator panel drawn at most once and,
# given a tab's name, that tab selected in it. One function call, so the check and the reading see
# the same page: a run that starts in between (a tab click's rerun starts after the page was seen
# idle) cannot put a second panel, or half a table, under the reading.
SETTLED_CUT_JS = f"""([name, root]) => {{
  if (!document.querySelector({tb.APP_IDLE!r})) return null;
  const panels = document.querySelectorAll({OPERATOR!r});
  if (panels.length > 1) return null;
  const tabs = panels.length ? [...panels[0].querySelectorAll('[role="tab"]')] : [];
  if (name !== null) {{
    const named = tabs.filter(tab => tab.innerText.trim() === name);
    if (named.length !== 1 || named[0].getAttribute('aria-selected') !== 'true') return null;
  }}
  return {{cut: ({CUT_TEXT_JS})(root), tabs: tabs.map(tab => tab.innerText.trim())}};
}}"""


def settled_cut(page, name: str | None = None) -> tuple[list[dict[str, str]], list[str]]:
    """What is cut in the main area once the page is settled (tab `name` selected, if given), and
    the operator panel's tab names."""
    from playwright.sync_api import TimeoutError as NeverSettled

    try:
        found = page.wait_for_function(SETTLED_CUT_JS, arg=[name, tb.MAIN]).json_value()
    except NeverSettled:  # say which of the three never held: idle, one panel, the tab selected
        seen = page.evaluate(SEEN_JS, OPERATOR)
        raise AssertionError(f"tab {name!r} never settled: {seen}\n{tb.page_report(page)}") from None
    return found["cut"], found["tabs"]


SEEN_JS = """(operator) => ({
  script: document.querySelector('[data-testid="stApp"]')?.getAttribute('data-test-script-state'),
  panels: [...document.querySelectorAll(operator)].map((panel) => [...panel.querySelectorAll('[role="tab"]')]
    .map((tab) => tab.innerText.trim() + (tab.getAttribute('aria-selected') === 'true' ? '*' : ''))),
})"""


def cut_with_every_tab(page, tries: int = 3) -> list[dict[str, str]]:
    """What is cut on the page, with each tab of the operator panel selected in turn. A tab whose
    page never settles with it selected is clicked again, up to `tries` clicks: beside a CPU hog
    one click, made once the page was seen idle after the previous tab's click, never took (the
    page settled with the previous tab selected and the focus on no tab; read as the previous
    click's rerun, begun after the page was seen idle, redrawing the tabs under the click; not
    reproduced). A click lost that way is not this walk's subject, and no test covers it:
    test_browser_steps clicks a tab on an idle page only."""
    from playwright.sync_api import expect

    # While a run is under way Streamlit keeps the previous run's elements beside the new ones: CI
    # once found two "Dropped records" tabs after End, and (on a loaded 2-core machine) two
    # "Timers" tabs just after a tab click, whose rerun had not started when the page was seen idle.
    found, names = settled_cut(page)
    for name in names:
        panel = page.locator(OPERATOR)
        tab = panel.get_by_role("tab", name=name, exact=True)
        for attempt in range(tries):
            # The one panel the last tab's rerun left, before the click (a click needs one tab to hit).
            page.locator(tb.APP_IDLE).wait_for()
            expect(panel).to_have_count(1)
            expect(tab).to_have_count(1)
            tab.click()
            try:
                cut, _ = settled_cut(page, name)
                break
            except AssertionError:
                if attempt == tries - 1:
                    raise
        found += [{**c, "tab": name} for c in cut]
    return found


@pytest.mark.parametrize("slug", sorted(built_in_incidents()))
def test_an_incident_s_key_step_is_above_the_fold_and_no_table_is_cut_there_or_at_its_last(
    page, app_url, tmp_path, slug
):
    step, charts = key_step(slug)
    open_view(page, app_url, f"scenario={slug}&engine=local&step={step}", step, charts)
    if slug in tb.INCIDENT_SLUGS:  # the incidents whose first screen the docs' pictures show
        tb.check_the_key_step_is_above_the_fold(page, slug, step, tmp_path)
    found = [{**c, "step": step} for c in cut_with_every_tab(page)]
    # `.first`: CI once found the step's heading twice here, both "Step 12 of 14" (a run's redraw).
    heading = page.get_by_role("heading", name=tb.STEP_HEADING).first.inner_text()
    last = int(re.search(r"of (\d+)$", heading)[1])
    if last != step:
        focus_page(page)
        tb.press(page, "End", last, charts)
        found += [{**c, "step": last} for c in cut_with_every_tab(page)]
    assert not found, "\n".join(map(str, found))


def test_no_table_of_the_job_graph_page_is_cut(page, app_url):
    from playwright.sync_api import expect

    page.goto(f"{app_url}/?job={JOB}&at=1795633600000")
    expect(page.get_by_role("heading", name="How late, and why")).to_be_visible()
    page.locator(tb.APP_IDLE).wait_for()
    page.get_by_text(re.compile(r"^Every vertex's subtasks at")).click()  # the groups, folded
    page.locator(tb.APP_IDLE).wait_for()
    expect(page.locator(tb.RUNNING)).to_have_count(0)
    tables = page.locator(f"{tb.MAIN} :is(table, [data-testid='stDataFrame'])")
    expect(tables.first).to_be_visible()
    assert tables.count() >= 3  # the chain, the groups, the causes
    found = cut_text(page, tb.MAIN)
    assert not found, "\n".join(map(str, found))
