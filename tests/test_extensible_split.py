"""The extensible split strategy: priority order, consecutive hits, caps, ongoing splits."""

from __future__ import annotations

from bundlewise.algorithms.extensible.split_strategy import ExtensibleSplitStrategy, split_reason
from bundlewise.config import Config
from bundlewise.model.load import NamespaceBundleStats

B1 = "tenant/ns/0x00000000_0x80000000"
B2 = "tenant/ns/0x80000000_0xffffffff"
DEFAULTS = Config()
ONE_PER_CYCLE = Config().with_values({"loadBalancerMaxNumberOfBundlesToSplitPerCycle": 1})


def hot(topics: int = 1001, sessions: int = 0, rate: float = 0, tput: float = 0) -> NamespaceBundleStats:
    return NamespaceBundleStats(msgRateIn=rate, msgThroughputIn=tput, producerCount=sessions, topics=topics)


def run(
    strategy: ExtensibleSplitStrategy,
    stats: dict[str, NamespaceBundleStats],
    config: Config = DEFAULTS,
    count: int = 2,
    splitting: tuple[str, ...] = (),
) -> list[tuple[str, str]]:
    return [
        (d.bundle, d.reason)
        for d in strategy.find_bundles_to_split("broker-1", stats, lambda ns: count, splitting, config)
    ]


def test_first_condition_in_pulsar_order_is_the_reason():
    cfg = Config()
    assert split_reason(hot(topics=2000, sessions=2000, rate=1e6, tput=1e12), cfg) == "Topics"
    assert split_reason(hot(topics=10, sessions=1001, rate=1e6), cfg) == "Sessions"
    assert split_reason(hot(topics=10, rate=30_001), cfg) == "MsgRate"
    assert split_reason(hot(topics=10, tput=100 * 2**20 + 1), cfg) == "Bandwidth"
    assert split_reason(hot(topics=10, tput=100 * 2**20), cfg) is None
    assert (
        split_reason(hot(topics=10, sessions=5000), cfg.with_values({"loadBalancerNamespaceBundleMaxSessions": 0}))
        is None
    )


def test_split_needs_four_consecutive_hits_and_one_per_cycle_delays_the_second():
    """DefaultNamespaceBundleSplitStrategyTest: threshold 3, one split per cycle -> cycle 4 and 5."""
    s = ExtensibleSplitStrategy()
    stats = {B1: hot(), B2: hot()}
    results = [run(s, stats, ONE_PER_CYCLE) for _ in range(5)]
    assert results[:3] == [[], [], []]
    assert results[3] == [(B1, "Topics")]
    assert results[4] == [(B2, "Topics")]


def test_a_cycle_without_the_condition_resets_the_hits():
    s = ExtensibleSplitStrategy()
    for _ in range(3):
        run(s, {B1: hot()})
    run(s, {B1: hot(topics=5)})
    assert s.hits == {}
    assert [run(s, {B1: hot()}) for _ in range(4)][-1] == [(B1, "Topics")]


def test_bundles_no_longer_reported_lose_their_hits():
    s = ExtensibleSplitStrategy()
    run(s, {B1: hot(), B2: hot()})
    run(s, {B2: hot()})
    assert s.hits == {B2: 2}


def test_fewer_than_two_topics_is_never_split_nor_counted():
    s = ExtensibleSplitStrategy()
    for _ in range(5):
        assert run(s, {B1: NamespaceBundleStats(topics=1, msgRateIn=1e9)}) == []
    assert s.hits == {}


def test_namespace_maximum_counts_splits_chosen_this_cycle():
    s = ExtensibleSplitStrategy()
    cfg = Config().with_values({"loadBalancerNamespaceMaximumBundles": 3})
    for _ in range(3):
        run(s, {B1: hot(), B2: hot()}, cfg)
    assert run(s, {B1: hot(), B2: hot()}, cfg, count=2) == [(B1, "Topics")]
    assert s.hits == {B2: 4}


def test_unsplittable_range_counts_a_failure():
    s = ExtensibleSplitStrategy()
    assert run(s, {"tenant/ns/0x00000010_0x00000011": hot()}) == []
    assert s.failures == 1


def test_bundle_sharing_a_bound_with_an_ongoing_split_waits():
    s = ExtensibleSplitStrategy()
    splitting = ("tenant/ns/0x00000000_0x40000000",)
    for _ in range(3):
        run(s, {B1: hot(), B2: hot()}, splitting=splitting)
    assert run(s, {B1: hot(), B2: hot()}, splitting=splitting) == [(B2, "Topics")]
    assert s.hits == {B1: 4}


def test_at_most_max_splits_per_cycle():
    s = ExtensibleSplitStrategy()
    names = [f"tenant/ns/0x{k:08x}_0x{k + 0x1000:08x}" for k in range(0, 0x5000, 0x1000)]
    cfg = Config().with_values({"loadBalancerMaxNumberOfBundlesToSplitPerCycle": 2})
    for _ in range(3):
        run(s, dict.fromkeys(names, hot()), cfg)
    assert [b for b, _ in run(s, dict.fromkeys(names, hot()), cfg)] == names[:2]
    assert [b for b, _ in run(s, dict.fromkeys(names, hot()), cfg)] == names[2:4]
