"""Where lines end in a text file's bytes, as editors and CSV readers count them."""

from __future__ import annotations

import numpy as np


def line_breaks(buf: np.ndarray, *, lone_cr: bool = True) -> np.ndarray:
    """Positions of the bytes that end a line: each LF, and (with `lone_cr`, CSV's rule) each CR
    not followed by an LF. JSON Lines ends lines at LF only: a CR there is whitespace."""
    lf = buf == 10
    if not lone_cr:
        return np.flatnonzero(lf)
    cr = buf == 13
    alone = cr & ~np.concatenate((lf[1:], [False]))
    return np.flatnonzero(lf | alone)
