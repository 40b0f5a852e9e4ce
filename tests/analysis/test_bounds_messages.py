"""Messages name the option and say what is wrong, in words (issue 33)."""

from __future__ import annotations

import pytest

from tests.conftest import REPO
from wmviz import cli
from wmviz.analysis.sweep import Vary, parse_vary

RECORDING = REPO / "sample_data" / "jobs" / "silent-split-holds-the-whole-job.json"
TRACE = REPO / "sample_data" / "last-window-never-closes.jsonl"


def _run(capsys, *argv: str) -> tuple[int, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out + err


def test_at_that_is_no_time_names_at(capsys):
    code, text = _run(capsys, "blame", str(RECORDING), "--at", "abc")
    assert code == 2 and text.startswith('error: --at "abc" is not an epoch-ms integer or ISO-8601 time')


def test_vary_true_beside_1_is_judged_by_the_fields_rule_not_listed_twice(capsys, tmp_path):
    """Python's True == 1 made `1,true` "'true' is listed twice"."""
    assert parse_vary("operator.allowed_lateness_ms=1,true") == Vary(
        "operator.allowed_lateness_ms", (1, True)
    )
    out = tmp_path / "s.csv"
    code, text = _run(
        capsys, "sweep", str(TRACE), "--vary", "operator.allowed_lateness_ms=1,true", "--out", str(out)
    )
    assert code == 2 and "listed twice" not in text
    assert "operator.allowed_lateness_ms: true is not an integer (milliseconds)" in text
    assert not out.exists()


@pytest.mark.parametrize("text", ["f=1,1", "f=1s,1000", "f=true,TRUE"])
def test_a_value_really_listed_twice_still_is(text):
    with pytest.raises(ValueError, match="is listed twice"):
        parse_vary(text)
