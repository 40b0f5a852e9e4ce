"""Regenerate the app's pictures in docs/screenshots/ from the app as it is now.

    python -m tools.screenshots            # every picture this script owns
    python -m tools.screenshots --only flink-38477-zero-output.png

It serves `app.py` on a free port with a throwaway cache (local engine, no Spark), drives Debian's
Chromium through Playwright (never `playwright install`) at 1440×900, and writes each picture as
the browser tests do (a real picture checked, then a 256-colour PNG): every built-in incident at
its key step (the README's picture, `flink-38477-zero-output.png`, among them), the join's
retraction, the whole page at FLINK-38477 step 7 and the same step at 1920×1080, and the views a
person opens from there (`view-*.png`: Late rows, Tune, compare, the job graph, blame, lag and live
mode, which starts Spark), one per section of docs/app.md's "Every view, with its picture". The pictures
that need a flow of clicks first (an upload, a what-if link, the exported report, a recording)
are written by the browser tests that walk that flow, with `WMVIZ_SCREENSHOTS=1`.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from tests.browser.test_browser import (
    INCIDENT_SLUGS,
    PLOTLY,
    SPARK_READY_MS,
    TIMEOUT_MS,
    VIEWPORT,
    WIDE,
    check_png,
    full_page_png,
    key_step,
    open_view,
    publish,
    screen_png,
)
from tests.support.app_server import chromium, fresh_page, streamlit_app
from tools.chromium import IDLE

FLINK_38477 = "scenario=flink-38477-zero-output&engine=local"
JOB = "job=silent-split-holds-the-whole-job&at=1795633600000"  # a moment the split holds the job


@dataclass(frozen=True)
class Shot:
    """One picture: the page at `query`, brought to the view it shows by `prepare` (a name in
    PREPARE), then taken as `how`: `screen` (what a 1440×900 screen shows), `page` (the whole page)
    or `wide` (1920×1080). `step` is the step heading to wait for (None: a page without one, the job
    graph or compare mode), `charts` how many charts are drawn once it is ready."""

    name: str
    query: str
    step: int | None
    charts: int
    how: str = "screen"
    prepare: str | None = None


def shots() -> list[Shot]:
    """Every picture this script owns: each built-in incident at its key step, then the views a
    person opens from a step (docs/app.md, "Every view, with its picture")."""
    found = []
    for slug in INCIDENT_SLUGS:
        step, charts = key_step(slug)
        found.append(Shot(f"{slug}.png", f"scenario={slug}&engine=local&step={step}", step, charts))
    join = "scenario=early-fire-left-join&engine=local&step=7"  # the retraction
    found.append(Shot("early-fire-left-join-retraction.png", join, 7, 3))
    found.append(Shot("flink-38477-step-7.png", f"{FLINK_38477}&step=7", 7, 2, "page"))
    found.append(Shot("flink-38477-step-7-1920x1080.png", f"{FLINK_38477}&step=7", 7, 2, "wide"))
    late = "scenario=late-data-allowed-lateness&engine=local&step=9"  # the first drop
    found.append(Shot("view-late-rows.png", late, 9, 2, prepare="late_rows"))
    found.append(Shot("view-tune.png", f"{late}", 9, 2, prepare="tune"))
    compare = f"{FLINK_38477}&step=7&profile=flip-38477&compare=flink-1.x-2.x"
    found.append(Shot("view-compare-profiles.png", compare, None, 2))
    found.append(Shot("view-job-graph.png", JOB, None, 1))
    found.append(Shot("view-blame.png", JOB, None, 2, prepare="blame"))
    found.append(Shot("view-lag.png", JOB, None, 2, prepare="lag"))
    found.append(Shot("view-live-mode.png", f"{FLINK_38477}&step=0", 0, 2, prepare="live"))
    return found


def _top(page, selector: str) -> None:
    """Scroll the page (Streamlit scrolls inside its main box) so `selector` (a Playwright
    selector) starts near the top."""
    found = page.locator(selector).first
    found.wait_for()
    found.evaluate(
        """(el) => { const main = document.querySelector('[data-testid="stMain"]');
                     main.scrollTop += el.getBoundingClientRect().top - 80; }"""
    )


def _late_rows(page) -> None:
    _top(page, ".st-key-late_rows")


def _tune(page) -> None:
    page.get_by_text("Tune: pick the bounds", exact=False).first.click()
    page.get_by_role("button", name="Sweep").click()
    page.locator(IDLE).wait_for()
    page.locator('.st-key-tune_box_open [data-testid="stPlotlyChart"] .js-plotly-plot').first.wait_for()
    _top(page, ".st-key-tune_box_open")


def _blame(page) -> None:
    _top(page, "text=Who holds it")


def _lag(page) -> None:
    _top(page, "text=How late, and why")


def _live(page) -> None:
    """Drive FLINK-38477's own trace live (Spark starts on the click) and send two inputs."""
    page.get_by_text("Drive it live (Spark streaming)").click()
    page.get_by_role("button", name="Drive this trace live").click()
    page.get_by_role("button", name=re.compile("Send the first input")).click(timeout=SPARK_READY_MS)
    page.get_by_role("heading", name=re.compile(r"^Step 0 of 0$")).wait_for(timeout=SPARK_READY_MS)
    page.locator(IDLE).wait_for()
    page.get_by_role("button", name=re.compile(r"^Forward")).click()
    page.get_by_role("heading", name=re.compile(r"^Step 1 of 1$")).wait_for(timeout=SPARK_READY_MS)
    page.locator(IDLE).wait_for()


PREPARE = {"late_rows": _late_rows, "tune": _tune, "blame": _blame, "lag": _lag, "live": _live}


def take(page, url: str, shot: Shot, folder: Path) -> Path:
    path = folder / shot.name
    if shot.how == "wide":
        page.set_viewport_size(WIDE)
    try:
        if shot.step is not None:
            open_view(page, url, shot.query, shot.step, shot.charts)
        else:
            page.goto(f"{url}/?{shot.query}")
            page.locator(IDLE).wait_for()
            page.locator(PLOTLY).nth(shot.charts - 1).wait_for()
        if shot.prepare is not None:
            PREPARE[shot.prepare](page)
        if shot.how == "page":
            full_page_png(page, path)
            check_png(path, min_height=1500)
        else:
            screen_png(page, path)
            size = WIDE if shot.how == "wide" else VIEWPORT
            check_png(path, size["height"], size["width"])
    finally:
        page.set_viewport_size(VIEWPORT)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="just these pictures (file names)")
    args = parser.parse_args(argv)
    chosen = [s for s in shots() if not args.only or s.name in args.only]
    os.environ["WMVIZ_SCREENSHOTS"] = "1"  # publish() writes over the committed picture
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        env = {"WMVIZ_CACHE": str(folder / "cache"), "WMVIZ_SPARK_START": "lazy"}
        with (
            streamlit_app(folder, env) as url,
            chromium() as browser,
            fresh_page(browser, VIEWPORT, TIMEOUT_MS) as page,
        ):
            for shot in chosen:
                publish(take(page, url, shot, folder), shot.name)
                print(f"docs/screenshots/{shot.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
