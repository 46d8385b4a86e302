"""The placement candidate pipeline (``LoadManagerShared``): each filter, and that none mutates its input."""

from __future__ import annotations

import copy

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bundlewise.algorithms.placement import filters
from bundlewise.algorithms.placement.filters import BrokerFilterError
from bundlewise.config import Config
from bundlewise.model.load import BrokerData, BundleData, LoadData, LocalBrokerData
from bundlewise.model.resources import ResourceUsage, SystemResources
from bundlewise.model.semver import InvalidVersion, Version

NS = "t/ns"
MLM = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"


def broker(**local: object) -> BrokerData:
    return BrokerData(LocalBrokerData(**local))  # type: ignore[arg-type]


def test_topic_type_candidates_follow_the_enabled_flags() -> None:
    load = LoadData(
        {"p": broker(nonPersistentTopicsEnabled=False), "n": broker(persistentTopicsEnabled=False), "both": broker()}
    )
    assert filters.topic_type_candidates(load) == ["p", "both"]
    assert filters.topic_type_candidates(load, non_persistent=True) == ["n", "both"]
    assert filters.topic_type_candidates(LoadData()) == []


def test_max_topics_counts_preallocated_topics() -> None:
    load = LoadData({"a": broker(numTopics=90), "b": broker(numTopics=100), "c": broker(numTopics=101)})
    pre = BundleData.default()
    pre.topics = 20
    load.brokers["a"].preallocatedBundleData["x"] = pre
    cands = ["a", "b", "c"]
    assert filters.filter_max_topics(cands, load, 100) == ["b"]  # a: 90 + 20 > 100; b: 100 <= 100
    assert filters.filter_max_topics(cands, load, 50) == cands  # would be empty -> original kept
    assert cands == ["a", "b", "c"]


def test_anti_affinity_is_the_identity_without_groups() -> None:
    cands = ["a", "b"]
    out = filters.filter_anti_affinity(cands, "t/ns/0x00000000_0xffffffff", LoadData())
    assert out == cands and out is not cands


def test_distribute_evenly_keeps_brokers_with_fewest_bundles_of_the_namespace() -> None:
    load = LoadData(
        {
            "a": broker(bundles=[f"{NS}/0x00000000_0x40000000", f"{NS}/0x40000000_0x80000000"]),
            "b": broker(
                bundles=[
                    f"{NS}/0x80000000_0xc0000000",
                    "other/ns/0x00000000_0x40000000",
                    "other/ns/0x40000000_0x80000000",
                ]
            ),
            "c": broker(bundles=[]),
        }
    )
    load.brokers["c"].preallocatedBundleData[f"{NS}/0xc0000000_0xffffffff"] = BundleData.default()
    bundle = f"{NS}/0x00000000_0x10000000"
    assert filters.namespace_bundle_counts(["a", "b", "c"], load, NS) == {"a": 2, "b": 1, "c": 1}
    assert filters.filter_distribute_evenly(["a", "b", "c"], bundle, load) == ["b", "c"]
    assert filters.filter_distribute_evenly(["a"], bundle, load) == ["a"]
    assert filters.filter_distribute_evenly([], bundle, load) == []
    # another namespace: b owns 2 of it, a and c none
    assert filters.filter_distribute_evenly(["a", "b", "c"], "other/ns/0x80000000_0xffffffff", load) == ["a", "c"]


def test_distribute_evenly_switch_and_system_namespace() -> None:
    off = Config().with_values({"loadBalancerDistributeBundlesEvenlyEnabled": False})
    assert filters.distribute_evenly_applies("t/ns/0x00000000_0xffffffff", Config())
    assert not filters.distribute_evenly_applies("t/ns/0x00000000_0xffffffff", off)
    assert filters.distribute_evenly_applies("pulsar/system/0x00000000_0xffffffff", off)


def test_load_manager_class_filter() -> None:
    load = LoadData(
        {
            "same": broker(loadManagerClassName=MLM),
            "short": broker(loadManagerClassName="ModularLoadManagerImpl"),
            "ext": broker(
                loadManagerClassName="org.apache.pulsar.broker.loadbalance.extensions.ExtensibleLoadManagerImpl"
            ),
            "absent": broker(),
        }
    )
    assert filters.filter_load_manager_class(list(load.brokers), load, Config()) == ["same", "short", "absent"]


def test_semver_order() -> None:
    v = Version.parse
    assert v("3.2.0").compare(v("3.10.0")) < 0
    assert v("3.2.0-SNAPSHOT").compare(v("3.2.0")) < 0
    assert v("1.0.0-alpha").compare(v("1.0.0-alpha.1")) < 0
    assert v("1.0.0-alpha.1").compare(v("1.0.0-alpha.beta")) < 0
    assert v("1.0.0-beta.2").compare(v("1.0.0-beta.11")) < 0
    assert v("1.0.0+b1").compare(v("1.0.0")) == 0  # equality ignores build metadata
    assert v("1.0.0").compare_build_aware(v("1.0.0+b1")) < 0
    for bad in ("3.2", "3.2.0.1", "v3.2.0", ""):
        with pytest.raises(InvalidVersion):
            v(bad)


def test_version_filter_keeps_the_newest_only_when_preferred() -> None:
    load = LoadData(
        {
            "old": broker(brokerVersionString="3.1.2"),
            "new": broker(brokerVersionString="3.2.0"),
            "new2": broker(brokerVersionString="3.2.0+build7"),
            "pre": broker(brokerVersionString="3.2.0-rc1"),
        }
    )
    cands = list(load.brokers)
    assert filters.filter_broker_version(cands, load, Config()) == cands
    prefer = Config().with_values({"preferLaterVersions": True})
    assert filters.filter_broker_version(cands, load, prefer) == ["new", "new2"]
    assert cands == ["old", "new", "new2", "pre"]


@pytest.mark.parametrize("version", [None, "", "three"])
def test_version_filter_raises_on_missing_or_invalid_versions(version: str | None) -> None:
    load = LoadData({"a": broker(brokerVersionString="3.2.0"), "b": broker(brokerVersionString=version)})
    prefer = Config().with_values({"preferLaterVersions": True})
    with pytest.raises(BrokerFilterError):
        filters.filter_broker_version(["a", "b"], load, prefer)
    with pytest.raises(BrokerFilterError):
        filters.filter_broker_version([], load, prefer)


def test_is_overloaded_uses_weighted_max_strictly_above_threshold() -> None:
    load = LoadData(
        {
            "at": broker(resources=SystemResources(cpu=ResourceUsage(85, 100))),
            "above": broker(resources=SystemResources(cpu=ResourceUsage(86, 100))),
            "dm": broker(resources=SystemResources(direct_memory=ResourceUsage(99, 100))),
        }
    )
    assert not filters.is_overloaded("at", load, Config())
    assert filters.is_overloaded("above", load, Config())
    assert not filters.is_overloaded("dm", load, Config())  # direct memory weight is 0 by default


def test_no_filter_mutates_the_load_data() -> None:
    load = LoadData(
        {
            "a": broker(numTopics=5, bundles=[f"{NS}/0x00000000_0x80000000"], brokerVersionString="3.2.0"),
            "b": broker(numTopics=7, bundles=[], brokerVersionString="3.2.0"),
        }
    )
    before = copy.deepcopy(load)
    cands = ("a", "b")
    prefer = Config().with_values({"preferLaterVersions": True})
    filters.filter_max_topics(cands, load, 6)
    filters.filter_distribute_evenly(cands, f"{NS}/0x80000000_0xffffffff", load)
    filters.filter_load_manager_class(cands, load, prefer)
    filters.filter_broker_version(cands, load, prefer)
    assert load == before


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 200)), min_size=0, max_size=8), st.integers(0, 150))
def test_filters_return_an_ordered_subset_never_empty_unless_input_is(
    owned_topics: list[tuple[int, int]], max_topics: int
) -> None:
    load = LoadData(
        {
            f"b{i}": broker(numTopics=t, bundles=[f"{NS}/0x{i:04x}{k:04x}_0x{i:04x}{k + 1:04x}" for k in range(n)])
            for i, (n, t) in enumerate(owned_topics)
        }
    )
    cands = list(load.brokers)
    for out in (
        filters.filter_max_topics(cands, load, max_topics),
        filters.filter_distribute_evenly(cands, f"{NS}/0xffff0000_0xffffffff", load),
    ):
        assert out == [b for b in cands if b in out]  # an ordered subset
        assert bool(out) == bool(cands)
