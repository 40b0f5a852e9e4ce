"""Keys on the job graph page act there and are never replayed on the next page (issue 30, item 1).

Before: on the graph page five Left presses did nothing (the valve page's key listener took the
arrows from the time slider and queued them for step buttons the graph has not), then "Step
through …" opened the valve page at step 90 and it drifted to 86 with no key pressed. Now the graph
page has its own keys (a sample earlier / later, the ends), each acting once the one before it has
shown, and a queued key the next page does not map is dropped."""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

from tests.browser.test_browser import APP_IDLE, app_url, browser, key_log, page, url_step  # noqa: F401

JOB = "job=silent-split-holds-the-whole-job&at=1795633600000"


def url_at(shown) -> int:
    return int(parse_qs(urlparse(shown.url).query)["at"][0])


def test_left_moves_the_graph_s_time_and_nothing_is_replayed_on_the_valve_page(page, app_url):  # noqa: F811
    from playwright.sync_api import expect

    page.goto(f"{app_url}/?{JOB}")
    page.locator(APP_IDLE).wait_for()
    expect(page.locator(".st-key-job_earlier button")).to_be_visible()
    page.get_by_role("heading", level=1).first.click()
    seen = [url_at(page)]
    for _ in range(5):
        page.keyboard.press("ArrowLeft")
        # Awaited, not timed: the URL names an earlier sample once the key has acted.
        expect(page).not_to_have_url(re.compile(rf"[?&]at={seen[-1]}(&|$)"))
        page.locator(APP_IDLE).wait_for()
        seen.append(url_at(page))
    assert seen == sorted(seen, reverse=True) and len(set(seen)) == 6, seen
    # Each key was seen to act (its click moved the URL's time), so the next went at once: a key
    # whose effect goes unseen holds the next one for 30 s.
    page.wait_for_function("() => window.__wmvizKeyLog.filter((entry) => entry[1] !== 'key').length >= 10")
    done = [entry[1] for entry in key_log(page) if entry[1] != "key"]
    assert done == ["clicked", "acted"] * 5, done
    page.get_by_role("button", name=re.compile("^Step through")).click()
    heading = page.get_by_role("heading", name=re.compile(r"^Step \d+ of \d+$"))
    expect(heading).to_be_visible(timeout=300_000)
    page.locator(APP_IDLE).wait_for()
    opened = url_step(page)
    page.wait_for_timeout(2500)  # a key left over would act in this (the valve page maps none of them)
    page.locator(APP_IDLE).wait_for()
    assert url_step(page) == opened
    expect(heading).to_have_text(re.compile(rf"^Step {opened} of"))
