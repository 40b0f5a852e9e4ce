"""Telling a job recording (either form) from a trace by a bounded look at its bytes: how an
upload box that takes both decides which page opens it (re-exported by `wmviz.record.job`)."""

from __future__ import annotations

import re

from wmviz.record.job_columnar import is_columnar_bytes

_RECORDING_HEAD = re.compile(rb'\A(?:\xef\xbb\xbf)?\s*\{\s*"format"\s*:\s*"wmviz-job/1"\s*[,}]')
SNIFF_BYTES = 4096
"""How much of the head and tail of a file `is_recording_bytes` looks at."""


def is_recording_bytes(data: bytes) -> bool:
    """Whether a file's bytes are a job recording (one JSON object of `wmviz-job/1`, or the
    columnar form: `is_columnar_bytes`), not a trace: how an upload box that takes both tells them
    apart.

    Told by its shape alone, in constant time and memory: an object whose first member is
    `"format": "wmviz-job/1"` (as `to_json` writes it) and whose last byte closes it. Decoding the
    whole upload here cost as much as the upload is hostile (300 KB of nested `[` overflowed the
    decoder's stack, 40 MB of `[],[],…` held ~1 GB) before anything said what it was; the whole
    document is read once, by `read_recording` and its bounds, when it is opened."""
    json_form = bool(_RECORDING_HEAD.match(data[:SNIFF_BYTES])) and data[-SNIFF_BYTES:].rstrip().endswith(
        b"}"
    )
    return json_form or is_columnar_bytes(data)
