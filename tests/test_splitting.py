"""The four split algorithms (WHERE) and the split conditions (WHEN)."""

from __future__ import annotations

import itertools

import pytest

from bundlewise.algorithms.splitting.algorithms import (
    SplitRequest,
    TopicLoad,
    resolve_algorithm_name,
    split_bundle,
)
from bundlewise.algorithms.splitting.conditions import split_reasons
from bundlewise.algorithms.splitting.detector import find_bundles_to_split
from bundlewise.config import Config
from bundlewise.model.bundles import Bundle
from bundlewise.model.errors import InputError
from bundlewise.model.hashing import crc32_hash
from bundlewise.model.load import BundleData, NamespaceBundleStats
from bundlewise.model.snapshot import parse_modular_snapshot

FULL = Bundle("t/ns", 0, 0xFFFFFFFF)
MIB = 1024 * 1024


def boundaries(name: str, req: SplitRequest, config: Config | None = None) -> list[int] | None:
    result = split_bundle(name, req, config or Config())
    return None if result is None else result[0]


def test_range_equally_divide_pulsar_vector() -> None:
    assert boundaries("range_equally_divide", SplitRequest(Bundle("t/ns", 10, 0xFFFFFFFF))) == [2147483652]
    # Pulsar docs: (0x00000000, 0x80000000) -> [0x40000000]
    assert boundaries("range_equally_divide", SplitRequest(Bundle("t/ns", 0, 0x80000000))) == [0x40000000]


def test_topic_count_equally_divide_abc() -> None:
    assert [crc32_hash(x) for x in "abc"] == [0xE8B7BE43, 0x71BEEFF9, 0x06B9DF6F]
    topics = [TopicLoad(x, hash_code=crc32_hash(x)) for x in "abc"]
    assert boundaries("topic_count_equally_divide", SplitRequest(FULL, topics)) == [1010591668]


def test_topic_count_equally_divide_docs_example() -> None:
    hashes = [0x10000000, 0x20000000, 0x35000000, 0x65000000, 0x70000000, 0x75000000]
    topics = [TopicLoad(f"t{i}", hash_code=h) for i, h in enumerate(hashes)]
    assert boundaries("topic_count_equally_divide", SplitRequest(Bundle("t/ns", 0, 0x80000000), topics)) == [
        0x35000000 + (0x65000000 - 0x35000000) // 2
    ]  # 0x4d000000, between topic3 and topic4
    assert boundaries("topic_count_equally_divide", SplitRequest(FULL, topics[:1])) is None


def test_specified_positions_pulsar_vector() -> None:
    req = SplitRequest(
        Bundle("t/ns", 1, 1000), [TopicLoad("topic"), TopicLoad("topic2")], [-1, 0, 1, 100, 200, 500, 800, 1000, 1100]
    )
    assert boundaries("specified_positions_divide", req) == [100, 200, 500, 800]
    one_topic = SplitRequest(Bundle("t/ns", 1, 1000), [TopicLoad("a")], [1, 2])
    assert boundaries("specified_positions_divide", one_topic) is None
    with pytest.raises(InputError):
        boundaries("specified_positions_divide", SplitRequest(FULL, [TopicLoad("a"), TopicLoad("b")], []))


def docs_flow_topics() -> list[TopicLoad]:
    hashes = [0x10000000, 0x15000000, 0x24000000, 0x39000000, 0x58000000, 0x76000000]
    return [
        TopicLoad(f"t{i + 1}", msgRateIn=100.0 * (i + 1), msgThroughputIn=10.0 * (i + 1) * MIB, hash_code=h)
        for i, h in enumerate(hashes)
    ]


def test_flow_or_qps_docs_example_split_by_rate() -> None:
    # Pulsar docs case 1: max rate 450/s, max bandwidth 200 MB/s: cuts between t2|t3, t3|t4, t4|t5, t5|t6.
    # Pulsar's code puts each cut at start + (end - start) / 2 + 1 (the docs' text omits the +1).
    config = Config().with_values(
        {"loadBalancerNamespaceBundleMaxMsgRate": 450, "loadBalancerNamespaceBundleMaxBandwidthMbytes": 200}
    )
    req = SplitRequest(Bundle("t/ns", 0, 0x80000000), docs_flow_topics())
    pairs = [(0x15000000, 0x24000000), (0x24000000, 0x39000000), (0x39000000, 0x58000000), (0x58000000, 0x76000000)]
    assert boundaries("flow_or_qps_equally_divide", req, config) == [s + (e - s) // 2 + 1 for s, e in pairs]
    assert boundaries("flow_or_qps_equally_divide", req, config)[0] == 0x1C800001


def test_flow_or_qps_declines_below_tolerance_and_skips_idle_topics() -> None:
    config = Config().with_values({"loadBalancerNamespaceBundleMaxMsgRate": 1000})
    small = [TopicLoad("a", msgRateIn=500, hash_code=1), TopicLoad("b", msgRateIn=599, hash_code=2)]
    assert boundaries("flow_or_qps_equally_divide", SplitRequest(FULL, small), config) is None  # 1099 < 1100
    idle = [TopicLoad("a", msgRateIn=5000, hash_code=1), TopicLoad("b", hash_code=2)]
    assert boundaries("flow_or_qps_equally_divide", SplitRequest(FULL, idle), config) is None


def test_flow_or_qps_first_position_is_overload_pulsar_test() -> None:
    names = [f"persistent://test-tenant1/test-namespace1/test-partition-{i}" for i in range(5)]
    ordered = sorted(names, key=crc32_hash)
    topics = [
        TopicLoad(n, 1000, 1000, 1000, 1000) if n == ordered[0] else TopicLoad(n, 24.5, 25, 1000, 1000) for n in names
    ]
    config = Config().with_values({"loadBalancerNamespaceBundleMaxMsgRate": 1010})
    s, e = crc32_hash(ordered[0]), crc32_hash(ordered[1])
    assert boundaries("flow_or_qps_equally_divide", SplitRequest(FULL, topics), config)[0] == s + (e - s) // 2 + 1


def test_flow_or_qps_pulsar_partitions_test_every_piece_under_the_maximum() -> None:
    topics = []
    for i in range(1, 13):
        rate_in = 24.5 if i < 6 else 25.5
        topics += [
            TopicLoad(f"persistent://test-tenant1/test-namespace1/test{i}-partition-{j}", rate_in, 25, 1000, 1000)
            for j in range(20)
        ]
    topics.append(TopicLoad("persistent://test-tenant1/test-namespace1/test695-partition-0", 25, 35, 1000, 1000))
    config = Config().with_values({"loadBalancerNamespaceBundleMaxMsgRate": 1010})
    cuts = boundaries("flow_or_qps_equally_divide", SplitRequest(FULL, topics), config)
    assert cuts is not None and len(cuts) >= 2
    by_hash = sorted((t.hash, t.msgRateIn + t.msgRateOut) for t in topics)
    edges = [0, *cuts, 0x100000000]
    for lo, hi in itertools.pairwise(edges):
        assert sum(r for h, r in by_hash if lo <= h < hi) < 1010


def test_algorithm_name_fallback() -> None:
    assert resolve_algorithm_name(None, Config()) == "range_equally_divide"
    assert (
        resolve_algorithm_name(
            "bogus", Config().with_values({"defaultNamespaceBundleSplitAlgorithm": "topic_count_equally_divide"})
        )
        == "topic_count_equally_divide"
    )


def test_unsplittable_bundle_yields_no_split() -> None:
    assert split_bundle("range_equally_divide", SplitRequest(Bundle("t/ns", 5, 6)), Config()) is None


@pytest.mark.parametrize(
    ("stats", "rate", "tput", "expected"),
    [
        (NamespaceBundleStats(topics=1001), 0, 0, ["Topics"]),
        (NamespaceBundleStats(topics=1000), 0, 0, []),
        (NamespaceBundleStats(topics=2, consumerCount=600, producerCount=401), 0, 0, ["Sessions"]),
        (NamespaceBundleStats(topics=2, consumerCount=600, producerCount=400), 0, 0, []),
        (NamespaceBundleStats(topics=2), 30000.5, 0, ["MsgRate"]),
        (NamespaceBundleStats(topics=2), 30000, 100 * MIB, []),
        (NamespaceBundleStats(topics=2), 0, 100 * MIB + 1, ["Bandwidth"]),
        (NamespaceBundleStats(topics=1, consumerCount=5000), 1e9, 1e12, []),
        (
            NamespaceBundleStats(topics=2000, consumerCount=5000),
            1e9,
            1e12,
            ["Topics", "Sessions", "MsgRate", "Bandwidth"],
        ),
    ],
)
def test_split_conditions_are_strict(
    stats: NamespaceBundleStats, rate: float, tput: float, expected: list[str]
) -> None:
    assert split_reasons(stats, rate, tput, Config()) == expected


def test_sessions_rule_disabled_by_non_positive_max() -> None:
    c = Config().with_values({"loadBalancerNamespaceBundleMaxSessions": -1})
    assert split_reasons(NamespaceBundleStats(topics=2, consumerCount=10**6), 0, 0, c) == []


def _snapshot(n_hot: int) -> dict[str, object]:
    stats = {f"t/ns/0x{i:08x}_0x{i + 1:08x}": {"topics": 2000} for i in range(n_hot)}
    return {
        "brokers": {"b1": {"lastStats": stats}, "b2": {"lastStats": {"t/other/0x00000000_0xffffffff": {"topics": 5}}}}
    }


def test_detector_respects_namespace_maximum() -> None:
    load = parse_modular_snapshot(_snapshot(3)).load
    config = Config().with_values({"loadBalancerNamespaceMaximumBundles": 5})
    # 3 bundles of t/ns seen in the snapshot: 3 + 0 < 5 and 3 + 1 < 5 accept, then 3 + 2 < 5 fails.
    assert [d.bundle for d in find_bundles_to_split(load, config)] == [
        "t/ns/0x00000000_0x00000001",
        "t/ns/0x00000001_0x00000002",
    ]
    assert find_bundles_to_split(load, config, {"t/ns": 4}) == find_bundles_to_split(load, config)[:1]


def test_detector_uses_long_term_rate_from_bundle_data() -> None:
    load = parse_modular_snapshot(
        {"brokers": {"b1": {"lastStats": {"t/ns/0x00000000_0xffffffff": {"topics": 2, "msgRateIn": 1e9}}}}}
    ).load
    assert find_bundles_to_split(load, Config()) == []  # no bundle data: long-term rate counts as 0
    data = BundleData.default()
    data.longTermData.msgRateIn = 40000
    load.bundleData["t/ns/0x00000000_0xffffffff"] = data
    assert [d.reasons for d in find_bundles_to_split(load, Config())] == [("MsgRate",)]
