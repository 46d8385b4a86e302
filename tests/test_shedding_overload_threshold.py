"""OverloadShedder and ThresholdShedder on hand-built LoadData (Pulsar's shedder tests and docs)."""

from __future__ import annotations

import pytest

from bundlewise.algorithms.shedding.overload import OverloadShedder
from bundlewise.algorithms.shedding.threshold import ThresholdShedder
from bundlewise.config import Config
from shedding_builders import MB, broker, bundle, load, ten_bundle_broker

NOW = 1_700_000_000_000
DEFAULT = Config()


def picked(unloads: list) -> list[tuple[str, str]]:
    return [(u.broker, u.bundle) for u in unloads]


# -- OverloadShedder ---------------------------------------------------------------------------


def test_overload_shedder_sheds_20_and_18_mb_bundles_at_0_999_usage_and_110_mb():
    b1, data = ten_bundle_broker(bandwidth_in=99.9)
    ld = load({"broker-1": b1, "broker-2": broker()}, data)
    out = OverloadShedder().find_bundles_for_unloading(ld, DEFAULT, NOW)
    assert picked(out) == [("broker-1", "bundle-10"), ("broker-1", "bundle-9")]
    assert out[0].destination is None
    assert "99.90% (bandwidthIn) >= overload threshold 85.00%" in out[0].reason
    assert "offload at least 21.89 MB/s" in out[0].reason
    assert out[1].reason.endswith("bundle short-term throughput 18.00 MB/s")


def test_overload_shedder_skips_recently_unloaded_bundles():
    b1, data = ten_bundle_broker(bandwidth_in=99.9)
    ld = load({"broker-1": b1}, data, recent={"bundle-10": NOW - 1})
    out = OverloadShedder().find_bundles_for_unloading(ld, DEFAULT, NOW)
    assert picked(out) == [("broker-1", "bundle-9"), ("broker-1", "bundle-8")]


def test_overload_shedder_ignores_brokers_below_threshold_and_uses_unweighted_usage():
    b1, data = ten_bundle_broker(cpu=84.0)
    ld = load({"broker-1": b1}, data)
    assert OverloadShedder().find_bundles_for_unloading(ld, DEFAULT, NOW) == []
    # weights do not matter to OverloadShedder: cpu weight 0 still counts cpu 90%
    b1, data = ten_bundle_broker(cpu=90.0)
    cfg = DEFAULT.with_values({"loadBalancerCPUResourceWeight": 0})
    out = OverloadShedder().find_bundles_for_unloading(load({"broker-1": b1}, data), cfg, NOW)
    assert picked(out)[0] == ("broker-1", "bundle-10")


def test_overload_shedder_never_sheds_a_sole_bundle():
    ld = load({"b": broker(99.0, ["only"], tput=100 * MB)}, {"only": bundle(tput=100 * MB)})
    assert OverloadShedder().find_bundles_for_unloading(ld, DEFAULT, NOW) == []


def test_overload_shedder_takes_at_least_one_bundle_even_when_it_overshoots():
    ld = load(
        {"b": broker(90.0, ["big", "small"], tput=100 * MB)},
        {"big": bundle(tput=99 * MB), "small": bundle(tput=1 * MB)},
    )
    out = OverloadShedder().find_bundles_for_unloading(ld, DEFAULT, NOW)
    assert picked(out) == [("b", "big")]


def test_no_brokers_and_no_bundles_give_no_decision():
    assert OverloadShedder().find_bundles_for_unloading(load({}), DEFAULT, NOW) == []
    assert ThresholdShedder().find_bundles_for_unloading(load({}), DEFAULT, NOW) == []
    # overloaded, several bundles, but none has bundle data: nothing to pick
    ld = load({"b": broker(99.0, ["x", "y"], tput=100 * MB)})
    assert OverloadShedder().find_bundles_for_unloading(ld, DEFAULT, NOW) == []


def test_ties_keep_bundle_data_order_and_system_namespaces_are_never_shed():
    data = {
        "pulsar/standalone/host-1:8080/0x00000000_0xffffffff": bundle(tput=90 * MB),
        "pulsar/system/0x00000000_0xffffffff": bundle(tput=80 * MB),
        "t/ns/0x80000000_0xffffffff": bundle(tput=10 * MB),
        "t/ns/0x00000000_0x80000000": bundle(tput=10 * MB),
    }
    ld = load({"b": broker(99.0, reversed(list(data)), tput=100 * MB)}, data)
    out = OverloadShedder().find_bundles_for_unloading(ld, DEFAULT, NOW)
    assert [u.bundle for u in out] == ["t/ns/0x80000000_0xffffffff", "t/ns/0x00000000_0x80000000"]


def test_strategies_do_not_mutate_their_input():
    b1, data = ten_bundle_broker(bandwidth_in=99.9)
    ld = load({"broker-1": b1, "broker-2": broker()}, data, recent={"bundle-1": 5})
    before = repr(ld)
    OverloadShedder().find_bundles_for_unloading(ld, DEFAULT, NOW)
    ThresholdShedder().find_bundles_for_unloading(ld, DEFAULT, NOW)
    assert repr(ld) == before


# -- ThresholdShedder --------------------------------------------------------------------------


def test_threshold_test_vector_avg_0_4995_broker_0_999_selects_bundles_10_9_8():
    b1, data = ten_bundle_broker(bandwidth_in=99.9)
    ld = load({"broker-1": b1, "broker-2": broker()}, data)
    out = ThresholdShedder().find_bundles_for_unloading(ld, DEFAULT, NOW)
    assert picked(out) == [("broker-1", "bundle-10"), ("broker-1", "bundle-9"), ("broker-1", "bundle-8")]
    # 0.4495 x 110 MB = 49.445 MB
    assert "average 49.95% + threshold 10.00%; offload at least 49.45 MB/s" in out[0].reason


def test_docs_example_40_10_10_with_threshold_10_sheds_only_broker1():
    data = {
        "a1": bundle(tput=60 * MB),
        "a2": bundle(tput=40 * MB),
        "b1": bundle(tput=60 * MB),
        "b2": bundle(tput=40 * MB),
        "c1": bundle(tput=60 * MB),
        "c2": bundle(tput=40 * MB),
    }
    ld = load(
        {
            "broker1": broker(40, ["a1", "a2"], tput=100 * MB),
            "broker2": broker(10, ["b1", "b2"], tput=100 * MB),
            "broker3": broker(10, ["c1", "c2"], tput=100 * MB),
        },
        data,
    )
    out = ThresholdShedder().find_bundles_for_unloading(ld, DEFAULT, NOW)
    assert picked(out) == [("broker1", "a1")]  # 40% >= 20% + 10%; offload 15 MB/s, a1 (60) covers it
    assert "usage history 40.00% (now cpu 40.00%) >= average 20.00% + threshold 10.00%" in out[0].reason


def test_80_vs_average_60_threshold_10_and_10_gb_offloads_1_5_gb():
    gb = 1024 * MB
    data = {f"x{i}": bundle(tput=1 * gb) for i in range(10)} | {"y1": bundle(tput=1 * gb), "y2": bundle(tput=1)}
    ld = load(
        {"hot": broker(80, [f"x{i}" for i in range(10)], tput=10 * gb), "cool": broker(40, ["y1", "y2"], tput=gb)}, data
    )
    out = ThresholdShedder().find_bundles_for_unloading(ld, DEFAULT, NOW)
    assert "offload at least 1536.00 MB/s = 15.00%" in out[0].reason  # (0.8 - 0.6 - 0.1 + 0.05) x 10 GB
    assert picked(out) == [("hot", "x0"), ("hot", "x1")]  # 1 GB < 1.5 GB, then 2 GB >= 1.5 GB


def test_history_80_then_50_gives_77():
    shedder = ThresholdShedder()
    for cpu in (80, 50):
        shedder.find_bundles_for_unloading(load({"b": broker(cpu), "c": broker(0)}), DEFAULT, NOW)
    assert shedder.history["b"] == pytest.approx(0.77, abs=1e-12)


def _ten_at_80_one_at_5() -> tuple:
    brokers = {f"broker-{i}": broker(80, [f"b{i}-1", f"b{i}-2"], tput=300 * MB) for i in range(10)}
    brokers["idle"] = broker(5, ["i-1", "i-2"], tput=300 * MB)
    data = {f"b{i}-{k}": bundle(tput=150 * MB) for i in range(10) for k in (1, 2)}
    data |= {"i-1": bundle(tput=150 * MB), "i-2": bundle(tput=150 * MB)}
    return brokers, data


def test_ten_brokers_at_80_and_one_at_5_shed_nothing_without_lower_boundary_mode():
    brokers, data = _ten_at_80_one_at_5()
    # avg = (10 x 80 + 5) / 11 = 73.18%; 80% < 83.18%
    assert ThresholdShedder().find_bundles_for_unloading(load(brokers, data), DEFAULT, NOW) == []


def test_idle_broker_receives_load_with_lower_boundary_shedding():
    brokers, data = _ten_at_80_one_at_5()
    cfg = DEFAULT.with_values({"lowerBoundarySheddingEnabled": True})
    out = ThresholdShedder().find_bundles_for_unloading(load(brokers, data), cfg, NOW)
    # the first of the equally used brokers (strict >), 300 MB x 10% x 0.5 = 15 MB/s -> one 150 MB bundle
    assert picked(out) == [("broker-0", "b0-1")]
    assert "idle usage history 5.00% < average 73.18% - threshold 10.00%" in out[0].reason
    assert "offloads at least 15.00 MB/s" in out[0].reason


def test_lower_boundary_mode_applies_the_history_a_second_time():
    brokers = {"a": broker(80), "b": broker(80)}
    plain, lower = ThresholdShedder(), ThresholdShedder()
    cfg = DEFAULT.with_values({"lowerBoundarySheddingEnabled": True})
    for shedder, c in ((plain, DEFAULT), (lower, cfg)):
        shedder.find_bundles_for_unloading(load(brokers), c, NOW)
        shedder.find_bundles_for_unloading(load({"a": broker(50), "b": broker(80)}), c, NOW)
    assert plain.history["a"] == pytest.approx(0.77, abs=1e-12)
    assert lower.history["a"] == pytest.approx(0.743, abs=1e-12)  # 0.8 -> 0.8 -> 0.77 -> 0.743


def test_lower_boundary_needs_the_minimum_throughput():
    brokers, data = _ten_at_80_one_at_5()
    cfg = DEFAULT.with_values(
        {"lowerBoundarySheddingEnabled": True, "loadBalancerBundleUnloadMinThroughputThreshold": 15.0}
    )
    assert [u.bundle for u in ThresholdShedder().find_bundles_for_unloading(load(brokers, data), cfg, NOW)] == [
        "b0-1"
    ]  # 15 MB/s == 15 MB/s proceeds
    cfg = cfg.with_values({"loadBalancerBundleUnloadMinThroughputThreshold": 15.5})
    assert ThresholdShedder().find_bundles_for_unloading(load(brokers, data), cfg, NOW) == []


def test_threshold_minimum_throughput_and_single_bundle_skip():
    data = {"a1": bundle(tput=5 * MB), "a2": bundle(tput=5 * MB), "solo": bundle(tput=100 * MB)}
    small = load({"hot": broker(90, ["a1", "a2"], tput=10 * MB), "cold": broker(10)}, data)
    assert ThresholdShedder().find_bundles_for_unloading(small, DEFAULT, NOW) == []  # 0.35 x 10 MB < 10 MB
    solo = load({"hot": broker(90, ["solo"], tput=100 * MB), "cold": broker(10)}, data)
    assert ThresholdShedder().find_bundles_for_unloading(solo, DEFAULT, NOW) == []


def test_a_single_broker_never_sheds_and_zero_average_returns_nothing():
    b1, data = ten_bundle_broker(bandwidth_in=99.9)
    assert ThresholdShedder().find_bundles_for_unloading(load({"b": b1}, data), DEFAULT, NOW) == []
    assert ThresholdShedder().find_bundles_for_unloading(load({"a": broker(0), "b": broker(0)}), DEFAULT, NOW) == []


def test_usage_above_100_percent_is_not_clamped():
    data = {"a1": bundle(tput=60 * MB), "a2": bundle(tput=40 * MB)}
    ld = load({"over": broker(140, ["a1", "a2"], tput=100 * MB), "idle": broker(0)}, data)
    out = ThresholdShedder().find_bundles_for_unloading(ld, DEFAULT, NOW)
    assert picked(out) == [("over", "a1"), ("over", "a2")]
    assert "usage history 140.00%" in out[0].reason
    assert "offload at least 65.00 MB/s" in out[0].reason  # (1.4 - 0.7 - 0.1 + 0.05) x 100 MB
