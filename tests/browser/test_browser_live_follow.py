"""Live mode follows the instance its row went to (issue 30, item 4): on a trace of two subtasks,
Forward sends the trace's next row; when that row belongs to the other subtask, the page switches
to it and shows its newest step. (Before, the page stayed on the instance it showed, "Step 0 of 0"
under a header that counted every step: live mode looked dead.)"""

from __future__ import annotations

import re

from tests.browser.test_browser import APP_IDLE, SPARK_READY_MS, app_url, browser, open_view, page  # noqa: F401

INCIDENT = "scenario=idle-partition-pins-watermark&engine=local&step=0"
"""Rows 1-2 go to subtask 0, row 3 to subtask 1."""
CHARTS = 3  # the watermark chart, the heap and the overview of both subtasks


def counted(caption, steps: int) -> None:
    """Await the caption's count of `steps`; when it does not come, fail with the page's alerts,
    which say why a click was rejected (a run on a loaded machine said only "1 rejected")."""
    from playwright.sync_api import expect

    try:
        expect(caption).to_contain_text(f"· {steps} step(s)", timeout=SPARK_READY_MS)
    except AssertionError as exc:
        alerts = caption.page.get_by_test_id("stAlert").all_inner_texts()
        raise AssertionError(f"{exc}\nThe page's alerts: {alerts}") from None


def test_live_mode_shows_the_instance_the_newest_row_went_to(page, app_url):  # noqa: F811
    from playwright.sync_api import expect

    open_view(page, app_url, INCIDENT, 0, CHARTS)
    expect(page.locator(".st-key-spark_status")).to_contain_text("Spark ready", timeout=SPARK_READY_MS)
    page.get_by_text("Drive it live (Spark streaming)").click()
    page.get_by_role("button", name="Drive this trace live").click()
    caption = page.get_by_text(re.compile(r"^Spark Structured Streaming query"))
    expect(caption).to_be_visible(timeout=SPARK_READY_MS)
    instance = page.get_by_role("combobox", name="Instance (subtask)")
    for steps in (1, 2, 3):
        # Each Forward is awaited until its step is counted: a key's effect, never its time.
        forward = page.get_by_role("button", name=re.compile("Send the first input|Next step|Forward"))
        if steps == 1:
            forward.first.click()
        else:
            page.get_by_role("heading", level=1).first.click()
            page.keyboard.press("ArrowRight")
        counted(caption, steps)
        page.locator(APP_IDLE).wait_for()
    # The third row went to subtask 1: the page shows subtask 1 and its first (and newest) step.
    expect(instance).to_have_value("1", timeout=60_000)
    expect(page.get_by_role("heading", name=re.compile(r"^Step 0 of 0$"))).to_be_visible(timeout=60_000)
    expect(caption).to_contain_text("· 3 step(s)")
