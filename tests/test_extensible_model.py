"""BrokerLoadData, the reporters' rules (``BrokerLoadDataReporter``, ``TopKBundles``) and the extensible snapshot."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bundlewise.algorithms.extensible.reporting import (
    TOMBSTONE_DELAY_MS,
    BrokerLoadReporter,
    TopBundlesReporter,
    bundle_sort_key,
    needs_broker_report,
    top_k_bundles,
)
from bundlewise.algorithms.reporting import percent_change
from bundlewise.config import Config
from bundlewise.model.channel import ServiceUnitState, ServiceUnitStateData
from bundlewise.model.errors import InputError
from bundlewise.model.extensible import BrokerLoadData, parse_extensible_snapshot, weighted_max
from bundlewise.model.load import NamespaceBundleStats
from bundlewise.model.resources import ResourceUsage, ResourceWeights, SystemResources

HALF = ResourceWeights(cpu=0.5, direct_memory=0.5, bandwidth_in=0.5, bandwidth_out=0.5, memory=0.5)


def usage(cpu: float, mem: float, dm: float, bin_: float, bout: float) -> SystemResources:
    return SystemResources(
        ResourceUsage(cpu, 100),
        ResourceUsage(mem, 200),
        ResourceUsage(dm, 100),
        ResourceUsage(bin_, 100),
        ResourceUsage(bout, 100),
    )


def test_broker_load_data_update_anchor_of_pulsar_test():
    """``BrokerLoadDataTest#testUpdateBySystemResourceUsage``: weights 0.5, h = 0.75."""
    d = BrokerLoadData().updated(usage(1, 800, 2, 3, 4), 1, 2, 3, 4, 5, 6, HALF, 0.75, now=1000)
    assert (d.maxResourceUsage, d.weightedMaxEMA, d.msgThroughputEMA, d.updatedAt) == (0.04, 2.0, 3.0, 1000)
    d = d.updated(usage(300, 200, 2, 3, 4), 5, 6, 7, 8, 9, 10, HALF, 0.75, now=2000)
    assert (d.maxResourceUsage, d.weightedMaxEMA, d.msgThroughputEMA) == (3.0, 1.875, 5.0)
    assert (d.bundleCount, d.topics, d.reportedAt) == (9, 10, 0)
    assert d.to_string(HALF) == (
        "cpu= 300.00%, memory= 100.00%, directMemory= 2.00%, "
        "bandwidthIn= 3.00%, bandwidthOut= 4.00%, "
        "cpuWeight= 0.500000, memoryWeight= 0.500000, directMemoryWeight= 0.500000, "
        "bandwidthInResourceWeight= 0.500000, bandwidthOutResourceWeight= 0.500000, "
        "msgThroughputIn= 5.00, msgThroughputOut= 6.00, "
        "msgRateIn= 7.00, msgRateOut= 8.00, bundleCount= 9, "
        "maxResourceUsage= 300.00%, weightedMaxEMA= 187.50%, msgThroughputEMA= 5.00, "
        "updatedAt= 2000, reportedAt= 0"
    )
    assert d.cleared() == BrokerLoadData()


def test_broker_load_data_update_by_other():
    """``BrokerLoadDataTest#testUpdateByBrokerLoadData``: ``update(other)`` makes the record equal to
    ``other``; ``clear`` brings it back to a fresh one."""
    other = BrokerLoadData().updated(usage(1, 800, 2, 3, 4), 1, 2, 3, 4, 5, 6, HALF, 0.75, now=1000)
    data = BrokerLoadData().update(other)
    assert data == other and data.updatedAt == 1000
    assert data.cleared() == BrokerLoadData()


def test_to_string_rounds_half_up_as_java_formatter():
    assert "msgThroughputIn= 0.13," in BrokerLoadData(msgThroughputIn=0.125).to_string(HALF)  # Python: 0.12


def test_fresh_broker_load_data_defaults():
    d = BrokerLoadData()
    assert (d.maxResourceUsage, d.weightedMaxEMA, d.msgThroughputEMA, d.updatedAt) == (1.0, 1.0, 0.0, 0)


def test_weighted_max_counts_memory_with_its_weight_unlike_the_modular_one():
    r = usage(10, 100, 0, 0, 0)  # memory 50 %
    assert r.weighted_max_usage(HALF) == pytest.approx(0.05)
    assert weighted_max(r, HALF) == 0.25
    assert weighted_max(r, ResourceWeights()) == r.weighted_max_usage(ResourceWeights())  # default memory weight 0


def test_percent_change_rules():
    assert percent_change(0, 0) == 0.0
    assert percent_change(0, 1) == math.inf
    assert percent_change(200, 150) == 25.0


def reported(cpu: float, rate: float, now: int) -> BrokerLoadData:
    return BrokerLoadData(usage(cpu, 0, 0, 0, 0), msgRateIn=rate, maxResourceUsage=cpu / 100, reportedAt=now)


def test_report_skipped_when_nothing_moved_10_percent_within_15_minutes():
    cfg = Config()
    last = reported(50, 100, 0)
    assert not needs_broker_report(last, reported(55, 109, 0), 14 * 60_000, cfg)
    assert needs_broker_report(last, reported(50, 111, 0), 60_000, cfg)  # rate +11 %
    assert needs_broker_report(last, reported(61, 100, 0), 60_000, cfg)  # usage +11 points
    assert needs_broker_report(last, reported(50, 100, 0), 15 * 60_000 + 1, cfg)  # too old


def test_reporter_advances_the_ema_every_tick_but_pushes_only_on_change():
    cfg = Config()
    rep = BrokerLoadReporter()
    r50 = usage(50, 0, 0, 0, 0)
    first = rep.tick(r50, 10, 10, 5, 5, 1, 1, cfg, now=5000)
    assert first is not None and first.reportedAt == 5000 and first.weightedMaxEMA == 0.5
    assert rep.tick(usage(52, 0, 0, 0, 0), 10, 10, 5, 5, 1, 1, cfg, now=10_000) is None
    assert rep.local.weightedMaxEMA == pytest.approx(0.9 * 0.5 + 0.1 * 0.52)
    pushed = rep.tick(r50, 10, 10, 5, 5, 2, 1, cfg, now=15_000)  # bundle count doubled
    assert pushed is not None and pushed.reportedAt == 15_000
    rep.clear()
    assert rep.local == BrokerLoadData()


def stats(tin: float = 0, tout: float = 0, rate: float = 0, topics: int = 0, cache: int = 0) -> NamespaceBundleStats:
    return NamespaceBundleStats(
        msgRateIn=rate, msgThroughputIn=tin, msgThroughputOut=tout, topics=topics, cacheSize=cache
    )


def test_top_k_is_ascending_and_drops_zero_system_and_excluded_bundles():
    cfg = Config().with_values({"loadBalancerSheddingExcludedNamespaces": "t/excluded"})
    data = {
        "t/ns/0x00000000_0x40000000": stats(tout=3e6),
        "t/ns/0x40000000_0x80000000": stats(tout=1e6),
        "t/ns/0x80000000_0xc0000000": stats(tout=2e6),
        "t/ns/0xc0000000_0xffffffff": stats(),
        "pulsar/system/0x00000000_0xffffffff": stats(tout=9e9),
        "t/excluded/0x00000000_0xffffffff": stats(tout=9e9),
    }
    top = top_k_bundles(data, 2, cfg)
    assert [b.bundleName for b in top.topBundlesLoadData] == [
        "t/ns/0x80000000_0xc0000000",
        "t/ns/0x00000000_0x40000000",
    ]
    assert len(top_k_bundles(data, 10, cfg)) == 3


def test_bundle_order_uses_pulsar_resolutions():
    assert bundle_sort_key(stats(tin=149_999)) == bundle_sort_key(stats(tin=50_000))  # both round to 1e5 x 1
    assert bundle_sort_key(stats(tin=150_000)) > bundle_sort_key(stats(tin=149_999))
    assert bundle_sort_key(stats(rate=149)) < bundle_sort_key(stats(rate=150))
    assert bundle_sort_key(stats(topics=499)) == bundle_sort_key(stats(topics=0))


def test_top_bundles_reporter_zero_updated_at():
    """``TopBundleLoadDataReporterTest#testZeroUpdatedAt``: a fresh reporter starts from 0, so stats
    stamped 0 are not reported."""
    assert TopBundlesReporter().tick({"t/ns/0x00000000_0xffffffff": stats(tout=1)}, 0, Config()) is None


def test_top_bundles_reporter_report_force():
    """``TopBundleLoadDataReporterTest#testReportForce``: no fresh stats -> no push; forced -> the cached
    (still empty) top-k is pushed."""
    from bundlewise.model.extensible import TopBundlesLoadData

    rep = TopBundlesReporter()
    data = {"t/ns/0x00000000_0xffffffff": stats(tout=1)}
    assert rep.tick(data, 0, Config()) is None
    assert rep.tick(data, 0, Config(), force=True) == TopBundlesLoadData()


def test_top_bundles_reporter_report():
    """``TopBundleLoadDataReporterTest#testReport``: stats stamped 1 are reported; a later forced tick
    re-pushes that cached top-k without recomputing it."""
    cfg = Config().with_values({"loadBalancerMaxNumberOfBundlesInBundleLoadReport": 1})
    data = {"bundle-1": stats(tin=5e5, rate=500), "bundle-2": stats(tin=1e7, rate=10000)}
    rep = TopBundlesReporter()
    top = rep.tick(data, 1, cfg)
    assert top == top_k_bundles(data, 1, cfg) and [b.bundleName for b in top.topBundlesLoadData] == ["bundle-2"]
    assert rep.tick({}, 1, cfg, force=True) is top


def owned_by(broker: str) -> ServiceUnitStateData:
    return ServiceUnitStateData(ServiceUnitState.Owned, broker)


def test_broker_reporter_resets_on_every_tombstone_event_but_removes_once_per_delay():
    """``BrokerLoadDataReporterTest#testTombstone``: ``#handleEvent`` clears the local data on every event
    that concerns this broker; only the store removal is de-duplicated (``TOMBSTONE_DELAY_IN_MILLIS``)."""
    me = "broker-1:8080"
    rep = BrokerLoadReporter()
    cfg = Config()
    for state in (ServiceUnitState.Assigning, ServiceUnitState.Deleted, ServiceUnitState.Init, ServiceUnitState.Free):
        assert rep.handle_event(me, ServiceUnitStateData(state, me), now=0) is False
    rep.tick(usage(50, 0, 0, 0, 0), 10, 10, 5, 5, 1, 1, cfg, now=1000)
    assert rep.handle_event(me, owned_by(me), now=2000) is True
    assert rep.local == BrokerLoadData()
    rep.tick(usage(50, 0, 0, 0, 0), 10, 10, 5, 5, 1, 1, cfg, now=3000)
    assert rep.handle_event(me, owned_by(me), now=4000) is False  # within 10 s: no second removal ...
    assert rep.local == BrokerLoadData()  # ... but the local data is reset again
    assert rep.handle_event(me, owned_by(me), now=2000 + TOMBSTONE_DELAY_MS) is True
    releasing = ServiceUnitStateData(ServiceUnitState.Releasing, None, me)
    splitting = ServiceUnitStateData(ServiceUnitState.Splitting, None, me)
    other = ServiceUnitStateData(ServiceUnitState.Releasing, None, "broker-2:8080")
    assert rep.handle_event(me, releasing, now=60_000) is True
    assert rep.handle_event(me, splitting, now=80_000) is True
    assert rep.handle_event(me, other, now=100_000) is False
    assert rep.handle_event(me, owned_by("broker-2:8080"), now=100_000) is False
    assert rep.handle_event(me, None, now=100_000) is False
    top = TopBundlesReporter()
    assert top.handle_event(me, owned_by(me), now=0) is True
    assert top.handle_event(me, owned_by(me), now=TOMBSTONE_DELAY_MS - 1) is False


def test_top_bundles_reporter_reports_only_when_the_stats_timestamp_advances():
    rep = TopBundlesReporter()
    data = {"t/ns/0x00000000_0xffffffff": stats(tout=1)}
    assert rep.tick(data, 100, Config()) is not None
    assert rep.tick(data, 100, Config()) is None
    assert rep.tick(data, 100, Config(), force=True) is not None
    assert rep.tick(data, 101, Config()) is not None


@given(st.lists(st.floats(min_value=0, max_value=1e9), min_size=1, max_size=30), st.integers(1, 12))
def test_top_k_holds_the_k_largest_in_ascending_order(values: list[float], k: int):
    data = {f"t/ns/b{i}": stats(tout=v) for i, v in enumerate(values)}
    top = top_k_bundles(data, k, Config()).topBundlesLoadData
    keys = [bundle_sort_key(b.stats) for b in top]
    assert keys == sorted(keys)
    assert len(top) == min(k, sum(1 for v in values if v > 0))
    rest = [
        bundle_sort_key(s)
        for name, s in data.items()
        if name not in {b.bundleName for b in top} and s.msgThroughputOut > 0
    ]
    assert all(r <= keys[0] for r in rest)


def test_snapshot_defaults_available_brokers_and_derives_absent_emas():
    snap = parse_extensible_snapshot(
        {
            "timestamp": "2023-11-14T22:13:20Z",
            "brokers": {
                "b1": {"cpu": {"usage": 30, "limit": 100}, "msgThroughputIn": 5, "msgThroughputOut": 7},
                "b2": {"weightedMaxEMA": 0.5, "msgThroughputEMA": 3, "updatedAt": 17},
            },
        }
    )
    assert snap.timestamp == 1_700_000_000_000
    assert snap.available_brokers == ("b1", "b2")
    b1, b2 = snap.brokers["b1"], snap.brokers["b2"]
    assert b1.weightedMaxEMA == pytest.approx(0.3) and b1.msgThroughputEMA == 12 and b1.updatedAt == 1_700_000_000_000
    assert (b2.weightedMaxEMA, b2.msgThroughputEMA, b2.updatedAt) == (0.5, 3, 17)
    assert snap.lookup_data is None


def test_top_bundles_accept_a_last_stats_shaped_map():
    snap = parse_extensible_snapshot(
        {"brokers": {}, "topBundles": {"b1": {"t/ns/0x00000000_0xffffffff": {"topics": 3, "msgRateIn": 1}}}}
    )
    assert snap.top_bundles["b1"].stats_by_bundle()["t/ns/0x00000000_0xffffffff"].topics == 3


@pytest.mark.parametrize(
    "doc, field",
    [
        ({"brokers": {}, "bundleData": {}}, "bundleData"),
        ({"brokers": {"b1": {"lastStats": {}}}}, "lastStats"),
        ({"brokers": {"b1": {"bundles": []}}}, "bundles"),
    ],
)
def test_modular_shapes_are_rejected_as_mixed(doc: dict, field: str):
    with pytest.raises(InputError, match="mixed modular/extensible") as e:
        parse_extensible_snapshot(doc)
    assert field in str(e.value)


def test_bad_values_name_the_field():
    with pytest.raises(InputError, match=r"snapshot\.brokers\.b1\.weightedMaxEMA"):
        parse_extensible_snapshot({"brokers": {"b1": {"weightedMaxEMA": -1}}})
    with pytest.raises(InputError, match="missing 'brokers'"):
        parse_extensible_snapshot({"topBundles": {}})
    with pytest.raises(InputError, match=r"topBundlesLoadData\[0\]"):
        parse_extensible_snapshot({"brokers": {}, "topBundles": {"b": {"topBundlesLoadData": [{"stats": {}}]}}})
