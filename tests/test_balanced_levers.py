"""BalancedPlanShedder's levers on hand-built load data, exact plans: the trend-aware estimate, the per-move
cost, the large-first refill, the wait for fresh placements and the split parents that leave their broker
(docs/balanced.md).  Brokers as in ``test_balanced_strategy``: 8 cores, 1 % of one core per 1,000 msg/s."""

from __future__ import annotations

import random

import pytest
from tests.test_balanced_strategy import A1, A2, A3, B1, MINUTE, NS, broker, cluster, skewed

from bundlewise.algorithms.balanced.estimate import Vector, broker_usage, fit_cost_model, fleet_limits
from bundlewise.algorithms.balanced.planner import Candidate, PlanLimits, plan_moves, reachable, within_target
from bundlewise.algorithms.balanced.shedder import BalancedPlanShedder
from bundlewise.algorithms.balanced.trend import Trend
from bundlewise.algorithms.registry import make_family
from bundlewise.config import Config
from bundlewise.model.decisions import Unload
from bundlewise.model.load import BundleData, LoadData, TimeAverageMessageData

ONE_HIT = Config().with_values({"bundlewiseBalancedHitCount": 1})
C1 = f"{NS}/0x40000000_0x50000000"


def moves(out: list[Unload]) -> list[tuple[str, str, str | None]]:
    return [(u.broker, u.bundle, u.destination) for u in out]


def cpu(load: float) -> Vector:
    """A usage vector of ``load`` (a fraction of 8 cores) in CPU alone."""
    return (load * 800, 0.0, 0.0)


def of_cpu(_: str, v: Vector) -> float:
    return v[0] / 800


# -- the trend-aware estimate -------------------------------------------------------------------


def test_trend_smooths_a_new_report_and_forecasts_one_report_ahead() -> None:
    t = Trend()
    assert t.observe({"a": cpu(0.50)}, {"a": MINUTE}, of_cpu) == {"a": cpu(0.50)}  # first sight: as reported
    out = t.observe({"a": cpu(0.55)}, {"a": 2 * MINUTE}, of_cpu)
    # level 0.6 x 55 % + 0.4 x 50 % = 53 %, slope 0.2 x 3 = 0.6 points a report: forecast 53.6 %
    assert of_cpu("a", out["a"]) == pytest.approx(0.536)
    # the same report again (a broker writes only when its load moved): nothing is folded in twice
    assert of_cpu("a", t.observe({"a": cpu(0.55)}, {"a": 2 * MINUTE}, of_cpu)["a"]) == pytest.approx(0.536)


def test_trend_restarts_on_a_jump_a_pause_or_a_new_broker_and_forgets_a_stopped_one() -> None:
    t = Trend()
    t.observe({"a": cpu(0.50), "b": cpu(0.50)}, {"a": MINUTE, "b": MINUTE}, of_cpu)
    # a: 11 points off its forecast (more than the 10 that make Pulsar rewrite a report); b: 11 minutes later
    out = t.observe({"a": cpu(0.61), "b": cpu(0.52)}, {"a": 2 * MINUTE, "b": 12 * MINUTE}, of_cpu)
    assert of_cpu("a", out["a"]) == pytest.approx(0.61) and of_cpu("b", out["b"]) == pytest.approx(0.52)
    out = t.observe({"b": cpu(0.52), "c": cpu(0.0)}, {"b": 12 * MINUTE, "c": 12 * MINUTE}, of_cpu)
    assert set(out) == {"b", "c"} and set(t.state) == {"b", "c"}  # a is down: forgotten


def test_trend_takes_a_planned_move_as_a_known_step() -> None:
    t = Trend()
    t.observe({"a": cpu(0.60), "c": cpu(0.10)}, {"a": MINUTE, "c": MINUTE}, of_cpu)
    t.shift("a", cpu(0.20), -1.0)  # the strategy moved 20 % from a to c
    t.shift("c", cpu(0.20), 1.0)
    # the next reports show the move: no lag, no slope
    out = t.observe({"a": cpu(0.40), "c": cpu(0.30)}, {"a": 2 * MINUTE, "c": 2 * MINUTE}, of_cpu)
    assert of_cpu("a", out["a"]) == pytest.approx(0.40) and of_cpu("c", out["c"]) == pytest.approx(0.30)


def test_a_one_report_spike_is_smoothed_and_moves_nothing() -> None:
    def at(a: float, c: float, when: int) -> LoadData:
        a_bundles = {A1: 400_000, A2: a - 400_000}
        return cluster(a=broker(a_bundles, at=when), b=broker({B1: 400_000}, at=when), c=broker({C1: c}, at=when))

    s = BalancedPlanShedder()
    assert s.find_bundles_for_unloading(at(424_000, 376_000, 0), ONE_HIT, MINUTE) == []  # 53 / 50 / 47 %
    spike = at(496_000, 304_000, MINUTE)  # a +9 points, c -9 (jitter: under the 10-point jump)
    assert s.find_bundles_for_unloading(spike, ONE_HIT, 2 * MINUTE) == []
    # a: 0.6 x 62 + 0.4 x 53 = 58.4 % and a slope of 1.08 points: 59.5 %, under mean + 10
    assert s.idle_reason.startswith("balanced: loads 40.5%..59.5% around a fleet mean of 50.0%")
    # the latest report alone (a fresh instance) sees a 12 points above the mean and moves a2 (the spike)
    assert moves(BalancedPlanShedder().find_bundles_for_unloading(spike, ONE_HIT, 2 * MINUTE)) == [("a", A2, "c")]


# -- the per-move cost --------------------------------------------------------------------------


def test_a_move_must_pay_its_fixed_cost() -> None:
    # a at 62 % (a 0.5 % bundle, a 30 % and a 31.5 % one), b and c at 44 %: only the small bundle fits the gap
    ld = cluster(a=broker({A1: 4_000, A2: 240_000, A3: 252_000}), b=broker({B1: 352_000}), c=broker({C1: 352_000}))
    s = BalancedPlanShedder()
    assert s.find_bundles_for_unloading(ld, ONE_HIT, MINUTE) == []  # gain 0.0018 < 0.001 + 0.002 per move
    assert s.idle_reason.startswith("loads 44.0%..62.0% around a fleet mean of 50.0%: no movable bundle gains")
    free = ONE_HIT.with_values({"bundlewiseBalancedCostPerMove": 0})
    out = BalancedPlanShedder().find_bundles_for_unloading(ld, free, MINUTE)
    assert moves(out) == [("a", A1, "b")]
    assert "a -> 61.5%, b -> 44.5% (gain 0.0018);" in out[0].reason


# -- a broker pinned by a bundle no move can take off --------------------------------------------


def test_a_broker_pinned_above_the_mean_by_one_bundle_is_not_chased() -> None:
    # a at 62 %: a 0.5 % bundle and a 61.5 % one, above the 50 % mean (no gap fits it); b and c at 44 %
    ld = cluster(a=broker({A1: 4_000, A2: 492_000}), b=broker({B1: 352_000}), c=broker({C1: 352_000}))
    free = ONE_HIT.with_values({"bundlewiseBalancedCostPerMove": 0})
    s = BalancedPlanShedder()
    # a can get no lower than 61.5 % and b and c sit at their own level (44 %): calm, even with moves free
    assert s.find_bundles_for_unloading(ld, free, MINUTE) == []
    assert s.idle_reason.startswith("balanced: loads 44.0%..62.0% around a fleet mean of 50.0%")
    # b under the level of the others by more than the trigger: c's spare bundle refills it, a is left alone
    ld = cluster(a=broker({A1: 4_000, A2: 492_000}), b=broker({B1: 200_000}), c=broker({C1: 352_000, A3: 160_000}))
    out = BalancedPlanShedder().find_bundles_for_unloading(ld, ONE_HIT, MINUTE)
    assert moves(out) == [("c", A3, "b")]
    assert "c -> 44.0%, b -> 45.0% (gain 0.0760);" in out[0].reason


def test_reachable_level_pins_brokers_whose_largest_bundle_is_above_the_mean() -> None:
    loads = {"a": 0.62, "b": 0.44, "c": 0.44}
    assert reachable(loads, {"a": 0.615}) == (pytest.approx(0.44), {"a"})
    assert reachable(loads, {"a": 0.30}) == (pytest.approx(0.50), set())  # below the mean: nothing pinned
    assert reachable(loads) == (pytest.approx(0.50), set())
    assert within_target(loads, 0.04, {"a": 0.615}) and not within_target(loads, 0.04)
    assert not within_target({"a": 0.62, "b": 0.44, "c": 0.34}, 0.04, {"a": 0.615})  # c 5 points under b's level


# -- the large-first refill ---------------------------------------------------------------------


def _named(i: int) -> str:
    return f"{NS}/0x{i * 0x01000000:08x}_0x{(i + 1) * 0x01000000:08x}"


BIG = _named(100)


def refill_cluster() -> LoadData:
    """a, b, c at 60 % in 4 % bundles; d at 58 % with one 30 % bundle; e empty (mean 47.6 %)."""

    def small(first: int, n: int) -> dict[str, float]:
        return {_named(first + k): 32_000 for k in range(n)}

    return cluster(
        a=broker(small(0, 15)), b=broker(small(15, 15)), c=broker(small(30, 15)),
        d=broker({BIG: 240_000} | small(45, 7)), e=broker({}),
    )  # fmt: skip


def test_an_empty_broker_is_refilled_first_with_the_largest_bundle_of_any_source() -> None:
    out = BalancedPlanShedder().find_bundles_for_unloading(refill_cluster(), ONE_HIT, MINUTE)
    assert moves(out)[0] == ("d", BIG, "e")  # d is only the 4th most loaded broker
    assert out[0].reason == (
        "BalancedPlanShedder: d at 58.0% (cpu) vs fleet mean 47.6%; move to e at 0.0%: d -> 28.0%, e -> 30.0% "
        "(gain 0.1680); e bound by cpu; cost 0.0000 paid; rejected: next best t/ns/0x00000000_0x01000000 to e "
        "(gain 0.0448)"
    )
    assert len(out) == 8 and {u.cause.value for u in out} == {"Underloaded"}


# -- the event margin: a plan an overloaded or underloaded broker triggered stops at 6 points --------


def test_a_refill_plan_stops_once_every_broker_is_within_the_event_margin() -> None:
    out = BalancedPlanShedder().find_bundles_for_unloading(refill_cluster(), ONE_HIT, MINUTE)
    # after 8 moves: a 48 %, b 52 %, c 52 %, d 44 %, e 42 % around 47.6 %: every broker within 6 points
    assert (
        "a at 52.0% (cpu) vs fleet mean 47.6%; move to d at 40.0%: a -> 48.0%, d -> 44.0% (gain 0.0044);"
        in out[-1].reason
    )
    assert "c -> 52.0%, e -> 42.0% (gain 0.0112);" in out[-2].reason
    # with the event margin at the target margin (4 points) the plan polishes on: two more moves of 4 %
    tight = ONE_HIT.with_values({"bundlewiseBalancedEventMargin": 0.04})
    more = BalancedPlanShedder().find_bundles_for_unloading(refill_cluster(), tight, MINUTE)
    assert moves(more)[:8] == moves(out)
    assert [u.reason.split("; ")[1][-36:] for u in more[8:]] == [
        "b -> 48.0%, e -> 46.0% (gain 0.0028)",
        "c -> 48.0%, d -> 48.0% (gain 0.0012)",
    ]


def test_a_plan_the_spread_alone_triggered_aims_for_the_target_margin() -> None:
    def bundles(first: int, n: int) -> dict[str, float]:
        return {_named(first + k): 32_000 for k in range(n)}  # 4 % each

    # a 68 %, b c d 52 %: mean 56 %, a 12 points above it, nobody under- or overloaded
    ld = cluster(
        a=broker(bundles(0, 17)), b=broker(bundles(20, 13)), c=broker(bundles(40, 13)), d=broker(bundles(60, 13))
    )
    loose = ONE_HIT.with_values({"bundlewiseBalancedEventMargin": 0.10})
    for config in (ONE_HIT, loose):
        out = BalancedPlanShedder().find_bundles_for_unloading(ld, config, MINUTE)
        # one 4 % bundle to each of b, c, d: every broker at 56 %, whatever the event margin
        assert [(u.broker, u.destination) for u in out] == [("a", "b"), ("a", "c"), ("a", "d")]
        assert "a -> 56.0%, d -> 56.0% (gain 0.0012);" in out[-1].reason
        assert {u.cause.value for u in out} == {"Balanced"}


def test_without_the_refill_rule_the_plan_starts_from_the_three_most_loaded_brokers() -> None:
    ld = refill_cluster()
    model = fit_cost_model(ld.brokers.values())

    def candidates(b: str) -> list[Candidate]:
        return [Candidate(n, model.of_stats(st), st.topics) for n, st in ld.brokers[b].localData.lastStats.items()]

    args = (broker_usage(ld, model, []), fleet_limits(ld.brokers), candidates, Config().weights())
    narrow = plan_moves(*args, PlanLimits(10, 0.001, 0.0, 0.04, 0.002, 0.8))
    refill = plan_moves(*args, PlanLimits(10, 0.001, 0.0, 0.04, 0.002, 0.8, refill_margin=0.1))
    assert (narrow[0].source, narrow[0].bundle, narrow[0].destination) == ("a", _named(0), "e")
    assert (refill[0].source, refill[0].bundle, refill[0].destination) == ("d", BIG, "e")


# -- waiting for fresh placements, split parents ------------------------------------------------


def test_shedding_waits_until_the_bundles_it_just_placed_are_reported() -> None:
    family = make_family("BalancedPlanShedder", ONE_HIT)
    s = family.shedder
    assert isinstance(s, BalancedPlanShedder)
    ld = skewed()  # a 55 %, b 25 %, c idle
    new = f"{NS}/0x90000000_0xa0000000"
    ld.bundleData[new] = BundleData(
        TimeAverageMessageData(10, 10, 0, 0, 40_000, 0), TimeAverageMessageData(1000, 10, 0, 0, 40_000, 0), 1
    )
    assert family.assign(new, ld, ONE_HIT, random.Random(0)).broker == "c"  # preallocated, 5 %
    assert s.find_bundles_for_unloading(ld, ONE_HIT, 2 * MINUTE) == []
    assert s.idle_reason == (
        "loads 5.0%..55.0% around a fleet mean of 28.3%: waiting for 1 bundles placed in the last 3 minutes to "
        "appear in a report (no broker above 85%)"
    )
    out = s.find_bundles_for_unloading(ld, ONE_HIT, 3 * MINUTE)  # 3 minutes on, its report is overdue
    # a keeps a1 (37.5 %, above the 28.3 % mean: no move takes it off); after a2 it is at 42.5 %, within the
    # 6-point event margin of that, and b (25 %) and c (17.5 %) within it of their own level (21.25 %)
    assert moves(out) == [("a", A2, "c")]
    assert "a -> 42.5%, c -> 17.5% (gain 0.0938);" in out[0].reason


def test_a_split_parent_leaves_its_broker_before_its_children_are_placed() -> None:
    ld = cluster(a=broker({A1: 300_000, A2: 100_000}), b=broker({B1: 200_000}), c=broker({A3: 200_000}))
    assert moves(BalancedPlanShedder().find_bundles_for_unloading(ld, ONE_HIT, MINUTE)) == [("a", A2, "b")]
    del ld.bundleData[A1]  # a1 split since a's report: its children are unloaded and looked up
    s = BalancedPlanShedder()
    assert s.find_bundles_for_unloading(ld, ONE_HIT, MINUTE) == []
    # a without a1; b and c each hold one 25 % bundle that no move can take off: nothing to balance
    assert s.idle_reason.startswith("balanced: loads 12.5%..25.0% around a fleet mean of 20.8%")
    # without loadBalancerAutoUnloadSplitBundlesEnabled the children stay on a: it still counts 50 %
    stay = ONE_HIT.with_values({"loadBalancerAutoUnloadSplitBundlesEnabled": False})
    assert moves(BalancedPlanShedder().find_bundles_for_unloading(ld, stay, MINUTE)) == [("a", A2, "b")]
