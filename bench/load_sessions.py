"""The people of `bench/load.py`: each steps through its incidents, one after another, checking
after every step that the page is its own.

Two kinds of client, the same walk:
* `ws`: Streamlit's own websocket protocol (what the page's JavaScript speaks): the link's view
  is asked for as the browser asks on opening a page, a step is the Forward button's trigger sent
  with the step area's fragment id (what the page sends when Right is pressed), and the answer is
  read from the protobuf messages. No rendering: 20 of them cost the server what 20 people cost it,
  and almost nothing else on a 2-core machine.
* `browser`: a page in its own context of one Chromium, Right pressed on the keyboard, the page's
  DOM read back. The whole path, rendering included; Chromium's CPU competes with the server's.

Two ways to share the incidents (`MODES`): `spread`, each person starting at another incident;
`same-link`, everyone opening the one incident link (a team sent the same link) and stepping the
same steps, then the same next incident. Behind the proxy of `tools/serve_many.py` a `ws` page
does what a browser does first, a health check that brings the proxy's cookie, and sends the
cookie with its websocket; the server that answered each is noted, and a websocket that reaches
another server than its page's check is an error.
"""

from __future__ import annotations

import asyncio
import collections
import re
import time
import urllib.request
from dataclasses import dataclass, field
from http.cookiejar import CookieJar
from urllib.parse import urlencode

from tools.chromium import CHROMIUM, CHROMIUM_ARGS, IDLE  # the checkout is on the path (load.py)
from tools.serve_many import SERVER_HEADER

WAIT_S = 60
MODES = ("spread", "same-link")


@dataclass
class Tally:
    """What every session saw."""

    presses: list[float] = field(default_factory=list)
    switches: list[float] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    crosstalk: list[str] = field(default_factory=list)
    checks: int = 0
    servers: collections.Counter[str] = field(default_factory=collections.Counter)  # pages per app server


@dataclass
class Screen:
    """What a session's page shows now: the title, the step headings, exceptions, the link."""

    title: str = ""
    steps: list[str] = field(default_factory=list)
    exceptions: int = 0
    search: str = ""


_STEP = re.compile(r"^Step (\d+) of (\d+)$")


def check(screen: Screen, title: str, step: int, last: int | None, tally: Tally, who: str) -> int:
    """Count an error or cross-talk unless `screen` is this session's incident at `step` (of
    `last`, once known); returns the incident's last step as shown."""
    tally.checks += 1
    if screen.exceptions:
        tally.errors.append(f"{who}: an exception on the page at step {step}")
    if not screen.title.startswith(title[:30]):
        tally.crosstalk.append(f"{who}: title {screen.title[:50]!r}, expected {title[:50]!r}")
    shown = [_STEP.match(t) for t in screen.steps]
    if len(shown) != 1 or shown[0] is None:
        tally.errors.append(f"{who}: step headings {screen.steps!r} at step {step}")
        return last or 0
    now, count = int(shown[0][1]), int(shown[0][2])
    if now != step or (last is not None and count != last):
        tally.crosstalk.append(f"{who}: shows step {now} of {count}, expected {step} of {last}")
    if f"step={step}" not in screen.search:
        tally.crosstalk.append(f"{who}: the link says {screen.search[:80]!r} at step {step}")
    return count


def link(slug: str) -> str:
    return urlencode({"scenario": slug, "engine": "local", "step": 0})


async def walk(open_page, order: list[tuple[str, str]], deadline: float, think: float, tally: Tally,
               who: str, presses: int | None = None) -> None:  # fmt: skip
    """One person: each incident of `order` in turn, opened by its link, stepped to its end with
    `think` seconds between steps, until the deadline (or, given `presses`, until that many key
    presses are made). A failure is counted and the walk goes on with a fresh page."""
    turn = made = 0

    def done() -> bool:
        return presses is not None and made >= presses

    while time.monotonic() < deadline - 5 and not done():
        slug, title = order[turn % len(order)]
        page, doing = None, f"opening {slug}"
        try:
            started = time.perf_counter()
            page = await open_page(slug)
            tally.switches.append(time.perf_counter() - started)
            last = check(await page.screen(), title, 0, None, tally, who)
            for step in range(1, last + 1):
                if time.monotonic() >= deadline or done():
                    break
                await asyncio.sleep(think)
                doing = f"stepping {slug} to {step}"
                started = time.perf_counter()
                await page.forward(step, last)
                tally.presses.append(time.perf_counter() - started)
                made += 1
                check(await page.screen(), title, step, last, tally, who)
        except Exception as exc:  # a timeout or a broken page: counted, and the walk goes on afresh
            first = str(exc).splitlines()[0][:120] if str(exc) else ""
            tally.errors.append(f"{who}, {doing}: {type(exc).__name__}: {first}")
        finally:
            if page is not None:
                await page.close()
        turn += 1
        await asyncio.sleep(think)


# --- the websocket client -----------------------------------------------------------------------------


def health_check(base: str) -> tuple[dict[str, str], str]:
    """What a page asks first: Streamlit's health check, which sets its XSRF cookie (and, behind
    the proxy, the proxy's server cookie). The cookies it set, and the server that answered
    ("" when no proxy says)."""
    cookies = CookieJar()
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(cookies))
    with opener.open(f"{base}/_stcore/health", timeout=WAIT_S) as response:
        server = response.headers.get(SERVER_HEADER, "")
    return {cookie.name: cookie.value or "" for cookie in cookies}, server


class WsPage:
    """A page spoken to in Streamlit's protocol: a websocket to /_stcore/stream, BackMsg out,
    ForwardMsg in."""

    def __init__(self, ws, cookies: dict[str, str], server: str) -> None:
        self.ws = ws
        self.cookies, self.server = cookies, server  # from the health check
        self.state = Screen()
        self.forward_id = ""
        self.fragment = ""
        self.main_hash = ""
        self.query = ""
        self.session_id = ""

    @classmethod
    async def open(cls, base: str, slug: str, cookies: dict[str, str] | None = None) -> WsPage:
        """The page of `slug`'s link. `cookies` replace the health check's (a test sends one
        page's cookies with another's websocket)."""
        from websockets.asyncio.client import connect

        checked, server = await asyncio.to_thread(health_check, base)
        cookies = checked if cookies is None else cookies
        header = "; ".join(f"{name}={value}" for name, value in cookies.items())
        ws = await connect(f"{base.replace('http', 'ws', 1)}/_stcore/stream", subprotocols=["streamlit"],
                           max_size=None, open_timeout=WAIT_S,
                           additional_headers={"Cookie": header} if header else None)  # fmt: skip
        page = cls(ws, cookies, server)
        answered = ws.response.headers.get(SERVER_HEADER, "") if ws.response else ""
        if answered != server:
            await ws.close()
            raise RuntimeError(f"the websocket reached server {answered!r}, the page's check {server!r}")
        page.query = link(slug)
        await page._run(fragment=None)
        return page

    async def _run(self, fragment: str | None, trigger: str | None = None) -> None:
        """Ask for a run (the whole page, or one fragment with a button's trigger) and read its
        messages up to the end of the run."""
        from streamlit.proto.BackMsg_pb2 import BackMsg

        message = BackMsg()
        state = message.rerun_script
        state.query_string = self.query
        state.page_script_hash = self.main_hash
        if trigger is not None:
            widget = state.widget_states.widgets.add()
            widget.id = trigger
            widget.trigger_value = True
        if fragment:
            state.fragment_id = fragment
        self.state.steps, self.state.exceptions = [], 0
        await self.ws.send(message.SerializeToString())
        await asyncio.wait_for(self._read_run(), WAIT_S)

    async def _read_run(self) -> None:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

        while True:
            message = ForwardMsg()
            message.ParseFromString(await self.ws.recv())
            kind = message.WhichOneof("type")
            if kind == "new_session":
                self.main_hash = message.new_session.main_script_hash
                self.session_id = message.new_session.initialize.session_id
            elif kind == "page_info_changed":
                self.query = self.state.search = message.page_info_changed.query_string
            elif kind == "delta":
                self._element(message.delta)
            elif kind == "script_finished" and message.script_finished != ForwardMsg.FINISHED_EARLY_FOR_RERUN:
                return  # a run that ended early for a rerun is followed by that rerun's messages

    def _element(self, delta) -> None:
        if delta.WhichOneof("type") != "new_element":
            return
        element = delta.new_element
        kind = element.WhichOneof("type")
        if kind == "heading":
            if element.heading.tag == "h1":
                self.state.title = element.heading.body
            elif _STEP.match(element.heading.body):
                self.state.steps.append(element.heading.body)
        elif kind == "exception":
            self.state.exceptions += 1
        elif kind == "button" and element.button.id.endswith("-fwd"):
            self.forward_id, self.fragment = element.button.id, delta.fragment_id

    async def forward(self, step: int, last: int) -> None:
        """Forward, as the Right key presses it: the step area's fragment reruns."""
        await self._run(self.fragment, self.forward_id)

    async def screen(self) -> Screen:
        return self.state

    async def close(self) -> None:
        await self.ws.close()


# --- the browser client -------------------------------------------------------------------------------

_READ = """() => ({
  title: (document.querySelector('h1') || {}).innerText || '',
  steps: [...document.querySelectorAll('h3')].map(h => h.innerText)
    .filter(t => /^Step \\d+ of \\d+$/.test(t)),
  exceptions: document.querySelectorAll('[data-testid="stException"]').length,
  search: location.search,
})"""


class BrowserPage:
    """A page of its own Chromium context, stepped by the Right key."""

    def __init__(self, context, page) -> None:
        self.context, self.page = context, page

    @classmethod
    async def open(cls, browser, base: str, slug: str) -> BrowserPage:
        context = await browser.new_context(viewport={"width": 1440, "height": 900})
        page = await context.new_page()
        page.set_default_timeout(WAIT_S * 1000)
        opened = cls(context, page)
        await page.goto(f"{base}/?{link(slug)}")
        await page.get_by_role("heading", name=re.compile(r"^Step 0 of \d+$")).wait_for()
        await page.locator(IDLE).wait_for()
        await page.get_by_role("heading", level=1).first.click()  # focus on the page, not a widget
        return opened

    async def forward(self, step: int, last: int) -> None:
        await self.page.keyboard.press("ArrowRight")
        await self.page.get_by_role("heading", name=f"Step {step} of {last}", exact=True).wait_for()
        await self.page.locator(IDLE).wait_for()

    async def screen(self) -> Screen:
        return Screen(**await self.page.evaluate(_READ))

    async def close(self) -> None:
        await self.context.close()


def orders(incidents: list[tuple[str, str]], sessions: int, mode: str) -> list[list[tuple[str, str]]]:
    """Each session's incidents in turn: in `spread` mode session i starts at the i-th incident
    (round the list); in `same-link` mode all start at the first and go on together."""
    if mode not in MODES:
        raise ValueError(f"mode {mode!r}: one of {', '.join(MODES)}")
    starts = [i % len(incidents) if mode == "spread" else 0 for i in range(sessions)]
    return [incidents[start:] + incidents[:start] for start in starts]


@dataclass(frozen=True)
class Crowd:
    """Who comes: `sessions` people arriving `ramp` seconds apart, for `seconds`, `think` seconds
    between a person's steps, on the incidents as `mode` shares them; `first` (a slug) puts that
    incident first in the list (the one link of `same-link`); `presses`, when set, ends each
    person's walk after that many key presses (`seconds` is then only a bound on it)."""

    sessions: int
    seconds: float
    think: float = 1.0
    ramp: float = 1.0
    mode: str = "spread"
    first: str | None = None
    presses: int | None = None


async def drive(url: str, client: str, crowd: Crowd) -> Tally:
    """The crowd's walks against the app at `url`, with `client` pages."""
    from wmviz.store.incidents import built_in_incidents

    incidents = [(slug, incident.title) for slug, incident in built_in_incidents().items()]
    if crowd.first is not None:
        at = [slug for slug, _ in incidents].index(crowd.first)
        incidents = incidents[at:] + incidents[:at]
    tally = Tally()
    deadline = time.monotonic() + crowd.seconds

    async def people(open_page) -> None:
        tasks = []
        for i, order in enumerate(orders(incidents, crowd.sessions, crowd.mode)):
            walking = walk(open_page, order, deadline, crowd.think, tally, f"s{i}", crowd.presses)
            tasks.append(asyncio.create_task(walking))
            await asyncio.sleep(crowd.ramp)  # people arrive one after another, not in the same millisecond
        await asyncio.gather(*tasks)

    if client == "ws":

        async def open_ws(slug: str) -> WsPage:
            page = await WsPage.open(url, slug)
            tally.servers[page.server or "(direct)"] += 1
            return page

        await people(open_ws)
        return tally
    from playwright.async_api import async_playwright

    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        await people(lambda slug: BrowserPage.open(browser, url, slug))
        await browser.close()
    return tally
