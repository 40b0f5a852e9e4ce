"""User text on a Streamlit element that renders markdown (a title, a caption, an alert, a toast,
a widget's label or help), shown as typed.

Streamlit renders those strings as GitHub-flavoured markdown with its own extensions: links and
images (`[t](https://x)`, `![i](http://y)`), `:material/…:` icons, `:red[…]` colours, emoji
shortcodes and `$…$` maths, all of which a backslash before each ASCII punctuation character
undoes (CommonMark allows it for any of them). GFM's autolinks are different: a bare
`https://…`, `www.…` or `name@host.org` becomes a link after escapes are resolved, so an escape
cannot stop it; an invisible word joiner (U+2060) where such a link would start can. A name, a
key, a file name or a link's value is user text and goes through `literal`; raw HTML is never
enabled on these elements.
"""

from __future__ import annotations

import re

_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")
# Where GFM would start a bare link, in text already escaped: `www\.`, `http\:`/`https\:`, `\@`.
_AUTOLINK = re.compile(r"(?i)(www(?=\\\.)|https?(?=\\:))|(?=\\@)")
WORD_JOINER = "\u2060"


def literal(text: object) -> str:
    """`text` escaped so that Streamlit's markdown shows exactly these characters (with a word
    joiner, which is not seen, where a bare URL or address would become a link)."""
    escaped = _PUNCTUATION.sub(r"\\\1", str(text))
    return _AUTOLINK.sub(lambda m: (m.group(1) or "") + WORD_JOINER, escaped).replace("\n", "  \n")
