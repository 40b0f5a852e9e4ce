"""The clicks the browser numbered on one live input panel, taken exactly once each.

Streamlit merges the clicks on a button that arrive while the page's script runs into one, so the
page's input buttons are a small component that numbers every click in the browser and sends the
log of its newest ones with each click (`wmviz.ui.live_clicks` draws it). However Streamlit merges
what it sends, the newest log holds every click; `ClickLog` takes each number once, in order.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

MAX_LOG = 1000
"""The browser keeps the newest this many clicks in the log it sends, and the server reads at most
this many from one message (a forged one could send millions): far more than wait for their step
(`WMVIZ_LIVE_QUEUE`) or than the clicks of one rerun."""

MAX_CLICK_NUMBER = 2**53 - 1
"""The browser's counter is a JavaScript number, exact up to `Number.MAX_SAFE_INTEGER`: a larger
number was not counted by a browser, and taken it would leave every later click of the panel
"seen" (a forged 10^100 did)."""


@dataclass
class ClickLog:
    """The clicks the server has taken from one mounted button panel (numbered by the browser),
    and what each of its buttons asked for when it was last drawn."""

    seen: int = 0
    """The number of the newest click taken: a log sent again is not taken twice."""
    actions: dict[str, Any] = field(default_factory=dict)
    """By the id the browser sends: what the button asks for."""
    drawn: dict[str, tuple[str, bool]] = field(default_factory=dict)
    """By the button's page key: its id and whether it was drawn disabled."""

    def take(self, message: Any) -> list[Any]:
        """The actions of the clicks in `message` not taken before, in click order. What a forged
        message holds (an unknown id, an entry that is not `[number, id]`, a number no browser counted)
        is not taken."""
        actions = self.actions
        log = message.get("log") if isinstance(message, dict) else None
        if not isinstance(log, list):
            return []
        new = []
        for entry in log[:MAX_LOG]:
            if not (isinstance(entry, list) and len(entry) == 2 and type(entry[0]) is int):
                continue
            number, name = entry
            if number > MAX_CLICK_NUMBER:
                continue
            if number > self.seen and isinstance(name, str) and name in actions:
                self.seen = number
                new.append(actions[name])
        return new
