"""Shortcut keys that step the trace whatever has focus (except where a person types).

Streamlit's own button shortcuts stop working while a widget has focus, and a focused radio
button takes the arrow keys itself (the Right arrow would switch the engine). This installs one
listener on the page, ahead of every widget (capture phase): a shortcut key clicks its step button
and goes no further, so no widget ever changes by a shortcut; in a text field, or in a select box
that is open, the keys stay the field's. A key pressed while the page is still drawing (its step
buttons not there yet, or stale while the script runs) waits in a queue and is handled, in order,
once the buttons are drawn: a key is never lost. Pause is the one key that does not wait: a play
redraws the page tick after tick, so a busy server is never idle while it plays. A key whose
button the drawn page does not have (the job graph has no step buttons) is dropped, never replayed
on the next page; each page says its own map (`SHORTCUTS`, `JOB_SHORTCUTS`), and a key it does not
map reaches the widget with focus.
"""

from __future__ import annotations

import json

import streamlit as st

# key (as KeyboardEvent.key, "Shift+" for shifted) -> the Streamlit key of the button it clicks,
# or the keys of the buttons one of which the page shows (Play and Pause are two buttons)
SHORTCUTS: dict[str, str | list[str]] = {
    "ArrowRight": "fwd",
    "ArrowLeft": "back",
    "Home": "first",
    "End": "last",
    " ": ["pause", "play"],
    "Shift+ArrowRight": "next_event",
    "Shift+ArrowLeft": "prev_event",
}

JOB_SHORTCUTS: dict[str, str | list[str]] = {
    "ArrowRight": "job_later",
    "ArrowLeft": "job_earlier",
    "Home": "job_first",
    "End": "job_last",
}
"""The job graph's keys: they move its time slider a sample (the valve page's map there stole the
arrows from the slider and queued them for the next page, issue 30)."""

CONTAINER_KEY = "shortcut_keys"

_SCRIPT = """<script>
const page = window.parent;
page.__wmvizShortcuts = %s;
if (!page.__wmvizKeys) {
  page.__wmvizKeys = true;
  const queue = page.__wmvizQueue = [];  // [button key, when pressed]: handled one at a time, in order
  // What happened to each key, newest last (at most 100): a test that finds a key without effect
  // reads here whether the key arrived, was clicked (and on which label) or was dropped.
  const log = page.__wmvizKeyLog = [];
  const note = (...what) => { log.push([Date.now(), ...what]); if (log.length > 100) log.shift(); };
  const WAIT_MS = 30000;  // a key still waiting for its button after this is dropped
  let draining = false;
  let clickedAt = 0;
  let absentSince = 0;
  const ABSENT_MS = 400;  // a drawn page without the key's button for this long: the key is dropped
  const typing = (el) => {
    if (!el) return false;
    if (el.isContentEditable || el.tagName === "TEXTAREA") return true;
    if (el.tagName !== "INPUT") return false;
    if (el.getAttribute("role") === "combobox") return el.getAttribute("aria-expanded") === "true";
    return ["text", "search", "number", "email", "password", "url", "tel"].includes(
      (el.getAttribute("type") || "text").toLowerCase());
  };
  // Busy: the script is running (its buttons may be stale, still carrying the last step), or the
  // rerun the last click asked for has not been seen to start (a loaded server starts it late).
  const busy = () => {
    const app = page.document.querySelector('[data-testid="stApp"]');
    const running = !app || app.getAttribute("data-test-script-state") !== "notRunning";
    if (running) clickedAt = 0;
    return running || (clickedAt > 0 && Date.now() - clickedAt < 4000);
  };
  // Timers on the page's window: this frame may be redrawn, and a gone frame's timers never fire.
  const drain = () => {
    while (queue.length && Date.now() - queue[0][1] > WAIT_MS) note("expired", queue.shift()[0]);
    if (!queue.length) {
      // After a click, watch until its rerun is seen to start: that resets the click's wait, and a
      // key pressed once the step is drawn then acts at once (unwatched, it waited out the 4 s).
      if (clickedAt > 0 && busy()) { page.setTimeout(drain, 15); return; }
      draining = false;
      return;
    }
    const button = page.document.querySelector(
      [].concat(queue[0][0]).map((key) => ".st-key-" + key + " button").join(", "));
    // Pause is clicked at once: while playing the page is redrawn tick after tick, so on a busy
    // server it is never idle and a pause that waited for idle landed only when the play had ended.
    const pause = button && button.closest(".st-key-pause") !== null;
    if (busy() && !pause) { absentSince = 0; page.setTimeout(drain, 15); return; }  // drawing: keep it
    if (!button) {
      // The page is drawn and has no such button: this page has no use for the key. It is dropped
      // (after a moment for the frontend to finish drawing), never kept for the next page.
      if (!absentSince) absentSince = Date.now();
      if (Date.now() - absentSince < ABSENT_MS) { page.setTimeout(drain, 15); return; }
      note("dropped", queue.shift()[0]); absentSince = 0; page.setTimeout(drain, 15); return;
    }
    absentSince = 0;
    const target = queue.shift()[0];
    if (button.disabled) note("disabled", target, button.innerText);
    else { button.click(); clickedAt = Date.now(); note("clicked", target, button.innerText); }
    page.setTimeout(drain, 15);
  };
  page.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    const name = (event.shiftKey && event.key !== " " ? "Shift+" : "") + event.key;
    const target = page.__wmvizShortcuts[name];
    if (!target || typing(page.document.activeElement)) return;
    event.preventDefault();
    event.stopImmediatePropagation();
    queue.push([target, Date.now()]);
    note("key", name);
    if (!draining) { draining = true; drain(); }
  }, true);
}
</script>"""


def install_shortcuts(shortcuts: dict[str, str | list[str]] | None = None) -> None:
    """Put the page's shortcut listener in place (once per page; the map may change each run).

    Its frame sits in a container the page's style hides (`panels.page_style`): a hidden frame
    still runs its script, and takes no room above the step."""
    with st.container(key=CONTAINER_KEY):
        st.iframe(_SCRIPT % json.dumps(shortcuts or SHORTCUTS), height=1)
