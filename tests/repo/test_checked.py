"""The claims of wmviz.view.checked agree with the suites that make them true."""

from __future__ import annotations

from dataclasses import replace

import tests.flink.test_flink_differential as valve_suite
import tests.flink.test_flink_idleness as idleness_suite
import tests.flink.test_flink_interval_join as join_suite
import tests.flink.test_flink_interval_join_hashmap as hashmap_suite
import tests.flink.test_flink_session_windows as session_suite
import tests.flink.test_flink_splits as split_suite
import tests.flink.test_flink_windows as window_suite
from tests.support import paths
from wmviz.core.scenario import ScenarioConfig, WindowConfig
from wmviz.store.incidents import built_in_incidents
from wmviz.view import checked

ROOT = paths.REPO


def test_the_valve_claim_counts_the_traces_the_valve_suite_runs():
    assert checked.VALVE_RANDOM_TRACES == valve_suite.N_TRACES + valve_suite.N_GAP_TRACES
    assert len(valve_suite.random_corpus()) == checked.VALVE_RANDOM_TRACES


def test_the_other_claims_count_the_traces_their_suites_run():
    assert len(window_suite.corpus()) == checked.WINDOW_TRACES
    assert len(session_suite.session_corpus()) == checked.SESSION_TRACES
    assert len(session_suite.offset_corpus()) == checked.OFFSET_TRACES
    assert len(idleness_suite.corpus()) == checked.IDLENESS_TRACES
    assert len(split_suite.corpus()) == checked.SPLIT_TRACES
    assert len(join_suite.corpus()) == checked.INTERVAL_JOIN_TRACES
    assert len(hashmap_suite.SEQUENCES) == checked.HASHMAP_SEQUENCES


def test_every_verified_claim_names_a_real_flink_suite_and_the_rest_say_modelled():
    for claim in checked.claims():
        if claim.verified:
            assert claim.suite is not None, claim.subject
            text = (ROOT / claim.suite).read_text()
            assert "pytest.mark.flink" in text, claim.suite
            assert f"Flink {checked.FLINK_RELEASE}" in claim.line() or "JDK" in claim.line(), claim.subject
        elif claim.suite is not None:
            assert (ROOT / claim.suite).is_file(), claim.suite
    lines = checked.claim_lines()
    assert any(
        line.startswith("[modelled] EARLY_FIRE: modelled from FLIP-497's unmerged PR") for line in lines
    )
    assert any(line.startswith("[checked] windows: equal to Flink 2.3.0") for line in lines)


def test_each_incident_lists_the_claims_that_cover_it():
    incidents = built_in_incidents()
    early = [c.subject for c in checked.scenario_claims(incidents["early-fire-left-join"].trace().config)]
    assert "EARLY_FIRE" in early and "interval join (row time, no hint)" in early
    assert next(c for c in checked.claims() if c.subject == "EARLY_FIRE").verified is False
    window = [
        c.subject for c in checked.scenario_claims(incidents["late-data-allowed-lateness"].trace().config)
    ]
    assert window[-2:] == ["windows", "timer order"] and "EARLY_FIRE" not in window
    sessions = replace(ScenarioConfig(), operator=WindowConfig(session_gap_ms=5))
    assert [c.subject for c in checked.scenario_claims(sessions)][-2:] == ["session windows", "timer order"]
    offset = WindowConfig(size_ms=5, offset_ms=-1)
    assert "window offsets" in [c.subject for c in checked.scenario_claims(ScenarioConfig(operator=offset))]
    for incident in incidents.values():
        subjects = [c.subject for c in checked.scenario_claims(incident.trace().config)]
        assert any(s.startswith("valve") for s in subjects), incident.slug
