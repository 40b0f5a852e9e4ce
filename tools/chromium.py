"""Debian's chromium as the browser tests and the benchmarks drive it through Playwright
(never `playwright install`): one list of flags for all of them."""

from __future__ import annotations

from pathlib import Path

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
IDLE = '[data-testid="stApp"][data-test-script-state="notRunning"]'
"""The page once Streamlit's script run is over."""
