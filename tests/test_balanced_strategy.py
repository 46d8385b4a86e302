"""BalancedPlanShedder (bundlewise's own strategy) on hand-built load data: exact plans, hysteresis,
cool-down, in-flight moves and load-aware placement; and its registration."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from bundlewise.algorithms.balanced.estimate import fit_cost_model
from bundlewise.algorithms.balanced.shedder import BalancedPlanShedder
from bundlewise.algorithms.families import ModularFamily
from bundlewise.algorithms.registry import (
    default_shedding_names,
    expand_all,
    make_family,
    make_placement,
    shedding_entry,
    shedding_names,
)
from bundlewise.cli.main import main
from bundlewise.config import Config
from bundlewise.model.decisions import UnloadReason
from bundlewise.model.load import (
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    NamespaceBundleStats,
    TimeAverageMessageData,
)
from bundlewise.model.resources import ResourceUsage, SystemResources

MINUTE = 60_000
NS = "t/ns"
A1, A2, A3 = f"{NS}/0x00000000_0x10000000", f"{NS}/0x10000000_0x20000000", f"{NS}/0x20000000_0x30000000"
B1 = f"{NS}/0x30000000_0x40000000"


def stats(rate: float, topics: int = 0) -> NamespaceBundleStats:
    return NamespaceBundleStats(msgRateIn=rate, topics=topics)


def broker(bundles: dict[str, float], cores: float = 8, at: int = 0, topics: int = 0) -> BrokerData:
    """A broker whose CPU is 1 % of one core per 1,000 msg/s of its bundles (no bytes)."""
    last = {b: stats(r, topics) for b, r in bundles.items()}
    rate = sum(bundles.values())
    res = SystemResources(
        cpu=ResourceUsage(rate / 1000, cores * 100),
        bandwidth_in=ResourceUsage(0, 1e7),
        bandwidth_out=ResourceUsage(0, 1e7),
    )
    return BrokerData(LocalBrokerData.of_stats(res, last, lastUpdate=at))


def cluster(**brokers: BrokerData) -> LoadData:
    data = {}
    for bd in brokers.values():
        for name, s in bd.localData.lastStats.items():
            window = TimeAverageMessageData(10, 10, 0, 0, s.msgRateIn, 0)
            data[name] = BundleData(window, TimeAverageMessageData(1000, 10, 0, 0, s.msgRateIn, 0), s.topics)
    return LoadData(dict(brokers), data, {})


def skewed() -> LoadData:
    """a at 55 % (300k + 100k + 40k msg/s), b at 25 %, c idle: mean 26.7 %."""
    return cluster(a=broker({A1: 300_000, A2: 100_000, A3: 40_000}), b=broker({B1: 200_000}), c=broker({}))


def test_cost_model_is_one_percent_of_a_core_per_thousand_messages() -> None:
    model = fit_cost_model(skewed().brokers.values())
    assert model.cpu_per_msg == pytest.approx(0.001)
    assert model.cpu_per_byte == 0.0


def test_second_cycle_moves_the_largest_bundle_to_the_idle_broker_and_nothing_else() -> None:
    s, config = BalancedPlanShedder(), Config()
    assert s.find_bundles_for_unloading(skewed(), config, MINUTE) == []  # one hit of two
    assert s.hits == 1
    assert s.idle_reason == (
        "loads 0.0%..55.0% around a fleet mean of 26.7%: hit 1 of bundlewiseBalancedHitCount 2 (no broker above 85%)"
    )
    out = s.find_bundles_for_unloading(skewed(), config, 2 * MINUTE)
    assert [(u.broker, u.bundle, u.destination) for u in out] == [("a", A1, "c")]
    assert out[0].cause is UnloadReason.UNDERLOADED
    assert out[0].reason == (
        "BalancedPlanShedder: a at 55.0% (cpu) vs fleet mean 26.7%; move to c at 0.0%: a -> 17.5%, "
        "c -> 37.5% (gain 0.1313); c bound by cpu; cost 0.0000 paid; rejected: next best "
        "t/ns/0x10000000_0x20000000 to c (gain 0.1063)"
    )


def test_the_planned_destination_is_what_the_placement_half_returns() -> None:
    family = make_family("BalancedPlanShedder", Config())
    assert isinstance(family, ModularFamily) and family.placement.strategy is family.shedder
    config = Config().with_values({"bundlewiseBalancedHitCount": 1})
    result = family.shed(skewed(), config, MINUTE, random.Random(0))
    assert [(u.broker, u.bundle, u.destination) for u in result.unloaded] == [("a", A1, "c")]
    assert family.shedder.planned == {}  # plans do not outlive the cycle


def test_jitter_inside_the_trigger_moves_nothing_and_clears_the_hits() -> None:
    s, config = BalancedPlanShedder(), Config()
    s.find_bundles_for_unloading(skewed(), config, MINUTE)
    calm = cluster(a=broker({A1: 240_000}), b=broker({B1: 200_000}), c=broker({A2: 176_000}))  # 30/25/22 %
    assert s.find_bundles_for_unloading(calm, config, 2 * MINUTE) == []
    assert s.hits == 0
    assert s.idle_reason.startswith("balanced: loads 22.0%..30.0% around a fleet mean of 25.7%")
    assert s.find_bundles_for_unloading(skewed(), config, 3 * MINUTE) == []  # counting starts again


def test_an_overloaded_broker_is_relieved_on_the_first_cycle() -> None:
    c1 = f"{NS}/0x40000000_0x50000000"
    hot = cluster(a=broker({A1: 400_000, A2: 160_000, A3: 160_000}), b=broker({B1: 320_000}), c=broker({c1: 320_000}))
    out = BalancedPlanShedder().find_bundles_for_unloading(hot, Config(), MINUTE)  # 90/40/40 %
    # 20 % to b (a 70, b 60), then 20 % to c (a 50, c 60); the 50 % bundle would only move the hot spot
    assert [(u.broker, u.bundle, u.destination) for u in out] == [("a", A2, "b"), ("a", A3, "c")]
    assert {u.cause for u in out} == {UnloadReason.OVERLOADED}


def test_a_moved_bundle_and_its_split_children_wait_out_the_cool_down() -> None:
    s, config = BalancedPlanShedder(), Config().with_values({"bundlewiseBalancedHitCount": 1})
    s.find_bundles_for_unloading(skewed(), config, MINUTE)
    # a1 split on c into two children that now make c the hot one; a is idle
    c1, c2 = f"{NS}/0x00000000_0x08000000", f"{NS}/0x08000000_0x10000000"
    later = cluster(
        a=broker({}, at=59 * MINUTE),
        b=broker({B1: 200_000}, at=59 * MINUTE),
        c=broker({c1: 300_000, c2: 100_000}, at=59 * MINUTE),
    )
    assert s.find_bundles_for_unloading(later, config, 60 * MINUTE) == []
    # 2 h after the move its cool-down is over, but c (50 %) is not near the overload threshold: the repeat
    # guard (bundlewiseBalancedRepeatGuardMinutes, 60) holds the child another hour
    assert s.find_bundles_for_unloading(later, config, 122 * MINUTE) == []
    out = s.find_bundles_for_unloading(later, config, 182 * MINUTE)  # 3 h after the move
    assert [(u.broker, u.bundle, u.destination) for u in out] == [("c", c1, "a")]


def test_a_move_counts_on_its_destination_until_the_destination_reports_again() -> None:
    s, config = BalancedPlanShedder(), Config().with_values({"bundlewiseBalancedHitCount": 1})
    s.find_bundles_for_unloading(skewed(), config, MINUTE)  # a1 (37.5 %) to c
    stale = skewed()  # nobody has written since: c still looks idle, a still lists a1
    assert s.find_bundles_for_unloading(stale, config, 2 * MINUTE) == []


def test_lookups_fill_the_emptiest_broker_one_bundle_at_a_time() -> None:
    family = make_family("BalancedPlanShedder", Config())
    ld = cluster(a=broker({A1: 400_000}), b=broker({B1: 400_000}), c=broker({A3: 80_000}))  # 50/50/10 %
    picks = []
    for k in range(5):
        name = f"{NS}/0x{0x40000000 + k:08x}_0x{0x40000001 + k:08x}"
        window = TimeAverageMessageData(10, 10, 0, 0, 80_000, 0)  # 10 % of a broker
        ld.bundleData[name] = BundleData(window, TimeAverageMessageData(1000, 10, 0, 0, 80_000, 0), 1)
        picks.append(family.assign(name, ld, Config(), random.Random(0)).broker)
    assert picks == ["c", "c", "c", "c", "a"]


def test_placement_weighs_capacity_a_large_broker_takes_what_would_tip_a_small_one() -> None:
    small, big = broker({A1: 360_000}, cores=8), broker({B1: 1_600_000}, cores=32)  # 45 % and 50 %
    ld = cluster(small=small, big=big)
    window = TimeAverageMessageData(10, 10, 0, 0, 80_000, 0)
    data = BundleData(window, TimeAverageMessageData(1000, 10, 0, 0, 80_000, 0), 1)
    sel = make_placement("BalancedPlanShedder").select(["big", "small"], A2, data, ld, Config(), random.Random(0))
    assert sel.selected == "big"  # small would go to 55 %, big to 52.5 %


def test_on_a_mixed_fleet_load_moves_from_the_hot_small_broker_to_the_cool_large_one() -> None:
    ld = cluster(small=broker({A1: 300_000, A2: 200_000, A3: 100_000}, cores=8), big=broker({B1: 640_000}, cores=32))
    out = BalancedPlanShedder().find_bundles_for_unloading(
        ld, Config().with_values({"bundlewiseBalancedHitCount": 1}), MINUTE
    )
    # 75 % vs 20 %: moving 300k gives 37.5 % / 29.4 %; an unweighted sum of squares would refuse it
    assert [(u.broker, u.bundle, u.destination) for u in out] == [("small", A1, "big")]


def test_registered_once_outside_the_default_list_and_inside_all() -> None:
    entry = shedding_entry("BalancedPlanShedder")
    assert entry.own and entry.family is ModularFamily
    assert "BalancedPlanShedder" not in default_shedding_names()
    assert default_shedding_names() == (
        "OverloadShedder",
        "ThresholdShedder",
        "UniformLoadShedder",
        "AvgShedder",
        "TransferShedder",
    )
    assert expand_all(["all"]) == list(shedding_names()) and "BalancedPlanShedder" in shedding_names()
    assert make_placement("BalancedPlanShedder").name == "BalancedPlanShedder"


def test_shed_command_runs_it_unchanged_on_a_snapshot(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """OverloadShedderTest's broker (bundle-i with i MB/s in and out, 99.9 % bandwidth in) and an idle broker
    whose report has no limits yet: it counts as an average broker, so the three largest bundles move."""
    mb = 1024 * 1024
    data = {
        f"bundle-{i}": {"shortTermData": {"msgThroughputIn": i * mb, "msgThroughputOut": i * mb}} for i in range(1, 11)
    }
    doc = {
        "brokers": {
            "broker-1": {
                "bandwidthIn": {"usage": 999, "limit": 1000},
                "msgThroughputIn": 55 * mb,
                "msgThroughputOut": 55 * mb,
                "bundles": list(data),
            },
            "broker-2": {"bundles": []},
        },
        "bundleData": data,
    }
    path = tmp_path / "in.json"
    path.write_text(json.dumps(doc))
    assert main(["shed", "--strategy", "BalancedPlanShedder", str(path)]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.strip()]
    moves = [(u["broker"], u["bundle"], u["destination"]) for u in out[0]["unload"]]
    assert moves == [("broker-1", f"bundle-{i}", "broker-2") for i in (10, 9, 8)]
    assert "broker-1 -> 50.9%, broker-2 -> 49.0% (gain 0.0475);" in out[0]["unload"][2]["reason"]
