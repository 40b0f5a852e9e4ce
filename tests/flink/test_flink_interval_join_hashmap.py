"""wmviz's JavaLongMap iterates exactly like the JDK's java.util.HashMap<Long, …>.

The released interval join visits its caches in that map's order (wmviz/core/java/javamap.py), so
the order is checked on its own, with key sets that force tree bins, splits and shrinking, against
the JDK in one JVM (tools/flink/window/WmvizHashMapHarness.java). Needs only `java` and `javac`.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest

from tools.flink.valve.jar import java_tools
from tools.flink.window.hashmap import jdk_orders, random_ops, wmviz_orders
from wmviz.core.java import javamap
from wmviz.core.java.javamap import JavaLongMap, spread_hash
from wmviz.view.checked import HASHMAP_SEQUENCES

SEQUENCES = [random_ops(seed) for seed in range(HASHMAP_SEQUENCES)]


@pytest.fixture(scope="module")
def jdk() -> list[list[list[int]]]:
    if java_tools() is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set, so the HashMap order check must run; java/javac missing", pytrace=False)
        pytest.skip("java and javac are not on PATH")
    return jdk_orders(SEQUENCES)


@pytest.mark.flink
def test_iteration_order_equals_the_jdks_hashmap(jdk):
    checked = 0
    for seed, (ops, want) in enumerate(zip(SEQUENCES, jdk, strict=True)):
        got = wmviz_orders(ops)
        assert got == want, f"sequence {seed} differs: wmviz {got[-1][:20]} jdk {want[-1][:20]}"
        checked += len(want)
    assert checked >= 50_000


@pytest.mark.flink
def test_the_check_catches_a_tree_bin_that_keeps_its_chain_order(jdk, monkeypatch):
    """Without moving a tree's root to the front of its bucket, the tree-bin sequences differ."""
    monkeypatch.setattr(JavaLongMap, "_move_to_front", staticmethod(lambda chain, root: None))
    differing = sum(1 for ops, want in zip(SEQUENCES, jdk, strict=True) if wmviz_orders(ops) != want)
    assert differing >= 20


def test_the_sequences_build_split_and_shrink_tree_bins(monkeypatch):
    seen: Counter[str] = Counter()
    for name in ("_treeify", "_tree_put", "_tree_remove", "_resize"):
        original = getattr(JavaLongMap, name)

        def counted(*args, _original=original, _name=name):
            seen[_name] += 1
            return _original(*args)

        monkeypatch.setattr(JavaLongMap, name, counted)
    for ops in SEQUENCES:
        wmviz_orders(ops)
    assert seen["_treeify"] >= 300 and seen["_tree_put"] >= 2000 and seen["_tree_remove"] >= 1000, seen
    assert seen["_resize"] >= 5000, seen


def test_spread_hash_is_javas_long_hash_spread():
    # Long.hashCode(v) = (int)(v ^ v >>> 32); HashMap spreads it with h ^ h >>> 16.
    assert spread_hash(0) == 0 and spread_hash(1) == 1 and spread_hash(65536) == 65537
    assert spread_hash(-1) == 0  # 0xFFFFFFFF ^ 0xFFFFFFFF
    assert spread_hash(2**32) == 1 + (0 >> 16)
    h = (1_700_000_000_000 ^ (1_700_000_000_000 >> 32)) & 0xFFFFFFFF
    assert javamap.spread_hash(1_700_000_000_000) == (h ^ (h >> 16)) - (
        1 << 32 if (h ^ (h >> 16)) >> 31 else 0
    )
