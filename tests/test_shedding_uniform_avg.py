"""UniformLoadShedder, AvgShedder (both halves) and the strategy registry."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bundlewise.algorithms.registry import shedding_entry
from bundlewise.algorithms.shedding.avg import AvgShedder
from bundlewise.algorithms.shedding.overload import OverloadShedder
from bundlewise.algorithms.shedding.threshold import ThresholdShedder
from bundlewise.algorithms.shedding.uniform import UniformLoadShedder
from bundlewise.config import Config
from bundlewise.model.errors import InputError
from shedding_builders import MB, broker, bundle, load, ten_bundle_broker

NOW = 1_700_000_000_000
DEFAULT = Config()


def bundles_of(unloads: list) -> list[str]:
    return [u.bundle for u in unloads]


# -- UniformLoadShedder ------------------------------------------------------------------------


def test_uniform_max_unload_bundle_num_per_shedding_caps_the_selection():
    data = {f"bundle-{i}": bundle(tput=2 * MB) for i in range(1, 21)}
    ld = load({"broker-1": broker(0, data, tput=40 * MB), "broker2": broker()}, data)
    # the idle broker's 0 B/s counts as 1.0: need = int((40 MB - 1) x 0.2) = 8388607, so three 2 MB bundles fit
    assert bundles_of(UniformLoadShedder().find_bundles_for_unloading(ld, DEFAULT, NOW)) == [
        "bundle-1",
        "bundle-2",
        "bundle-3",
    ]
    capped = DEFAULT.with_values({"maxUnloadBundleNumPerShedding": 2})
    assert bundles_of(UniformLoadShedder().find_bundles_for_unloading(ld, capped, NOW)) == ["bundle-1", "bundle-2"]


def test_uniform_skips_larger_bundles_instead_of_splitting_them():
    b1, data = ten_bundle_broker()
    ld = load({"broker-1": b1, "broker2": broker()}, data)
    out = UniformLoadShedder().find_bundles_for_unloading(ld, DEFAULT, NOW)
    # need = int((110 MB - 1) x 0.2) = 23068671: bundle-10 (20 MB) fits; 2097151 B/s remain, less than
    # bundle-1's 2 MB, and every other bundle is larger: skipped, not split
    assert bundles_of(out) == ["bundle-10"]
    assert "throughput of broker-1 110.00 MB/s" in out[0].reason
    assert "offload 23068671 bytes/s" in out[0].reason
    ld.bundleData["bundle-1"] = bundle(tput=2 * MB - 1)
    assert bundles_of(UniformLoadShedder().find_bundles_for_unloading(ld, DEFAULT, NOW)) == ["bundle-10", "bundle-1"]


def _rate_load(bundle_rates: dict[str, float], hot_rate: float = 10000, cold_rate: float = 4995) -> object:
    data = {b: bundle(rate=r, tput=r) for b, r in bundle_rates.items()}
    return load(
        {"hot": broker(0, data, rate=hot_rate, tput=100 * MB), "cold": broker(0, [], rate=cold_rate, tput=100 * MB)},
        data,
    )


def test_uniform_truncates_the_need_and_each_decrement_to_int():
    # need = int(5005 x 0.2) = 1001; after 600.9 the remaining is 1001 - int(600.9) = 401 (not 400.1), so 400.5
    # still fits; then 401 - int(400.5) = 1 remains: 1.0 fits, 1.5 does not
    out = UniformLoadShedder().find_bundles_for_unloading(_rate_load({"a": 600.9, "b": 400.5, "c": 1.0}), DEFAULT, NOW)
    assert bundles_of(out) == ["a", "b", "c"]
    assert "differs by 100.20% > 50%; offload 1001 msg/s" in out[0].reason
    out = UniformLoadShedder().find_bundles_for_unloading(_rate_load({"a": 600.9, "b": 400.5, "c": 1.5}), DEFAULT, NOW)
    assert bundles_of(out) == ["a", "b"]


def test_uniform_skips_zero_traffic_bundles_as_upstream_pr_21214_expects():
    out = UniformLoadShedder().find_bundles_for_unloading(_rate_load({"a": 900.0, "idle": 0.0}), DEFAULT, NOW)
    assert bundles_of(out) == ["a"]


def test_uniform_rate_has_priority_over_throughput():
    data = {"a": bundle(rate=900, tput=90 * MB), "b": bundle(rate=50, tput=1 * MB)}
    ld = load({"hot": broker(0, data, rate=10000, tput=100 * MB), "cold": broker(0, [], rate=4995, tput=1 * MB)}, data)
    out = UniformLoadShedder().find_bundles_for_unloading(ld, DEFAULT, NOW)
    assert bundles_of(out) == ["a", "b"]  # in msg/s: 900 and 50 fit 1001
    assert "msg rate of hot" in out[0].reason
    no_rate = DEFAULT.with_values({"loadBalancerMsgRateDifferenceShedderThreshold": 0})
    out = UniformLoadShedder().find_bundles_for_unloading(ld, no_rate, NOW)
    assert bundles_of(out) == ["b"]  # in bytes/s: need int(99 MB x 0.2) = 19.8 MB; 90 MB is skipped


def test_uniform_needs_two_bundles_and_the_minimum():
    one = {"a": bundle(rate=900)}
    ld = load({"hot": broker(0, one, rate=10000), "cold": broker(0, [], rate=4995)}, one)
    assert UniformLoadShedder().find_bundles_for_unloading(ld, DEFAULT, NOW) == []
    # need = int(4000 x 0.2) = 800 < minUnloadMessage 1000
    assert (
        UniformLoadShedder().find_bundles_for_unloading(
            _rate_load({"a": 500.0, "b": 100.0}, hot_rate=5000, cold_rate=1000), DEFAULT, NOW
        )
        == []
    )


def test_uniform_with_no_brokers_or_balanced_brokers_does_nothing():
    assert UniformLoadShedder().find_bundles_for_unloading(load({}), DEFAULT, NOW) == []
    data = {"a": bundle(rate=100), "b": bundle(rate=100)}
    ld = load({"x": broker(0, data, rate=1000, tput=MB), "y": broker(0, [], rate=900, tput=MB)}, data)
    assert UniformLoadShedder().find_bundles_for_unloading(ld, DEFAULT, NOW) == []


# -- AvgShedder ---------------------------------------------------------------------------------

AVG_CFG = DEFAULT.with_values({"maxUnloadPercentage": 0.5, "minUnloadMessage": 100})


def _docs_cluster() -> object:
    """The Pulsar docs example: scores 20, 30, 52, 70, 80; max broker 1000 msg/s, min broker 500 msg/s."""
    data = {
        "m1": bundle(rate=200),
        "m2": bundle(rate=150),
        "m3": bundle(rate=600),
        "m4": bundle(rate=50),
        "m5": bundle(rate=0),
    }
    brokers = {
        "b80": broker(80, data, rate=1000),
        "b30": broker(30, [], rate=700),
        "b52": broker(52, [], rate=700),
        "b20": broker(20, [], rate=500),
        "b70": broker(70, [], rate=700),
    }
    return load(brokers, data)


def test_avg_shedder_docs_example_moves_250_msgs_to_the_least_loaded_broker_on_the_second_hit():
    shedder = AvgShedder()
    assert shedder.find_bundles_for_unloading(_docs_cluster(), AVG_CFG, NOW) == []  # 1 hit above 40
    out = shedder.find_bundles_for_unloading(_docs_cluster(), AVG_CFG, NOW)
    # (1000 - 500) x 0.5 = 250 msg/s: 200 fits, 150 does not, 50 fits (remaining 0), zero traffic never
    assert [(u.broker, u.bundle, u.destination) for u in out] == [("b80", "m1", "b20"), ("b80", "m4", "b20")]
    assert "score 80.00 of b80 - score 20.00 of b20 = 60.00" in out[0].reason
    assert "2 consecutive hits >= 2 above high threshold 40" in out[0].reason
    assert "move 250.00 msg/s" in out[0].reason
    assert shedder.planned == {"m1": "b20", "m4": "b20"}
    # counters were cleared by the trigger: the next cycle is a first hit again
    assert shedder.find_bundles_for_unloading(_docs_cluster(), AVG_CFG, NOW) == []


def _pair(diff: float) -> object:
    data = {"x1": bundle(rate=1500), "x2": bundle(rate=1500)}
    # need = (10000 - 0) x 0.2 = 2000 msg/s: x1 fits, x2 no longer does
    return load({"low": broker(10, [], rate=0), "high": broker(10 + diff, data, rate=10000)}, data)


def test_avg_shedder_triggers_after_8_consecutive_hits_above_15():
    shedder = AvgShedder()
    results = [shedder.find_bundles_for_unloading(_pair(20), DEFAULT, NOW) for _ in range(8)]
    assert [len(r) for r in results] == [0] * 7 + [1]
    assert "8 consecutive hits >= 8 above low threshold 15" in results[7][0].reason
    assert (results[7][0].bundle, results[7][0].destination) == ("x1", "low")


def test_avg_shedder_hits_must_be_consecutive():
    shedder = AvgShedder()
    for _ in range(7):
        assert shedder.find_bundles_for_unloading(_pair(20), DEFAULT, NOW) == []
    assert shedder.find_bundles_for_unloading(_pair(10), DEFAULT, NOW) == []  # calm cycle clears the counters
    assert shedder.hit_low == {} and shedder.hit_high == {}
    for _ in range(7):
        assert shedder.find_bundles_for_unloading(_pair(20), DEFAULT, NOW) == []
    assert len(shedder.find_bundles_for_unloading(_pair(20), DEFAULT, NOW)) == 1


def test_avg_shedder_a_high_diff_after_low_hits_resets_nothing_but_high_needs_two():
    shedder = AvgShedder()
    shedder.find_bundles_for_unloading(_pair(20), DEFAULT, NOW)
    assert shedder.find_bundles_for_unloading(_pair(45), DEFAULT, NOW) == []  # high 1, low 2
    assert shedder.hit_high == {"low": 1, "high": 1} and shedder.hit_low == {"low": 2, "high": 2}


def test_avg_shedder_sort_truncates_score_differences_like_pulsar():
    # scores 50.9 and 50.2 compare equal ((int) 0.7 == 0) so input order holds: 50.2 is the last, the "max" broker
    data = {"a1": bundle(rate=3000), "b1": bundle(rate=3000)}
    brokers = {
        "a": broker(50.9, ["a1", "a9"], rate=20000),
        "b": broker(50.2, ["b1", "b9"], rate=20000),
        "c": broker(10, [], rate=0),
    }
    shedder = AvgShedder()
    shedder.find_bundles_for_unloading(load(brokers, data), DEFAULT, NOW)
    out = shedder.find_bundles_for_unloading(load(brokers, data), DEFAULT, NOW)
    assert [(u.broker, u.bundle, u.destination) for u in out] == [("b", "b1", "c")]


def test_avg_shedder_no_pairs_clears_every_counter_and_single_broker_never_sheds():
    shedder = AvgShedder()
    shedder.find_bundles_for_unloading(_pair(50), DEFAULT, NOW)
    assert shedder.hit_high
    assert shedder.find_bundles_for_unloading(_pair(1), DEFAULT, NOW) == []
    assert shedder.hit_high == {} and shedder.hit_low == {}
    only = load({"x": broker(99, ["a", "b"], rate=5000)}, {"a": bundle(rate=100), "b": bundle(rate=100)})
    for _ in range(10):
        assert shedder.find_bundles_for_unloading(only, DEFAULT, NOW) == []
    assert shedder.find_bundles_for_unloading(load({}), DEFAULT, NOW) == []


def test_avg_shedder_falls_back_to_throughput_and_skips_small_moves():
    data = {"t1": bundle(tput=3 * MB, rate=10), "t2": bundle(tput=2 * MB, rate=10)}
    ld = load({"lo": broker(0, [], tput=0, rate=0), "hi": broker(60, data, tput=20 * MB, rate=100)}, data)
    shedder = AvgShedder()
    shedder.find_bundles_for_unloading(ld, DEFAULT, NOW)
    out = shedder.find_bundles_for_unloading(ld, DEFAULT, NOW)
    # need msg 20 <= 1000, need tput 4 MB > 1 MB: 3 MB fits, 2 MB does not (1 MB left)
    assert bundles_of(out) == ["t1"] and "move 4.00 MB/s" in out[0].reason
    small = load({"lo": broker(0), "hi": broker(60, data, tput=2 * MB, rate=100)}, data)
    shedder.find_bundles_for_unloading(small, DEFAULT, NOW)
    assert shedder.find_bundles_for_unloading(small, DEFAULT, NOW) == []


def test_avg_shedder_sheds_a_sole_bundle_when_it_fits():
    data = {"solo": bundle(rate=500)}
    ld = load({"lo": broker(0), "hi": broker(60, data, rate=6000)}, data)  # need 1200 > 1000
    shedder = AvgShedder()
    shedder.find_bundles_for_unloading(ld, DEFAULT, NOW)
    assert bundles_of(shedder.find_bundles_for_unloading(ld, DEFAULT, NOW)) == ["solo"]


def test_avg_shedder_placement_returns_the_planned_destination():
    shedder = AvgShedder()
    shedder.find_bundles_for_unloading(_docs_cluster(), AVG_CFG, NOW)
    shedder.find_bundles_for_unloading(_docs_cluster(), AVG_CFG, NOW)
    ld = _docs_cluster()
    sel = shedder.select(["b30", "b20", "b80"], "m1", ld.bundleData["m1"], ld, AVG_CFG, random.Random(1))
    assert (sel.selected, sel.best) == ("b20", ("b20",))


def test_avg_shedder_placement_without_a_plan_picks_from_sorted_candidates_and_remembers():
    shedder = AvgShedder()
    ld = _docs_cluster()
    rng = random.Random(7)
    sel = shedder.select(["b80", "b20", "b30"], "m1", ld.bundleData["m1"], ld, DEFAULT, rng)
    assert sel.best == ("b20", "b30", "b80") and sel.selected in sel.best
    again = shedder.select(["b30", "b80", "b20"], "m1", ld.bundleData["m1"], ld, DEFAULT, rng)
    assert (again.selected, again.best) == (sel.selected, (sel.selected,))
    # the planned broker is gone: a fresh pick among the remaining candidates
    rest = [b for b in ("b20", "b30", "b80") if b != sel.selected]
    third = shedder.select(rest, "m1", ld.bundleData["m1"], ld, DEFAULT, rng)
    assert third.selected in rest and third.best == tuple(rest)
    assert shedder.select([], "m1", ld.bundleData["m1"], ld, DEFAULT, rng).selected is None


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0, 120), st.integers(0, 5)), min_size=0, max_size=8))
def test_no_strategy_unloads_a_bundle_twice_or_from_a_broker_that_does_not_own_it(spec):
    brokers, data = {}, {}
    for i, (cpu, n) in enumerate(spec):
        names = [f"n{i}/b{k}" for k in range(n)]
        brokers[f"broker-{i}"] = broker(cpu, names, tput=(k := n * 20) * MB, rate=k * 100)
        data |= {name: bundle(tput=(j + 1) * 7 * MB, rate=(j + 1) * 300) for j, name in enumerate(names)}
    owner = {b: name for name, bd in brokers.items() for b in bd.localData.bundles}
    for strategy in (OverloadShedder(), ThresholdShedder(), UniformLoadShedder(), AvgShedder()):
        for _ in range(3):
            out = strategy.find_bundles_for_unloading(load(brokers, data), DEFAULT, NOW)
            assert len({u.bundle for u in out}) == len(out)
            assert all(owner[u.bundle] == u.broker and u.reason for u in out)


# -- registry -----------------------------------------------------------------------------------


def make_shedding_strategy(name: str) -> object:
    return shedding_entry(name).factory()


@pytest.mark.parametrize("name", ["ThresholdShedder", "org.apache.pulsar.broker.loadbalance.impl.ThresholdShedder"])
def test_registry_accepts_short_and_class_names_and_makes_fresh_instances(name):
    a, b = make_shedding_strategy(name), make_shedding_strategy(name)
    assert isinstance(a, ThresholdShedder) and a is not b


def test_registry_rejects_unknown_names_listing_the_valid_ones():
    with pytest.raises(InputError) as e:
        make_shedding_strategy("FooShedder")
    assert "unknown shedding strategy 'FooShedder'" in str(e.value)
    assert "OverloadShedder, ThresholdShedder, UniformLoadShedder, AvgShedder, TransferShedder" in str(e.value)
