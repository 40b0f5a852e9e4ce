"""`alignment.buffer_size` is bounded (issue 33: 10^9 allocated an 8 GB ring per split and copied
it at every update), and the ring costs O(1) an update whatever its size."""

from __future__ import annotations

import random
import time
from collections import deque

import pytest

from wmviz.core.alignment import WatermarkSampler
from wmviz.core.settings import MAX_ALIGNMENT_BUFFER as BUFFER_SETTING
from wmviz.timeline import keyframe
from wmviz.trace import TraceValidationError, parse_config

MAX_ALIGNMENT_BUFFER = BUFFER_SETTING.default


def _config(buffer_size: object) -> dict:
    alignment = {"max_drift_ms": 1_000, "buffer_size": buffer_size}
    return {"generator": {"preset": "flip27", "splits": {"0": ["a"]}, "alignment": alignment}}


@pytest.mark.parametrize("size", [10**9, 2**31 - 1, 2**31, MAX_ALIGNMENT_BUFFER + 1])
def test_a_huge_buffer_size_is_a_config_error_naming_the_field(size):
    with pytest.raises(TraceValidationError) as err:
        parse_config(_config(size), "c.json")
    (message,) = [str(issue) for issue in err.value.issues]
    assert message.startswith(
        f"c.json: field generator.alignment.buffer_size: {size:,} is more than 10,000: "
    )
    assert "Java int" in message and "WMVIZ_MAX_ALIGNMENT_BUFFER" in message and "default is 3" in message


def test_the_largest_buffer_size_is_taken():
    config = parse_config(_config(MAX_ALIGNMENT_BUFFER), "c.json")
    assert config.generator is not None and config.generator.alignment is not None
    assert config.generator.alignment.buffer_size == MAX_ALIGNMENT_BUFFER == 10_000


@pytest.mark.parametrize("capacity", [0, 1, 3, 7])
def test_the_ring_of_runs_compares_what_flinks_ring_of_values_does(capacity):
    """Flink's ring: `capacity` values, MIN at first; each update adds the latest and drops the oldest."""
    rng = random.Random(capacity)
    sampler, flink = WatermarkSampler(capacity), deque([-(2**63)] * capacity)
    for _ in range(2_000):
        if rng.random() < 0.5:
            sampler.latest_ms = rng.choice([sampler.latest_ms, rng.randrange(100)])
        if rng.random() < 0.5:
            sampler.sample()
            if capacity:
                flink.append(sampler.latest_ms)
                flink.popleft()
        assert sampler.oldest_ms() == (flink[0] if capacity else sampler.latest_ms)
        assert sum(count for _, count in sampler.runs) == capacity


def test_an_update_does_not_copy_the_ring():
    """100,000 updates of a ring of 10,000: each was a copy of the ring (10^9 values moved)."""
    sampler = WatermarkSampler(MAX_ALIGNMENT_BUFFER)
    start = time.process_time()
    for t in range(100_000):
        sampler.latest_ms = t // 1_000  # a watermark that changes every 1,000 updates
        sampler.sample()
    assert time.process_time() - start < 5
    assert len(sampler.runs) == 10 and sampler.oldest_ms() == 90


def test_a_sampler_survives_a_keyframe_and_a_pickle():
    import pickle

    sampler = WatermarkSampler(3)
    sampler.latest_ms = 5
    sampler.sample()
    for copy in (keyframe.decode(keyframe.encode(sampler)), pickle.loads(pickle.dumps(sampler))):
        assert copy.snapshot() == sampler.snapshot()
        copy.sample()
        copy.sample()
        assert copy.oldest_ms() == 5
