"""BalancedPlanShedder's merge planner (``algorithms/balanced/merge.py``) on hand-built leader load data, and the
hook through the one registry: the modular family's split step merges first only for a strategy whose entry
has a planner."""

from __future__ import annotations

import pytest

from bundlewise.algorithms.balanced.merge import Preview, child_shares, plan_merges
from bundlewise.algorithms.families import ModularFamily
from bundlewise.algorithms.registry import SHEDDING, make_family, register_shedding
from bundlewise.algorithms.shedding.overload import OverloadShedder
from bundlewise.algorithms.splitting.detector import split_candidates
from bundlewise.config import Config
from bundlewise.config.views import SplitSettings
from bundlewise.model.bundles import NamespaceBundles
from bundlewise.model.decisions import MergeDecision, SplitReason, SplitStep
from bundlewise.model.load import (
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    NamespaceBundleStats,
    TimeAverageMessageData,
)
from bundlewise.model.resources import ResourceUsage, SystemResources

NS = "t/ns"
EIGHT = NamespaceBundles.initial(NS, 8)
NAMES = [b.name for b in EIGHT.bundles]
CAP8 = Config().with_values({"loadBalancerNamespaceMaximumBundles": 8})


def stats(rate: float, topics: int = 1) -> NamespaceBundleStats:
    """A bundle's last sample: ``rate`` msg/s in and out together (half each way), 1 KiB messages."""
    return NamespaceBundleStats(
        msgRateIn=rate / 2, msgRateOut=rate / 2, msgThroughputIn=rate * 512, msgThroughputOut=rate * 512, topics=topics
    )


HOT = NamespaceBundleStats(topics=2000)  # over loadBalancerNamespaceBundleMaxTopics (1000): splits on Topics


def load_of(owned: dict[str, dict[int, NamespaceBundleStats]]) -> LoadData:
    """Each broker's report lists the bundles (by index in EIGHT) it owns, with their last sample."""
    return LoadData(
        {
            broker: BrokerData(
                LocalBrokerData.of_stats(
                    SystemResources(cpu=ResourceUsage(10.0, 100.0)), {NAMES[i]: s for i, s in bundles.items()}
                )
            )
            for broker, bundles in owned.items()
        }
    )


def plan(load: LoadData, config: Config = CAP8, namespaces: NamespaceBundles = EIGHT) -> list[MergeDecision]:
    return plan_merges(load, config, {NS: namespaces}, split_candidates(load, config))


def test_the_coldest_adjacent_pair_merges_so_the_hot_bundle_can_split() -> None:
    # msg/s per bundle: hot, 3000, 900, 400, 300, 2000, 100, 150 -> pair (6, 7) carries 250 msg/s, the least
    load = load_of(
        {
            "a": {0: HOT, 1: stats(3000), 2: stats(900), 3: stats(400), 6: stats(100), 7: stats(150)},
            "b": {4: stats(300), 5: stats(2000)},
        }
    )
    (merge,) = plan(load)
    assert merge.to_json() == {
        "bundle": "t/ns/0xc0000000_0xffffffff",
        "broker": "a",
        "parts": ["t/ns/0xc0000000_0xe0000000", "t/ns/0xe0000000_0xffffffff"],
        "owners": ["a", "a"],
        "unblocks": "t/ns/0x00000000_0x20000000",
        "reason": "BundleCap",
    }
    assert merge.moved == ()
    assert merge.detail == (
        "t/ns is at its cap of 8 bundles and t/ns/0x00000000_0x20000000 waits to split; "
        "0xc0000000_0xe0000000 + 0xe0000000_0xffffffff carry 2 topics, 250 msg/s, 0.24 MB/s "
        "(0.8% of the split thresholds < 25%); benefit: t/ns/0x00000000_0x20000000 (2000 topics, 0 msg/s, "
        "0.00 MB/s) can split; cost: no topic changes owner"
    )


def test_no_merge_for_a_hot_bundle_of_one_topic_whose_split_would_divide_nothing() -> None:
    # bundle 0 at 40,000 msg/s, over loadBalancerNamespaceBundleMaxMsgRate (30,000): hot on its msg rate
    def cluster(topics: int) -> LoadData:
        cold = {i: stats(100) for i in range(1, 8)}
        load = load_of({"a": {0: stats(40_000, topics)} | cold})
        long_term = TimeAverageMessageData(1000, 1000, 20_000 * 1024, 20_000 * 1024, 20_000, 20_000)
        load.bundleData[NAMES[0]] = BundleData(long_term, long_term, topics)  # the detector reads the long term
        return load

    assert plan(cluster(1)) == []  # one topic: no split point divides it
    (merge,) = plan(cluster(2))
    assert merge.unblocks == NAMES[0]
    assert merge.detail.endswith(
        "benefit: t/ns/0x00000000_0x20000000 (2 topics, 40,000 msg/s, 39.06 MB/s) can split; "
        "cost: no topic changes owner"
    )


def test_a_merge_is_made_only_for_a_split_that_divides_the_hot_bundles_load() -> None:
    """The owner's preview of the split (each child's load from its topics): a split that leaves more than
    ``bundlewiseBalancedMergeMaxChildShare`` (80 %) of the msg rate -- the figure nearer its threshold -- in one
    child frees no slot; a 60/40 split does, and the merge says so."""
    cold = {i: stats(100) for i in range(1, 8)}
    load = load_of({"a": {0: stats(40_000, 5)} | cold})
    long_term = TimeAverageMessageData(1000, 1000, 20_000 * 1024, 20_000 * 1024, 20_000, 20_000)
    load.bundleData[NAMES[0]] = BundleData(long_term, long_term, 5)

    def preview(lower: float, upper: float) -> Preview:
        children = (stats(lower, 2), stats(upper, 3))
        return lambda bundle: children if bundle == NAMES[0] else None

    candidates = split_candidates(load, CAP8)
    assert plan_merges(load, CAP8, {NS: EIGHT}, candidates, preview(36_000, 4_000)) == []  # 90 % in one child
    (merge,) = plan_merges(load, CAP8, {NS: EIGHT}, candidates, preview(24_000, 16_000))
    assert merge.detail.endswith(
        "benefit: t/ns/0x00000000_0x20000000 (5 topics, 40,000 msg/s, 39.06 MB/s) can split into children "
        "carrying 60% / 40% of its load; cost: no topic changes owner"
    )
    anything = CAP8.with_values({"bundlewiseBalancedMergeMaxChildShare": 1.0})
    assert len(plan_merges(load, anything, {NS: EIGHT}, candidates, preview(36_000, 4_000))) == 1
    assert len(plan_merges(load, CAP8, {NS: EIGHT}, candidates, lambda b: None)) == 1  # no preview: no judgement


def test_a_childs_share_is_of_the_figure_nearest_its_split_threshold() -> None:
    limits = Config().view(SplitSettings)  # 30,000 msg/s, 100 MB/s
    by_rate = (NamespaceBundleStats(msgRateIn=20_000), NamespaceBundleStats(msgRateIn=10_000, msgThroughputIn=5e7))
    assert child_shares(by_rate, limits) == (2 / 3, 1 / 3)  # 30,000 msg/s is 100 % of its threshold, 50 MB/s 48 %
    by_tput = (NamespaceBundleStats(msgRateIn=10, msgThroughputIn=9e7), NamespaceBundleStats(msgThroughputIn=3e7))
    assert child_shares(by_tput, limits) == (0.75, 0.25)
    assert child_shares((NamespaceBundleStats(topics=3), NamespaceBundleStats(topics=1)), limits) == (0.75, 0.25)
    assert child_shares((), limits) is None and child_shares(None, limits) is None


def test_a_pair_with_one_owner_goes_before_a_colder_pair_with_two() -> None:
    load = load_of(
        {
            "a": {0: HOT, 1: stats(3000), 2: stats(900), 3: stats(400), 4: stats(300), 6: stats(100)},
            "b": {5: stats(2000), 7: stats(150)},
        }
    )
    (merge,) = plan(load)
    assert (merge.parts, merge.broker) == (("t/ns/0x60000000_0x80000000", "t/ns/0x80000000_0xa0000000"), "a")


def test_with_two_owners_the_hotter_part_keeps_the_merged_bundle_and_the_other_moves() -> None:
    load = load_of(
        {
            "a": {0: HOT, 2: stats(5000), 4: stats(5000), 6: stats(100)},
            "b": {1: stats(9000), 3: stats(5000), 5: stats(5000), 7: stats(150)},
        }
    )
    (merge,) = plan(load)
    assert merge.parts == ("t/ns/0xc0000000_0xe0000000", "t/ns/0xe0000000_0xffffffff")
    assert (merge.owners, merge.broker, merge.moved) == (("a", "b"), "b", ("t/ns/0xc0000000_0xe0000000",))


def test_bundles_nobody_owns_carry_nothing_and_merge_first() -> None:
    load = load_of({"a": {0: HOT, 1: stats(100), 2: stats(100), 3: stats(100), 4: stats(100), 5: stats(100)}})
    (merge,) = plan(load)  # bundles 6 and 7 are in no report: no client has looked them up
    assert (merge.bundle, merge.broker, merge.owners) == ("t/ns/0xc0000000_0xffffffff", None, (None, None))


def test_nothing_merges_when_no_pair_is_cold_enough() -> None:
    load = load_of(
        {
            "a": {0: HOT, 1: stats(3000), 2: stats(900), 3: stats(400), 6: stats(100), 7: stats(150)},
            "b": {4: stats(300), 5: stats(2000)},
        }
    )
    # 250 msg/s is 0.83 % of the 30,000 msg/s threshold: a fraction of 0.8 % leaves no pair under it
    assert plan(load, CAP8.with_values({"bundlewiseBalancedMergeFraction": 0.008})) == []
    assert len(plan(load, CAP8.with_values({"bundlewiseBalancedMergeFraction": 0.009}))) == 1
    assert plan(load, CAP8.with_values({"bundlewiseBalancedMergeFraction": 0})) == []  # 0 never merges
    # topics count too: every pair has 2 topics, 40 % of a 5-topic threshold and 22 % of a 9-topic one
    assert plan(load, CAP8.with_values({"loadBalancerNamespaceBundleMaxTopics": 5})) == []
    assert len(plan(load, CAP8.with_values({"loadBalancerNamespaceBundleMaxTopics": 9}))) == 1


def test_nothing_merges_below_the_cap_or_without_a_hot_bundle() -> None:
    load = load_of(
        {
            "a": {0: HOT, 1: stats(100), 2: stats(100), 3: stats(100)},
            "b": {4: stats(100), 5: stats(100), 6: stats(100), 7: stats(100)},
        }
    )
    assert plan(load, Config().with_values({"loadBalancerNamespaceMaximumBundles": 9})) == []  # the split fits
    cold = load_of({"a": {0: stats(100), 1: stats(100)}, "b": {6: stats(100), 7: stats(100)}})
    assert plan(cold) == []


def test_two_hot_bundles_at_the_cap_take_two_disjoint_pairs() -> None:
    load = load_of(
        {
            "a": {
                0: HOT,
                1: HOT,
                2: stats(500),
                3: stats(400),
                4: stats(300),
                5: stats(200),
                6: stats(100),
                7: stats(150),
            }
        }
    )
    merges = plan(load)
    assert [m.parts for m in merges] == [
        ("t/ns/0xc0000000_0xe0000000", "t/ns/0xe0000000_0xffffffff"),  # 250 msg/s
        ("t/ns/0x80000000_0xa0000000", "t/ns/0xa0000000_0xc0000000"),  # 500 msg/s; (5, 6) would overlap
    ]
    assert [m.unblocks for m in merges] == ["t/ns/0x00000000_0x20000000", "t/ns/0x20000000_0x40000000"]


def test_a_bundle_listed_by_two_reports_or_preallocated_never_merges() -> None:
    load = load_of({"a": {0: HOT, 6: stats(100), 7: stats(100)}, "b": {7: stats(100)}})
    load.brokers["a"].preallocatedBundleData[NAMES[5]] = BundleData.default()
    merges = plan(load)
    # 7 is moving (two reports), 5 is preallocated (owned, not reported yet): of the pairs left, those of the
    # unowned 1-4 carry nothing, and the first in hash order goes
    assert [m.parts for m in merges] == [("t/ns/0x20000000_0x40000000", "t/ns/0x40000000_0x60000000")]


def test_the_own_strategy_splits_at_the_cap_in_the_same_step_and_pulsars_do_not() -> None:
    load = load_of(
        {
            "a": {0: HOT, 1: stats(3000), 2: stats(900), 3: stats(400), 6: stats(100), 7: stats(150)},
            "b": {4: stats(300), 5: stats(2000)},
        }
    )
    own = make_family("BalancedPlanShedder", CAP8)
    assert isinstance(own, ModularFamily)
    step = own.leader_split_step(load, CAP8, {NS: EIGHT})
    assert [m.bundle for m in step.merges] == ["t/ns/0xc0000000_0xffffffff"]
    assert [(s.bundle, s.broker, s.reasons) for s in step.splits] == [(NAMES[0], "a", (SplitReason.TOPICS,))]
    assert own.leader_splits(load, CAP8, {NS: 8}) == []  # Pulsar's check alone (the live manager's) never merges
    pulsar = make_family("OverloadShedder", CAP8)
    assert isinstance(pulsar, ModularFamily) and pulsar.merges is None
    assert pulsar.leader_split_step(load, CAP8, {NS: EIGHT}) == SplitStep()
    below = Config().with_values({"loadBalancerNamespaceMaximumBundles": 9})
    assert own.leader_split_step(load, below, {NS: EIGHT}) == SplitStep((), tuple(step.splits))


def test_only_an_own_strategy_may_register_a_merge_planner() -> None:
    with pytest.raises(ValueError, match="only bundlewise's own strategies merge bundles"):
        register_shedding("PulsarLike", ModularFamily, OverloadShedder, merges=plan_merges)
    assert "PulsarLike" not in SHEDDING
    assert [n for n, e in SHEDDING.items() if e.merges is not None] == ["BalancedPlanShedder"]
