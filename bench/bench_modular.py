"""Decision latency of the modular load manager's strategies on synthetic clusters.

Clusters of 10, 100 and 1,000 brokers with 100 bundles each (up to 100,000 bundles).  For each shedding
strategy, one decision is one ``find_bundles_for_unloading`` call on a cluster where some brokers are hot,
so the selection path runs: ThresholdShedder on a fresh instance (first sight of every broker), AvgShedder on
an instance primed by one earlier call, so the timed call is the one whose hit counters trigger.  Placement
strategies are timed through the full assignment flow (``ModularPlacement.select_broker`` without
preallocation), and the leader's whole shedding cycle (ThresholdShedder + a destination per unload) up to
100 brokers (it runs the placement flow once per unloaded bundle).
Median of repeated runs; the target is <= 50 ms per decision at 1,000 brokers.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable
from typing import Any

from bench.common import write_result
from bundlewise.algorithms.families import ModularFamily
from bundlewise.algorithms.leader_cycle import LeaderSheddingCycle
from bundlewise.algorithms.placement.assignment import ModularPlacement
from bundlewise.algorithms.registry import SHEDDING, make_placement, placement_names, shedding_entry
from bundlewise.config import Config
from bundlewise.model.load import (
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    TimeAverageBrokerData,
    TimeAverageMessageData,
)
from bundlewise.model.resources import ResourceUsage, SystemResources

RESULT = "modular_shedding"
TITLE = "Modular load manager: decision latency of the shedding and placement strategies"

SIZES = (10, 100, 1000)
BUNDLES_PER_BROKER = 100
TARGET_MS = 50.0
# the whole cycle runs the placement flow once per unloaded bundle (thousands at 1,000 brokers): timed up to 100
LEADER_CYCLE_MAX_BROKERS = 100
MB = 1024 * 1024
LM = "org.apache.pulsar.broker.loadbalance.impl.ModularLoadManagerImpl"


def synthetic_cluster(brokers: int, seed: int = 42) -> LoadData:
    """Brokers between 10% and 95% cpu; each bundle's traffic proportional to its broker's load, with noise."""
    rng = random.Random(seed)
    broker_map: dict[str, BrokerData] = {}
    bundle_data: dict[str, BundleData] = {}
    for i in range(brokers):
        load = 0.10 + 0.85 * rng.random()
        names = [f"tenant-{i % 50}/ns-{i}/0x{k:08x}_0x{k + 1:08x}" for k in range(BUNDLES_PER_BROKER)]
        tput = rate = 0.0
        for name in names:
            t = load * rng.uniform(0.2, 1.8) * 2 * MB
            r = load * rng.uniform(0.2, 1.8) * 200
            tput += t
            rate += r
            window = TimeAverageMessageData(10, 10, t / 2, t / 2, r / 2, r / 2)
            bundle_data[name] = BundleData(window, TimeAverageMessageData(1000, 1000, t / 2, t / 2, r / 2, r / 2), 5)
        nic = 1.0e7
        res = SystemResources(
            cpu=ResourceUsage(load * 800, 800),
            memory=ResourceUsage(1024, 4096),
            direct_memory=ResourceUsage(256, 4096),
            bandwidth_in=ResourceUsage(tput / 2 * 8 / 1000, nic),
            bandwidth_out=ResourceUsage(tput / 2 * 8 / 1000, nic),
        )
        local = LocalBrokerData(
            resources=res,
            msgThroughputIn=tput / 2,
            msgThroughputOut=tput / 2,
            msgRateIn=rate / 2,
            msgRateOut=rate / 2,
            numTopics=5 * BUNDLES_PER_BROKER,
            numBundles=BUNDLES_PER_BROKER,
            bundles=names,
            brokerVersionString="3.2.4",
            loadManagerClassName=LM,
        )
        ta = TimeAverageBrokerData.of_bundles(names, bundle_data)
        broker_map[f"broker-{i}:8080"] = BrokerData(local, ta)
    return LoadData(broker_map, bundle_data, {})


def median_ms(setup: Callable[[], Any], timed: Callable[[Any], Any], repeat: int) -> tuple[float, Any]:
    """Median wall time of ``timed(setup())`` in ms (setup not timed), and the last result."""
    times, result = [], None
    for _ in range(repeat):
        state = setup()
        t0 = time.perf_counter()
        result = timed(state)
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1000, result


def bench_shedding(load: LoadData, config: Config, repeat: int) -> dict[str, dict[str, float]]:
    out = {}
    for name in [n for n, e in SHEDDING.items() if e.family is ModularFamily]:
        cfg = config.with_values({"minUnloadMessage": 100}) if name == "AvgShedder" else config

        def setup(name: str = name, cfg: Config = cfg) -> Any:
            strategy = shedding_entry(name).factory()
            if name == "AvgShedder":  # prime: the timed call is the second hit above 40 points
                strategy.find_bundles_for_unloading(load, cfg, 0)
            return strategy

        def decide(s: Any, cfg: Config = cfg) -> Any:
            return s.find_bundles_for_unloading(load, cfg, 60_000)

        ms, result = median_ms(setup, decide, repeat)
        out[name] = {"median_ms": round(ms, 3), "unloads": len(result)}
    return out


def bench_placement(load: LoadData, config: Config, repeat: int) -> dict[str, dict[str, float]]:
    out = {}
    bundle = "tenant-0/ns-0/0x00000000_0x00000001"
    for name in placement_names():
        placement = ModularPlacement(make_placement(name))
        rng = random.Random(1)

        def ready(p: ModularPlacement = placement) -> ModularPlacement:
            return p

        def select(p: ModularPlacement, r: random.Random = rng) -> Any:
            return p.select_broker(bundle, load, config, r, preallocate=False)

        ms, sel = median_ms(ready, select, repeat)
        out[name] = {"median_ms": round(ms, 3), "candidates_best": len(sel.best)}
    return out


def bench_leader_cycle(load: LoadData, config: Config, repeat: int) -> dict[str, float]:
    rng = random.Random(1)

    def setup() -> LeaderSheddingCycle:
        placement = ModularPlacement(make_placement("LeastLongTermMessageRate"))
        return LeaderSheddingCycle(
            shedding_entry("ThresholdShedder").factory(),
            lambda b, ld, cfg: placement.select_broker(b, ld, cfg, rng, preallocate=False).selected,
        )

    ms, result = median_ms(setup, lambda c: c.run(load, config, 60_000), repeat)
    return {"median_ms": round(ms, 3), "unloads": len(result.unloaded)}


def main() -> None:
    config = Config()
    results: dict[str, Any] = {}
    print(f"{'brokers':>8} {'bundles':>8}  {'strategy':<36} {'median ms':>10}  note")
    for n in SIZES:
        load = synthetic_cluster(n)
        repeat = 15 if n < 1000 else 7
        shed = bench_shedding(load, config, repeat)
        place = bench_placement(load, config, repeat)
        results[str(n)] = {"bundles": n * BUNDLES_PER_BROKER, "shedding": shed, "placement": place}
        cycle = None
        if n <= LEADER_CYCLE_MAX_BROKERS and place:
            cycle = bench_leader_cycle(load, config, 3)
            results[str(n)]["leader_cycle_threshold_lltmr"] = cycle
        for kind, rows in (("shed", shed), ("place", place)):
            for name, row in rows.items():
                extra = f"{int(row.get('unloads', row.get('candidates_best', 0)))} " + (
                    "unloads" if kind == "shed" else "in best"
                )
                print(f"{n:>8} {n * BUNDLES_PER_BROKER:>8}  {kind + ' ' + name:<36} {row['median_ms']:>10.3f}  {extra}")
        if cycle is not None:
            print(
                f"{n:>8} {n * BUNDLES_PER_BROKER:>8}  {'leader cycle (Threshold+LLTMR)':<36} "
                f"{cycle['median_ms']:>10.3f}  {int(cycle['unloads'])} unloads"
            )
    worst = max(r["median_ms"] for r in results["1000"]["shedding"].values())
    print(f"worst shedding decision at 1000 brokers: {worst:.3f} ms (target <= {TARGET_MS:g} ms)")
    write_result(
        RESULT,
        {
            "what": "median latency (ms) of one decision; synthetic clusters, 100 bundles per broker",
            "target_ms_at_1000_brokers": TARGET_MS,
            "worst_shedding_ms_at_1000_brokers": worst,
            "results": results,
        },
        TITLE,
    )


if __name__ == "__main__":
    main()
