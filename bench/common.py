"""Helpers shared by the benchmarks: timing medians and writing results."""

from __future__ import annotations

import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

RESULTS = Path(__file__).parent / "results"

if TYPE_CHECKING:
    from bundlewise.sim.scenario import Scenario


def skewed_scenario(brokers: int, bundles_per_ns: int, topics_per_ns: int, hours: float, name: str) -> Scenario:
    """The simulator benchmarks' cluster: ``brokers`` brokers and as many namespaces of ``bundles_per_ns`` bundles
    and ``topics_per_ns`` topics, 1-minute ticks, every broker up from the start.

    ~50 % CPU per broker on average: brokers × (0.5 × 8 − 0.2) cores / 24 µs per message (in + out, 1 KiB each),
    spread over the namespaces with a Zipf skew, so that the strategies have real work to do.
    """
    from bundlewise.config import Config
    from bundlewise.sim.scenario import Scenario
    from bundlewise.traffic.cost import BrokerSpec
    from bundlewise.traffic.workload import NamespaceSpec, WorkloadSpec

    digits = max(3, len(str(brokers)))
    specs = tuple(BrokerSpec(f"broker-{i:0{digits}d}") for i in range(1, brokers + 1))
    total = brokers * (0.5 * 8 - 0.2) / 24e-6
    weights = [(k + 1) ** -0.6 for k in range(brokers)]
    namespaces = tuple(
        NamespaceSpec(
            f"tenant-{k // 10}/ns-{k}",
            bundles=bundles_per_ns,
            topics=topics_per_ns,
            msg_rate=total * w / sum(weights),
            zipf=0.8,
        )
        for k, w in enumerate(weights)
    )
    return Scenario(
        name=name,
        description="benchmark cluster",
        duration=int(hours * 3_600_000),
        step=60_000,
        seed=1,
        brokers=specs,
        initial=tuple(b.name for b in specs),
        namespaces=namespaces,
        events=(),
        config=Config(),
        workload=WorkloadSpec(diurnal_amplitude=0.2, noise=0.05),
    )


def median_seconds(fn: Callable[[], object], repeat: int = 7, warmup: int = 1) -> float:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def write_result(name: str, payload: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    payload = {"machine": {"python": platform.python_version(), "cpus": _cpus()}, **payload}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(payload, indent=2) + "\n")
    print(f"wrote {path}")
    return path


def _cpus() -> int:
    import os

    return os.cpu_count() or 0
