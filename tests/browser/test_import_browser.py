"""The page on imported incidents, in Chromium: a Kafka dump's split stage above the channels at
the moment partition 5 resumes, and a recorded trace's replay check under the output. Writes the
screenshots docs/from-incident-to-trace.md shows (when missing, or with WMVIZ_SCREENSHOTS=1)."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.browser.test_browser import (
    APP_IDLE,
    FLINK_38477,
    ONE_VALVE_CHARTS,
    app_url,
    browser,
    check_and_return,
    on_screen,
    open_view,
    page,
    publish,
    screen_png,
    the_step_is_above_the_fold,
    wait_rendered,
)
from tests.conftest import REPO
from tests.support.kafka_dump import FILE as KAFKA_DUMP
from wmviz.core.simulate import simulate
from wmviz.core.splits import SplitEvent
from wmviz.trace.readers import read_trace

FIXTURES = (app_url, browser, page)  # the browser suite's server and Chromium, used here as fixtures
PROMETHEUS = REPO / "tests" / "data" / "prometheus" / "skewed-sources-query-range.json"


def _upload(page, path) -> None:
    from playwright.sync_api import expect

    open_view(page, app_url_of(page), f"{FLINK_38477}&step=0", 0, ONE_VALVE_CHARTS)
    box = page.get_by_test_id("stExpander").filter(has_text="Bring your own trace")
    box.get_by_text("Bring your own trace", exact=True).click()
    box.locator('input[type="file"]').nth(0).set_input_files(str(path))
    expect(page).to_have_url(re.compile(r"[?&]trace=[0-9a-f]{24}(&|$)"))
    page.locator(APP_IDLE).wait_for()


def app_url_of(page) -> str:
    return page.context.app_url


def _goto_step(page, step: int, charts: int) -> None:
    page.goto(re.sub(r"([?&])step=\d+", rf"\g<1>step={step}", page.url))
    wait_rendered(page, step, charts)


def test_the_split_stage_sits_above_the_channels_when_partition_5_resumes(page, app_url, tmp_path):
    from playwright.sync_api import expect

    page.context.app_url = app_url
    trace_path = tmp_path / "shop-orders.jsonl"
    command = [sys.executable, "-m", "wmviz", "import", "kafka", str(KAFKA_DUMP), "--parallelism", "3",
               "--out-of-orderness", "5s", "--idleness", "1m", "--topic", "shop.orders",
               "--out", str(trace_path)]  # fmt: skip
    assert subprocess.run(command, capture_output=True).returncode == 0
    resumed = next(
        r.step
        for r in simulate(read_trace(trace_path), explain=True)
        if any(isinstance(e, SplitEvent) and e.what == "resumed" and e.holds for e in r.events)
    )
    _upload(page, trace_path)
    _goto_step(page, resumed, ONE_VALVE_CHARTS)
    seen = the_step_is_above_the_fold(page)
    assert "split shop.orders-5 of subtask 1 resumed" in seen["narration"]
    assert "behind the subtask's output" in seen["narration"]
    stage = page.locator(".st-key-split_stage")
    on_screen(page, stage)
    expect(stage).to_contain_text("Source splits")
    box, channels = stage.bounding_box(), page.locator(".st-key-channels").bounding_box()
    assert box["y"] + box["height"] <= channels["y"] + 1, (box, channels)
    publish(check_and_return(screen_png(page, tmp_path / "splits.png")), "kafka-split-stage.png")


def test_a_recorded_trace_reads_in_clock_times_and_checks_each_sample(page, app_url, tmp_path):
    from playwright.sync_api import expect

    page.context.app_url = app_url
    trace_path = tmp_path / "recorded.jsonl"
    command = [sys.executable, "-m", "wmviz", "import", "prometheus", str(PROMETHEUS),
               "--vertex", "downstream", "--idleness", "1500ms", "--out", str(trace_path)]  # fmt: skip
    assert subprocess.run(command, capture_output=True).returncode == 0
    trace = read_trace(trace_path)
    idle_step = next(
        i for i, r in enumerate(r for r in trace.rows if r.instance == "0") if r.status is not None
    )
    _upload(page, trace_path)
    _goto_step(page, idle_step, ONE_VALVE_CHARTS + 1)  # two instances: the overview heatmap too
    seen = the_step_is_above_the_fold(page)
    assert re.fullmatch(r"\d\d:\d\d:\d\d\.\d{3}Z", seen["output"]), seen
    check = page.get_by_text(re.compile(r"^The job reported \d\d:\d\d:\d\d\.\d{3}Z at this sample"))
    expect(check.first).to_be_visible()
    assert "the replay agrees" in check.first.inner_text()
    expect(page.locator(".st-key-narration")).to_contain_text("IDLE")
    expect(page.get_by_text(re.compile(r"^This status is inferred, not reported by Flink"))).to_be_visible()
    publish(check_and_return(screen_png(page, tmp_path / "recorded.png")), "recorded-replay-check.png")
