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
from tests.support.cut_text import cut_text
from wmviz.store.incidents import built_in_incidents

# test_browser's fixtures: one app server per session, one Chromium per module, a fresh page per test.
app_url, browser, page = tb.app_url, tb.browser, tb.page

JOB = "silent-split-holds-the-whole-job"


def cut_with_every_tab(page) -> list[dict[str, str]]:
    """What is cut on the page, with each tab of the operator panel selected in turn."""
    from playwright.sync_api import expect

    # The run the step started has finished: while it runs, the page still holds the previous
    # run's panel beside the new one (CI once found two "Dropped records" tabs after End).
    page.locator(tb.APP_IDLE).wait_for()
    found = cut_text(page, tb.MAIN)
    for name in page.locator('.st-key-operator [role="tab"]').all_inner_texts():
        tab = page.locator(".st-key-operator").get_by_role("tab", name=name, exact=True)
        tab.click()
        expect(tab).to_have_attribute("aria-selected", "true")
        # The script has finished (Streamlit's running sign may come and go meanwhile: the Spark
        # box refreshes itself while Spark starts).
        page.locator(tb.APP_IDLE).wait_for()
        found += [{**c, "tab": name} for c in cut_text(page, tb.MAIN)]
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
