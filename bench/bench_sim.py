"""Simulator speed: 100 brokers, 10,000 bundles, 100,000 topics over 24 h at a 1-minute tick.

Per shedding strategy, one full simulated day (1,440 ticks); figure = simulated seconds per wall
second (target: ≥ 1,440×, i.e. ≤ 60 s wall per strategy-day).  ``BENCH_SIM_HOURS`` shortens the
simulated span for a quick look (the figure is then extrapolated to a day and marked so).
``BENCH_SIM_STRATEGIES=A,B`` re-runs only those strategies' rows of the committed ``bench/results/simulator.json``
(the other rows stay as they are).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

from bench.common import RESULTS, skewed_scenario, write_result
from bundlewise.algorithms.registry import shedding_names
from bundlewise.sim.engine import Engine
from bundlewise.sim.scenario import Scenario
from bundlewise.traffic.workload import GeneratedWorkload

RESULT = "simulator"
TITLE = "Simulator speed: 100 brokers, 10,000 bundles, 100,000 topics, 24 h at a 1-minute tick"

BROKERS, NAMESPACES, BUNDLES_PER_NS, TOPICS_PER_NS = 100, 100, 100, 1000  # one namespace per broker


def scenario(hours: float) -> Scenario:
    return skewed_scenario(BROKERS, BUNDLES_PER_NS, TOPICS_PER_NS, hours, name="bench-100x10k")


def main() -> None:
    hours = float(os.environ.get("BENCH_SIM_HOURS", "24"))
    sc = scenario(hours)
    wanted = os.environ.get("BENCH_SIM_STRATEGIES")
    rows: dict[str, Any] = {}
    if wanted:  # re-run these rows only; the others stay as committed
        rows = json.loads((RESULTS / f"{RESULT}.json").read_text())["strategies"]
    for name in wanted.split(",") if wanted else shedding_names():
        t0, c0 = time.perf_counter(), time.process_time()
        engine = Engine(sc, GeneratedWorkload(sc.namespaces, sc.workload, sc.seed), name)
        setup = time.perf_counter() - t0
        result = engine.run()
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        day_wall = wall * 24 / hours
        rows[name] = {
            "wall_seconds": round(wall, 2),
            "cpu_seconds": round(cpu, 2),  # steadier than the wall time on a shared machine
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
