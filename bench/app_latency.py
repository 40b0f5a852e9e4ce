"""How long a person waits in the app: a real Chromium (Playwright), a new server for each run.

    python bench/app_latency.py                 # every measurement, 60 key presses, 20 live steps
    python bench/app_latency.py --presses 100 --live-steps 30
    python bench/app_latency.py --live-only --live-steps 30
    python bench/app_latency.py --only-first-page --rounds 3          # first page usable only
    python bench/app_latency.py --only-first-page --baseline DIR      # against another checkout
    python bench/app_latency.py --first-live --baseline DIR --rounds 2  # the first live step

Measured (each from the browser's side: the moment the new content is on the page):

* first page usable from server start (`bench/app_first_page.py`), the bare URL as a new user opens
  it: step buttons enabled, channel table and watermark chart drawn, then a Right key press that
  steps; cold cache (a fresh timeline cache) and warm, `--rounds` rounds, variants interleaved
  (`--baseline DIR`: another checkout, e.g. `git archive COMMIT | tar -x -C DIR`);
* first page (heading) from server start, cold cache (a fresh timeline cache) and warm cache (the same
  cache again, new server): `wmviz app` launched → the step heading and narration shown;
* incident switch on a warm session, in-process and on Spark: the Incident box changed → the new
  incident's step heading shown (each incident not simulated before in that cache);
* key press → step updated: Right pressed → the next step's heading shown, p50/p90;
* live step: a click on a channel's watermark button → the live header names the new step, p50/p90,
  beside the query's own latency per micro-batch (file written → result back on the driver);
* the first live step: "Drive an empty valve live" clicked (once Spark is ready and has warmed live
  mode) → step 1 seen, its first input clicked as soon as it is drawn; `--first-live` alone, a new
  server each round, against `--baseline DIR` in turn.

Targets on a quiet machine (issue 30): first page usable ≤ 2.5 s cold and ≤ 1.5 s warm, key press
p90 ≤ 150 ms, the first live step ≤ 3 s and later ones ≤ the micro-batch + 150 ms. The load average is
printed before and after: this machine is shared.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
from bench.app_first_page import first_page_usable  # noqa: E402
from bench.app_first_page import load as first_page_load  # noqa: E402
from bench.app_first_page import report as first_page_report  # noqa: E402
from tools.appserver import app_command, free_port, healthy, stop_group  # noqa: E402
from tools.chromium import CHROMIUM, CHROMIUM_ARGS, IDLE  # noqa: E402 (the checkout on the path first)


class Server:
    """`wmviz app` (of `root`, this checkout by default: what a user starts) with its own timeline
    cache, stopped with its JVM at the end."""

    def __init__(self, cache: Path, root: Path = REPO, extra: dict | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "WMVIZ_CACHE": str(cache / "timelines"), **(extra or {})}
        env.pop("PYTHONDONTWRITEBYTECODE", None)  # read the bytecode compile_like_an_install wrote
        self.started = time.perf_counter()
        self.process = subprocess.Popen(
            app_command(self.port),
            cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
        )  # fmt: skip

    def healthy(self) -> bool:
        return healthy(self.url, timeout=1)

    def stop(self) -> None:
        """Stop the server, then wait for its whole group (its JVM shuts down after it): a JVM
        still exiting would take the cores from the next server measured."""
        stop_group(self.process, 15, 15)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                os.killpg(self.process.pid, signal.SIGKILL if time.monotonic() > deadline - 15 else 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)


# When the new content is on screen: an observer in the page notes the first DOM change that shows
# the wanted text, then the next animation frame (that frame paints it). Playwright's own wait
# polls, and on a busy main thread (Plotly drawing the charts that follow) it sees the text
# hundreds of ms after the person does; both are reported.
_WATCH = """() => {
  if (window.__wm) return;
  window.__wm = {selector: null, pattern: null, frame: null};
  new MutationObserver(() => {
    const wm = window.__wm;
    if (!wm.selector || wm.seen) return;
    for (const el of document.querySelectorAll(wm.selector)) {
      if (new RegExp(wm.pattern).test(el.textContent)) {
        wm.seen = Date.now();
        requestAnimationFrame(() => { wm.frame = Date.now(); });
        return;
      }
    }
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""


def watch(page, selector: str, pattern: str) -> float:
    """Arm the page's observer for `pattern` in `selector`; returns the wall time (ms) it was armed."""
    page.evaluate(_WATCH)
    page.evaluate(
        "([s, p]) => { window.__wm.selector = s; window.__wm.pattern = p; window.__wm.seen = null;"
        " window.__wm.frame = null; }",
        [selector, pattern],
    )
    return time.time() * 1000


def painted_after(page, armed_ms: float) -> float:
    """Milliseconds from arming to the frame that drew the wanted text."""
    page.wait_for_function("() => window.__wm.frame !== null")
    return page.evaluate("() => window.__wm.frame") - armed_ms


def percentiles(values: list[float]) -> str:
    if not values:  # e.g. the live steps after the first, with --live-steps 1 or 2
        return "none measured (n=0)"
    ordered = sorted(values)
    p90 = ordered[min(len(ordered) - 1, round(0.9 * (len(ordered) - 1)))]
    return f"median {statistics.median(ordered):,.0f} ms, p90 {p90:,.0f} ms (n={len(ordered)})"


def first_page(browser, cache: Path, query: str) -> float:
    """Seconds from launching a new server to the step's heading and narration on screen."""
    server = Server(cache)
    try:
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        while not server.healthy():
            time.sleep(0.05)
        page.goto(f"{server.url}/?{query}")
        page.get_by_role("heading", name=re.compile(r"^Step \d+ of \d+$")).wait_for(timeout=300_000)
        page.locator(".st-key-narration").wait_for(timeout=300_000)
        seconds = time.perf_counter() - server.started
        page.close()
        return seconds
    finally:
        server.stop()


SWITCHES = (
    ("local", "order-dependent-final-watermark", "Order-dependent"),
    ("spark", "late-data-allowed-lateness", "Late data"),
)


def session_measures(
    browser, cache: Path, presses: int, live_steps: int, live_only: bool = False, root: Path = REPO
) -> dict[str, object]:
    """On one warm server (of `root`): incident switches (in-process, Spark), key presses, live
    steps (only the live steps with `live_only`)."""
    from playwright.sync_api import expect

    server = Server(cache, root=root)
    out: dict[str, object] = {}
    try:
        while not server.healthy():
            time.sleep(0.05)
        page = browser.new_page(viewport={"width": 1440, "height": 900})
        page.set_default_timeout(300_000)
        expect.set_options(timeout=300_000)
        page.goto(f"{server.url}/?scenario=flink-38477-zero-output&engine=local&step=0")
        page.get_by_role("heading", name="Step 0 of 7").wait_for()
        expect(page.locator(".st-key-spark_status")).to_contain_text("Spark ready")
        # and live mode's warm-up over (the box refreshes itself while Spark started for this page)
        expect(page.locator(".st-key-spark_status")).not_to_contain_text("warming live mode")
        switches = () if live_only else SWITCHES
        for engine, incident, title in switches:
            page.goto(f"{server.url}/?scenario=flink-38477-zero-output&engine={engine}&step=0")
            page.get_by_role("heading", name="Step 0 of 7").wait_for()
            page.locator(IDLE).wait_for()
            started = time.perf_counter()
            box = page.locator(".st-key-scenario")
            box.click()
            page.get_by_role("option", name=re.compile(title)).click()
            page.get_by_role("heading", level=1, name=re.compile(title)).wait_for()
            page.get_by_role("heading", name=re.compile(r"^Step 0 of \d+$")).wait_for()
            out[f"switch ({engine}, {incident})"] = time.perf_counter() - started
        if not live_only:
            out.update(_presses(page, server, presses))
        out.update(_live(page, live_steps))
        page.close()
    finally:
        server.stop()
    return out


KEYS_INCIDENT = "resumed-partition-records-late"  # 27 steps: key presses go round it


def open_for_keys(page, url: str) -> None:
    """Step 0 of KEYS_INCIDENT, drawn, and the page focused for the shortcut keys."""
    page.goto(f"{url}/?scenario={KEYS_INCIDENT}&engine=local&step=0")
    page.get_by_role("heading", name=re.compile(r"^Step 0 of")).wait_for()
    page.locator(IDLE).wait_for()
    page.get_by_role("heading", level=1).first.click()


def press_next_step(page, step: int, steps: int) -> tuple[int, float, float]:
    """Right from `step` (Home from the step before the last, to go round again): the step reached,
    the ms to the frame that shows it, and the ms until Playwright's polling sees it."""
    target = step + 1 if step + 1 < steps - 1 else 0
    armed = watch(page, "h1, h2, h3", rf"^Step {target} of")
    started = time.perf_counter()
    page.keyboard.press("ArrowRight" if target else "Home")
    page.get_by_role("heading", name=re.compile(rf"^Step {target} of")).wait_for()
    seen = (time.perf_counter() - started) * 1000
    painted = painted_after(page, armed)
    page.locator(IDLE).wait_for()
    return target, painted, seen


def _presses(page, server: Server, presses: int) -> dict[str, list[float]]:
    from wmviz.store.incidents import built_in_incidents

    steps = len(built_in_incidents()[KEYS_INCIDENT].trace().rows)
    open_for_keys(page, server.url)
    painted, seen, step = [], [], 0
    for _ in range(presses):
        step, on_screen, polled = press_next_step(page, step, steps)
        painted.append(on_screen)
        seen.append(polled)
    return {"key press → step on screen": painted, "key press → Playwright sees it": seen}


def _live(page, steps: int) -> dict[str, object]:
    page.get_by_text("Drive it live (Spark streaming)").click()
    page.locator(".st-key-live_channels input").fill("2")
    driven = time.perf_counter()  # the first step's wait (issue 30: ≤ 3 s) counts from here
    page.get_by_role("button", name="Drive an empty valve live").click()
    page.get_by_role("heading", name=re.compile("^Live:")).wait_for()
    page.locator(".st-key-live_w_0_0 button").wait_for()
    drawn = (time.perf_counter() - driven) * 1000  # the live page, its inputs there to click
    caption = page.get_by_text(re.compile(r"^Spark Structured Streaming query"))
    clicks, seen, first = [], [], []
    for step in range(steps):
        armed = watch(page, '[data-testid="stCaptionContainer"]', rf"· {step + 1} step\(s\)")
        started = time.perf_counter()
        page.locator(f".st-key-live_w_0_{step % 2} button").click()
        caption.filter(has_text=f"· {step + 1} step(s)").wait_for()
        seen.append((time.perf_counter() - started) * 1000)
        if step == 0:  # its input clicked as soon as the live page drew it
            first = [(time.perf_counter() - driven) * 1000]
        clicks.append(painted_after(page, armed))
        page.locator(IDLE).wait_for()
    text = caption.inner_text()
    page.get_by_role("button", name="Stop driving live").click()
    # The caption gives the query's median over the steps after the first.
    query = [float(v.replace(",", "")) for v in re.findall(r"median ([\d,]+) ms after the first", text)]
    return {
        "first live step (Drive … live → step 1 seen)": first,
        "  of which: Drive … live → its inputs drawn": [drawn],
        "  of which: the first input's click → step 1 seen": seen[:1],
        "live step (click → on screen)": clicks[1:],
        "live step (click → Playwright sees it)": seen[1:],
        "live step (the query's own median: file written → result on the driver)": query,
    }


def tree_variants(args) -> list[tuple[str, Path]]:
    """This tree, after `--baseline DIR` when given, each compiled as an install would be."""
    variants = [("this tree", REPO)]
    if args.baseline is not None:
        variants.insert(0, (f"baseline {args.baseline}", args.baseline.resolve()))
    for _, root in variants:
        compile_like_an_install(root)
    return variants


def first_page_rounds(browser, args) -> None:
    """First page usable, cold cache then warm, for each variant in turn, round by round; each
    server's second visitor too."""
    variants = [(name, root, {}) for name, root in tree_variants(args)]
    if args.lazy_spark_too:
        variants.append(("this tree, WMVIZ_SPARK_START=lazy", REPO, {"WMVIZ_SPARK_START": "lazy"}))
    runs: dict[str, list[dict[str, float]]] = {}
    for round_no in range(args.rounds):
        for name, root, env in variants:
            cache = Path(tempfile.mkdtemp(prefix="wmviz-first-page-"))
            try:
                for kind in ("cold", "warm"):
                    before = first_page_load()
                    got = first_page_usable(browser, Server, cache, root, env)
                    runs.setdefault(f"{name}, {kind} cache", []).append(got)
                    print(
                        f"round {round_no + 1}, {name}, {kind} cache: usable {got['usable']:.2f} s,"
                        f" all drawn {got['all drawn']:.2f} s (heading {got['heading']:.2f} s);"
                        f" its second visitor: usable {got['second visit usable']:.2f} s,"
                        f" all drawn {got['second visit all drawn']:.2f} s"
                        f" (load {before} -> {first_page_load()})",
                        flush=True,
                    )
            finally:
                shutil.rmtree(cache, ignore_errors=True)
    for name, got in runs.items():
        print(first_page_report(f"{name}, from `wmviz app`", got), flush=True)
    for name, got in runs.items():
        second = first_page_report(f"{name}, second visitor, from opening the URL", got, "second visit ")
        print(second, flush=True)


def first_live_rounds(browser, cache: Path, args) -> None:
    """The first live step, a new server for each, this tree and the baseline in turn (the order
    flips each round), one live step each; then each variant's figures."""
    variants = tree_variants(args)
    got: dict[str, dict[str, list[float]]] = {name: {} for name, _ in variants}
    for round_ in range(args.rounds):
        for name, root in variants if round_ % 2 == 0 else variants[::-1]:
            measures = session_measures(browser, cache, 0, 1, live_only=True, root=root)
            for measure, values in measures.items():
                if ("first" in measure or "of which" in measure) and isinstance(values, list):
                    got[name].setdefault(measure, []).extend(values)
                    print(f"round {round_ + 1}, {name}, {measure}: {values[0]:,.0f} ms", flush=True)
    for name, measures in got.items():
        for measure, values in measures.items():
            print(f"{name}, {measure}: {percentiles(values)}", flush=True)


def compile_like_an_install(root: Path) -> None:
    """Write the bytecode of `root`'s modules, as `pip install` does for an installed wmviz: a
    machine that sets PYTHONDONTWRITEBYTECODE (this one does) would otherwise have every new server
    compile wmviz again (about 1 s of CPU), which no installed copy pays."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    command = [sys.executable, "-m", "compileall", "-q", "wmviz", "app.py"]
    subprocess.run(command, cwd=root, env=env, check=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--presses", type=int, default=60)
    parser.add_argument("--live-steps", type=int, default=20)
    parser.add_argument("--live-only", action="store_true", help="only the live steps (no first page)")
    parser.add_argument("--only-first-page", action="store_true", help="first page usable only (~1-2 min)")
    parser.add_argument(
        "--rounds", type=int, default=2, help="rounds of first page usable (cold, warm), or of --first-live"
    )
    parser.add_argument("--baseline", type=Path, help="another checkout's first page, interleaved")
    parser.add_argument(
        "--first-live",
        action="store_true",
        help="the first live step alone (--rounds new servers a tree; the other measures are not run)",
    )
    parser.add_argument(
        "--lazy-spark-too", action="store_true", help="and this tree with Spark not started (its share)"
    )
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    print(f"load average before: {first_page_load()}", flush=True)
    cache = Path(tempfile.mkdtemp(prefix="wmviz-latency-"))
    query = "scenario=flink-38477-zero-output&step=7"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
            if args.first_live:
                first_live_rounds(browser, cache, args)
            else:
                if not args.live_only:
                    first_page_rounds(browser, args)
                if not args.only_first_page:
                    session_run(browser, cache, query, args)
            browser.close()
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    print(f"load average after: {first_page_load()}", flush=True)


def session_run(browser, cache: Path, query: str, args) -> None:
    """The heading-only first page (as measured before), switches, key presses, live steps; with
    --live-only, the live steps alone."""
    if not args.live_only:
        cold = first_page(browser, cache, query)
        print(f"first page (heading), cold cache: {cold:.1f} s", flush=True)
        warm = first_page(browser, cache, query)
        print(f"first page (heading), warm cache: {warm:.1f} s", flush=True)
    measures = session_measures(browser, cache, args.presses, args.live_steps, args.live_only)
    for name, value in measures.items():
        if isinstance(value, list):
            print(f"{name}: {percentiles(value)}", flush=True)
        else:
            print(f"{name}: {value:.2f} s", flush=True)


if __name__ == "__main__":
    main()
