"""The first page as a new user meets it: `wmviz app`, then the bare URL in Chromium, and the
moment each part a person needs is on screen (used by `bench/app_latency.py`).

Marks, each the first animation frame after the DOM change that shows it, in seconds from the
server's launch: the server answers its health check (`healthy`), the step's heading (`heading`),
the step buttons drawn and enabled (`controls`, no skeleton left in their rows), the channel table
drawn (`table`: its cells in the grid's accessible table, since `st.dataframe` paints on a
canvas), the watermark chart drawn (`chart`: Plotly's `.main-svg` with traces), the first script
run over (`idle`), and a Right key, pressed as soon as the step buttons and the channel table are
there (a person's first chance), acting (`key`: the heading names the next step).

"Usable" is issue 30's: the channel table shows and a step key acts (the later of `table` and
`key`). "All drawn" is the later of controls, table and chart (the chart comes last: the browser
loads Plotly's code on the first chart). `indicator` is the share of checks between the heading and
all drawn at which Streamlit's running sign or the chart placeholder's "Drawing the chart…" was on
screen (a person then sees more is coming).

`second_visit` is a warm visit as a person makes it: a new tab on a server that has served the page
before (its imports done, its timeline cached), in seconds from opening the URL. It comes once the
first tab's Spark box says "Spark ready" (unless Spark is not to start): the JVM starts 8 s after
the first page and takes both cores for ~10 s, and a visit inside that window measured the JVM.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path

# Installed in every document before the app's own code: an observer that checks, once per frame
# after the DOM changed, which parts are drawn, and keeps the first frame each one was.
PROBE = """(() => {
  const fp = window.__fp = {gapChecks: 0, gapShown: 0};
  const mark = (k, ok) => { if (ok && fp[k] === undefined) fp[k] = Date.now(); };
  const check = () => {
    const heads = [...document.querySelectorAll('h1, h2, h3')].map(h => h.textContent.trim());
    mark('heading', heads.some(t => /^Step \\d+ of \\d+$/.test(t)));
    const fwd = document.querySelector('.st-key-fwd button');
    const grey = document.querySelector(
      '.st-key-transport [data-testid="stSkeleton"], .st-key-jumps [data-testid="stSkeleton"]');
    mark('controls', fp.heading !== undefined && !!fwd && !fwd.disabled && !grey);
    const cells = [...document.querySelectorAll('.st-key-channels table td')];
    mark('table', cells.some(c => c.textContent.trim() !== ''));
    const traces = document.querySelectorAll('.st-key-watermark_chart .main-svg .scatterlayer .trace');
    mark('chart', traces.length > 0);
    const app = document.querySelector('[data-testid="stApp"]');
    if (fp.heading !== undefined) mark('idle', app && app.dataset.testScriptState === 'notRunning');
    if (fp.target) mark('key', heads.some(t => t.startsWith(fp.target)));
    const drawn = fp.controls !== undefined && fp.table !== undefined && fp.chart !== undefined;
    if (fp.heading !== undefined && !drawn) {
      fp.gapChecks += 1;
      const running = app && app.dataset.testScriptState === 'running';
      const placeholder = document.querySelector('.st-key-watermark_chart [data-testid="stSkeleton"]');
      const words = placeholder && getComputedStyle(placeholder, '::after').content;
      const said = !!words && !['none', 'normal', '""'].includes(words);
      if (running || said) fp.gapShown += 1;
    }
  };
  let queued = false;
  const soon = () => {
    if (queued) return;
    queued = true;
    requestAnimationFrame(() => { queued = false; check(); });
  };
  new MutationObserver(soon).observe(document, {subtree: true, childList: true, characterData: true,
                                                attributes: true});
  setInterval(soon, 100);  // a canvas or a style change the observer does not see
})();"""

MARKS = ("healthy", "heading", "controls", "table", "chart", "idle", "key", "usable", "all drawn")


def first_page_usable(browser, server_class, cache: Path, root: Path, env: dict) -> dict[str, float]:
    """One new server for `root` (and `env`) with the timeline cache `cache`: the marks above, in
    seconds from its launch; with `second visit`, the marks of a second visitor to the same server
    (`second_visit`), in seconds from opening the URL."""
    server = server_class(cache, root, env)
    launched = time.time()
    try:
        while not server.healthy():
            time.sleep(0.05)
        healthy = time.time()
        out = _visit(browser, server.url, launched, spark=env.get("WMVIZ_SPARK_START") != "lazy")
        out["healthy"] = healthy - launched
        again = _visit(browser, server.url, time.time())
        out.update({f"second visit {k}": v for k, v in again.items()})
    finally:
        server.stop()
    return out


def _visit(browser, url: str, since: float, spark: bool = False) -> dict[str, float]:
    """Open `url` in a new tab, press Right at the first chance, wait for all to be drawn (and with
    `spark`, for the Spark box to say it is ready): the marks in seconds from `since`."""
    page = browser.new_page(viewport={"width": 1440, "height": 900})
    page.add_init_script(PROBE)
    page.goto(url)
    ready = "() => ['controls', 'table'].every(k => window.__fp && window.__fp[k] !== undefined)"
    page.wait_for_function(ready, timeout=300_000, polling="raf")
    shown = page.evaluate("() => [...document.querySelectorAll('h1, h2, h3')].map(h => h.textContent)")
    step = next(int(t.split()[1]) for t in shown if t.startswith("Step ") and " of " in t)
    page.evaluate("t => { window.__fp.target = t; }", f"Step {step + 1} of")
    page.keyboard.press("ArrowRight")
    page.wait_for_function("() => window.__fp.key !== undefined && window.__fp.chart !== undefined",
                           timeout=300_000, polling=100)  # fmt: skip
    got = page.evaluate("() => window.__fp")
    if spark:
        page.get_by_text("Spark ready").wait_for(timeout=300_000)
    page.close()
    out = {k: (got[k] / 1000 - since) for k in MARKS if k in got}
    out["usable"] = max(out["table"], out["key"])
    out["all drawn"] = max(out["controls"], out["table"], out["chart"])
    out["indicator"] = got["gapShown"] / got["gapChecks"] if got["gapChecks"] else 1.0
    return out


def report(name: str, runs: list[dict[str, float]], prefix: str = "") -> str:
    """One line per variant: the median of each mark over its runs (those named `prefix…`), and
    usable's range."""
    if not runs:
        return f"{name}: no runs"
    keys = (*MARKS, "indicator")
    med = {
        k: statistics.median(r[prefix + k] for r in runs) for k in keys if all(prefix + k in r for r in runs)
    }
    usable = sorted(r[prefix + "usable"] for r in runs)
    marks = ", ".join(f"{k} {med[k]:.2f}" for k in MARKS if k in med)
    return (
        f"{name} (n={len(runs)}): usable median {med['usable']:.2f} s"
        f" (range {usable[0]:.2f}–{usable[-1]:.2f}), all drawn {med['all drawn']:.2f} s;"
        f" marks (median s): {marks}; running shown during the gap {med['indicator']:.0%} of checks"
    )


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())
