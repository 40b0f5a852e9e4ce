"""User text on a Streamlit element that renders markdown (a title, a caption, an alert, a toast,
a widget's label or help), shown literally.

Streamlit renders those strings as GitHub-flavoured markdown with its own extensions: links and
images (`[t](https://x)`, `![i](http://y)`), bare URLs that turn into links, `:material/…:` icons,
`:red[…]` colours, emoji shortcodes and `$…$` maths. A name, a key, a file name or a link's value is
user text: every ASCII punctuation character in it is backslash-escaped (CommonMark allows that for
any of them), which shows it as typed and leaves none of those constructs, and raw HTML is never
enabled on these elements. Text that is only ever ours needs no escaping.
"""

from __future__ import annotations

import re

_PUNCTUATION = re.compile(r"([!-/:-@\[-`{-~])")


def literal(text: object) -> str:
    """`text` escaped so that Streamlit's markdown shows exactly these characters."""
    return _PUNCTUATION.sub(r"\\\1", str(text)).replace("\n", "  \n")
