"""The metrics of ``summary.json`` (docs/simulator.md), computed from one run's per-tick record.

Per tick, over the brokers that are up (ticks with no broker up are skipped):

* ``load_std`` = population std-dev of the brokers' true load (weighted max of CPU and bandwidth
  in/out usage, 0–1); ``load_std_mean`` / ``load_std_p95`` are its mean / 95th percentile over ticks;
* ``load_spread_mean`` = mean of (max − min) broker load; ``max_load_p99`` = p99 of the highest load;
* ``overloaded_broker_minutes`` = Σ over ticks of (brokers with load > overload threshold) × tick minutes;
* ``settle_minutes``: for the start and every event time ``e``, the minutes from ``e`` to the first tick
  from which ``load_std ≤ 0.05`` holds for 10 minutes (the whole window inside the run); the worst of
  these, or ``null`` when one never settles;
* counters: ``unloads`` (shedding moves), ``splits``, ``assignments`` (lookups of unowned bundles),
  ``throughput_moved_bytes`` (Σ in+out bytes/s of each unloaded bundle at its unload), ``flaps``
  (unloads of a bundle unloaded before within the previous 2 hours), ``topic_unavailable_seconds``
  (Σ over unloads — shedding moves and the unloads of split children — of topics × ``unloadBlipSeconds``);
* ``wall_seconds``: wall time of the run (the only figure that differs between two identical runs).

Percentiles use numpy's default linear interpolation.  Floats are rounded to 9 significant digits so
``summary.json`` is stable across platforms' last-bit differences.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

SETTLE_STD = 0.05
SETTLE_HOLD_MS = 10 * 60_000
FLAP_WINDOW_MS = 2 * 3_600_000


def _r(x: float) -> float:
    return float(f"{x:.9g}")


@dataclass
class Counters:
    unloads: int = 0
    splits: int = 0
    assignments: int = 0
    throughput_moved_bytes: float = 0.0
    flaps: int = 0
    topic_unavailable_seconds: float = 0.0
    last_unload: dict[str, int] = field(default_factory=dict)

    def unload(self, bundle: str, now: int, throughput: float, topics: int, blip_s: float) -> bool:
        """Count one shedding unload; returns whether it is a flap."""
        prev = self.last_unload.get(bundle)
        flap = prev is not None and now - prev <= FLAP_WINDOW_MS
        self.unloads += 1
        self.flaps += int(flap)
        self.throughput_moved_bytes += throughput
        self.topic_unavailable_seconds += topics * blip_s
        self.last_unload[bundle] = now
        return flap


def settle_minutes(times: np.ndarray, std: np.ndarray, starts: list[int]) -> float | None:
    """Worst over ``starts`` of the minutes until ``std ≤ 0.05`` holds for 10 minutes; None if never."""
    ok = std <= SETTLE_STD
    n = len(times)
    # run_end[i]: time of the last tick of the run of ok ticks starting at i
    run_end = np.full(n, -1, dtype=np.int64)
    end = -1
    for i in range(n - 1, -1, -1):
        if ok[i]:
            end = int(times[i]) if end < 0 else end
            run_end[i] = end
        else:
            end = -1
    step = int(times[1] - times[0]) if n > 1 else 60_000
    worst = 0.0
    for s in starts:
        first = int(np.searchsorted(times, s))
        hit = None
        for i in range(first, n):
            if ok[i] and run_end[i] + step - times[i] >= SETTLE_HOLD_MS:
                hit = i
                break
        if hit is None:
            return None
        worst = max(worst, (int(times[hit]) - s) / 60_000)
    return worst


def summarise(
    times: np.ndarray,
    loads: np.ndarray,
    up: np.ndarray,
    step_ms: int,
    overload: float,
    starts: list[int],
    counters: Counters,
    wall_seconds: float,
) -> dict[str, Any]:
    """METRICS from ``loads``/``up`` (ticks × broker slots)."""
    any_up = up.any(axis=1)
    masked = np.where(up, loads, np.nan)[any_up]
    t = times[any_up]
    if len(t):
        std = np.nanstd(masked, axis=1)
        hi, lo = np.nanmax(masked, axis=1), np.nanmin(masked, axis=1)
        over = float(((loads > overload) & up).sum()) * step_ms / 60_000
        settle = settle_minutes(t, std, starts)
        metrics: dict[str, Any] = {
            "load_std_mean": _r(float(std.mean())),
            "load_std_p95": _r(float(np.percentile(std, 95))),
            "load_spread_mean": _r(float((hi - lo).mean())),
            "max_load_p99": _r(float(np.percentile(hi, 99))),
            "overloaded_broker_minutes": _r(over),
        }
    else:
        settle = None
        metrics = {k: None for k in ("load_std_mean", "load_std_p95", "load_spread_mean", "max_load_p99")}
        metrics["overloaded_broker_minutes"] = 0.0
    metrics.update(
        unloads=counters.unloads,
        splits=counters.splits,
        assignments=counters.assignments,
        throughput_moved_bytes=_r(counters.throughput_moved_bytes),
        flaps=counters.flaps,
        settle_minutes=None if settle is None else _r(settle),
        topic_unavailable_seconds=_r(counters.topic_unavailable_seconds),
        wall_seconds=round(wall_seconds, 3),
    )
    return metrics


METRIC_KEYS = (
    "load_std_mean",
    "load_std_p95",
    "load_spread_mean",
    "max_load_p99",
    "overloaded_broker_minutes",
    "unloads",
    "splits",
    "assignments",
    "throughput_moved_bytes",
    "flaps",
    "settle_minutes",
    "topic_unavailable_seconds",
    "wall_seconds",
)
