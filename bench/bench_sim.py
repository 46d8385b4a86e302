"""Simulator speed: 100 brokers, 10,000 bundles, 100,000 topics over 24 h at a 1-minute tick.

Per shedding strategy, one full simulated day (1,440 ticks); figure = simulated seconds per wall
second (target: ≥ 1,440×, i.e. ≤ 60 s wall per strategy-day).  ``BENCH_SIM_HOURS`` shortens the
simulated span for a quick look (the figure is then extrapolated to a day and marked so).
"""

from __future__ import annotations

import os
import time

from bench.common import write_result
from bundlewise.algorithms.registry import shedding_names
from bundlewise.config import Config
from bundlewise.sim.engine import Engine
from bundlewise.sim.scenario import Scenario
from bundlewise.traffic.cost import BrokerSpec
from bundlewise.traffic.workload import GeneratedWorkload, NamespaceSpec, WorkloadSpec

RESULT = "simulator"
TITLE = "Simulator speed: 100 brokers, 10,000 bundles, 100,000 topics, 24 h at a 1-minute tick"

BROKERS, NAMESPACES, BUNDLES_PER_NS, TOPICS_PER_NS = 100, 100, 100, 1000


def scenario(hours: float) -> Scenario:
    brokers = tuple(BrokerSpec(f"broker-{i:03d}") for i in range(1, BROKERS + 1))
    # ~50 % CPU per broker on average: 100 × (0.5 × 8 − 0.2) cores / 24 µs per message (in + out, 1 KiB
    # each), spread over the namespaces with a Zipf skew so that the strategies have real work to do.
    total = BROKERS * (0.5 * 8 - 0.2) / 24e-6
    weights = [(k + 1) ** -0.6 for k in range(NAMESPACES)]
    namespaces = tuple(
        NamespaceSpec(
            f"tenant-{k // 10}/ns-{k}",
            bundles=BUNDLES_PER_NS,
            topics=TOPICS_PER_NS,
            msg_rate=total * w / sum(weights),
            zipf=0.8,
        )
        for k, w in enumerate(weights)
    )
    return Scenario(
        name="bench-100x10k",
        description="benchmark cluster",
        duration=int(hours * 3_600_000),
        step=60_000,
        seed=1,
        brokers=brokers,
        initial=tuple(b.name for b in brokers),
        namespaces=namespaces,
        events=(),
        config=Config(),
        workload=WorkloadSpec(diurnal_amplitude=0.2, noise=0.05),
    )


def main() -> None:
    hours = float(os.environ.get("BENCH_SIM_HOURS", "24"))
    sc = scenario(hours)
    rows = {}
    for name in shedding_names():
        t0 = time.perf_counter()
        engine = Engine(sc, GeneratedWorkload(sc.namespaces, sc.workload, sc.seed), name)
        setup = time.perf_counter() - t0
        result = engine.run()
        wall = time.perf_counter() - t0
        day_wall = wall * 24 / hours
        rows[name] = {
            "wall_seconds": round(wall, 2),
            "setup_seconds": round(setup, 2),
            "simulated_hours": hours,
            "wall_seconds_per_simulated_day": round(day_wall, 2),
            "speedup_vs_real_time": round(86_400 / day_wall, 1),
            "meets_target_60s_per_day": day_wall <= 60.0,
            "unloads": result.metrics["unloads"],
            "splits": result.metrics["splits"],
        }
        print(
            f"simulator {name:<20} {hours:g} h simulated in {wall:6.1f} s "
            f"({86_400 / day_wall:7.0f}x real time, {day_wall:5.1f} s per simulated day)"
        )
    write_result(
        RESULT,
        {
            "cluster": {
                "brokers": BROKERS,
                "bundles": NAMESPACES * BUNDLES_PER_NS,
                "topics": NAMESPACES * TOPICS_PER_NS,
                "tick": "1m",
                "simulated_hours": hours,
            },
            "extrapolated": hours != 24,
            "strategies": rows,
        },
        TITLE,
    )


if __name__ == "__main__":
    main()
