"""The leader's shedding cycle (``#doLoadShedding``): grace period, guards, destinations, recently-unloaded memory."""

from __future__ import annotations

from collections.abc import Sequence

from bundlewise.algorithms.leader_cycle import LeaderSheddingCycle
from bundlewise.algorithms.shedding.base import Unload
from bundlewise.algorithms.shedding.overload import OverloadShedder
from bundlewise.algorithms.shedding.threshold import ThresholdShedder
from bundlewise.config import Config
from bundlewise.model.load import LoadData
from shedding_builders import broker, load, ten_bundle_broker

MIN = 60_000
NOW = 1_700_000_000_000
DEFAULT = Config()


class Scripted:
    """A strategy that returns a fixed plan and records what it saw."""

    name = "Scripted"

    def __init__(self, plan: list[Unload]) -> None:
        self.plan = plan
        self.seen_recent: list[dict[str, int]] = []
        self.completed: list[list[Unload]] = []

    def find_bundles_for_unloading(self, ld: LoadData, config: Config, now: int) -> list[Unload]:
        self.seen_recent.append(dict(ld.recentlyUnloadedBundles))
        return [u for u in self.plan if u.bundle not in ld.recentlyUnloadedBundles]

    def on_unload_attempt_completed(self, planned: Sequence[Unload]) -> None:
        self.completed.append(list(planned))


def to(dest: str | None):
    return lambda bundle, ld, cfg: dest


def overloaded() -> LoadData:
    b1, data = ten_bundle_broker(bandwidth_in=99.9)
    return load({"broker-1": b1, "broker-2": broker()}, data)


def test_cycle_unloads_to_the_chosen_destination_and_remembers_the_bundles():
    cycle = LeaderSheddingCycle(OverloadShedder(), to("broker-2"))
    first = cycle.run(overloaded(), DEFAULT, NOW)
    assert [(u.broker, u.bundle, u.destination) for u in first.unloaded] == [
        ("broker-1", "bundle-10", "broker-2"),
        ("broker-1", "bundle-9", "broker-2"),
    ]
    assert first.recently_unloaded == {"bundle-10": NOW, "bundle-9": NOW}
    # a minute later the same recorded load: the two are within the grace period, the next ones go
    second = cycle.run(overloaded(), DEFAULT, NOW + MIN)
    assert [u.bundle for u in second.unloaded] == ["bundle-8", "bundle-7"]


def test_grace_period_expiry_makes_a_bundle_sheddable_again():
    cycle = LeaderSheddingCycle(OverloadShedder(), to("broker-2"))
    cycle.run(overloaded(), DEFAULT, NOW)
    later = cycle.run(overloaded(), DEFAULT, NOW + 30 * MIN)  # cutoff = NOW: kept (not older than the cutoff)
    assert [u.bundle for u in later.unloaded] == ["bundle-8", "bundle-7"]
    much_later = cycle.run(overloaded(), DEFAULT, NOW + 30 * MIN + 1)  # NOW < cutoff: dropped
    assert [u.bundle for u in much_later.unloaded] == ["bundle-10", "bundle-9"]


def test_snapshot_recently_unloaded_bundles_are_honoured_and_pruned():
    ld = overloaded()
    ld.recentlyUnloadedBundles = {"bundle-10": NOW - 5 * MIN, "bundle-9": NOW - 31 * MIN}
    result = LeaderSheddingCycle(OverloadShedder(), to("broker-2")).run(ld, DEFAULT, NOW)
    assert [u.bundle for u in result.unloaded] == ["bundle-9", "bundle-8"]
    assert ld.recentlyUnloadedBundles == {"bundle-10": NOW - 5 * MIN, "bundle-9": NOW - 31 * MIN}  # input untouched


def test_destination_equal_to_source_or_absent_is_skipped_and_not_remembered():
    for dest, why in (
        ("broker-1", "destination broker-1 is the current owner"),
        (None, "no destination broker available"),
    ):
        result = LeaderSheddingCycle(OverloadShedder(), to(dest)).run(overloaded(), DEFAULT, NOW)
        assert result.unloaded == ()
        assert [(s.bundle, s.reason) for s in result.skipped] == [("bundle-10", why), ("bundle-9", why)]
        assert result.recently_unloaded == {}


def test_excluded_namespaces_are_skipped():
    plan = [Unload("a", "t/keep/0x00000000_0xffffffff", "r"), Unload("a", "t/skip/0x00000000_0xffffffff", "r")]
    cfg = DEFAULT.with_values({"loadBalancerSheddingExcludedNamespaces": "t/skip"})
    result = LeaderSheddingCycle(Scripted(plan), to("b")).run(load({"a": broker(), "b": broker()}), cfg, NOW)
    assert [u.bundle for u in result.unloaded] == ["t/keep/0x00000000_0xffffffff"]
    assert result.skipped[0].reason == "namespace t/skip is in loadBalancerSheddingExcludedNamespaces"


def test_plan_is_walked_broker_by_broker_and_reported_back_to_the_strategy():
    plan = [Unload("a", "x1", "r"), Unload("b", "y1", "r"), Unload("a", "x2", "r")]
    strategy = Scripted(plan)
    result = LeaderSheddingCycle(strategy, to("c")).run(load({"a": broker(), "b": broker()}), DEFAULT, NOW)
    assert [u.bundle for u in result.unloaded] == ["x1", "x2", "y1"]
    assert strategy.completed == [plan]


def test_disabled_shedding_or_a_single_broker_does_not_call_the_strategy():
    shedder = ThresholdShedder()
    cycle = LeaderSheddingCycle(shedder, to("broker-2"))
    off = DEFAULT.with_values({"loadBalancerSheddingEnabled": False})
    assert cycle.run(overloaded(), off, NOW).note is not None
    assert cycle.run(overloaded(), DEFAULT.with_values({"loadBalancerEnabled": False}), NOW).unloaded == ()
    b1, data = ten_bundle_broker(bandwidth_in=99.9)
    assert cycle.run(load({"broker-1": b1}, data), DEFAULT, NOW).note == "fewer than 2 brokers available: no shedding"
    assert shedder.history == {}  # the strategy never ran


def test_the_strategy_sees_the_pruned_recently_unloaded_map():
    strategy = Scripted([Unload("a", "x", "r")])
    cycle = LeaderSheddingCycle(strategy, to("b"))
    two = load({"a": broker(), "b": broker()})
    cycle.run(two, DEFAULT, NOW)
    cycle.run(two, DEFAULT, NOW + 10 * MIN)
    cycle.run(two, DEFAULT, NOW + 31 * MIN)
    assert strategy.seen_recent == [{}, {"x": NOW}, {}]
