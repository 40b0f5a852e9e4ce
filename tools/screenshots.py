"""Regenerate the app's pictures in docs/screenshots/ from the app as it is now.

    python -m tools.screenshots            # every picture this script owns
    python -m tools.screenshots --only flink-38477-zero-output.png

It serves `app.py` on a free port with a throwaway cache (local engine, no Spark), drives Debian's
Chromium through Playwright (never `playwright install`) at 1440×900, and writes each picture as
the browser tests do (a real picture checked, then a 256-colour PNG): every built-in incident at
its key step (the README's picture, `flink-38477-zero-output.png`, among them), the join's
retraction, the whole page at FLINK-38477 step 7 and the same step at 1920×1080. The pictures
that need a flow of clicks first (an upload, a what-if link, the exported report, a recording)
are written by the browser tests that walk that flow, with `WMVIZ_SCREENSHOTS=1`.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

from tests.browser.test_browser import (
    INCIDENT_SLUGS,
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

FLINK_38477 = "scenario=flink-38477-zero-output&engine=local"


def shots() -> list[tuple[str, str, int, int, str]]:
    """(picture, query, step, charts, how): how is `screen`, `page` (the whole page) or `wide`."""
    found = []
    for slug in INCIDENT_SLUGS:
        step, charts = key_step(slug)
        found.append((f"{slug}.png", f"scenario={slug}&engine=local&step={step}", step, charts, "screen"))
    join = "scenario=early-fire-left-join&engine=local&step=7"  # the retraction
    found.append(("early-fire-left-join-retraction.png", join, 7, 3, "screen"))
    found.append(("flink-38477-step-7.png", f"{FLINK_38477}&step=7", 7, 2, "page"))
    found.append(("flink-38477-step-7-1920x1080.png", f"{FLINK_38477}&step=7", 7, 2, "wide"))
    return found


def take(page, url: str, shot: tuple[str, str, int, int, str], folder: Path) -> Path:
    name, query, step, charts, how = shot
    path = folder / name
    if how == "wide":
        page.set_viewport_size(WIDE)
    try:
        open_view(page, url, query, step, charts)
        if how == "page":
            full_page_png(page, path)
            check_png(path, min_height=1500)
        else:
            screen_png(page, path)
            size = WIDE if how == "wide" else VIEWPORT
            check_png(path, size["height"], size["width"])
    finally:
        page.set_viewport_size(VIEWPORT)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--only", nargs="*", help="just these pictures (file names)")
    args = parser.parse_args(argv)
    chosen = [s for s in shots() if not args.only or s[0] in args.only]
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
                publish(take(page, url, shot, folder), shot[0])
                print(f"docs/screenshots/{shot[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
