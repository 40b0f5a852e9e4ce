"""150 quick clicks on a live page (issue 24), in a real browser against a real streaming query:
every click made is a step or said to be waiting or refused, and the counts add up. (Before the
buttons counted their clicks in the browser, Streamlit merged the clicks that came while the page
ran: 150 clicks reached the page as 4-16, the rest dropped without a word.)"""

from __future__ import annotations

import re
import time

from tests.test_browser import APP_IDLE, app_url, browser, drive_an_empty_valve_live, page  # noqa: F401


def test_150_quick_clicks_are_each_stepped_or_said_to_be_refused(page, app_url):  # noqa: F811

    caption = drive_an_empty_valve_live(page, app_url)
    button = page.locator(".st-key-live_w_0_0 button")
    for _ in range(150):
        button.click(no_wait_after=True)
    deadline = time.monotonic() + 300
    text = previous = ""
    while time.monotonic() < deadline:  # the clicks arrive, the queue drains, the page redraws
        page.wait_for_selector(APP_IDLE, timeout=120_000)
        texts = caption.all_inner_texts()
        text = texts[-1] if texts else ""
        if len(texts) == 1 and "click(s)" in text and "waiting" not in text and text == previous:
            break  # settled: the same counts twice, nothing waiting
        previous = text
        page.wait_for_timeout(1500)
    clicks, stepped = map(int, re.search(r"(\d+) click\(s\): (\d+) stepped", text).groups())
    refused = re.search(r"(\d+) refused", text)
    refused_n = int(refused.group(1)) if refused else 0
    steps = int(re.search(r"· (\d+) step\(s\)", text).group(1))
    print(f"\n150 clicks in the browser: {text}")
    assert stepped + refused_n == clicks and steps == stepped
    assert clicks == 150  # every click made reached the page, none merged away
    assert stepped >= 1
    page.get_by_role("button", name="Stop driving live").click()
