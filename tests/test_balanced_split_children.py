"""Split children placed by their measured load (issue: BalancedPlanShedder, second generation, item 4).

The owner that splits a bundle knows each topic's rates; the split decision carries each child's sum, and
``BalancedPlanShedder`` places a child by it until the child's own samples reach the leader, instead of
estimating every child as its range's share of the parent.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from bundlewise.algorithms.balanced.shedder import BalancedPlanShedder
from bundlewise.algorithms.families import ModularFamily
from bundlewise.algorithms.registry import make_family
from bundlewise.algorithms.splitting.algorithms import TopicLoad, measured_children
from bundlewise.config import Config
from bundlewise.model.bundles import Bundle
from bundlewise.model.decisions import SplitDecision, SplitReason
from bundlewise.model.load import (
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    NamespaceBundleStats,
    TimeAverageMessageData,
)
from bundlewise.model.resources import ResourceUsage, SystemResources
from bundlewise.sim.columns import RATE_IN, TPUT_OUT
from bundlewise.sim.engine import Engine
from bundlewise.sim.run import make_workload
from bundlewise.sim.suite import suite_scenario

NS = "t/ns"
PARENT = f"{NS}/0x40000000_0x80000000"
HEAVY, LIGHT = f"{NS}/0x40000000_0x60000000", f"{NS}/0x60000000_0x80000000"
B1, C1 = f"{NS}/0x00000000_0x10000000", f"{NS}/0x10000000_0x20000000"


def test_each_child_sums_the_topics_whose_hash_it_holds() -> None:
    children = Bundle.parse(f"{NS}/0x00000000_0xffffffff").split_at([0x40000000, 0x80000000])
    topics = [
        TopicLoad("a", msgRateIn=10, msgThroughputIn=1000, hash_code=0x00000000),
        TopicLoad("b", msgRateIn=5, msgRateOut=7, hash_code=0x3FFFFFFF),
        TopicLoad("c", msgRateOut=2, msgThroughputOut=300, hash_code=0x40000000),  # on a boundary: the upper child
        TopicLoad("d", msgRateIn=1, hash_code=0xFFFFFFFF),  # the last child's closed end
    ]
    got = measured_children(children, topics)
    assert got == (
        NamespaceBundleStats(msgRateIn=15, msgThroughputIn=1000, msgRateOut=7, topics=2),
        NamespaceBundleStats(msgRateOut=2, msgThroughputOut=300, topics=1),
        NamespaceBundleStats(msgRateIn=1, topics=1),
    )


def test_a_topic_outside_every_child_is_ignored() -> None:
    children = Bundle.parse(f"{NS}/0x40000000_0x80000000").split_at([0x60000000])
    got = measured_children(children, [TopicLoad("x", msgRateIn=9, hash_code=0x10)])
    assert got == (NamespaceBundleStats(), NamespaceBundleStats())


def test_a_carried_out_split_pairs_children_with_their_loads_or_refuses_a_mismatch() -> None:
    d = SplitDecision(PARENT, "a", (SplitReason.MSG_RATE,))
    heavy, light = NamespaceBundleStats(msgRateIn=392_000), NamespaceBundleStats(msgRateIn=8_000)
    done = d.done("range_equally_divide", [HEAVY, LIGHT], [heavy, light])
    assert done.measured_children() == {HEAVY: heavy, LIGHT: light}
    assert d.done("range_equally_divide", [HEAVY, LIGHT]).measured_children() == {}
    with pytest.raises(ValueError, match="1 measured loads for 2 children"):
        d.done("range_equally_divide", [HEAVY, LIGHT], [heavy])


def _broker(bundles: dict[str, float]) -> BrokerData:
    """8 cores; 1 % of one core per 1,000 msg/s of its bundles."""
    last = {b: NamespaceBundleStats(msgRateIn=r) for b, r in bundles.items()}
    rate = sum(bundles.values())
    res = SystemResources(
        cpu=ResourceUsage(rate / 1000, 800),
        bandwidth_in=ResourceUsage(0, 1e7),
        bandwidth_out=ResourceUsage(0, 1e7),
    )
    return BrokerData(LocalBrokerData.of_stats(res, last))


def _cluster() -> LoadData:
    """a at 50 % with the parent (400k msg/s) in its report, b at 30 %, c at 35 %; the children have no samples."""
    brokers = {
        "a": _broker({PARENT: 400_000}),
        "b": _broker({B1: 240_000}),
        "c": _broker({C1: 280_000}),
    }
    data = {}
    for bd in brokers.values():
        for name, s in bd.localData.lastStats.items():
            avg = TimeAverageMessageData(1000, 10, s.msgRateIn, 0, s.msgRateIn, 0)
            data[name] = BundleData(avg, avg, 1)
    return LoadData(brokers, data, {})


def _place_light_then_heavy(family: ModularFamily) -> dict[str, str | None]:
    load = _cluster()
    return {b: family.assign(b, load, Config(), random.Random(0)).broker for b in (LIGHT, HEAVY)}


def test_without_measured_loads_each_child_is_half_the_parent_and_the_heavy_one_lands_on_the_fuller_broker() -> None:
    # light as 25 %: b (30 -> 55); heavy as 25 %: c (35 -> 60) rather than b (55 -> 80) -- in truth c goes to 84 %
    assert _place_light_then_heavy(make_family("BalancedPlanShedder", Config())) == {LIGHT: "b", HEAVY: "c"}


def test_measured_children_are_placed_by_what_they_carry() -> None:
    family = make_family("BalancedPlanShedder", Config())
    assert isinstance(family, ModularFamily)
    heavy, light = NamespaceBundleStats(msgRateIn=392_000), NamespaceBundleStats(msgRateIn=8_000)
    done = SplitDecision(PARENT, "a", (SplitReason.MSG_RATE,)).done(
        "range_equally_divide", [HEAVY, LIGHT], [heavy, light]
    )
    family.split_done(done)
    # light as 1 %: b (30 -> 31); heavy as 49 %: b (31 -> 80) rather than c (35 -> 84)
    assert _place_light_then_heavy(family) == {LIGHT: "b", HEAVY: "b"}
    strategy = family.shedder
    assert isinstance(strategy, BalancedPlanShedder)
    # what each placement assumed the child weighs: its measured rate at the fleet's 0.001 CPU-% per msg/s
    assert strategy.assumed[HEAVY][0] == pytest.approx(392.0)
    assert strategy.assumed[LIGHT][0] == pytest.approx(8.0)


def test_the_simulator_hands_each_split_childs_measured_topics_to_the_strategy() -> None:
    scenario = suite_scenario("hot-partitioned-topic")
    seen: list[str] = []
    known: set[str] = set()

    def probe(engine: Engine, phase: str) -> None:
        if phase != "splits":
            return
        shedder = engine.manager.family.shedder  # type: ignore[attr-defined]
        cl = engine.cluster
        for child, (stats, _) in shedder.measured.items():
            if child in known:
                continue
            known.add(child)  # new this tick: measured on this tick's rates
            tids = np.asarray(cl.topics_of(cl.bundle_id[child]), dtype=np.int64)
            assert stats.topics == len(tids)
            assert stats.msgRateIn == pytest.approx(float(engine._rates[RATE_IN][tids].sum()), rel=1e-9)
            assert stats.msgThroughputOut == pytest.approx(float(engine._rates[TPUT_OUT][tids].sum()), rel=1e-9)
            seen.append(child)

    result = Engine(scenario, make_workload(scenario, None), "BalancedPlanShedder", probe=probe).run()
    assert result.metrics["splits"] > 0
    assert seen, "no split child's measured load reached the strategy"
