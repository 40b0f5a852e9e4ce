"""A file built at a person's click, then saved by a second click (Streamlit).

Streamlit's deferred download (a callable as the button's data) keeps the file it builds only
until two script runs end after it, of any session on the server: each run's end sweeps the files
no session draws, first marking, then deleting. The browser fetches the file a moment after it is
built, and on a busy server that moment was too late: with a second visitor playing an incident,
the first of four exports got a 404 and the browser cancelled the download (the same failure ended
a CI run). So the click builds the file into the session, and the page then draws a save button
holding it as plain data: Streamlit keeps a file a session's page draws for as long as it is drawn.
One file per button is kept per session, replaced by the next click.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import streamlit as st


@dataclass(frozen=True)
class Built:
    """A file built for download: its bytes and what it holds, in words ("the report of step 7")."""

    data: bytes
    what: str


def _stored(key: str) -> str:
    return f"built_{key}"


def _build(key: str, build: Callable[[], Built]) -> None:
    st.session_state[_stored(key)] = build()


def build_then_save(label: str, build: Callable[[], Built], file_name: str, mime: str, key: str) -> None:
    """A button that builds the file (`build`, run in the click's own run, so it reads what is on
    screen at the click) and, once built, a button that saves it as `file_name`."""
    st.button(label, key=key, on_click=_build, args=(key, build), width="stretch")
    built = st.session_state.get(_stored(key))
    if isinstance(built, Built):
        st.download_button(
            f"Save {built.what}", built.data, file_name, mime, key=f"{key}_save", type="primary",
            on_click="ignore", icon=":material/download:", width="stretch",
        )  # fmt: skip
