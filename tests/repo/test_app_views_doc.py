"""docs/app.md shows every view the page has (issue 30, Deliver 4): each view named in its section
"Every view, with its picture" has at least one picture, each picture it names exists in
docs/screenshots/, and every picture there is used in docs/app.md (none left behind)."""

from __future__ import annotations

import re

from tests.support import paths

REPO = paths.REPO
APP_MD = REPO / "docs" / "app.md"
SCREENSHOTS = REPO / "docs" / "screenshots"
SECTION = "## Every view, with its picture"

VIEWS = [
    "Valve step-through",
    "Channels",
    "Windows",
    "Join",
    "Sessions",
    "Alignment",
    "Splits",
    "Job graph",
    "Blame",
    "Lag",
    "Late rows",
    "Tune",
    "Compare",
    "Report export",
    "Bring your trace",
    "Live mode",
]
"""The views the page has (the issue's list): each must keep its heading and picture."""

PICTURE = re.compile(r"!\[[^\]]*\]\(screenshots/([^)\s]+\.png)\)")
USED = re.compile(r"\(screenshots/([^)\s]+\.png)\)")


def views(text: str) -> dict[str, list[str]]:
    """Each `###` view of the section and the pictures it shows."""
    start = text.index(SECTION) + len(SECTION)
    end = text.find("\n## ", start)
    section = text[start : end if end >= 0 else len(text)]
    found: dict[str, list[str]] = {}
    for block in re.split(r"^### ", section, flags=re.M)[1:]:
        title, _, body = block.partition("\n")
        found[title.strip()] = PICTURE.findall(body)
    return found


def problems(text: str, pictures: set[str]) -> list[str]:
    shown = views(text)
    found = [f"no section for the view {v!r}" for v in VIEWS if v not in shown]
    found += [f"the view {v!r} has no picture" for v, names in shown.items() if not names]
    found += [
        f"{v!r} shows {name}, which is not in docs/screenshots/"
        for v, names in shown.items()
        for name in names
        if name not in pictures
    ]
    used = set(USED.findall(text))
    found += [f"docs/screenshots/{name} is not used in docs/app.md" for name in sorted(pictures - used)]
    return found


def test_every_view_has_its_picture_and_every_picture_is_used():
    pictures = {p.name for p in SCREENSHOTS.glob("*.png")}
    assert problems(APP_MD.read_text(), pictures) == []


def test_the_check_bites():
    text = APP_MD.read_text()
    pictures = {p.name for p in SCREENSHOTS.glob("*.png")}
    assert "the view 'Tune' has no picture" in problems(
        text.replace("![Tune on the allowed-lateness incident](screenshots/view-tune.png)", ""), pictures
    )
    orphan = "docs/screenshots/orphan.png is not used in docs/app.md"
    assert orphan in problems(text, pictures | {"orphan.png"})
    assert any("not in docs/screenshots/" in p for p in problems(text, pictures - {"view-lag.png"}))
    assert "no section for the view 'Lag'" in problems(text.replace("### Lag\n", "### Lateness\n"), pictures)
