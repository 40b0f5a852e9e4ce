"""The live value box suggests a time a person reads (issue 30, item 5: it was prefilled with the
raw epoch `1795255199000`), and reads its own suggestion back to the same millisecond."""

from __future__ import annotations

import pytest

from wmviz.ui.live_view import _typed_value, value_text


@pytest.mark.parametrize("ms", [1795255199000, 1795255199001, 1_700_000_000_123, 10, 0, 99_999])
def test_the_suggestion_reads_back_exactly(ms):
    assert _typed_value(value_text(ms)) == (ms, None)


def test_an_epoch_time_is_suggested_as_its_utc_time():
    assert value_text(1795255199000) == "2026-11-21T09:59:59.000Z"
    assert value_text(10) == "10"
