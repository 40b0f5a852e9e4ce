"""The job graph of a hundred vertices in a real browser at 1440×900 (issue 32, Deliver 3).

The job is `bench/blame.py`'s generator, the one `bench/job_scale.py` measures: a source of 10
subtasks and 99 vertices after it in a chain, 1,000 subtasks, the source's subtask 0 holding the
whole job since half way. Uploaded, it opens on its graph; without scrolling, the blame chain is
listed beside the graph (folded: its 100 hops in three lines); a search finds a vertex, rings it
on the graph and puts it in the link, which a reload keeps; a vertex's group shows min, max,
spread and its culprit subtask.
"""

from __future__ import annotations

import re
from urllib.parse import parse_qs, urlparse

import pytest

from bench.blame import write_job
from tests.browser.test_browser import APP_IDLE, PLOTLY, browser, check_png, on_screen, page, publish  # noqa: F401
from tests.support.app_server import streamlit_app


@pytest.fixture(scope="module")
def job_url(tmp_path_factory):
    """The app on its own data root, with the 100-vertex recording uploaded there: its link."""
    tmp = tmp_path_factory.mktemp("job-scale")
    path = tmp / "job100.json"
    write_job(path, 100, 10, 0, 30, False)
    mp = pytest.MonkeyPatch()
    mp.setenv("WMVIZ_CACHE", str(tmp / "cache"))
    from wmviz.store import uploads

    digest = uploads.store_upload("job100.json", path.read_bytes(), None).digest
    mp.undo()
    with streamlit_app(tmp, {"WMVIZ_CACHE": str(tmp / "cache"), "WMVIZ_SPARK_START": "lazy"}) as url:
        yield f"{url}/?job={digest}"


def vertex_param(shown) -> str | None:
    values = parse_qs(urlparse(shown.url).query).get("vertex")
    return values[0] if values else None


def search(shown, text: str) -> None:
    """Type into the vertex search and take the first match, as a person would."""
    shown.locator(".st-key-job_vertex").locator("input").click()
    shown.keyboard.type(text)
    shown.keyboard.press("Enter")
    shown.locator(APP_IDLE).wait_for()


def test_the_chain_is_beside_the_graph_and_a_searched_vertex_is_ringed_and_kept(page, job_url, tmp_path):  # noqa: F811
    from playwright.sync_api import expect

    page.goto(job_url)
    page.locator(APP_IDLE).wait_for()
    chart = page.locator(PLOTLY).first
    expect(chart).to_be_visible()
    chain = page.locator(".st-key-job_chain_list")
    expect(chain).to_contain_text("Who holds it:")
    expect(chain).to_contain_text("op 98 → … → op 1 (98 vertices alike)")
    expect(chain).to_contain_text("Source: s")
    chain_box = on_screen(page, chain)  # readable without scrolling
    graph_box = chart.bounding_box()
    assert chain_box["x"] >= graph_box["x"] + graph_box["width"] - 5  # beside it, not under it
    assert graph_box["y"] < 450  # the graph starts in the upper half of the screen

    search(page, "op 57")
    expect(page).to_have_url(re.compile(r"[?&]vertex=v57(&|$)"))
    group = page.locator(".st-key-job_group")
    expect(group).to_contain_text("op 57")
    expect(group).to_contain_text(
        re.compile(r"10 subtasks · min .+ \(culprit: subtask 0\) · max .+ · spread 0ms")
    )
    ring = chart.locator("text", has_text=re.compile(r"^op 57$")).last  # the bold name over its ring
    expect(ring).to_be_visible()
    on_screen(page, ring)
    on_screen(page, group)
    shot = tmp_path / "job-graph-100-vertices.png"
    page.screenshot(path=str(shot))
    check_png(shot, 900)
    publish(shot, "job-graph-100-vertices.png")

    page.goto(page.url)  # the link keeps the vertex
    page.locator(APP_IDLE).wait_for()
    assert vertex_param(page) == "v57"
    expect(page.locator(".st-key-job_group")).to_contain_text("op 57")

    search(page, "Source")
    expect(page).to_have_url(re.compile(r"[?&]vertex=v0(&|$)"))
    group = page.locator(".st-key-job_group")
    expect(group).to_contain_text("Source: s")
    # The source's subtasks are apart: subtask 0 stopped half way, the others ran on.
    expect(group).to_contain_text(re.compile(r"\(culprit: subtask 0\) · max .+ · spread 2m"))
