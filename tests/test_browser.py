"""The app in a real browser: keyboard shortcuts, the URL that follows the step, the charts, the join
changelog tab, a shared compare-mode link and its divergence jump, uploading a bad then a fixed
trace, the offline HTML report, and the README's screenshots.

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

from tests.conftest import CHROMIUM, CHROMIUM_ARGS, REPO

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


@pytest.fixture(scope="module")  # not session: only one sync Playwright may run at a time per process
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
    wait_settled(page, step, charts)


def wait_settled(page, step: int, charts: int) -> None:
    """Wait until the URL names `step`, the script has finished and `charts` charts are drawn (compare
    mode has no "Step N" heading: its callers check each side's caption instead)."""
    from playwright.sync_api import expect

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


def test_a_shared_compare_link_opens_its_step_and_jumps_to_the_first_divergence(page, app_url):
    from playwright.sync_api import expect

    compare_charts = 2  # one aligned min-heap per side
    query = f"{FLINK_38477}&step=5&profile=flip-38477&compare=flink-1.x-2.x"
    page.goto(f"{app_url}/?{query}")
    wait_settled(page, 5, compare_charts)
    expect(page.get_by_role("combobox", name="Profile")).to_have_value("flip-38477")
    expect(page.get_by_role("combobox", name="Compare with")).to_have_value("profile flink-1.x-2.x")
    expect(page).to_have_url(re.compile(r"[?&]profile=flip-38477(&|$)"))
    expect(page).to_have_url(re.compile(r"[?&]compare=flink-1\.x-2\.x(&|$)"))
    # Both runs at step 5: W25@1 leaves the minimum 20 under either profile.
    expect(page.get_by_text("this run: profile flip-38477", exact=True)).to_be_visible()
    expect(page.get_by_text("status ACTIVE · step 5", exact=True)).to_have_count(2)
    expect(page.locator('[data-testid="stMetricValue"]')).to_have_text(["20", "20"])

    # FINISHED@2 is a status under flip-38477 and a MAX watermark under released Flink.
    expect(page.get_by_text(re.compile(r"first diverge at step 2:"))).to_be_visible()
    go = page.get_by_role("button", name=re.compile(r"^Go to the first divergence \(step 2\)"))
    expect(go).to_be_enabled()
    go.click()
    wait_settled(page, 2, compare_charts)
    expect(page.get_by_text("status ACTIVE · step 2", exact=True)).to_have_count(2)
    expect(page.locator('[data-testid="stMetricValue"]')).to_have_text(["MIN", "MIN"])
    expect(go).to_be_disabled()  # already there
    expect(page.get_by_role("combobox", name="Profile")).to_have_value("flip-38477")


def test_upload_a_bad_trace_see_its_row_then_upload_the_fixed_one(page, app_url, tmp_path):
    from playwright.sync_api import expect

    from wmviz.ui.uploads import store_upload

    good = (REPO / "sample_data" / "flink-38477-zero-output.jsonl").read_bytes()
    lines = good.decode("utf-8").splitlines(keepends=True)
    bad_line = next(n for n, line in enumerate(lines, 1) if '"status": "FINISHED"' in line)
    lines[bad_line - 1] = lines[bad_line - 1].replace('"status": "FINISHED"', '"status": "DONE"')
    trace = tmp_path / "my-operator.jsonl"
    trace.write_text("".join(lines), encoding="utf-8")

    open_view(page, app_url, f"{FLINK_38477}&step=0", 0, ONE_VALVE_CHARTS)
    box = page.get_by_test_id("stExpander").filter(has_text="Bring your own trace")
    box.get_by_text("Bring your own trace", exact=True).click()
    expect(box.get_by_text("Trace or bundle", exact=True)).to_be_visible()
    trace_input = box.locator('input[type="file"]').first
    trace_input.set_input_files(str(trace))

    expect(
        page.get_by_text(re.compile(r"The trace has 1 validation error\(s\); nothing was simulated"))
    ).to_be_visible()
    page.locator(APP_IDLE).wait_for()
    issues = page.get_by_test_id("stMain").get_by_test_id("stDataFrame")
    expect(issues).to_have_count(1)
    # file, row (the file's 1-based line), column, reason: one issue, hence exactly four cells.
    expect(issues.locator('[role="gridcell"]')).to_have_text(
        [trace.name, str(bad_line), "status", re.compile(r'"DONE" is not one of ')]
    )
    expect(page.get_by_role("heading", name="Step 0: the input", exact=True)).to_have_count(0)
    expect(page.locator(PLOTLY)).to_have_count(0)

    # The person fixes the file and uploads it again under the same name. (A fixed copy elsewhere:
    # Chromium fires no change event when a file input is given the very path it already holds.)
    fixed = tmp_path / "fixed" / trace.name
    fixed.parent.mkdir()
    fixed.write_bytes(good)
    trace_input.set_input_files(str(fixed))
    digest = store_upload(fixed.name, good, None, root=tmp_path / "digest").digest
    expect(page).to_have_url(re.compile(rf"[?&]trace={digest}(&|$)"))
    wait_rendered(page, 0, ONE_VALVE_CHARTS)
    expect(page.get_by_role("heading", level=1)).to_have_text(f"Uploaded: {fixed.name}")
    expect(page.get_by_text(re.compile(r"validation error"))).to_have_count(0)
    expect(page.get_by_role("button", name=re.compile("^Download bundle"))).to_be_visible()


def test_export_the_report_and_open_it_offline(page, app_url, tmp_path):
    from playwright.sync_api import expect

    open_view(page, app_url, f"{FLINK_38477}&step=7", 7, ONE_VALVE_CHARTS)
    with page.expect_download() as info:
        page.get_by_role("button", name="Export the incident report (HTML, opens offline)").click()
    download = info.value
    assert download.suggested_filename == "wmviz-flink-38477-zero-output-step-7.html"
    report_path = tmp_path / download.suggested_filename
    download.save_as(report_path)
    assert report_path.stat().st_size > 0

    # Offline: the report's page may read its own file and nothing else (plotly must be inline).

    report = page.context.new_page()
    blocked: list[str] = []

    def offline(route) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    report.route("**/*", offline)
    report.goto(report_path.as_uri())
    expect(report).to_have_title(re.compile("FLINK-38477"))
    expect(report.locator("h1").first).to_contain_text("FLINK-38477")
    report.wait_for_function("document.querySelectorAll('.js-plotly-plot').length >= 2")
    expect(report.get_by_text(re.compile(r"emit WMAX")).first).to_be_visible()
    assert blocked == [], f"the report asked the network for {blocked}"
