"""Extensible placement (``#selectAsync``): the broker filter chain and LeastResourceUsageWithWeight."""

from __future__ import annotations

import random

from bundlewise.algorithms.extensible.placement import (
    ExtensiblePlacement,
    FilterContext,
    apply_filters,
    least_resource_usage_with_weight,
)
from bundlewise.config import Config
from bundlewise.config.keys_extensible import EXTENSIBLE_LOAD_MANAGER
from bundlewise.model.extensible import BrokerLoadData, BrokerLookupData
from bundlewise.model.resources import ResourceUsage, SystemResources
from bundlewise.model.semver import Version

# LeastResourceUsageWithWeightTest#getContext
CFG = Config().with_values(
    {
        "loadBalancerMemoryResourceWeight": 0.1,
        "loadBalancerDirectMemoryResourceWeight": 0.1,
        "loadBalancerHistoryResourcePercentage": 0.5,
        "loadBalancerAverageResourceUsageDifferenceThresholdPercentage": 5,
    }
)


def all_at(u: float) -> SystemResources:
    r = ResourceUsage(u, 100)
    return SystemResources(r, r, r, r, r)


def fresh(u: float) -> BrokerLoadData:
    return BrokerLoadData().updated(all_at(u), 1, 1, 1, 1, 1, 1, CFG.weights(), 0.5, now=1)


def again(d: BrokerLoadData, u: float) -> BrokerLoadData:
    return d.updated(all_at(u), 1, 1, 1, 1, 1, 1, CFG.weights(), 0.5, now=2)


def best(load: dict[str, BrokerLoadData], candidates: tuple[str, ...] = ("1", "2", "3")) -> tuple[str, ...]:
    return least_resource_usage_with_weight(candidates, load, CFG, random.Random(0)).best


def test_least_resource_usage_with_weight_sequence_of_pulsar_test():
    """``LeastResourceUsageWithWeightTest#testSelect``: picks 1, 1, 1, 1, 2, then the restarted 3."""
    load = {"1": fresh(10), "2": fresh(30), "3": fresh(60), "4": fresh(5)}
    assert best(load) == ("1",)
    load.update({"1": fresh(20), "2": fresh(30), "3": fresh(50)})
    assert best(load) == ("1",)
    for _ in range(2):
        load.update({"1": again(load["1"], 30), "2": again(load["2"], 30), "3": again(load["3"], 40)})
        assert best(load) == ("1",)
    load.update({"1": again(load["1"], 35), "2": again(load["2"], 20), "3": again(load["3"], 45)})
    assert best(load) == ("2",)
    load.update({"1": again(load["1"], 35), "2": again(load["2"], 20), "3": fresh(0)})
    assert best(load) == ("3",)


def test_brokers_without_load_data_join_only_the_random_fallback():
    load = {"1": fresh(50), "2": fresh(100)}
    assert best(load, ("1", "2", "5")) == ("1",)
    load = {"1": fresh(100), "2": fresh(100)}
    sel = least_resource_usage_with_weight(("1", "2", "5"), load, CFG, random.Random(3))
    assert sel.best == ("1", "2", "5") and sel.selected in sel.best
    assert least_resource_usage_with_weight((), load, CFG, random.Random(0)).selected is None


def lookup(
    cls: str | None = EXTENSIBLE_LOAD_MANAGER,
    version: str | None = "3.2.0",
    persistent: bool = True,
    non_persistent: bool = True,
) -> BrokerLookupData:
    return BrokerLookupData(version, cls, persistent, non_persistent)


def test_filter_chain_class_topics_and_topic_kind():
    load = {"a": BrokerLoadData(topics=10), "b": BrokerLoadData(topics=50_000), "c": BrokerLoadData()}
    lk = {
        "a": lookup(),
        "b": lookup(),
        "c": lookup(cls="org.apache.pulsar.broker.loadbalance.impl.X"),
        "d": lookup(persistent=False),
        "e": lookup(cls=None),
    }
    ctx = FilterContext(load, lk, Config())
    assert apply_filters(("a", "b", "c", "d", "e"), "t/ns/0x00000000_0xffffffff", ctx) == ("a",)
    np_ctx = FilterContext(load, lk, Config(), non_persistent=True)
    assert apply_filters(("a", "d"), "t/ns/0x00000000_0xffffffff", np_ctx) == ("a", "d")


def test_class_filter_uses_an_explicitly_configured_class():
    modular = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"
    lk = {"a": lookup(), "b": lookup(cls=modular)}
    cfg = Config().with_values({"loadManagerClassName": modular})
    assert apply_filters(("a", "b"), "x", FilterContext({}, lk, cfg)) == ("b",)


def test_version_filter_keeps_the_newest_and_a_bad_version_disables_it():
    cfg = Config().with_values({"preferLaterVersions": True})
    lk = {"a": lookup(version="3.2.0"), "b": lookup(version="3.10.0-rc1"), "c": lookup(version="3.10.0")}
    assert apply_filters(("a", "b", "c"), "x", FilterContext({}, lk, cfg)) == ("c",)
    lk["d"] = lookup(version="not-a-version")
    assert apply_filters(("a", "b", "c", "d"), "x", FilterContext({}, lk, cfg)) == ("a", "b", "c", "d")
    v = Version.parse
    assert (
        v("1.0.0+b2").compare_build_aware(v("1.0.0+b1")) > 0 and v("1.0.0+b1").compare_build_aware(v("1.0.0-rc.2")) > 0
    )


def test_without_lookup_data_only_the_load_based_filter_applies():
    load = {"a": BrokerLoadData(topics=60_000)}
    assert apply_filters(("a", "b"), "x", FilterContext(load, None, Config())) == ("b",)


def test_excluded_namespace_is_placed_round_robin():
    cfg = Config().with_values({"loadBalancerSheddingExcludedNamespaces": "t/ex"})
    ctx = FilterContext({"a": fresh(90), "b": fresh(10)}, None, cfg)
    p = ExtensiblePlacement()
    picks = [p.select("t/ex/0x00000000_0xffffffff", ("a", "b"), ctx, random.Random(0)).selected for _ in range(3)]
    assert picks == ["a", "b", "a"]
    assert p.select("t/ns/0x00000000_0xffffffff", ("a", "b"), ctx, random.Random(0)).best == ("b",)


def test_candidates_skip_the_filters():
    ctx = FilterContext({"a": BrokerLoadData(topics=60_000, weightedMaxEMA=0.1), "b": fresh(80)}, None, Config())
    p = ExtensiblePlacement()
    assert p.select("t/ns/x", ("a", "b"), ctx, random.Random(0)).best == ("b",)
    assert p.select("t/ns/x", ("a", "b"), ctx, random.Random(0), candidates=["a", "b"]).best == ("a",)
