"""Load data model: float32 percents, weighted max usage, Pulsar's time averages."""

from __future__ import annotations

import json

import pytest

from bundlewise.algorithms.leader import LeaderBundleData
from bundlewise.config import Config
from bundlewise.model.errors import InputError
from bundlewise.model.javamath import f32
from bundlewise.model.load import (
    BundleData,
    LocalBrokerData,
    NamespaceBundleStats,
    TimeAverageBrokerData,
    TimeAverageMessageData,
)
from bundlewise.model.resources import ResourceUsage, ResourceWeights, SystemResources
from bundlewise.model.snapshot import parse_modular_snapshot

REAL_LOAD_REPORT = json.loads("""
{"webServiceUrl":"http://broker-1:8080","webServiceUrlTls":null,"pulsarServiceUrl":"pulsar://broker-1:6650",
 "pulsarServiceUrlTls":null,"persistentTopicsEnabled":true,"nonPersistentTopicsEnabled":true,
 "cpu":{"usage":352.5,"limit":800.0},"memory":{"usage":1024.3,"limit":4096.0},
 "directMemory":{"usage":256.0,"limit":4096.0},"bandwidthIn":{"usage":81920.5,"limit":1.0E7},
 "bandwidthOut":{"usage":163840.0,"limit":1.0E7},"msgThroughputIn":10485760.0,"msgThroughputOut":20971520.0,
 "msgRateIn":1200.5,"msgRateOut":2400.25,"lastUpdate":1700000000000,
 "lastStats":{"public/default/0x00000000_0x40000000":{"msgRateIn":1200.5,"msgThroughputIn":10485760.0,
   "msgRateOut":2400.25,"msgThroughputOut":20971520.0,"consumerCount":4,"producerCount":2,"topics":3,
   "cacheSize":0}},
 "numTopics":3,"numBundles":1,"numConsumers":4,"numProducers":2,
 "bundles":["public/default/0x00000000_0x40000000"],"lastBundleGains":[],"lastBundleLosses":[],
 "brokerVersionString":"3.2.0","protocols":{},"advertisedListeners":{},
 "loadManagerClassName":"org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl",
 "startTimestamp":1699990000000,"maxResourceUsage":0.44062501192092896,"loadReportType":"LocalBrokerData"}
""")


def test_percent_usage_is_float32_like_java() -> None:
    # (float)1/(float)3*100 in Java is 33.333336f, not 33.33333333...
    assert ResourceUsage(1, 3).percent_usage() == f32(f32(1 / 3) * 100)
    assert ResourceUsage(1, 3).percent_usage() == pytest.approx(33.333335876464844, abs=0)
    assert ResourceUsage(5, 0).percent_usage() == 0.0
    assert ResourceUsage(140, 100).percent_usage() == 140.0  # no clamp (PR #18645)


def test_weighted_and_unweighted_max_usage() -> None:
    r = SystemResources(
        cpu=ResourceUsage(60, 100),
        memory=ResourceUsage(99, 100),
        direct_memory=ResourceUsage(70, 100),
        bandwidth_in=ResourceUsage(20, 100),
        bandwidth_out=ResourceUsage(30, 100),
    )
    assert r.max_usage() == pytest.approx(0.70)  # memory is not part of the max
    assert r.weighted_max_usage(ResourceWeights()) == pytest.approx(0.60)  # directMemory weight 0 by default
    assert r.weighted_max_usage(ResourceWeights(cpu=0.5, bandwidth_out=3.0)) == pytest.approx(0.90)


def test_time_average_recurrence_and_window() -> None:
    avg = TimeAverageMessageData.with_prior(3)
    assert avg.msgRateIn == 50.0 and avg.numSamples == 0
    for x, expected in [(10.0, 10.0), (20.0, 15.0), (30.0, 20.0), (60.0, (2 * 20.0 + 60.0) / 3)]:
        avg.update(NamespaceBundleStats(msgRateIn=x))
        assert avg.msgRateIn == pytest.approx(expected)
    assert avg.numSamples == 3


def test_bundle_data_defaults_and_update() -> None:
    bd = BundleData.default()
    assert (bd.shortTermData.maxSamples, bd.longTermData.maxSamples) == (10, 1000)
    assert bd.longTermData.msgThroughputOut == 50000.0
    bd.update(NamespaceBundleStats(msgRateIn=5, msgRateOut=7, topics=4))
    assert (bd.shortTermData.total_msg_rate, bd.longTermData.total_msg_rate, bd.topics) == (12, 12, 4)


def test_time_average_broker_data_uses_defaults_for_unknown_bundles() -> None:
    bd = BundleData.default()
    bd.update(NamespaceBundleStats(msgRateIn=100, msgThroughputIn=1000))
    ta = TimeAverageBrokerData.of_bundles(["a", "b"], {"a": bd})
    assert ta.longTermMsgRateIn == 100 + 50
    assert ta.shortTermMsgThroughputIn == 1000 + 50000


def test_real_load_report_loads_unchanged() -> None:
    local = LocalBrokerData.from_json(REAL_LOAD_REPORT, "broker-1")
    assert local.bundles == ["public/default/0x00000000_0x40000000"]
    assert local.lastStats["public/default/0x00000000_0x40000000"].consumerCount == 4
    assert local.max_usage() == pytest.approx(0.440625, rel=1e-6)
    snap = parse_modular_snapshot({"timestamp": 1, "brokers": {"broker-1:8080": REAL_LOAD_REPORT}})
    assert list(snap.load.brokers) == ["broker-1:8080"]
    assert not snap.bundle_data_given


def test_leader_bundle_data_accumulates_samples_across_steps() -> None:
    leader = LeaderBundleData()
    for rate in (100.0, 200.0):
        doc = {"brokers": {"b1": {"lastStats": {"t/ns/0x00000000_0xffffffff": {"msgRateIn": rate, "topics": 2}}}}}
        load = leader.apply(parse_modular_snapshot(doc))
    data = load.bundleData["t/ns/0x00000000_0xffffffff"]
    assert data.shortTermData.numSamples == 2 and data.shortTermData.msgRateIn == 150.0
    assert load.brokers["b1"].timeAverageData.longTermMsgRateIn == 150.0


@pytest.mark.parametrize(
    ("doc", "field"),
    [
        ({"brokers": {"b": {"msgRateIn": -1}}}, "msgRateIn"),
        ({"brokers": {"b": {"cpu": {"usage": "x", "limit": 1}}}}, "cpu.usage"),
        ({"brokers": {"b": {"lastStats": {"x": {"msgRateOut": float("nan")}}}}}, "msgRateOut"),
        ({"brokers": {"a": {"weightedMaxEMA": 0.1}}}, "weightedMaxEMA"),
        ({"brokers": {}, "topBundles": {}}, "snapshot"),
        ({"bundleData": {}}, "brokers"),
    ],
)
def test_bad_snapshots_name_the_field(doc: dict[str, object], field: str) -> None:
    with pytest.raises(InputError) as e:
        parse_modular_snapshot(doc)
    assert field in str(e.value)


def test_weights_view_reads_config() -> None:
    w = Config().with_values({"loadBalancerDirectMemoryResourceWeight": "2"}).weights()
    assert w == ResourceWeights(cpu=1.0, direct_memory=2.0, bandwidth_in=1.0, bandwidth_out=1.0, memory=0.0)


def test_a_bundle_on_two_reports_is_sampled_from_each_report() -> None:
    """Pulsar's ``#updateBundleData`` reads each broker's report as reported: a bundle two reports list (it
    moved; the old owner has not written since) gets both samples in one update, the earlier broker's first."""
    from bundlewise.algorithms.leader import LeaderBundleData
    from bundlewise.model.snapshot import parse_modular_snapshot

    doc = {
        "brokers": {
            "a": {
                "bundles": ["t/ns/0x00000000_0xffffffff"],
                "lastStats": {"t/ns/0x00000000_0xffffffff": {"msgRateIn": 10}},
            },
            "b": {
                "bundles": ["t/ns/0x00000000_0xffffffff"],
                "lastStats": {"t/ns/0x00000000_0xffffffff": {"msgRateIn": 30}},
            },
        }
    }
    snap = parse_modular_snapshot(doc)
    assert snap.shared == {"t/ns/0x00000000_0xffffffff": ("a", "b")}
    load = LeaderBundleData().apply(snap)
    short = load.bundleData["t/ns/0x00000000_0xffffffff"].shortTermData
    assert (short.numSamples, short.msgRateIn) == (2, 20.0)  # the prior replaced by 10, then (10 + 30) / 2
    assert (
        load.brokers["a"].timeAverageData.shortTermMsgRateIn
        == load.brokers["b"].timeAverageData.shortTermMsgRateIn
        == 20.0
    )
