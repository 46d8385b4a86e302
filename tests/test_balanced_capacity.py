"""BalancedPlanShedder's capacity per resource (docs/balanced.md, "Capacity per resource"): each broker's
headroom per resource and its binding resource on hand-built brokers, and the planner's gain on each broker's
binding resource, so a fleet whose small brokers are CPU-bound and large ones NIC-bound settles at equal loads."""

from __future__ import annotations

import pytest

from bundlewise.algorithms.balanced.estimate import Headroom, Limits, fleet_limits, headroom, limits_of, pair_gain
from bundlewise.algorithms.balanced.planner import Candidate, PlanLimits, plan_moves
from bundlewise.model.load import BrokerData, LocalBrokerData
from bundlewise.model.resources import ResourceUsage, ResourceWeights, SystemResources


def hand_built(
    cpu: tuple[float, float], nin: tuple[float, float], nout: tuple[float, float], mem: tuple[float, float]
) -> BrokerData:
    res = SystemResources(
        cpu=ResourceUsage(*cpu),
        bandwidth_in=ResourceUsage(*nin),
        bandwidth_out=ResourceUsage(*nout),
        direct_memory=ResourceUsage(*mem),
    )
    return BrokerData(LocalBrokerData.of_stats(res, {}))


def test_headroom_and_binding_resource_of_hand_built_brokers() -> None:
    # 8 cores at 4 (50 %), NIC in 6 of 10 Gbit/s (60 %), out 2 of 10 (20 %), direct memory 1 of 4 GB (25 %)
    nic_bound = hand_built((400.0, 800.0), (6e6, 1e7), (2e6, 1e7), (1024.0, 4096.0))
    lim = limits_of(nic_bound)
    assert lim == Limits(800.0, 1e7, 1e7, 4096.0, 1024.0)
    usage = (400.0, 6e6, 2e6)
    w = ResourceWeights()  # Pulsar's defaults: direct memory weighs 0
    assert headroom(usage, lim, w) == Headroom(400.0, 4e6, 8e6, 3072.0, "bandwidthIn", 0.6)
    # 16 cores at 14 (87.5 %) and an idle NIC: the CPU binds
    cpu_bound = hand_built((1400.0, 1600.0), (1e6, 1e7), (1e6, 1e7), (0.0, 0.0))
    assert headroom((1400.0, 1e6, 1e6), limits_of(cpu_bound), w) == Headroom(200.0, 9e6, 9e6, 0.0, "cpu", 0.875)
    # direct memory binds once it weighs (loadBalancerDirectMemoryResourceWeight=1) and is the fullest
    mem_bound = hand_built((400.0, 800.0), (6e6, 1e7), (2e6, 1e7), (3584.0, 4096.0))
    h = headroom(usage, limits_of(mem_bound), ResourceWeights(direct_memory=1.0))
    assert (h.direct_memory, h.binding, h.load) == (512.0, "directMemory", 0.875)
    # usage beyond a limit leaves no headroom (never a negative one)
    assert headroom((900.0, 0.0, 0.0), Limits(800.0, 1e7, 1e7), w).cpu == 0.0


def test_a_broker_without_a_nic_limit_counts_as_an_average_one() -> None:
    brokers = {
        "a": hand_built((0.0, 800.0), (0.0, 1e7), (0.0, 1e7), (0.0, 0.0)),
        "b": hand_built((0.0, 1600.0), (0.0, 3e7), (0.0, 3e7), (0.0, 2048.0)),
        "c": hand_built((0.0, 800.0), (0.0, 0.0), (0.0, 0.0), (0.0, 0.0)),
    }
    assert fleet_limits(brokers)["c"] == Limits(800.0, 2e7, 2e7, 0.0, 0.0)


def test_pair_gain_is_the_drop_of_the_sum_of_squares_between_brokers_of_one_size() -> None:
    assert pair_gain(0.6, 0.5, 0.4, 0.5) == 0.6**2 - 0.5**2 + 0.4**2 - 0.5**2
    # a CPU-bound 8-core source that sheds 10 points, a NIC-bound destination that takes 5: weights 0.75, 1.5
    assert pair_gain(0.6, 0.5, 0.4, 0.45) == pytest.approx(0.75 * (0.36 - 0.25) + 1.5 * (0.16 - 0.2025), abs=1e-15)
    # a source whose binding resource the bundle does not touch gains nothing from the move
    assert pair_gain(0.6, 0.6, 0.4, 0.45) == pytest.approx(0.16 - 0.2025, abs=1e-15)


def test_a_cpu_bound_small_broker_and_a_nic_bound_large_one_settle_at_equal_loads() -> None:
    # small: 8 cores, 25 Gbit/s, at 75 % CPU; large: 16 cores, 10 Gbit/s, NIC in and out at 40 % (CPU 25 %)
    limits = {"small": Limits(800.0, 2.5e7, 2.5e7), "large": Limits(1600.0, 1e7, 1e7)}
    usage = {"small": (600.0, 2e6, 2e6), "large": (400.0, 4e6, 4e6)}
    # a bundle is 5 % of the small broker's CPU and 2 % of the large one's NIC
    api = [Candidate(f"api-{i}", (40.0, 2e5, 2e5), 1) for i in range(10)]
    plan = plan_moves(
        usage, limits, lambda b: api if b == "small" else [], ResourceWeights(), PlanLimits(10, 0.001, 0.0, 0.0)
    )
    # a move gains 0.07 * (load(small) - load(large)) - 0.00245: five moves, then both at 50 %
    assert [m.bundle for m in plan] == [f"api-{i}" for i in range(5)]
    assert plan[-1].after == pytest.approx((0.5, 0.5), abs=1e-12)
    assert plan[0].gain == pytest.approx(0.07 * 0.35 - 0.00245, abs=1e-12)
