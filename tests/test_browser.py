"""The app in a real browser: keyboard shortcuts, the URL that follows the step, the charts, the join
changelog tab, and the README's screenshots.

The app runs as `streamlit run` in a subprocess (local engine, so no Spark) and is driven by Debian's
Chromium through Playwright. Without Chromium or Playwright a laptop run skips this module; under CI
(`CI` set) it fails instead, because CI installs both.

Screenshots always go to `tmp_path` and are checked to be real pictures; they are copied to
`docs/screenshots/` only when `WMVIZ_SCREENSHOTS=1` or when the file is missing, so CI never rewrites
the committed ones.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from tests.conftest import REPO

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1400, "height": 1000}
SCREENSHOTS = REPO / "docs" / "screenshots"
STARTUP_TIMEOUT_S = 90
TIMEOUT_MS = 45_000  # one rerun; generous because the first plotly chart loads a large JS chunk

# Streamlit's own end-to-end tests wait on these: the script has finished and the frontend is connected.
APP_IDLE = (
    '[data-testid="stApp"][data-test-script-state="notRunning"][data-test-connection-state="CONNECTED"]'
)
RUNNING = '[data-testid="stStatusWidget"]'
PLOTLY = '[data-testid="stPlotlyChart"] .js-plotly-plot'


def _truthy_env(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in ("", "0", "false", "no")


def _missing() -> str | None:
    if not CHROMIUM.is_file():
        return f"{CHROMIUM} is missing (apt-get install chromium)"
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "the Python package playwright is missing (pip install playwright)"
    return None


MISSING = _missing()
if MISSING and not _truthy_env("CI"):
    pytest.skip(f"browser tests need Chromium and Playwright: {MISSING}", allow_module_level=True)


# --- the app server and the browser ---------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/_stcore/health", timeout=2) as response:
            return response.read().decode().strip() == "ok"
    except OSError:
        return False


@pytest.fixture(scope="session")
def app_url(tmp_path_factory):
    """`streamlit run app.py` on a free port with its own timeline cache; yields the base URL."""
    tmp = tmp_path_factory.mktemp("wmviz-app")
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log_path = tmp / "streamlit.log"
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        "app.py",
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(port),
    ]
    env = {**os.environ, "WMVIZ_CACHE": str(tmp / "cache")}
    with open(log_path, "wb") as log:
        # A session of its own, so teardown can end the server and its children (a JVM, if any) together.
        process = subprocess.Popen(
            command, cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
    try:
        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while not _healthy(url):
            if process.poll() is not None:
                pytest.fail(f"streamlit exited with {process.returncode}:\n{_tail(log_path)}", pytrace=False)
            if time.monotonic() > deadline:
                pytest.fail(f"streamlit not healthy after {STARTUP_TIMEOUT_S} s:\n{_tail(log_path)}")
            time.sleep(0.25)
        yield url
    finally:
        _stop(process)


def _stop(process: subprocess.Popen) -> None:
    for sig, wait_s in ((signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            return
        try:
            process.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def _tail(path: Path, lines: int = 40) -> str:
    return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])


@pytest.fixture(scope="session")
def browser():
    if MISSING:
        pytest.fail(f"CI is set, so the browser tests must run: {MISSING}", pytrace=False)
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    from playwright.sync_api import expect

    expect.set_options(timeout=TIMEOUT_MS)
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    yield page
    context.close()


# --- helpers --------------------------------------------------------------------------------------


def url_step(page) -> int | None:
    """The `step` query parameter of the page's current URL."""
    values = parse_qs(urlparse(page.url).query).get("step")
    return int(values[0]) if values else None


def wait_rendered(page, step: int, charts: int) -> None:
    """Wait until the page shows `step` completely: heading, URL, script finished, charts drawn."""
    from playwright.sync_api import expect

    expect(page.get_by_role("heading", name=f"Step {step}: the input", exact=True)).to_be_visible()
    expect(page).to_have_url(re.compile(rf"[?&]step={step}(&|$)"))
    page.locator(APP_IDLE).wait_for()
    expect(page.locator(RUNNING)).to_have_count(0)
    # The frontend keeps drawing after the script finished (plotly loads lazily): wait for the charts.
    expect(page.locator(PLOTLY)).to_have_count(charts)
    assert url_step(page) == step


def open_view(page, url: str, query: str, step: int, charts: int) -> None:
    page.goto(f"{url}/?{query}")
    wait_rendered(page, step, charts)


def focus_page(page) -> None:
    """Click a neutral spot (the page title) so key presses reach the app's shortcuts, not a widget."""
    page.get_by_role("heading", level=1).first.click()
    assert page.evaluate("document.activeElement.tagName") not in ("INPUT", "TEXTAREA", "SELECT")


def press(page, key: str, step: int, charts: int) -> None:
    page.keyboard.press(key)
    wait_rendered(page, step, charts)


def full_page_png(page, path: Path) -> Path:
    """A screenshot of the whole page: Streamlit scrolls inside `stMain`, so grow the viewport to it."""
    page.evaluate("document.activeElement && document.activeElement.blur()")  # no focus ring in the picture
    page.mouse.move(VIEWPORT["width"] - 10, 150)  # a blank margin: no hover decoration in the picture
    height = page.evaluate("document.querySelector('[data-testid=\"stMain\"]').scrollHeight")
    page.set_viewport_size({"width": VIEWPORT["width"], "height": max(height, VIEWPORT["height"])})
    try:
        page.wait_for_timeout(500)  # let plotly's resize handlers settle
        page.screenshot(path=str(path), full_page=True, animations="disabled", caret="hide")
    finally:
        page.set_viewport_size(VIEWPORT)
    return path


def check_png(path: Path, min_height: int) -> None:
    """A real picture, not a blank page: a PNG, tall enough, sizeable, with many colours."""
    from PIL import Image

    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    assert len(data) > 20_000, f"{path} is only {len(data)} bytes"
    with Image.open(path) as image:
        assert image.width >= VIEWPORT["width"] and image.height >= min_height, image.size
        colours = image.convert("RGB").getcolors(maxcolors=4096)
    assert colours is None or len(colours) > 50, f"{path} has only {len(colours)} colours"


def publish(shot: Path, name: str) -> None:
    """Copy a checked screenshot into docs/screenshots/ when asked to, or when it is missing."""
    target = SCREENSHOTS / name
    if os.environ.get("WMVIZ_SCREENSHOTS") == "1" or not target.exists():
        SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shot, target)
        assert target.stat().st_size < 500_000, f"{target} is too large to commit"


# --- the tests ------------------------------------------------------------------------------------

FLINK_38477 = "scenario=flink-38477-zero-output&engine=local"
ONE_VALVE_CHARTS = 2  # the aligned min-heap and the watermark chart


def test_keyboard_shortcuts_move_the_step_and_the_url_follows(page, app_url, tmp_path):
    from playwright.sync_api import expect

    open_view(page, app_url, f"{FLINK_38477}&step=0", 0, ONE_VALVE_CHARTS)
    expect(page.get_by_role("heading", level=1)).to_contain_text("FLINK-38477")
    expect(page.locator(".js-plotly-plot .gtitle", has_text="Watermarks over steps")).to_have_count(1)
    focus_page(page)

    for step in (1, 2, 3):
        press(page, "ArrowRight", step, ONE_VALVE_CHARTS)
    press(page, "ArrowLeft", 2, ONE_VALVE_CHARTS)
    # Shift+Right: the next step whose output watermark changes ("Jump to" defaults to that kind).
    press(page, "Shift+ArrowRight", 3, ONE_VALVE_CHARTS)
    expect(page.locator('[data-testid="stMetricValue"]').first).to_have_text("10")

    press(page, "End", 7, ONE_VALVE_CHARTS)
    expect(page.locator('[data-testid="stMetricValue"]').first).to_have_text("MAX")
    expect(page.get_by_text(re.compile(r"emit WMAX"))).to_be_visible()
    expect(page.get_by_role("button", name=re.compile("^Forward"))).to_be_disabled()
    press(page, "ArrowRight", 7, ONE_VALVE_CHARTS)  # already at the last step: it stays

    shot = full_page_png(page, tmp_path / "flink-38477-step-7.png")
    check_png(shot, min_height=1500)
    publish(shot, "flink-38477-step-7.png")

    press(page, "Home", 0, ONE_VALVE_CHARTS)
    expect(page.get_by_role("button", name=re.compile("^⏮ First"))).to_be_disabled()

    # Space plays (one step per tick, 2 steps/s by default) and pauses.
    page.keyboard.press("Space")
    expect(page.get_by_role("button", name=re.compile("^⏸ Pause"))).to_be_visible()
    expect(page).to_have_url(re.compile(r"[?&]step=[2-7](&|$)"))
    page.keyboard.press("Space")
    expect(page.get_by_role("button", name=re.compile("^▶ Play"))).to_be_visible()
    page.locator(APP_IDLE).wait_for()
    paused_at = url_step(page)
    page.wait_for_timeout(1500)  # three ticks at 2 steps/s: a running autoplay would have moved
    wait_rendered(page, paused_at, ONE_VALVE_CHARTS)


def test_jump_to_the_first_retraction_and_open_the_join_changelog(page, app_url, tmp_path):
    from playwright.sync_api import expect

    two_valve_charts = 3  # a heap per input (L, R) and the watermark chart
    query = "scenario=early-fire-left-join&engine=local&step=0"
    open_view(page, app_url, query, 0, two_valve_charts)

    # Clicking the selectbox alone sometimes leaves it focused but closed (the click lands while the
    # page scrolls it into view); typing into it always opens the filtered list.
    jump_to = page.get_by_role("combobox", name="Jump to")
    jump_to.scroll_into_view_if_needed()
    jump_to.click()
    page.keyboard.type("retraction")
    page.get_by_role("option", name="retraction", exact=True).click()
    next_retraction = page.get_by_role("button", name=re.compile("^next retraction"))
    expect(next_retraction).to_be_enabled()
    page.locator(APP_IDLE).wait_for()
    next_retraction.click()
    # `python -m wmviz explain sample_data/early-fire-left-join.jsonl`: the -U comes at step 7.
    wait_rendered(page, 7, two_valve_charts)
    expect(page.get_by_text(re.compile(r"-U\(order-1@10000, null\) retracts"))).to_be_visible()

    tab = page.get_by_role("tab", name="Join changelog")
    tab.click()
    expect(tab).to_have_attribute("aria-selected", "true")
    # The grid draws on a canvas; its cells are also in an accessible table, hidden from get_by_role.
    panel = page.get_by_role("tabpanel", name="Join changelog")
    expect(panel.locator('[role="gridcell"]').filter(has_text=re.compile(r"^-U$"))).to_have_count(1)
    expect(panel.locator('[role="gridcell"]').filter(has_text=re.compile(r"^\+U$"))).to_have_count(1)

    shot = full_page_png(page, tmp_path / "early-fire-left-join-retraction.png")
    check_png(shot, min_height=1500)
    publish(shot, "early-fire-left-join-retraction.png")
