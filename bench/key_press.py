"""A key press, from Right pressed to the next step on screen: this tree against another checkout,
press by press, and where one press's time goes.

    python bench/key_press.py --baseline DIR --presses 40      # interleaved against DIR
    python bench/key_press.py --presses 20 --frames             # one tree, its time taken apart

`DIR` is another checkout, e.g. `git archive 95ffaaf | tar -x -C /tmp/base` (the key listener before
issue 30's redesign). Each tree gets its own `wmviz app` and its own tab on
`resumed-partition-records-late` (27 steps); the presses alternate between the tabs (A B, then B A),
so a busy moment of the machine falls on both. A press is timed as `bench/app_latency.py` times it:
from the press to the animation frame after the DOM change that shows the next step's heading.

`--frames` takes one press apart with Chrome's own records (DevTools protocol): the page's websocket
frames, timed from the press's first message to the server (the click's rerun request), give the
first answer, the frame that carries the new heading (its index among the run's frames) and the
run's last frame; a sampling profile of the page's JavaScript gives the share of the browser's main
thread each script file took (Plotly, React, Streamlit's bundle) against idle, over the whole run
and over the waits alone (each click's message to its heading's frame: Chrome counts a frame
received when the main thread takes it, so a busy page delays it).

The goal (issue 30): p90 ≤ 150 ms on a quiet machine. The load average is printed before and after.
"""

from __future__ import annotations

import argparse
import base64
import collections
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.app_first_page import load  # noqa: E402
from bench.app_latency import (  # noqa: E402
    KEYS_INCIDENT,
    Server,
    compile_like_an_install,
    open_for_keys,
    percentiles,
    press_next_step,
)
from tools.chromium import CHROMIUM, CHROMIUM_ARGS, IDLE  # noqa: E402

HEADING = re.compile(rb"Step \d+ of")


class Tab:
    """One tree's server and tab, on step 0 of the incident, its shortcut listener focused."""

    def __init__(self, browser, root: Path, steps: int) -> None:
        self.server = Server(Path(tempfile.mkdtemp(prefix="wmviz-keys-")), root=root)
        self.steps, self.step = steps, 0
        self.painted: list[float] = []
        while not self.server.healthy():
            time.sleep(0.05)
        self.page = browser.new_page(viewport={"width": 1440, "height": 900})
        self.page.set_default_timeout(300_000)

    def open(self) -> None:
        """The page once Spark is ready: while Spark starts, its box refreshes itself and a step
        redraws the whole page (118 websocket frames a press against 65 for the step alone, 30 Nov)."""
        from playwright.sync_api import expect

        open_for_keys(self.page, self.server.url)
        expect(self.page.locator(".st-key-spark_status")).to_contain_text("Spark ready", timeout=300_000)
        self.page.locator(IDLE).wait_for()

    def press(self) -> None:
        """Right (Home at the end, to go round again), timed to the frame that shows the step."""
        self.step, painted, _ = press_next_step(self.page, self.step, self.steps)
        self.painted.append(painted)


class Frames:
    """The page's websocket frames, as Chrome records them: (sent?, seconds, carries a heading)."""

    def __init__(self, page) -> None:
        self.cdp = page.context.new_cdp_session(page)
        self.seen: list[tuple[bool, float, bool]] = []
        self.waits: list[tuple[float, float]] = []  # each press: its click's message → the heading's frame
        self.cdp.on("Network.webSocketFrameSent", lambda event: self._note(True, event))
        self.cdp.on("Network.webSocketFrameReceived", lambda event: self._note(False, event))
        self.cdp.send("Network.enable")

    def _note(self, sent: bool, event: dict) -> None:
        payload = event["response"]["payloadData"]
        try:  # binary frames (Streamlit's protobuf) come base64-encoded
            raw = base64.b64decode(payload, validate=True)
        except ValueError:
            raw = payload.encode()
        self.seen.append((sent, event["timestamp"], HEADING.search(raw) is not None))

    def breakdown(self, start: int) -> tuple[dict[str, float], dict[str, int]]:
        """One press's frames (those from index `start` on): times in ms from its first sent frame,
        and counts; the press's wait (its click's message → its heading's frame) is kept in
        `waits`. Once a press."""
        frames = self.seen[start:]
        sent = [when for is_sent, when, _ in frames if is_sent]
        received = [(when, heading) for is_sent, when, heading in frames if not is_sent]
        if not sent or not received:
            return {}, {}
        times = {"first frame back": received[0][0] - sent[0], "last frame back": received[-1][0] - sent[0]}
        counts = {"frames back": len(received)}
        heading = [index for index, (_, has) in enumerate(received) if has]
        if heading:
            times["the heading's frame back"] = received[heading[0]][0] - sent[0]
            counts["the heading's frame, its index"] = heading[0]
            self.waits.append((sent[0], received[heading[0]][0]))  # `profile_shares`'s `within`
        return {name: seconds * 1000 for name, seconds in times.items()}, counts


def profile_shares(profile: dict, within: list[tuple[float, float]] | None = None) -> list[tuple[str, float]]:
    """The main thread's time by script file (or idle / program / a native call), as shares; with
    `within`, only the samples inside those (start, end) spans, in seconds of Chrome's monotonic clock
    (the clock of the websocket frames' timestamps)."""
    nodes = {node["id"]: node["callFrame"] for node in profile["nodes"]}
    taken: collections.Counter[str] = collections.Counter()
    at = profile["startTime"] / 1e6
    for sample, delta in zip(profile["samples"], profile["timeDeltas"], strict=False):
        at += delta / 1e6
        if within is not None and not any(start <= at <= end for start, end in within):
            continue
        frame = nodes[sample]
        taken[frame["url"].rsplit("/", 1)[-1] or frame["functionName"] or "(native)"] += delta
    total = sum(taken.values()) or 1
    return [(name, spent / total) for name, spent in taken.most_common(12)]


def interleaved(browser, baseline: Path, presses: int, steps: int) -> None:
    tabs = {"this tree": Tab(browser, REPO, steps), f"baseline {baseline}": Tab(browser, baseline, steps)}
    try:
        for tab in tabs.values():
            tab.open()
        time.sleep(5)
        order = list(tabs.values())
        for number in range(presses):
            for tab in order if number % 2 == 0 else order[::-1]:
                tab.press()
        for name, tab in tabs.items():
            print(f"{name}: key press → step on screen, {percentiles(tab.painted)}", flush=True)
    finally:
        for tab in tabs.values():
            tab.server.stop()


def taken_apart(browser, presses: int, steps: int) -> None:
    tab = Tab(browser, REPO, steps)
    try:
        frames = Frames(tab.page)
        tab.open()
        time.sleep(3)
        frames.cdp.send("Profiler.enable")
        frames.cdp.send("Profiler.setSamplingInterval", {"interval": 200})
        frames.cdp.send("Profiler.start")
        times: dict[str, list[float]] = collections.defaultdict(list)
        counts: dict[str, list[int]] = collections.defaultdict(list)
        for _ in range(presses):
            start = len(frames.seen)
            tab.press()
            time.sleep(0.3)  # the run's last frames
            press_times, press_counts = frames.breakdown(start)
            for name, ms in press_times.items():
                times[name].append(ms)
            for name, count in press_counts.items():
                counts[name].append(count)
        profile = frames.cdp.send("Profiler.stop")["profile"]
        shares = profile_shares(profile)
        print(f"key press → step on screen: {percentiles(tab.painted)}", flush=True)
        for name, values in times.items():
            print(f"{name} (from the click's message): {percentiles(values)}", flush=True)
        for name, found in counts.items():
            print(f"{name}: median {statistics.median(found):.0f}", flush=True)
        print("the page's main thread during the presses:", flush=True)
        for name, share in shares:
            print(f"  {share:6.1%}  {name}", flush=True)
        # Where the wait for the heading goes: its frame is "received" when the page's main thread
        # takes it, so a busy main thread delays it, whenever the server sent it.
        print("the same, from each click's message to its heading's frame:", flush=True)
        within = profile_shares(profile, within=frames.waits)
        if not within:  # the profile's clock and the frames' would not be Chrome's one clock
            print("  no profile sample falls inside the waits", flush=True)
        for name, share in within:
            print(f"  {share:6.1%}  {name}", flush=True)
    finally:
        tab.server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--presses", type=int, default=40)
    parser.add_argument("--baseline", type=Path, help="another checkout, its presses interleaved with ours")
    parser.add_argument("--frames", action="store_true", help="this tree alone, each press taken apart")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    from wmviz.store.incidents import built_in_incidents

    steps = len(built_in_incidents()[KEYS_INCIDENT].trace().rows)
    print(f"load average before: {load()}", flush=True)
    roots = [REPO] + ([args.baseline.resolve()] if args.baseline else [])
    for root in roots:
        compile_like_an_install(root)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        if args.baseline:
            interleaved(browser, args.baseline.resolve(), args.presses, steps)
        if args.frames or not args.baseline:
            taken_apart(browser, args.presses, steps)
        browser.close()
    print(f"load average after: {load()}", flush=True)


if __name__ == "__main__":
    main()
