"""Every case × profile of tests/data/conformance/valve_cases.json, outputs and state checks, on the
core valve."""

from __future__ import annotations

import json

import pytest

from tests.conftest import CONFORMANCE, case_id, cases_digest, check_value, valve_cases
from wmviz.core.types import (
    ChannelOutOfRange,
    Profile,
    format_emission,
    parse_input,
)
from wmviz.core.valve import Valve

CASES = valve_cases()
PARAMS = [
    pytest.param(case, profile, id=f"{case_id(case)}-{profile.value}")
    for case in CASES
    for profile in Profile
    if all(profile.value in step["out"] for step in case["steps"])
]


def actual_value(valve: Valve, key: str):
    """The valve state named by a check key: last_wm, last_status, ch<i>.wm|status|aligned."""
    if key == "last_wm":
        return valve.last_watermark_ms
    if key == "last_status":
        return valve.last_status
    channel_text, field = key.split(".")
    ch = valve.channel(int(channel_text.removeprefix("ch")))
    return {"wm": ch.watermark_ms, "status": ch.status, "aligned": ch.aligned}[field]


def test_every_profile_is_covered_by_the_conformance_file():
    covered = {p.values[1] for p in PARAMS}
    assert covered == set(Profile)
    assert len(CASES) == 40


def test_the_conformance_file_holds_every_case_step_and_check_it_was_recorded_with():
    """The 40 cases as recorded on the Flink 2.3.0 valve, moved into the repo unchanged: counted, and
    digested (canonical JSON), so a case lost, edited or added on the way shows here."""
    steps = [step for case in CASES for step in case["steps"]]
    assert (len(CASES), len(steps)) == (40, 210)
    assert sum(len(step["in"]) for step in steps) == 247
    assert sum(len(step.get("check", {})) for step in steps) == 157
    assert cases_digest(CASES) == "ff3c2e61c47f373f8de7a9b59c7476bdda2572dde7f36b5c38632050cb7a0a81"


def test_the_conformance_file_says_its_own_format_at_the_top():
    text = (CONFORMANCE / "valve_cases.json").read_text("utf-8")
    assert text.index('"format"') < text.index('"cases"')
    fmt = " ".join(json.loads(text)["format"])
    fields = ("channels", "steps[].in", "steps[].out", "steps[].check", "steps[].error", "check_profiles")
    for field in fields:
        assert field in fmt, field


@pytest.mark.parametrize(("case", "profile"), PARAMS)
def test_valve_conformance_case(case: dict, profile: Profile):
    valve = Valve(case["channels"], profile)
    checks_apply = profile.value in case.get("check_profiles", [p.value for p in Profile])
    for index, step in enumerate(case["steps"]):
        where = f"{case_id(case)} step {index} {step['in']} under {profile.value}"
        emitted: list[str] = []
        for token in step["in"]:
            inp = parse_input(token)
            if "error" in step:
                before = valve.state()
                with pytest.raises(ChannelOutOfRange):
                    valve.apply(inp)
                assert valve.state() == before, f"{where}: a rejected input changed the state"
                continue
            emitted += [format_emission(e) for e in valve.apply(inp)]
        assert emitted == step["out"][profile.value], where
        assert valve.invariant_violations() == [], where
        if checks_apply:
            for key, raw in step.get("check", {}).items():
                assert actual_value(valve, key) == check_value(raw), f"{where}: {key}"
