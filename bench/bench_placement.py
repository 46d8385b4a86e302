"""Per-decision latency of the modular placement strategies (issue 3, target <= 50 ms at 1,000 brokers).

Synthetic clusters of 10, 100 and 1,000 brokers with 100 bundles each (up to 100,000 bundles) over
10 namespaces, random resource usage and long-term rates (seeded).  Measured, median of repeated runs:

* ``strategy``: ``select`` on candidates = every broker (Pulsar's ``selectBroker``);
* ``full_flow``: ``ModularPlacement.select_broker`` without preallocation (filters, the strategy,
  the overload re-check) -- what the leader pays per assignment or shedding destination.

Writes ``bench/results/placement.json``.
"""

from __future__ import annotations

import random
from functools import partial
from typing import Any

from bench.common import median_seconds, write_result
from bundlewise.algorithms.placement.assignment import ModularPlacement
from bundlewise.algorithms.registry import make_placement as make_placement_strategy
from bundlewise.config import Config
from bundlewise.model.load import (
    BrokerData,
    BundleData,
    LoadData,
    LocalBrokerData,
    NamespaceBundleStats,
    TimeAverageBrokerData,
)
from bundlewise.model.resources import ResourceUsage, SystemResources

RESULT = "placement"
TITLE = "Modular placement: latency of one decision"

SIZES = (10, 100, 1000)
BUNDLES_PER_BROKER = 100
NAMESPACES = 10
STRATEGIES = ("LeastLongTermMessageRate", "LeastResourceUsageWithWeight", "RoundRobinBrokerSelector", "AvgShedder")
TARGET_MS = 50.0


def synthetic_cluster(brokers: int, seed: int = 7) -> LoadData:
    rng = random.Random(seed)
    load = LoadData()
    span = (2**32) // (brokers * BUNDLES_PER_BROKER // NAMESPACES + 1)
    counters = [0] * NAMESPACES
    for i in range(brokers):
        bundles: dict[str, NamespaceBundleStats] = {}
        for _ in range(BUNDLES_PER_BROKER):
            ns = rng.randrange(NAMESPACES)
            k = counters[ns]
            counters[ns] += 1
            name = f"tenant/ns{ns}/0x{k * span:08x}_0x{(k + 1) * span:08x}"
            bundles[name] = NamespaceBundleStats(
                msgRateIn=rng.uniform(0, 100),
                msgRateOut=rng.uniform(0, 100),
                msgThroughputIn=rng.uniform(0, 1e6),
                topics=rng.randrange(1, 20),
            )
        res = SystemResources(
            cpu=ResourceUsage(rng.uniform(5, 95), 100),
            bandwidth_in=ResourceUsage(rng.uniform(5, 80), 100),
            bandwidth_out=ResourceUsage(rng.uniform(5, 80), 100),
        )
        local = LocalBrokerData.of_stats(res, bundles, brokerVersionString="3.2.0")
        ta = TimeAverageBrokerData(longTermMsgRateIn=local.msgRateIn, longTermMsgRateOut=local.msgRateOut)
        load.brokers[f"broker-{i}:8080"] = BrokerData(local, ta)
        for name, stats in bundles.items():
            data = BundleData.default()
            data.update(stats)
            load.bundleData[name] = data
    return load


def measure(brokers: int, repeat: int) -> dict[str, Any]:
    load = synthetic_cluster(brokers)
    config = Config()
    candidates = list(load.brokers)
    bundle = "tenant/ns0/0xfffffff0_0xffffffff"
    data = BundleData.default()
    out: dict[str, Any] = {"brokers": brokers, "bundles": brokers * BUNDLES_PER_BROKER}
    for name in STRATEGIES:
        strategy = make_placement_strategy(name)
        rng = random.Random(1)
        t_strategy = median_seconds(
            partial(strategy.select, candidates, bundle, data, load, config, rng), repeat=repeat
        )
        placement = ModularPlacement(make_placement_strategy(name))
        t_flow = median_seconds(
            partial(placement.select_broker, bundle, load, config, rng, preallocate=False), repeat=repeat
        )
        out[name] = {"strategy_ms": round(t_strategy * 1000, 3), "full_flow_ms": round(t_flow * 1000, 3)}
    return out


def main() -> None:
    rows = [measure(n, repeat=15 if n < 1000 else 7) for n in SIZES]
    print(f"{'brokers':>8} {'bundles':>8}  {'strategy':<30} {'select ms':>10} {'full flow ms':>13}")
    for row in rows:
        for name in STRATEGIES:
            r = row[name]
            print(
                f"{row['brokers']:>8} {row['bundles']:>8}  {name:<30} {r['strategy_ms']:>10.3f} "
                f"{r['full_flow_ms']:>13.3f}"
            )
    worst = max(max(rows[-1][n]["strategy_ms"], rows[-1][n]["full_flow_ms"]) for n in STRATEGIES)
    print(f"worst at {SIZES[-1]} brokers: {worst:.3f} ms (target <= {TARGET_MS:.0f} ms)")
    write_result(
        RESULT,
        {
            "what": "median latency of one placement decision; candidates = every broker",
            "bundles_per_broker": BUNDLES_PER_BROKER,
            "target_ms_at_1000_brokers": TARGET_MS,
            "results": rows,
        },
        TITLE,
    )


if __name__ == "__main__":
    main()
