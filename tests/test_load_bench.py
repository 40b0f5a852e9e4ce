"""bench/load.py can fail: its page check names cross-talk and errors, and a short run of its
websocket client against a real server steps through incidents with every step timed on the
server (the 20-session figures are in docs/benchmarks.md; this only keeps the tool working)."""

from __future__ import annotations

import asyncio
import sys
import time

from tests.conftest import REPO

sys.path.append(str(REPO / "bench"))  # bench/ is scripts, not a package
from load_sessions import Screen, Tally, check, drive

TITLE = "FLINK-38477: zero output after some subtasks finish"


def test_the_page_check_names_cross_talk_and_errors():
    own = Screen(TITLE, ["Step 3 of 7"], 0, "?scenario=x&step=3")
    tally = Tally()
    assert check(own, TITLE, 3, 7, tally, "s0") == 7 and not tally.crosstalk and not tally.errors
    for screen in (
        Screen("One idle partition pins the watermark", ["Step 3 of 7"], 0, "?step=3"),  # another title
        Screen(TITLE, ["Step 4 of 7"], 0, "?step=3"),  # another step
        Screen(TITLE, ["Step 3 of 11"], 0, "?step=3"),  # another incident's step count
        Screen(TITLE, ["Step 3 of 7"], 0, "?step=4"),  # another step in the link
    ):
        tally = Tally()
        check(screen, TITLE, 3, 7, tally, "s0")
        assert len(tally.crosstalk) == 1 and not tally.errors, screen
    tally = Tally()
    check(Screen(TITLE, ["Step 3 of 7", "Step 4 of 7"], 1, "?step=3"), TITLE, 3, 7, tally, "s0")
    assert len(tally.errors) == 2  # an exception, and two step headings


def test_a_short_websocket_run_steps_with_every_step_timed_on_the_server(tmp_path):
    from load import Server

    server = Server(tmp_path)
    try:
        server.wait_healthy()
        tally = asyncio.run(drive(server.url, "ws", sessions=2, seconds=12, think=0.1, ramp=0.5))
        time.sleep(0.5)
        runs = server.runs()
    finally:
        server.stop()
    assert not tally.errors and not tally.crosstalk, (tally.errors, tally.crosstalk)
    assert len(tally.presses) >= 5 and tally.checks >= len(tally.presses)
    steps = [r for r in runs if r["fragment"]]
    assert len(steps) >= len(tally.presses) and not [r for r in runs if "error" in r]
