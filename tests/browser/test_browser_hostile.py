"""Hostile input in a real browser (issue 13), where AppTest cannot reach: the page a hostile
upload opens and a hostile link has no link or image made of user text and fetches nothing from
the hosts it names; hostile bundles given to the file uploader (a lying size, a bad CRC, a view
whose step is "²") end as a clean message, never a traceback.

The app runs as `streamlit run` with its own data root (Spark started lazily and never needed),
driven by Debian's Chromium through Playwright, as in tests/browser/test_browser.py."""

from __future__ import annotations

import io
import json
import re
import zipfile
from urllib.parse import urlencode, urlparse

import pytest

from tests.browser.test_browser import APP_IDLE, MISSING
from tests.support.app_server import chromium, fresh_page, streamlit_app
from wmviz.view.url import noted

HOSTILE = (
    "[t](https://x.example/a) ![i](http://y.example/i.png) www.z.example HTTP://w.example "
    "me@v.example :red[r] $x$"
)
TIMEOUT_MS = 60_000
_ROWS = [
    {"kind": "record", "instance": HOSTILE, "channel": 0, "key": HOSTILE, "event_ms": t, "value": HOSTILE}
    for t in (1000, 7000, 12500, 9500, 14000, 8000)
]
_CONFIG = {
    "name": HOSTILE,
    "description": HOSTILE,
    "generator": {"out_of_orderness_ms": 2000},
    "operator": {"type": "window", "size_ms": 10000, "allowed_lateness_ms": 1000, "aggregate": "count"},
}
TRACE = "\n".join(json.dumps(r) for r in [{"config": _CONFIG}, *_ROWS]).encode()
# Every toast the page shows, however briefly, as `window.__toasts` (its text, word joiners removed,
# and its links and images to the hosts the hostile text names). A toast leaves 4 s after it is drawn,
# and Streamlit draws it only once its component (a script of its own, fetched on first use from the
# server that is running the page) has loaded: on a loaded 2-core machine (load 14) a link's notice
# was drawn 15 s and 37 s after the step's heading, so one awaited for 60 s could come and go unseen.
NOTICE_MS = 300_000
RECORD_TOASTS = """
window.__toasts = [];
new MutationObserver(() => {
  for (const toast of document.querySelectorAll('[data-testid="stToast"]')) {
    const text = toast.innerText.replaceAll('\\u2060', '');
    const links = toast.querySelectorAll('a[href*="example"]').length;
    const images = toast.querySelectorAll('img[src*="example"]').length;
    const last = window.__toasts.findLast(seen => seen.text === text);
    if (!last || last.links !== links || last.images !== images) window.__toasts.push({text, links, images});
  }
}).observe(document, {childList: true, subtree: true, characterData: true});
"""


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    """The app with a data root of its own; yields (base URL, data root)."""
    tmp = tmp_path_factory.mktemp("wmviz-hostile")
    with streamlit_app(tmp, {"WMVIZ_CACHE": str(tmp / "data"), "WMVIZ_SPARK_START": "lazy"}) as url:
        yield url, tmp / "data"


@pytest.fixture(scope="module")
def browser():
    if MISSING:
        pytest.fail(f"the browser tests must run: {MISSING}", pytrace=False)
    with chromium() as browser:
        yield browser


@pytest.fixture
def page(browser):
    with fresh_page(browser, {"width": 1440, "height": 900}, TIMEOUT_MS) as page:
        page.fetched = []
        page.on("request", lambda request: page.fetched.append(request.url))
        page.add_init_script(RECORD_TOASTS)  # in each document the page opens, before its scripts
        yield page


def no_markup_from_user_text(page) -> None:
    """No link or image made of user text in the page or its frames, nothing fetched from the
    hosts the text names, no exception shown."""
    for frame in page.frames:
        # A link to this page's own view (`?trace=…&instance=…`, the Late rows table's step links)
        # carries the instance name percent-encoded in its query: it cannot leave the site. Any
        # other link with the user's text in it is one the text made.
        links = frame.locator('a[href*="example"]:not([href^="?"])')
        assert links.count() == 0, [links.nth(i).evaluate("e => e.outerHTML") for i in range(links.count())]
        assert frame.locator('img[src*="example"]').count() == 0, frame.url
    assert not [u for u in page.fetched if "example" in (urlparse(u).hostname or "")]
    assert page.get_by_test_id("stException").count() == 0


def test_a_hostile_upload_and_a_hostile_link_show_their_text_and_make_no_link_or_image(server, page):
    from playwright.sync_api import expect

    from wmviz.store.uploads import store_upload

    url, data = server
    stored = store_upload("www.evil.example.jsonl", TRACE, None, root=data / "uploads")
    query = {"trace": stored.digest, "engine": "local", "instance": HOSTILE, "step": 3}
    page.goto(f"{url}/?{urlencode(query)}")
    expect(page.get_by_role("heading", name=re.compile(r"^Step 3 of \d+$"))).to_be_visible()
    page.locator(APP_IDLE).wait_for()
    title = page.get_by_role("heading", level=1)
    expect(title).to_contain_text("evil")
    assert read(title) == "Uploaded: www.evil.example.jsonl"
    caption = page.get_by_text(re.compile("steps in instance")).first
    assert read(caption).endswith(f"steps in instance {HOSTILE}")
    no_markup_from_user_text(page)

    page.goto(f"{url}/?{urlencode({'trace': HOSTILE, 'scenario': HOSTILE, 'tz': HOSTILE})}")
    expect(page.get_by_role("heading", name=re.compile(r"^Step 0 of \d+$"))).to_be_visible()
    toasts = toasts_saying(page, "this server does not have")
    # Quoted as typed, as far as a notice quotes.
    assert any(noted(HOSTILE) in t["text"] for t in toasts), toasts
    no_markup_from_user_text(page)


def toasts_saying(page, text: str) -> list[dict]:
    """The toasts the page has shown that say `text` (awaited), each with no link or image made of
    the user's text: a toast may be gone before it is looked for, but not from the record."""
    page.wait_for_function(
        "text => window.__toasts.some(t => t.text.includes(text))", arg=text, timeout=NOTICE_MS
    )
    toasts = [t for t in page.evaluate("() => window.__toasts") if text in t["text"]]
    assert not [t for t in toasts if t["links"] or t["images"]], toasts
    return toasts


def read(locator) -> str:
    """The text a person reads (the word joiners that stop GFM's bare links are not seen)."""
    return locator.inner_text().replace("\u2060", "")


def _zip(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in files.items():
            zf.writestr(name, content)
    return out.getvalue()


def _bad_crc(files: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as zf:
        for name, content in files.items():
            zf.writestr(name, content)
    data = bytearray(out.getvalue())
    at = data.find(b'"event_ms": 7000')
    data[at + 12] = ord("8")
    return bytes(data)


def test_hostile_bundles_given_to_the_uploader_end_in_a_clean_message(server, page, tmp_path):
    from playwright.sync_api import expect

    url, _ = server
    page.goto(f"{url}/?scenario=flink-38477-zero-output&engine=local&step=0")
    expect(page.get_by_role("heading", name="Step 0 of 7")).to_be_visible()
    page.locator(APP_IDLE).wait_for()
    box = page.get_by_test_id("stExpander").filter(has_text="Bring your own trace")
    box.get_by_text("Bring your own trace", exact=True).click()
    uploader = box.locator('input[type="file"]').first
    trace = TRACE.split(b"\n", 1)[1]
    deep, latin = b"[" * 5000 + b"]" * 5000, b'{"step": "\xb2"}'
    bundles = {
        "crc.zip": (_bad_crc({"t.jsonl": trace}), "t.jsonl is damaged or unreadable (Bad CRC-32"),
        "bomb.zip": (_zip({"t.jsonl": b"\n" * (201 * 2**20)}), "more than the upload limit of 200"),
        "deep.zip": (_zip({"t.jsonl": trace, "view.json": deep}), "view.json: not valid JSON"),
        "latin.zip": (_zip({"t.jsonl": trace, "view.json": latin}), "view.json: not UTF-8 text"),
    }
    for name, (content, message) in bundles.items():
        path = tmp_path / name
        path.write_bytes(content)
        uploader.set_input_files(str(path))
        expect(page.get_by_test_id("stAlertContentError").filter(has_text=message)).to_be_visible()
        page.locator(APP_IDLE).wait_for()
        assert page.get_by_test_id("stException").count() == 0, name
    # A bundle whose view says step "²" (isdigit() is true, int() fails): step 0, and a notice.
    view = json.dumps({"step": "²", "instance": HOSTILE, "profile": HOSTILE}).encode()
    path = tmp_path / "superscript.zip"
    path.write_bytes(_zip({"t.jsonl": trace, "view.json": view}))
    uploader.set_input_files(str(path))
    expect(page.get_by_role("heading", level=1)).to_have_text("Uploaded: t.jsonl")
    expect(page.get_by_role("heading", name="Step 0 of 5", exact=True)).to_be_visible()
    assert any("²" in t["text"] for t in toasts_saying(page, "is not a number"))
    page.locator(APP_IDLE).wait_for()
    no_markup_from_user_text(page)
