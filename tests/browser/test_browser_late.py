"""The "Late rows" table in Chromium at 1440×900: it is drawn beside the step, the step on screen
is highlighted, and a row's step link moves the page to that step.

Uses test_browser's server, browser and helpers (the same app, Chromium and waits)."""

from __future__ import annotations

from tests.browser import test_browser as tb
from tests.browser.test_browser import key_step, open_view, wait_rendered
from wmviz.ui.late_view import LEDGER_CLASS, NOW_CLASS

# test_browser's fixtures: one app server per session, one Chromium per module, a fresh page per test.
app_url, browser, page = tb.app_url, tb.browser, tb.page

LATE_DATA = "scenario=late-data-allowed-lateness&engine=local"


def test_the_late_rows_table_is_visible_and_a_step_link_moves_the_step(page, app_url):
    from playwright.sync_api import expect

    _, charts = key_step("late-data-allowed-lateness")
    open_view(page, app_url, f"{LATE_DATA}&step=9", 9, charts)
    box = page.locator(".st-key-late_rows")
    box.scroll_into_view_if_needed()
    expect(box.get_by_text("Late rows", exact=True)).to_be_visible()
    table = box.locator(f"table.{LEDGER_CLASS}")
    expect(table).to_be_visible()
    expect(table.locator("tbody tr")).to_have_count(2)
    expect(table.locator(f"tr.{NOW_CLASS} td").first).to_have_text("9")
    # The highlight is drawn: the step on screen's row has a background the other row lacks.
    backgrounds = table.locator("tbody tr td:first-child").evaluate_all(
        "cells => cells.map(c => getComputedStyle(c).backgroundColor)"
    )
    assert backgrounds[0] != backgrounds[1], backgrounds

    table.get_by_role("link", name="7", exact=True).click()
    wait_rendered(page, 7, charts)
    moved = page.locator(f".st-key-late_rows table.{LEDGER_CLASS}")
    expect(moved.locator(f"tr.{NOW_CLASS} td").first).to_have_text("7")
