"""A live run's input panel key is one Streamlit accepts for a component, whatever its folder's name:
mkdtemp's names may hold "_", and a key holding "__" failed the live page (beside a CPU hog, a live
browser test: BidiComponentInvalidIdError)."""

from __future__ import annotations

import tempfile

import pytest

from wmviz.ui.live_clicks import panel_key

try:  # Streamlit's own check of a component's key (a private function: a move skips only that)
    from streamlit.components.v2.bidi_component.main import _make_trigger_id
except ImportError:  # pragma: no cover
    _make_trigger_id = None

# Folder names as mkdtemp makes them under the live folder ("live-" and 8 of [a-z0-9_]).
AWKWARD = ["live-abcdefg_", "live-_abcdefg", "live-ab__cdef", "live-________", "live-abcdefgh"]


def test_every_folder_and_instance_gives_a_key_streamlit_accepts(tmp_path):
    made = [tempfile.mkdtemp(prefix="live-", dir=tmp_path) for _ in range(200)]  # as wmviz.live.folders
    names = AWKWARD + [name.rsplit("/", 1)[1] for name in made]
    for name in names:
        for instance in (0, 1, "_", "a__b"):
            key = panel_key(name, instance)
            assert "__" not in key, key
            if _make_trigger_id is not None:
                _make_trigger_id(key, "events")


def test_streamlit_still_checks_keys_as_this_test_assumes():
    if _make_trigger_id is None:
        pytest.skip("Streamlit's component key check moved: the test above asserts no '__' itself")
    with pytest.raises(Exception, match="__"):
        _make_trigger_id("live_inputs_live-abcdefg__0", "events")  # the old key of such a folder


def test_keys_differ_by_folder_and_by_instance():
    keys = {panel_key(name, instance) for name in AWKWARD for instance in (0, 1, "0_")}
    assert len(keys) == len(AWKWARD) * 3
