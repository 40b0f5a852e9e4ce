"""Shortcut keys that step the trace whatever has focus (except where a person types).

Streamlit's own button shortcuts stop working while a widget has focus, and a focused radio
button takes the arrow keys itself (the Right arrow would switch the engine). This installs one
listener on the page, ahead of every widget (capture phase): a shortcut key clicks its step button
and goes no further, so no widget ever changes by a shortcut; in a text field, or in a select box
that is open, the keys stay the field's. A key pressed while the page is still drawing (its step
buttons not there yet, or stale while the script runs) waits in a queue and is handled, in order,
once the buttons are drawn, and each key waits until the last one's click shows its effect: a key
is never lost, never merged with the one before. Pause is the one key that does not wait: a play
redraws the page tick after tick, so a busy server is never idle while it plays. Each page says
its own map (`SHORTCUTS`, `JOB_SHORTCUTS`): a key it does not map reaches the widget with focus,
and a queued key the page no longer maps (the job graph's, once the valve page opens) is dropped,
never replayed on another page's button.
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
  // reads here whether the key arrived, was clicked (and on which label), acted or was dropped.
  const log = page.__wmvizKeyLog = [];
  const note = (...what) => { log.push([Date.now(), ...what]); if (log.length > 100) log.shift(); };
  const WAIT_MS = 30000;  // a key still waiting for its button, or a click for its effect: given up
  let draining = false;
  let clicked = null;  // the last click whose effect is not seen yet: [button key, when, what showed]
  const typing = (el) => {
    if (!el) return false;
    if (el.isContentEditable || el.tagName === "TEXTAREA") return true;
    if (el.tagName !== "INPUT") return false;
    if (el.getAttribute("role") === "combobox") return el.getAttribute("aria-expanded") === "true";
    return ["text", "search", "number", "email", "password", "url", "tel"].includes(
      (el.getAttribute("type") || "text").toLowerCase());
  };
  const running = () => {
    const app = page.document.querySelector('[data-testid="stApp"]');
    return !app || app.getAttribute("data-test-script-state") !== "notRunning";
  };
  // What a shortcut's click changes: the view in the URL (the step, the job graph's time), the
  // step heading (a live step), Play turning into Pause. A click's effect is seen when this
  // changes. The script's state alone cannot say it: a quick rerun can start and end between two
  // looks (and is then never seen running), and a loaded server starts a rerun seconds after the
  // click.
  const shown = () => [page.location.search, ...[...page.document.querySelectorAll(
      '[data-testid="stMain"] h3, .st-key-play, .st-key-pause')]
    .map((el) => el.className.match(/st-key-\\w+/)?.[0] || el.innerText)].join("|");
  const mapped = (target) => Object.values(page.__wmvizShortcuts).some(
    (keys) => [].concat(keys).join() === [].concat(target).join());
  // Timers on the page's window: this frame may be redrawn, and a gone frame's timers never fire.
  const drain = () => {
    while (queue.length && Date.now() - queue[0][1] > WAIT_MS) note("expired", queue.shift()[0]);
    // A key acts once the last click's effect shows: its button's callback was registered by the
    // run that click started, so a click before that would repeat the last one (its target step
    // is fixed when drawn: two clicks on one drawing make one step).
    if (clicked) {
      const unchanged = shown() === clicked[2];
      if (unchanged && Date.now() - clicked[1] < WAIT_MS) { page.setTimeout(drain, 15); return; }
      note(unchanged ? "unseen" : "acted", clicked[0]);
      clicked = null;
    }
    if (!queue.length) { draining = false; return; }
    // A key the page no longer maps (the page changed: the job graph's keys on the valve page)
    // has no use here: it is dropped, never replayed on another page's button.
    if (!mapped(queue[0][0])) { note("dropped", queue.shift()[0]); page.setTimeout(drain, 15); return; }
    const button = page.document.querySelector(
      [].concat(queue[0][0]).map((key) => ".st-key-" + key + " button").join(", "));
    // Pause is clicked at once: while playing the page is redrawn tick after tick, so on a busy
    // server it is never idle and a pause that waited for idle landed only when the play had ended.
    const pause = button && button.closest(".st-key-pause") !== null;
    // Drawing (the script runs, or its button is not drawn yet: a loaded browser draws a finished
    // run seconds later): the key waits, in order.
    if (!button || (running() && !pause)) { page.setTimeout(drain, 15); return; }
    const target = queue.shift()[0];
    if (button.disabled) note("disabled", target, button.innerText);
    else {
      clicked = [target, Date.now(), shown()];
      button.click();
      note("clicked", target, button.innerText);
    }
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
