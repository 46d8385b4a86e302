"""The failure-mode suite: bundlewise's own strategy against Pulsar's five on the smaller scenarios, the
targets of ``sim.suite`` asserted (docs/balanced.md), and the static floor's rule on hand-made cases."""

from __future__ import annotations

import tomllib
from dataclasses import replace
from functools import cache
from typing import Any

import numpy as np
import pytest

from bundlewise.algorithms.registry import shedding_names
from bundlewise.model.decisions import MergeDecision
from bundlewise.model.resources import ResourceWeights
from bundlewise.report.verdict import ranking
from bundlewise.sim.floor import _place, static_floor
from bundlewise.sim.run import simulate, summary
from bundlewise.sim.scenario import parse_scenario
from bundlewise.sim.suite import SUITE, suite_scenario, targets, unloads_reference
from bundlewise.traffic.cost import BrokerSpec, Capacities

OWN = "BalancedPlanShedder"


@cache
def run(name: str) -> tuple[dict[str, Any], dict[str, str]]:
    """One run of every strategy on a suite scenario (shared by the tests: each run is deterministic)."""
    scenario = suite_scenario(name)
    doc = summary(scenario, simulate(scenario, list(shedding_names())))
    return doc, {t.key: t.status for t in targets(name, OWN, doc, static_floor(scenario))}


def test_every_suite_scenario_loads() -> None:
    for name in SUITE:
        scenario = suite_scenario(name)
        assert scenario.name == name and scenario.warnings == ()


# BalancedPlanShedder on each scenario: load_std_mean, max_load_p99, unloads, overloaded broker-minutes, and
# the targets it misses (every other target of ``sim.suite.targets`` is met, or n/a)
FIGURES: dict[str, tuple[float, float, int, float, set[str]]] = {
    "restart-empty": (0.0255199823, 0.68227074, 16, 0.0, {"p99~floor", "unloads<=half"}),
    "drain-return-growth": (0.0256985432, 0.674569668, 12, 0.0, {"unloads<=half"}),
    "scale-out-several": (
        0.0578680812,
        0.863869333,
        56,
        3.0,
        {"std~floor", "p99~floor", "unloads<=half", "no avoidable overload"},
    ),
    "hot-partitioned-topic": (0.0393505781, 0.661290521, 14, 0.0, {"unloads<=half"}),
    "stationary-jitter": (0.034596401, 0.589753717, 4, 0.0, {"p99~floor", "unloads<=half"}),
    "mixed-generation": (0.0197098413, 0.462618094, 4, 0.0, {"p99~floor", "unloads<=half"}),
    "tiny-bundles-at-cap": (0.0442322239, 0.548876853, 6, 0.0, {"std~floor", "p99~floor"}),
    "hot-bundles-at-cap": (0.0491579302, 0.403190469, 8, 0.0, {"p99~floor", "unloads<=half"}),
    "nic-bound-fleet": (0.0237626937, 0.61472672, 0, 0.0, {"std~floor", "p99~floor"}),
    "heavy-topics-at-cap": (0.131498056, 0.774085629, 21, 0.0, {"unloads<=half"}),
}


@pytest.mark.parametrize("name", SUITE)
def test_figures_and_targets_of_every_suite_scenario(name: str) -> None:
    doc, status = run(name)
    own = doc["strategies"][OWN]
    std, p99, unloads, overloaded, missed = FIGURES[name]
    assert own["load_std_mean"] == pytest.approx(std, abs=1e-9)
    assert own["max_load_p99"] == pytest.approx(p99, abs=1e-9)
    assert own["unloads"] == unloads and own["overloaded_broker_minutes"] == overloaded
    assert {k for k, v in status.items() if v == "NOT met"} == missed
    assert status["std<=best"] == "met" and status["refill<=30m"] in ("met", "n/a")


def test_under_stationary_jitter_nothing_moves_twice_and_balance_beats_every_pulsar_strategy() -> None:
    doc, status = run("stationary-jitter")
    own = doc["strategies"][OWN]
    assert own["repeat_unloads"] == 0 and own["flaps"] == 0 and own["splits"] == 0
    assert status["0 repeats"] == "met"
    assert status["std<=best"] == status["p99<=best"] == status["std~floor"] == "met"
    assert own["unloads"] == 4  # UniformLoadShedder, the reference, moves 6: half is 3
    assert ranking(doc["strategies"])[0][0] == OWN  # the report's verdict names it here


def test_a_mixed_fleet_is_balanced_by_capacity_without_overload() -> None:
    doc, status = run("mixed-generation")
    keys = ("std<=best", "p99<=best", "std~floor", "no avoidable overload")
    assert {k: status[k] for k in keys} == dict.fromkeys(keys, "met")
    own = doc["strategies"][OWN]
    assert own["overloaded_broker_minutes"] == 0
    assert all(doc["strategies"][n]["overloaded_broker_minutes"] > 0 for n in ("ThresholdShedder", "AvgShedder"))
    assert own["unloads"] == 4


def test_tiny_bundles_at_the_cap_balance_with_a_handful_of_moves() -> None:
    doc, status = run("tiny-bundles-at-cap")
    assert status["std<=best"] == status["p99<=best"] == status["unloads<=half"] == "met"
    own = doc["strategies"][OWN]
    assert own["unloads"] == 6 and own["repeat_unloads"] == 0
    fewest_pulsar = min(
        doc["strategies"][n]["unloads"]
        for n in ("ThresholdShedder", "UniformLoadShedder", "AvgShedder", "TransferShedder")
    )
    assert own["unloads"] <= fewest_pulsar / 2


def test_at_the_bundle_cap_the_own_strategy_merges_only_for_a_split_that_divides_the_load() -> None:
    """On hot-bundles-at-cap each hot bundle's load sits in one or two zipf-hot topics: the split its owner would
    make (range_equally_divide) leaves more than 80 % of it in one child, so no merge pays and none is made
    (``bundlewiseBalancedMergeMaxChildShare``); with the rule off (1.0) the strategy merges 6 cold pairs so 6 hot
    bundles split -- and balances worse (p99 0.4483 against 0.4032 without the merges)."""
    doc, status = run("hot-bundles-at-cap")
    own = doc["strategies"][OWN]
    assert own["merges"] == 0 and own["splits"] == 0
    pulsar = [n for n in doc["strategies"] if n != OWN]
    assert len(pulsar) == 6  # Pulsar's five and the extensible variant, which has no merge (the family has none)
    for n in pulsar:  # at the cap Pulsar's split detector skips every hot bundle, and nothing merges
        assert doc["strategies"][n]["splits"] == 0 and "merges" not in doc["strategies"][n]
    assert status["std<=best"] == status["p99<=best"] == status["std~floor"] == "met"
    # UniformLoadShedder has the best Pulsar std (0.0842) with 5 unloads: the limit is 2
    assert doc["strategies"]["UniformLoadShedder"]["unloads"] == 5 and status["unloads<=half"] == "NOT met"
    scenario = suite_scenario("hot-bundles-at-cap")
    any_split = replace(scenario, config=scenario.config.with_values({"bundlewiseBalancedMergeMaxChildShare": 1.0}))
    (merging,) = simulate(any_split, [OWN])
    m = summary(any_split, [merging])["strategies"][OWN]
    assert m["merges"] == 6 and m["splits"] == 6
    assert m["max_load_p99"] == pytest.approx(0.448267898, abs=1e-9) and own["max_load_p99"] < m["max_load_p99"]
    merges = [d.decision for d in merging.decisions if isinstance(d.decision, MergeDecision)]
    assert all("can split into children carrying " in d.detail for d in merges)


def test_a_restarted_broker_is_refilled_near_the_floor_with_fewer_unloads_than_the_reference() -> None:
    doc, status = run("restart-empty")
    # AvgShedder has the best Pulsar std (0.0545) with 22 unloads; UniformLoadShedder, within 0.01, has 32.
    # 16 is not half of 22: the split children placed by their measured load cost 6 more refill moves here
    # and bought a std within 0.02 of the floor (0.0255, from 0.0347)
    assert doc["strategies"]["AvgShedder"]["unloads"] == 22
    assert doc["strategies"][OWN]["unloads"] == 16 and status["unloads<=half"] == "NOT met"
    assert status["std~floor"] == "met"


def test_a_scale_out_is_refilled_with_about_the_unloads_of_the_pulsar_reference() -> None:
    doc, status = run("scale-out-several")
    # AvgShedder has the best Pulsar std (0.0603) with 52 unloads; the event margin stops each refill plan
    # 6 points from the mean; the own strategy takes 4 more (56), and balances better
    assert doc["strategies"]["AvgShedder"]["unloads"] == 52
    assert doc["strategies"][OWN]["unloads"] == 56 and status["std<=best"] == status["p99<=best"] == "met"


@pytest.mark.parametrize(
    ("name", "minutes"),
    [("restart-empty", [2.0]), ("drain-return-growth", [2.0]), ("scale-out-several", [6.0, 6.0, 6.0, 6.0])],
)
def test_a_returned_or_added_broker_reaches_80_percent_of_the_fleet_average_within_30_minutes(
    name: str, minutes: list[float]
) -> None:
    doc, status = run(name)
    assert status["refill<=30m"] == "met"
    assert status["std<=best"] == status["p99<=best"] == "met"
    starts = [e for e in doc["strategies"][OWN]["events"] if e["action"] in ("add", "return")]
    assert [e["reach_80_minutes"] for e in starts] == minutes
    # the Pulsar strategy that never refills it: OverloadShedder waits for 85 %
    assert all(
        e["reach_80_minutes"] is None
        for e in doc["strategies"]["OverloadShedder"]["events"]
        if e["action"] in ("add", "return")
    )


ONE_BROKER = """
name = "one"
duration = "3m"
step = "1m"
[[brokers]]
name = "b"
[[namespaces]]
name = "t/ns"
bundles = 4
topics = 10
msg_rate = 100000
"""


def test_floor_of_one_broker_is_its_load_and_no_spread() -> None:
    floor = static_floor(parse_scenario(tomllib.loads(ONE_BROKER), "one.toml"))
    # 0.2 base cores + 100k msg/s in and out x (10 us per message + 2 us per KiB): 2.6 of 8 cores
    assert floor.load_std_mean == 0.0
    assert floor.max_load_p99 == pytest.approx(2.6 / 8)
    assert floor.overloaded_broker_minutes == 0.0


def test_floor_places_largest_first_onto_the_least_loaded_by_capacity() -> None:
    cap = Capacities.of(
        [BrokerSpec("small", cpu_cores=8, cpu_base_cores=0), BrokerSpec("big", cpu_cores=16, cpu_base_cores=0)]
    )
    rates = np.array([300_000.0, 200_000.0, 100_000.0, 100_000.0])  # msg/s in, no bytes: 10 us each
    mean = np.stack([rates, np.zeros(4), np.zeros(4), np.zeros(4)])
    owner = _place(mean, np.array([True, True]), cap, ResourceWeights())
    # 3 cores -> big (3/16 < 3/8); 2 -> small (2/8 < 5/16); 1 -> big (4/16 < 3/8); 1 -> big (5/16 < 3/8)
    assert owner.tolist() == [1, 0, 1, 1]


def test_the_unloads_reference_is_the_fewest_unloads_within_reach_of_the_best_pulsar_balance() -> None:
    pulsar = {
        "A": {"load_std_mean": 0.050, "unloads": 22},  # the best balance
        "B": {"load_std_mean": 0.059, "unloads": 9},  # within 0.01 of it: the reference
        "C": {"load_std_mean": 0.061, "unloads": 0},  # out of reach: never the reference
    }
    assert unloads_reference(pulsar) == ("B", 4.5)
    # the best one is always in reach; one with 0 unloads demands 0
    assert unloads_reference(
        {"A": {"load_std_mean": 0.2, "unloads": 0}, "B": {"load_std_mean": 0.1, "unloads": 8}}
    ) == (
        "B",
        4.0,
    )
    assert unloads_reference(
        {"A": {"load_std_mean": 0.1, "unloads": 0}, "B": {"load_std_mean": 0.105, "unloads": 8}}
    ) == (
        "A",
        0.0,
    )
