"""How often an export reaches the person while another visitor keeps the server busy.

    python bench/export_busy.py                      # this checkout, 8 exports
    python bench/export_busy.py --baseline DIR       # against another checkout, exports interleaved

Streamlit sweeps, at the end of every script run of any session, the files no page draws: a file
is marked at one sweep and deleted at the next. A report built by Streamlit's deferred download at
the click is such a file until the browser fetches it, a moment later. Here one visitor plays an
incident at 10 steps/s (a script run every tick) while another exports the FLINK-38477 report and
saves it: an export counts as saved when the browser's download completes with the whole report.
One server per checkout (`wmviz app`, Spark started lazily), one Chromium; the load average is
printed around each round: this machine is shared.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.app_latency import Server  # noqa: E402
from tools.chromium import CHROMIUM, CHROMIUM_ARGS, IDLE  # noqa: E402

EXPORTED = "scenario=flink-38477-zero-output&engine=local&step=7"
PLAYED = "scenario=resumed-partition-records-late&engine=local&step=0"  # the most steps
EXPORT = "Export the incident report (HTML, opens offline)"
SAVE = re.compile(r"^Save the report of step \d+$")  # the second click, where the checkout has one


def opened(browser, url: str, query: str):
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(300_000)  # a busy machine: waits are bounds, never the measure
    page.goto(f"{url}/?{query}")
    page.get_by_role("heading", name=re.compile(r"^Step \d+ of \d+$")).wait_for()
    page.locator(IDLE).wait_for()
    return page


def start_playing(page) -> None:
    """Back to step 0, then play at 10 steps/s (the page's fastest: a run every tick)."""
    page.get_by_role("heading", level=1).first.click()
    page.keyboard.press("Home")
    page.locator(IDLE).wait_for()
    page.get_by_role("combobox", name="Play speed").click()
    page.keyboard.type("10 steps/s")
    page.get_by_role("option", name="10 steps/s", exact=True).wait_for()
    page.keyboard.press("Enter")
    page.locator(IDLE).wait_for()
    page.get_by_role("heading", level=1).first.click()
    page.keyboard.press("Space")


def export_once(page, folder: Path) -> str:
    """Export and save the report; "saved", or why not."""
    save = page.get_by_role("button", name=SAVE)
    try:
        with page.expect_download(timeout=120_000) as info:
            page.get_by_role("button", name=EXPORT).click()
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:  # a checkout that saves at a second click
                if save.count() and page.locator(IDLE).count():
                    save.click()
                    break
                page.wait_for_timeout(50)
        path = folder / f"{time.monotonic_ns()}.html"
        info.value.save_as(path)
    except Exception as failed:  # what failed is the measurement
        return f"failed: {str(failed).splitlines()[0]}"
    return "saved" if "FLINK-38477" in path.read_text(errors="replace")[:20_000] else "saved, not the report"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline", type=Path, help="another checkout, measured in the same rounds")
    parser.add_argument("--exports", type=int, default=8, help="exports per checkout")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    roots = {"this": REPO, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    work = Path(tempfile.mkdtemp(prefix="wmviz-export-"))
    servers = {name: Server(work / name, root, {"WMVIZ_SPARK_START": "lazy"}) for name, root in roots.items()}
    outcomes: dict[str, list[str]] = {name: [] for name in servers}
    try:
        while not all(s.healthy() for s in servers.values()):
            time.sleep(0.2)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            pages = {
                name: (opened(browser, s.url, PLAYED), opened(browser, s.url, EXPORTED))
                for name, s in servers.items()
            }
            for round_ in range(args.exports):
                print(f"round {round_ + 1}: load {os.getloadavg()[0]:.1f}", flush=True)
                for name, (player, exporter) in pages.items():
                    start_playing(player)
                    player.wait_for_timeout(500)  # the play is under way
                    got = export_once(exporter, work)
                    outcomes[name].append(got)
                    print(f"  {name:8} {got}", flush=True)
            browser.close()
    finally:
        for server in servers.values():
            server.stop()
    print(f"load after: {os.getloadavg()[0]:.1f}")
    for name, got in outcomes.items():
        print(f"{name:8} {got.count('saved')} of {len(got)} exports saved")


if __name__ == "__main__":
    main()
