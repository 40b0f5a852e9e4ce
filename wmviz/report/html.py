"""HTML building blocks of the incident report: escaping, a tiny safe markdown, tables, `<pre>` blocks.

Every function here takes plain text and escapes it; the only way to put markup into a cell is to
wrap already-built HTML in `Html`, so user text (a trace's keys and values, a config's name, a file
name) can never become markup by accident.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from wmviz.view.html_table import Html, esc, table

__all__ = ["Html", "esc", "table"]  # escaping and tables live in the view layer: the page uses them too

TRACE_LIMIT_BYTES = 2_000_000
"""A trace longer than this (UTF-8 bytes) is cut in the report, with a note saying how much is shown."""

CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 2rem auto; max-width: 1200px;
       padding: 0 1rem; color: #1f2430; line-height: 1.45; }
h1 { margin-bottom: 0.2rem; }
h2 { border-bottom: 1px solid #d0d4dc; padding-bottom: 0.2rem; margin-top: 2.2rem; }
code, pre { font-family: ui-monospace, "SFMono-Regular", Menlo, Consolas, monospace; font-size: 0.9em; }
code { background: #f0f2f6; padding: 0 0.25em; border-radius: 3px; }
pre { background: #f6f8fa; border: 1px solid #d0d4dc; padding: 0.8rem; overflow: auto; max-height: 32rem;
      white-space: pre; }
table { border-collapse: collapse; margin: 0.6rem 0 1.2rem; width: 100%; }
th, td { border: 1px solid #d0d4dc; padding: 0.3rem 0.5rem; text-align: left; vertical-align: top; }
th { background: #f0f2f6; }
tr.current td { background: #fff4d6; }
td ul { margin: 0; padding-left: 1.1rem; }
.meta td:first-child { font-weight: 600; width: 10rem; }
.note { color: #8a5a00; font-style: italic; }
.warning { background: #fff4d6; border-left: 4px solid #e0a000; padding: 0.5rem 0.8rem; }
.status-IDLE { background: #fde2c4; }
.status-FINISHED { background: #d9d9f3; }
.status-ACTIVE { background: #e3f4e1; }
.holds { font-weight: 600; }
figure.chart { margin: 1rem 0 2rem; }
figcaption { font-weight: 600; margin-bottom: 0.3rem; }
"""


# --- a tiny markdown: escape first, then add the few tags the stories use -------------------------

_HEADING = re.compile(r"(#{1,6})\s+(.*?)\s*#*\s*$")
_BULLET = re.compile(r"\s{0,3}[-*]\s+(.*)")
_CODE_SPAN = re.compile(r"`([^`]+)`")
_STRONG = re.compile(r"\*\*(?=\S)(.+?)(?<=\S)\*\*")
_EMPHASIS = re.compile(r"(?<![*\w])\*(?=\S)(.+?)(?<=\S)\*(?![*\w])")


def inline_html(text: str) -> str:
    """One line or paragraph of markdown text: escaped, then `code` spans turned into <code>, and
    outside them **bold** into <strong> and *italics* into <em>.

    The patterns run on escaped text, which holds no `<`, so they can only add the tags they write;
    links, images and HTML stay the text they are (nothing on the page reaches the network).
    """
    parts = _CODE_SPAN.split(esc(text))
    out = []
    for i, part in enumerate(parts):
        if i % 2:  # inside a code span: literal
            out.append(f"<code>{part}</code>")
        else:
            out.append(_EMPHASIS.sub(r"<em>\1</em>", _STRONG.sub(r"<strong>\1</strong>", part)))
    return "".join(out)


def markdown_html(text: str, *, heading_shift: int = 1) -> str:
    """The subset of markdown the built-in stories use, as HTML: headings (`## x` becomes <h3> with
    the default shift, since the story sits under the report's own <h2>), `- ` bullets (an indented
    or unindented line after a bullet continues it), paragraphs separated by blank lines, `code`
    spans, **bold**, *italics* and fenced code blocks. Everything else (raw HTML, links, images) is
    shown as the escaped text it is: a story an upload carries is user text."""
    blocks = _Blocks(heading_shift)
    for line in text.splitlines():
        blocks.take(line)
    return blocks.finish()


class _Blocks:
    """`markdown_html` line by line: the HTML so far, and the paragraph, list or fenced code block
    still open."""

    def __init__(self, heading_shift: int) -> None:
        self.heading_shift = heading_shift
        self.out: list[str] = []
        self.paragraph: list[str] = []
        self.items: list[list[str]] = []
        self.fence: str | None = None
        self.code: list[str] = []

    def take(self, line: str) -> None:
        stripped = line.strip()
        if self.fence is not None:
            if stripped.startswith(self.fence):
                self._close_fence()
            else:
                self.code.append(line)
        elif stripped[:3] in ("```", "~~~"):
            self.flush()
            self.fence = stripped[:3]
        elif not stripped:
            self.flush()
        else:
            self._text(line, stripped)

    def finish(self) -> str:
        if self.fence is not None:  # an unclosed fence still shows its text rather than losing it
            self._close_fence()
        self.flush()
        return "\n".join(self.out)

    def flush(self) -> None:
        self._close_paragraph()
        if self.items:
            self.out.append(
                "<ul>" + "".join(f"<li>{inline_html(' '.join(i))}</li>" for i in self.items) + "</ul>"
            )
            self.items.clear()

    def _text(self, line: str, stripped: str) -> None:
        heading = _HEADING.fullmatch(line)
        bullet = _BULLET.fullmatch(line)
        if heading:
            self.flush()
            level = min(len(heading.group(1)) + self.heading_shift, 6)
            self.out.append(f"<h{level}>{inline_html(heading.group(2))}</h{level}>")
        elif bullet:
            self._close_paragraph()  # a list right under a paragraph line starts a new block
            self.items.append([bullet.group(1).strip()])
        elif self.items:
            self.items[-1].append(stripped)
        else:
            self.paragraph.append(stripped)

    def _close_paragraph(self) -> None:
        if self.paragraph:
            self.out.append(f"<p>{inline_html(' '.join(self.paragraph))}</p>")
            self.paragraph.clear()

    def _close_fence(self) -> None:
        self.out.append(f"<pre><code>{esc(chr(10).join(self.code))}</code></pre>")
        self.fence, self.code = None, []


def paragraphs_html(text: str) -> str:
    """Plain text (a config's description) as escaped paragraphs, split at blank lines."""
    blocks = [b.strip() for b in re.split(r"\n\s*\n", text) if b.strip()]
    return "\n".join(f"<p>{esc(' '.join(b.split()))}</p>" for b in blocks)


def bullet_list(parts: Iterable[str]) -> Html:
    """Plain-text parts (a step's narration) as an escaped <ul>."""
    return Html("<ul>" + "".join(f"<li>{esc(p)}</li>" for p in parts) + "</ul>")


# --- tables and blocks ------------------------------------------------------------------------------


def pre_block(text: str, limit_bytes: int = TRACE_LIMIT_BYTES) -> str:
    """`text` in an escaped <pre>; longer than `limit_bytes` (UTF-8), it is cut at the last line
    break before the limit and a note above says `truncated: N of M bytes shown`."""
    data = text.encode("utf-8")
    if len(data) <= limit_bytes:
        return f"<pre>{esc(text)}</pre>"
    cut = data[:limit_bytes]
    newline = cut.rfind(b"\n")
    if newline > 0:  # whole lines read better than a row cut in the middle
        cut = cut[: newline + 1]
    shown = cut.decode("utf-8", errors="ignore")  # drops a multi-byte character split by the cut
    size = len(shown.encode("utf-8"))
    note = f"truncated: {size} of {len(data)} bytes shown"
    return f'<p class="note">{esc(note)}</p>\n<pre>{esc(shown)}</pre>'
