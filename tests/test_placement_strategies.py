"""Placement strategies on hand-built LoadData (Pulsar ModularLoadManagerStrategyTest)."""

from __future__ import annotations

import copy
import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bundlewise.algorithms.placement.least_long_term_message_rate import LeastLongTermMessageRate, long_term_score
from bundlewise.algorithms.placement.least_resource_usage import LeastResourceUsageWithWeight
from bundlewise.algorithms.placement.round_robin import MAX_INT, RoundRobinBrokerSelector
from bundlewise.algorithms.registry import make_placement as make_placement_strategy
from bundlewise.config import Config
from bundlewise.model.errors import InputError
from bundlewise.model.load import BrokerData, BundleData, LoadData, LocalBrokerData, TimeAverageBrokerData
from bundlewise.model.resources import ResourceUsage, SystemResources

DATA = BundleData.default()


def ta(rate_in: float) -> TimeAverageBrokerData:
    return TimeAverageBrokerData(longTermMsgRateIn=rate_in)


def usage_broker(
    usage: float, *, bundles: tuple[str, ...] = ("0x00000000_0xffffffff",), rate: float = 100.0
) -> BrokerData:
    """Pulsar's test helper: every resource at ``usage``/100, 100 msg/s in and out, one bundle."""
    r = ResourceUsage(usage, 100)
    local = LocalBrokerData(
        resources=SystemResources(r, r, r, r, r), msgRateIn=rate, msgRateOut=rate, bundles=list(bundles)
    )
    return BrokerData(local)


def lltmr_load() -> LoadData:
    return LoadData(
        {
            "1": BrokerData(LocalBrokerData(), ta(100)),
            "2": BrokerData(LocalBrokerData(), ta(200)),
            "3": BrokerData(LocalBrokerData(), ta(300)),
        }
    )


# -- LeastLongTermMessageRate --------------------------------------------------------------------


def test_least_long_term_message_rate_score_sequence() -> None:
    load, cfg, rng, s = lltmr_load(), Config(), random.Random(0), LeastLongTermMessageRate()
    assert s.select(["1", "2", "3"], "b", DATA, load, cfg, rng).selected == "1"
    load.brokers["1"].timeAverageData = ta(400)
    assert s.select(["1", "2", "3"], "b", DATA, load, cfg, rng).selected == "2"
    load.brokers["2"].localData.resources = SystemResources(cpu=ResourceUsage(90, 100))
    sel = s.select(["1", "2", "3"], "b", DATA, load, cfg, rng)
    assert sel.selected == "3" and sel.best == ("3",)
    assert s.scores(["1", "2", "3"], load, cfg) == [400.0, math.inf, 300.0]


def test_least_long_term_message_rate_adds_preallocated_long_term_rates() -> None:
    load = lltmr_load()
    load.brokers["1"].preallocatedBundleData["x"] = BundleData.default()  # 50 in + 50 out long-term
    assert LeastLongTermMessageRate().scores(["1", "2"], load, Config()) == [200.0, 200.0]
    sel = LeastLongTermMessageRate().select(["1", "2"], "b", DATA, load, Config(), random.Random(1))
    assert sel.best == ("1", "2") and sel.selected in sel.best


def test_overload_is_strictly_above_threshold() -> None:
    b = BrokerData(LocalBrokerData(resources=SystemResources(cpu=ResourceUsage(85, 100))), ta(7))
    assert long_term_score(b, Config().weights(), 0.85) == 7.0
    b.localData.resources = SystemResources(cpu=ResourceUsage(86, 100))
    assert long_term_score(b, Config().weights(), 0.85) == math.inf


def test_all_overloaded_picks_randomly_among_all() -> None:
    hot = SystemResources(cpu=ResourceUsage(95, 100))
    load = LoadData({n: BrokerData(LocalBrokerData(resources=hot), ta(i)) for i, n in enumerate("abc")})
    picks = {
        LeastLongTermMessageRate().select(["a", "b", "c"], "x", DATA, load, Config(), random.Random(seed)).selected
        for seed in range(40)
    }
    assert picks == {"a", "b", "c"}
    assert LeastLongTermMessageRate().select(["a", "b", "c"], "x", DATA, load, Config(), random.Random(0)).best == (
        "a",
        "b",
        "c",
    )


def test_random_tie_break_is_reproducible_with_a_seed() -> None:
    load = LoadData({n: BrokerData(LocalBrokerData()) for n in "abcd"})
    a = [
        LeastLongTermMessageRate().select(list("abcd"), "x", DATA, load, Config(), random.Random(5)).selected
        for _ in range(3)
    ]
    assert len(set(a)) == 1


def test_no_candidates_gives_no_broker() -> None:
    for name in ("LeastLongTermMessageRate", "LeastResourceUsageWithWeight", "RoundRobinBrokerSelector"):
        sel = make_placement_strategy(name).select([], "x", DATA, LoadData(), Config(), random.Random(0))
        assert sel.selected is None and sel.best == ()


def test_candidate_without_load_data_is_bad_input() -> None:
    with pytest.raises(InputError, match="'9' has no load data"):
        LeastLongTermMessageRate().select(["1", "9"], "x", DATA, lltmr_load(), Config(), random.Random(0))


def test_strategies_do_not_mutate_their_input() -> None:
    load = lltmr_load()
    for b in load.brokers.values():
        b.localData.bundles = ["t/ns/0x00000000_0xffffffff"]
        b.localData.msgRateIn = 5
    before = copy.deepcopy(load)
    cands = ["1", "2", "3"]
    for name in ("LeastLongTermMessageRate", "LeastResourceUsageWithWeight", "RoundRobinBrokerSelector"):
        make_placement_strategy(name).select(cands, "x", DATA, load, Config(), random.Random(0))
    assert load == before and cands == ["1", "2", "3"]


@given(st.lists(st.integers(0, 3), min_size=1, max_size=8), st.integers(0, 1000))
def test_selected_is_always_one_of_best_and_best_has_the_least_score(rates: list[int], seed: int) -> None:
    names = [f"b{i}" for i in range(len(rates))]
    load = LoadData({n: BrokerData(LocalBrokerData(), ta(r)) for n, r in zip(names, rates, strict=True)})
    sel = LeastLongTermMessageRate().select(names, "x", DATA, load, Config(), random.Random(seed))
    assert sel.selected in sel.best
    assert list(sel.best) == [n for n, r in zip(names, rates, strict=True) if r == min(rates)]


# -- LeastResourceUsageWithWeight ---------------------------------------------------------------

LRU_CONFIG = Config().with_values(
    {
        "loadBalancerCPUResourceWeight": 1.0,
        "loadBalancerMemoryResourceWeight": 0.1,
        "loadBalancerDirectMemoryResourceWeight": 0.1,
        "loadBalancerBandwithInResourceWeight": 1.0,
        "loadBalancerBandwithOutResourceWeight": 1.0,
        "loadBalancerHistoryResourcePercentage": 0.5,
        "loadBalancerAverageResourceUsageDifferenceThresholdPercentage": 5,
    }
)


def test_least_resource_usage_with_weight_history_sequence() -> None:
    """Pulsar's testLeastResourceUsageWithWeight, with the history values checked exactly."""
    s, rng = LeastResourceUsageWithWeight(), random.Random(0)
    load = LoadData({"1": usage_broker(10), "2": usage_broker(30), "3": usage_broker(60), "4": usage_broker(5)})
    s.select(["1", "2", "3", "4"], "x", DATA, load, LRU_CONFIG, rng)
    assert s.history == pytest.approx({"1": 0.1, "2": 0.3, "3": 0.6, "4": 0.05})
    c = ["1", "2", "3"]
    sel = s.select(c, "x", DATA, load, LRU_CONFIG, rng)
    assert sel == type(sel)("1", ("1",))
    expected = [
        ((20, 30, 50), "1", (0.15, 0.3, 0.55)),
        ((30, 30, 40), "1", (0.225, 0.3, 0.475)),
        ((30, 30, 40), "1", (0.2625, 0.3, 0.4375)),
        ((35, 20, 45), "2", (0.30625, 0.25, 0.44375)),
    ]
    for usages, pick, history in expected:
        for name, u in zip(c, usages, strict=True):
            load.brokers[name] = usage_broker(u)
        sel = s.select(c, "x", DATA, load, LRU_CONFIG, rng)
        assert sel.selected == pick and sel.best == (pick,)
        assert [s.history[n] for n in c] == pytest.approx(list(history))
    # a restarted broker (no bundles) drops its history and takes the current usage 0
    load.brokers.update({"1": usage_broker(35), "2": usage_broker(20), "3": usage_broker(0, bundles=())})
    sel = s.select(c, "x", DATA, load, LRU_CONFIG, rng)
    assert sel.selected == "3" and s.history["3"] == 0.0
    assert s.history["1"] == pytest.approx(0.328125) and s.history["2"] == pytest.approx(0.225)


def test_idle_broker_history_is_reset() -> None:
    s = LeastResourceUsageWithWeight()
    load = LoadData({"a": usage_broker(80), "b": usage_broker(10)})
    s.select(["a", "b"], "x", DATA, load, Config(), random.Random(0))
    load.brokers["a"] = usage_broker(20, rate=0.0)
    s.select(["a", "b"], "x", DATA, load, Config(), random.Random(0))
    assert s.history["a"] == pytest.approx(0.2)  # not 0.9*0.8 + 0.1*0.2


def test_all_equal_usage_makes_every_candidate_best() -> None:
    load = LoadData({n: usage_broker(40) for n in "abc"})
    sel = LeastResourceUsageWithWeight().select(["a", "b", "c"], "x", DATA, load, Config(), random.Random(3))
    assert sel.best == ("a", "b", "c") and sel.selected in sel.best


def test_best_set_uses_the_delta_margin() -> None:
    # default delta 0.10: usages 0.10, 0.40, 0.70 -> avg 0.40; only 0.10 + 0.10 <= 0.40
    load = LoadData({"a": usage_broker(10), "b": usage_broker(40), "c": usage_broker(70)})
    sel = LeastResourceUsageWithWeight().select(["a", "b", "c"], "x", DATA, load, Config(), random.Random(3))
    assert sel.best == ("a",)


def test_best_set_boundary_is_inclusive() -> None:
    # delta 0.25: usages 0.25, 0.50, 0.75 -> avg 0.50; 0.25 + 0.25 <= 0.50 holds with equality
    cfg = Config().with_values({"loadBalancerAverageResourceUsageDifferenceThresholdPercentage": 25})
    load = LoadData({"a": usage_broker(25), "b": usage_broker(50), "c": usage_broker(75)})
    assert LeastResourceUsageWithWeight().select(["a", "b", "c"], "x", DATA, load, cfg, random.Random(0)).best == ("a",)
    cfg = Config().with_values({"loadBalancerAverageResourceUsageDifferenceThresholdPercentage": 26})
    sel = LeastResourceUsageWithWeight().select(["a", "b", "c"], "x", DATA, load, cfg, random.Random(0))
    assert sel.best == ("a", "b", "c")  # nobody qualifies -> all candidates


def test_departed_brokers_lose_their_history() -> None:
    s = LeastResourceUsageWithWeight()
    s.select(
        ["a", "b"], "x", DATA, LoadData({"a": usage_broker(10), "b": usage_broker(20)}), Config(), random.Random(0)
    )
    s.on_active_brokers_change({"b"})
    assert list(s.history) == ["b"]


# -- RoundRobinBrokerSelector -------------------------------------------------------------------


def _rr(s: RoundRobinBrokerSelector, cands: list[str]) -> str | None:
    return s.select(cands, "x", DATA, LoadData(), Config(), random.Random(0)).selected


def test_round_robin_sequence_and_cache_rules() -> None:
    """Pulsar's testRoundRobinBrokerSelector."""
    s = RoundRobinBrokerSelector()
    assert _rr(s, []) is None and s.count == 0  # the counter does not move
    assert [_rr(s, ["1", "2", "3"]) for _ in range(10)] == [str(i % 3 + 1) for i in range(10)]
    # same candidates reordered: the cached order keeps the rotation
    assert [_rr(s, ["2", "3", "1"]) for _ in range(10)] == [str(i % 3 + 1) for i in range(10, 20)]
    # index 20 % 3 = 2 -> cached "3" is gone -> re-copy -> "4"
    assert [_rr(s, ["1", "2", "4"]) for _ in range(6)] == ["4", "1", "2", "4", "1", "2"]
    assert [_rr(s, ["2", "4"]) for _ in range(4)] == ["2", "4", "2", "4"]


def test_round_robin_counter_wraps_to_zero() -> None:
    s = RoundRobinBrokerSelector()
    s.count = MAX_INT
    assert _rr(s, ["1", "2", "3"]) == str(MAX_INT % 3 + 1)
    assert s.count == 0


def test_round_robin_best_is_the_selected_broker() -> None:
    sel = RoundRobinBrokerSelector().select(["a", "b"], "x", DATA, LoadData(), Config(), random.Random(0))
    assert sel.selected == "a" and sel.best == ("a",)


# -- registry -----------------------------------------------------------------------------------


def test_registry_accepts_short_and_class_names() -> None:
    s = make_placement_strategy("org.apache.pulsar.broker.loadbalance.impl.LeastResourceUsageWithWeight")
    assert isinstance(s, LeastResourceUsageWithWeight) and s.name == "LeastResourceUsageWithWeight"
    assert make_placement_strategy("RoundRobinBrokerSelector").name == "RoundRobinBrokerSelector"
    assert make_placement_strategy("AvgShedder").name == "AvgShedder"
    name = "LeastLongTermMessageRate"
    assert make_placement_strategy(name) is not make_placement_strategy(name)


@pytest.mark.parametrize("bad", ["LeastLoaded", "com.example.LeastLongTermMessageRate", ""])
def test_registry_rejects_unknown_names(bad: str) -> None:
    with pytest.raises(InputError, match="expected one of LeastLongTermMessageRate, LeastResourceUsageWithWeight"):
        make_placement_strategy(bad)


@given(st.integers(1, 6), st.integers(0, MAX_INT - 7))
def test_round_robin_visits_every_candidate_once_per_turn(n: int, start: int) -> None:
    # (away from the wrap at 2^31 - 1, where Pulsar's counter restarts at 0 mid-turn)
    s = RoundRobinBrokerSelector()
    s.count = start
    cands = [f"b{i}" for i in range(n)]
    _rr(s, cands)  # settle the cache
    assert sorted(_rr(s, cands) or "" for _ in range(n)) == cands
