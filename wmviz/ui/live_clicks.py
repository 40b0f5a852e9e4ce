"""Live mode's input buttons, counted in the browser so that no click is lost.

Streamlit merges the clicks on a button that arrive while the page's script runs into one (a
button's value is "pressed", not "pressed N times"), before any code of ours sees them: 150 quick
clicks reached the page as 4-16. These buttons are one small component instead: the browser
numbers every click and sends the log of its newest clicks with each one. However Streamlit
merges what it sends, the newest log holds every click, so the server takes each one exactly once
(by its number, `wmviz.live.clicks.ClickLog`) and queues or refuses it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import streamlit as st

from wmviz.live.clicks import MAX_LOG, ClickLog

_JS = """
export default function (component) {
  const { data, parentElement, setStateValue } = component;
  // Per panel, across the page's reruns and the component's remounts (a mount's own key is new
  // each time): the clicks numbered so far and a log of the newest ones (the server takes each
  // number once, so the numbering must never restart).
  const memory = (window.__wmvizLiveClicks ??= {});
  const mine = (memory[data.panel] ??= { seq: 0, log: [] });
  // A call whose element already left the page draws nothing. Streamlit runs a mount's function
  // once its module import resolves, even if the element was unmounted meanwhile (its cleanup ran
  // first, with nothing to clean): drawn, that call hid the shown mount's buttons, and with the
  // same data on every run nothing called that mount again (a loaded CI run: no buttons for 120 s).
  if (!parentElement.isConnected) return () => {};
  mine.send = setStateValue;
  // Every mount's box, the most recently called last (a mount is its element). The page may hold
  // two mounts of this panel for a moment (the panel moved): only the box of the newest one still
  // on the page is shown, so a person (or a test) never sees the buttons twice, and the others are
  // set aside to be shown again when it leaves.
  const boxes = (mine.boxes ??= new Map());
  const selector = '.wmviz-live-inputs[data-panel="' + CSS.escape(data.panel) + '"]';
  const show = () => {
    for (const parent of [...boxes.keys()]) if (!parent.isConnected) boxes.delete(parent);
    const newest = [...boxes].pop();
    if (newest && newest[1].parentNode !== newest[0]) newest[0].appendChild(newest[1]);
    for (const other of document.querySelectorAll(selector)) if (other !== newest?.[1]) other.remove();
  };
  let box = boxes.get(parentElement) ?? parentElement.querySelector(".wmviz-live-inputs");
  if (!box) {
    box = document.createElement("div");
    box.className = "wmviz-live-inputs";
    box.dataset.panel = data.panel;
  }
  boxes.delete(parentElement);
  boxes.set(parentElement, box);
  show();
  // Buttons are updated in place, never rebuilt: a button replaced between a click's press and
  // its release would lose that click.
  const keep = new Set();
  for (const row of data.rows) {
    let line = box.querySelector(":scope > .st-key-" + row.key);
    if (!line) {
      line = document.createElement("div");
      line.className = "wmviz-live-row st-key-" + row.key;
      line.appendChild(document.createElement("strong"));
    }
    box.appendChild(line);  // in the order given (moving a node keeps it, and its listeners)
    keep.add(line);
    line.firstChild.textContent = row.label;
    const mineHere = new Set([line.firstChild]);
    for (const spec of row.buttons) {
      let holder = line.querySelector(":scope > .st-key-" + spec.key);
      if (!holder) {
        holder = document.createElement("div");
        holder.className = "st-key-" + spec.key;
        const button = document.createElement("button");
        button.type = "button";
        button.onclick = () => {
          mine.seq += 1;
          mine.log.push([mine.seq, button.dataset.action]);
          mine.log.splice(0, mine.log.length - data.keep);
          mine.send("clicks", { seq: mine.seq, log: mine.log.slice() });
        };
        holder.appendChild(button);
      }
      line.appendChild(holder);
      mineHere.add(holder);
      const button = holder.firstChild;
      button.textContent = spec.text;
      button.disabled = spec.disabled;
      button.dataset.action = spec.action;
    }
    for (const child of [...line.children]) if (!mineHere.has(child)) child.remove();
  }
  for (const child of [...box.children]) if (!keep.has(child)) child.remove();
  // Drawn into the page's own tree (isolate_styles=False): what this mount added leaves with it.
  // Only the newest call's cleanup removes the box: Streamlit may run the cleanup of an older
  // call on the same element after a newer call reused the box (a rerun during the first import,
  // on a loaded machine, left the panel without buttons until the next change). Either cleanup
  // then shows the newest mount left: React removes the element before it runs the cleanup, so
  // whether this box was the one shown cannot be read from the page any more.
  const owner = {};
  box.wmvizOwner = owner;
  return () => {
    if (box.wmvizOwner === owner) {
      box.remove();
      if (boxes.get(parentElement) === box) boxes.delete(parentElement);
    }
    show();
  };
}
"""

_CSS = """
.wmviz-live-inputs { display: flex; flex-direction: column; gap: 0.5rem; }
.wmviz-live-row { display: flex; flex-wrap: wrap; align-items: center; gap: 0.5rem; }
.wmviz-live-row strong { margin-right: 0.25rem; }
.wmviz-live-row button {
  font: inherit; padding: 0.25rem 0.75rem; min-height: 2.5rem; cursor: pointer;
  color: var(--st-text-color, inherit); background: var(--st-background-color, transparent);
  border: 1px solid var(--st-border-color, rgba(49, 51, 63, 0.2));
  border-radius: var(--st-base-radius, 0.5rem);
}
.wmviz-live-row button:hover:enabled {
  border-color: var(--st-primary-color, #ff4b4b); color: var(--st-primary-color, #ff4b4b);
}
.wmviz-live-row button:disabled { cursor: not-allowed; opacity: 0.4; }
"""

_COMPONENT: Callable[..., Any] | None = None


def _component() -> Callable[..., Any]:
    """Registered once per process, on first use (registering needs Streamlit's runtime)."""
    global _COMPONENT
    if _COMPONENT is None:
        _COMPONENT = st.components.v2.component("wmviz_live_inputs", js=_JS, css=_CSS, isolate_styles=False)
    return _COMPONENT


@dataclass(frozen=True)
class Button:
    """One button: its key (the page's `st-key-…` class), its text, and what a click asks for."""

    key: str
    text: str
    action: Any
    disabled: bool = False


@dataclass(frozen=True)
class ButtonRow:
    key: str
    label: str
    buttons: Sequence[Button]


def panel_key(run_folder: str, instance: object) -> str:
    """The key of a live run's input panel for `instance`. Streamlit refuses a component key that
    holds "__" (its own delimiter), and a run's folder, made by mkdtemp, may hold "_": a name that
    ends with one (1 in 37) or holds "__" gave a key with "__", about one run in 31 (beside a CPU
    hog a live test's page failed with BidiComponentInvalidIdError). So the folder and instance
    are hashed, not quoted."""
    digest = hashlib.blake2s(f"{run_folder}\0{instance}".encode(), digest_size=8).hexdigest()
    return f"live_inputs_{digest}"


def take_clicks(key: str, log: ClickLog) -> list[Any]:
    """The actions of the clicks on panel `key` that reached this run and were not taken before
    (the page calls it first, so what it draws counts them)."""
    result = st.session_state.get(key)
    return log.take(result.get("clicks") if isinstance(result, Mapping) else None)


def click_panel(key: str, rows: Sequence[ButtonRow], log: ClickLog) -> None:
    """Draw the rows of buttons; a click reruns the page, and `take_clicks` then hands it over."""
    log.actions = {f"{i}.{j}": b.action for i, row in enumerate(rows) for j, b in enumerate(row.buttons)}
    log.drawn = {
        b.key: (f"{i}.{j}", b.disabled) for i, row in enumerate(rows) for j, b in enumerate(row.buttons)
    }
    # The same data on every run (no acknowledgement in it): Streamlit resets a component's state
    # when its data changes, and clicks sent meanwhile were lost.
    data = {
        "panel": key,
        "keep": MAX_LOG,
        "rows": [
            {
                "key": row.key,
                "label": row.label,
                "buttons": [
                    {"key": b.key, "text": b.text, "action": f"{i}.{j}", "disabled": b.disabled}
                    for j, b in enumerate(row.buttons)
                ],
            }
            for i, row in enumerate(rows)
        ],
    }
    _component()(key=key, data=data, default={"clicks": None}, on_clicks_change=lambda: None)
