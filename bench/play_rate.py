"""How fast Play really plays: the steps per second a person sees at each of the page's speeds.

    python bench/play_rate.py                        # every speed, 2 rounds, this checkout
    python bench/play_rate.py --baseline DIR         # against another checkout, rounds interleaved
    python bench/play_rate.py --speeds "2 steps/s" --rounds 3

One server per checkout (`streamlit run app.py`, in-process engine, Spark started lazily so no JVM
competes), one Chromium. Each measurement opens the incident at step 0, picks the speed, presses
Space and records, from the browser's side, when each new step number reaches the page's URL,
until the last step or `--seconds`. The rate is the steps moved divided by the time from the
press to the last move seen; the page's redraw is part of it, as it is for a person watching.
The load average is printed around each round: this machine is shared.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.app_latency import Server  # noqa: E402
from tools.chromium import CHROMIUM, CHROMIUM_ARGS, IDLE  # noqa: E402

SPEEDS = ("1 step/s", "2 steps/s", "5 steps/s", "10 steps/s")  # the page's choices (ui.controls.SPEEDS)
SCENARIO = "resumed-partition-records-late"  # the built-in incident with the most steps on one instance

# Records (time, step) each time the URL's step changes, from the page's own clock.
PROBE = """(() => {
  const seen = window.__steps = [];
  let last = null;
  setInterval(() => {
    const step = new URLSearchParams(location.search).get('step');
    if (step !== last) { last = step; seen.push([performance.now(), Number(step)]); }
  }, 20);
})();"""


def play_once(browser, url: str, speed: str, seconds: float) -> dict[str, float]:
    """Open at step 0, play at `speed`; the steps moved, the seconds, the rate and the largest jump."""
    from playwright.sync_api import TimeoutError as Timeout

    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.set_default_timeout(300_000)  # a busy machine: waits are bounds, the clock is the probe's
    try:
        page.add_init_script(PROBE)
        page.goto(f"{url}/?scenario={SCENARIO}&engine=local&step=0")
        heading = page.get_by_role("heading", name=re.compile(r"^Step 0 of \d+$"))
        heading.wait_for(timeout=300_000)
        last = int(heading.inner_text().split()[-1])
        page.locator(IDLE).wait_for()
        page.get_by_role("combobox", name="Play speed").click()
        page.keyboard.type(speed)
        page.get_by_role("option", name=speed, exact=True).wait_for()
        page.keyboard.press("Enter")
        page.locator(IDLE).wait_for()
        page.get_by_role("heading", level=1).first.click()  # focus off the select box: Space plays
        pressed = page.evaluate("performance.now()")
        page.keyboard.press("Space")
        try:
            done = f"() => window.__steps.some(([, s]) => s >= {last})"
            page.wait_for_function(done, timeout=seconds * 1000, polling=100)
        except Timeout:
            pass  # measure what was played so far
        moves = [(t, s) for t, s in page.evaluate("window.__steps") if t > pressed]
    finally:
        page.close()
    if not moves:
        return {"steps": 0, "seconds": seconds, "rate": 0.0, "jump": 0}
    steps = moves[-1][1]
    taken = (moves[-1][0] - pressed) / 1000
    jumps = [b - a for (_, a), (_, b) in zip([(pressed, 0), *moves], moves, strict=False)]
    return {"steps": steps, "seconds": taken, "rate": steps / taken, "jump": max(jumps), "last": last}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline", type=Path, help="another checkout, measured in the same rounds")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=40.0, help="the longest one play is watched")
    parser.add_argument("--speeds", nargs="*", default=list(SPEEDS))
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    roots = {"this": REPO, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    work = Path(tempfile.mkdtemp(prefix="wmviz-play-"))
    env = {"WMVIZ_SPARK_START": "lazy"}
    servers = {name: Server(work / name, root, env) for name, root in roots.items()}
    found: dict[tuple[str, str], list[dict]] = {}
    try:
        while not all(s.healthy() for s in servers.values()):
            time.sleep(0.2)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            for server in servers.values():  # warm: the timeline built before anything is timed
                play_once(browser, server.url, SPEEDS[-1], 1)
            for round_ in range(args.rounds):
                print(f"round {round_ + 1}: load {os.getloadavg()[0]:.1f}", flush=True)
                for speed in args.speeds:
                    for name, server in servers.items():
                        got = play_once(browser, server.url, speed, args.seconds)
                        found.setdefault((name, speed), []).append(got)
                        print(
                            f"  {name:8} {speed:10} {got['steps']} steps in {got['seconds']:.1f} s = "
                            f"{got['rate']:.2f} steps/s (largest move {got['jump']})",
                            flush=True,
                        )
            browser.close()
    finally:
        for server in servers.values():
            server.stop()
    print(f"load after: {os.getloadavg()[0]:.1f}")
    for (name, speed), runs in found.items():
        rates = [r["rate"] for r in runs]
        print(f"{name:8} {speed:10} median {statistics.median(rates):.2f} steps/s over {len(rates)} plays")


if __name__ == "__main__":
    main()
