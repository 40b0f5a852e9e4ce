"""The step views every session of this server shares (`wmviz.view.step_view`).

A step's view depends on the run's timeline (its cache path names the trace, config, profile and
engine), the instance, the step and the time format, and on nothing a session holds; so does each
side of compare mode (the other run is its own timeline). One cache per
server process, least recently used out first, bounded in bytes by `WMVIZ_STEP_CACHE_MB` (default
64; 0 keeps nothing). A live run's timeline grows at every step: its views are built each time.
"""

from __future__ import annotations

import streamlit as st

from wmviz.core.settings import STEP_CACHE_MB
from wmviz.core.types import Profile
from wmviz.timeline.cursor import InstanceCursor
from wmviz.ui import loading
from wmviz.view import step_view as views
from wmviz.view.shared_cache import SharedCache
from wmviz.view.timefmt import TimeFormat

DEFAULT_MB = int(STEP_CACHE_MB.default)
BOUND_ENV = STEP_CACHE_MB.name


def bound_bytes() -> int:
    """The cache's bound from `WMVIZ_STEP_CACHE_MB` (megabytes, a number >= 0)."""
    return int(STEP_CACHE_MB.get() * 1024 * 1024)


@st.cache_resource(show_spinner=False)
def shared() -> SharedCache[views.StepView | views.SideView | views.FigureView]:
    """The server's one cache of step views (and compare mode's sides, and the overview)."""
    return SharedCache(bound_bytes(), lambda view: view.nbytes)


def step_view(cursor: InstanceCursor, step: int, t: TimeFormat) -> views.StepView:
    """The view of `step` of `cursor`'s instance, from the shared cache when its timeline is kept on
    disk (a live run's, in memory, is built now)."""
    meta = cursor.timeline.meta
    path = _kept_at(cursor)

    def build() -> views.StepView:
        histories = loading.histories(path, cursor.instance) if path is not None else None
        return views.step_view(cursor, step, meta.profile, meta.keyframe_every, t, histories)

    if path is None:
        return build()
    found = shared().get(("step", path, cursor.instance, step, meta.profile, t), build)
    assert isinstance(found, views.StepView)
    return found


def side_view(cursor: InstanceCursor, step: int, profile: Profile, t: TimeFormat) -> views.SideView:
    """One run of compare mode at `step`: shared like a step's view. The other run (another
    profile's, a what-if's, another trace's) has its own timeline, so its own entries."""
    path = _kept_at(cursor)

    def build() -> views.SideView:
        histories = loading.histories(path, cursor.instance) if path is not None else None
        return views.side_view(cursor, step, profile, t, histories)

    if path is None:
        return build()
    found = shared().get(("side", path, cursor.instance, step, profile, t), build)
    assert isinstance(found, views.SideView)
    return found


def _kept_at(cursor: InstanceCursor) -> str | None:
    """The folder `cursor`'s timeline is kept in, as the caches name it; None for a live run's
    timeline, in memory, whose views are built each time."""
    path = cursor.timeline.path
    return None if path is None else str(path)


def overview(path: str, cursor_order: int, lag_mode: str, t: TimeFormat) -> str:
    """The overview heatmap's JSON at the step arriving at `cursor_order`, shared like a step's view."""

    def build() -> views.FigureView:
        matrix, frontier = loading.overview_matrix(path)
        return views.overview_view(matrix, frontier, cursor_order, lag_mode, t)

    found = shared().get(("overview", path, cursor_order, lag_mode, t), build)
    assert isinstance(found, views.FigureView)
    return found.spec
