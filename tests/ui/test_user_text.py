"""No user text reaches Streamlit markdown (issue 13): names, keys, values, a link's parameters
and file names show as typed, and never become a link, an image, an icon or a colour.

The AppTest half checks the markdown source of every element that renders markdown; the browser
half (tests/browser/test_browser_hostile.py) checks the page itself has no such <a> or <img> and fetched
nothing from the hosts named."""

from __future__ import annotations

import json
import re

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import REPO
from tests.support.markdown_text import shown
from wmviz.store import uploads
from wmviz.view.plain import literal

HOSTILE = (
    "[t](https://x.example/a) ![i](http://y.example/i.png) www.z.example HTTP://w.example "
    "me@v.example :red[r] $x$ <b>b</b>"
)
_CONFIG = {
    "name": HOSTILE,
    "description": HOSTILE,
    "generator": {"out_of_orderness_ms": 2000},
    "operator": {"type": "window", "size_ms": 10000, "allowed_lateness_ms": 1000, "aggregate": "count"},
}
_ROWS = [
    {
        "kind": "record",
        "instance": HOSTILE,
        "channel": 0,
        "key": HOSTILE,
        "event_ms": t,
        "value": HOSTILE,
        "inferred": HOSTILE,
    }  # a recorded trace's column, said in a caption under the output
    for t in (1000, 7000, 12500, 9500, 14000, 8000)
] + [{"kind": "record", "instance": "0", "channel": 0, "key": "k", "event_ms": 1000, "note": HOSTILE}]
TRACE = "\n".join(json.dumps(r) for r in [{"config": _CONFIG}, *_ROWS]).encode()
FILE_NAME = "www.evil.example [a](https://x.example).jsonl"

# The markdown constructs user text must never form in the source sent to the browser.
_RAW = [
    re.compile(r"(?<!\\)\]\((?:https?:)?"),  # a link or image: ](…
    re.compile(r"(?<!\\)!(?<!\\)\["),  # an image: ![
    # Bare URLs, www. and e-mail addresses GFM links after escapes are resolved: each needs the
    # word joiner where the link would start.
    re.compile(r"(?i)https?(?:\\)?:(?:\\)?/(?:\\)?/[xyw](?:\\)?\.example"),
    re.compile(r"(?i)www(?:\\)?\.z"),
    re.compile(r"me(?:\\)?@v"),
    re.compile(r"(?<!\\):red(?<!\\)\["),  # Streamlit's colour directive
    re.compile(r"(?<!\\)\$x(?<!\\)\$"),  # maths
]
_MARKDOWN_ELEMENTS = (
    "title",
    "header",
    "subheader",
    "caption",
    "markdown",
    "error",
    "info",
    "warning",
    "success",
    "toast",
    "exception",
)


@pytest.fixture(autouse=True)
def root(tmp_path, monkeypatch):
    monkeypatch.setenv("WMVIZ_CACHE", str(tmp_path))
    monkeypatch.setenv("WMVIZ_SPARK_START", "lazy")
    return tmp_path


def markdown_sources(app: AppTest) -> list[str]:
    """The markdown source of every element (and label and help) that Streamlit renders as markdown."""
    found = []
    for kind in _MARKDOWN_ELEMENTS:
        found += [str(e.value) for e in app.get(kind)]
    for element in app.get("metric"):
        found += [element.label, element.help or ""]
    for kind in ("button", "selectbox", "radio", "expander", "tabs", "download_button", "slider"):
        for element in app.get(kind):
            proto = element.proto
            found += [getattr(proto, "label", ""), getattr(proto, "help", "")]
    return found


def assert_no_markup(app: AppTest) -> None:
    for source in markdown_sources(app):
        for pattern in _RAW:
            assert not pattern.search(source), (pattern.pattern, source)


def test_literal_escapes_every_construct_and_keeps_the_characters():
    escaped = literal(HOSTILE)
    for pattern in _RAW:
        assert not pattern.search(escaped), pattern.pattern
    assert shown(escaped) == HOSTILE


def test_a_hostile_upload_shows_its_names_keys_and_values_as_text(root):
    stored = uploads.store_upload(FILE_NAME, TRACE, None)
    for step in ("0", "2", "3"):
        app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
        app.query_params.update(
            {"trace": stored.digest, "engine": "local", "instance": HOSTILE, "step": step}
        )
        app.run()
        assert not app.exception, app.exception
        assert app.title[0].value == literal(f"Uploaded: {stored.name}")
        assert app.selectbox(key="instance").value == HOSTILE
        assert any(literal(HOSTILE) in c.value for c in app.caption)  # said, escaped
        assert_no_markup(app)


@pytest.mark.parametrize("param", ["trace", "scenario", "engine", "profile", "step", "tz", "time"])
def test_a_hostile_link_parameter_is_quoted_literally_in_its_notice(param):
    app = AppTest.from_file(str(REPO / "app.py"), default_timeout=180)
    app.query_params.update({param: HOSTILE, "engine": "local"} if param != "engine" else {param: HOSTILE})
    app.run()
    assert not app.exception, app.exception
    assert app.toast, "a bad value is said"
    assert_no_markup(app)
