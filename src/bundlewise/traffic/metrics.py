"""The metrics of ``summary.json`` (docs/simulator.md, Metrics), computed from one run's per-tick record.

One definition for both kinds of run: ``simulate`` (``sim.engine``) and ``live up`` (``live.harness.outputs``) fill a
``Record`` and ``Counters`` and call ``summarise``; it sits below both so neither imports the other.

Per tick, over the brokers that are up (ticks with no broker up are skipped); a broker's *load* is its demand
over its capacity (the weighted max of CPU and NIC in/out usage the workload asks of it, 0–1 and above when
over-committed — ``traffic.cost``), so over-commitment stays visible even though reports are capped:

* ``load_std`` = population std-dev of the brokers' load; ``load_std_mean`` / ``load_std_p95`` are its mean /
  95th percentile over ticks;
* ``load_spread_mean`` = mean of (max − min) broker load; ``max_load_p99`` = p99 of the highest load;
* ``overloaded_broker_minutes`` = Σ over ticks of (brokers with load > overload threshold) × tick minutes;
* ``settle_minutes``: for the start and every event that changed a broker (a restart's return included), the
  minutes from it to the first tick from which ``load_std ≤ 0.05`` holds for 10 minutes (the whole window
  inside the run); the worst of these, or ``null`` when one never settles.  ``events`` lists each of them;
* counters: ``unloads`` (shedding moves), ``splits``, ``merges`` (only for a strategy that merges, bundlewise's
  own: Pulsar's never do, and their summaries stay as they were), ``assignments`` (lookups of unowned bundles),
  ``throughput_moved_bytes`` (Σ in+out bytes/s of each unloaded bundle at its unload), ``flaps`` (shedding
  unloads of a bundle shed before, by name, within the previous 2 hours), ``topic_unavailable_seconds``
  (Σ over unloads — shedding moves and the unloads of split children — of topics × ``unloadBlipSeconds``),
  ``repeat_unloads`` (unloads — shedding moves and split children's unloads — of a bundle whose topics were
  unloaded before within the previous 120 minutes: a child inherits its parent's last unload); a merge whose
  part moves to the other part's owner counts that part's topics in ``topic_unavailable_seconds`` and the move
  in ``repeat_unloads``, and the merged bundle inherits its parts' last unload;
* saturation (``sim.backlog``): ``saturated_broker_minutes`` (Σ over ticks of brokers that could not deliver
  all the traffic offered to them × tick minutes), ``undelivered_bytes`` (bytes not delivered in the tick
  they were produced), ``backlog_age_max_minutes`` (the oldest undelivered byte's wait, worst over the run);
* ``events``: per event (the start first), ``time_ms``, ``action``, ``broker``, ``settle_minutes`` and, for a
  broker that starts (``add``, a restart's ``return``), ``reach_50_minutes`` / ``reach_80_minutes``: the
  minutes until its load first reaches 50 % / 80 % of the fleet average (the mean load of the brokers up);
  null when it never does while up;
* ``wall_seconds``: wall time of the run (the only figure that differs between two identical runs).

Percentiles use numpy's default linear interpolation.  Floats are rounded to 9 significant digits so
``summary.json`` is stable across platforms' last-bit differences.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

SETTLE_STD = 0.05
SETTLE_HOLD_MS = 10 * 60_000
FLAP_WINDOW_MS = 2 * 3_600_000
REPEAT_WINDOW_MS = 120 * 60_000
REACH = (0.5, 0.8)


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
    repeat_unloads: int = 0
    last_unload: dict[str, int] = field(default_factory=dict)  # by name: flaps
    last_moved: dict[str, int] = field(default_factory=dict)  # by name, inherited by split children: repeats
    merges: int | None = None  # None: the strategy cannot merge, and summary.json has no ``merges``

    def unload(self, bundle: str, now: int, throughput: float, topics: float, blip_s: float) -> bool:
        """Count one shedding unload; returns whether it is a flap."""
        prev = self.last_unload.get(bundle)
        flap = prev is not None and now - prev <= FLAP_WINDOW_MS
        self.unloads += 1
        self.flaps += int(flap)
        self.throughput_moved_bytes += throughput
        self.topic_unavailable_seconds += topics * blip_s
        self.last_unload[bundle] = now
        self.moved(bundle, now)
        return flap

    def moved(self, bundle: str, now: int) -> None:
        """Any unload of ``bundle`` (a shedding move, a split child's auto-unload): counts a repeat."""
        prev = self.last_moved.get(bundle)
        self.repeat_unloads += int(prev is not None and now - prev <= REPEAT_WINDOW_MS)
        self.last_moved[bundle] = now

    def split(self, parent: str, children: Sequence[str]) -> None:
        """Children inherit the parent's last unload (their topics moved with it)."""
        prev = self.last_moved.get(parent)
        if prev is not None:
            for c in children:
                self.last_moved[c] = prev

    def merge(
        self, parts: Sequence[str], merged: str, moved: Sequence[str], topics_moved: float, now: int, blip_s: float
    ) -> None:
        """Count one merge: the ``moved`` parts' topics change broker (unavailable as in an unload; a repeat if
        moved within the window); the merged bundle inherits the latest last unload of its parts."""
        self.merges = (self.merges or 0) + 1
        self.topic_unavailable_seconds += topics_moved * blip_s
        for name in moved:
            self.moved(name, now)
        prev = [self.last_moved[p] for p in parts if p in self.last_moved]
        if prev:
            self.last_moved[merged] = max(prev)


@dataclass(frozen=True, slots=True)
class Mark:
    """A moment the metrics measure from: the start, or an event that changed a broker."""

    time_ms: int
    action: str  # start | add | remove | restart | return
    broker: str | None = None


def _quiet_runs(times: np.ndarray, std: np.ndarray) -> tuple[np.ndarray, int]:
    """``run_end[i]``: time of the last tick of the run of settled ticks starting at i (-1 if unsettled)."""
    ok = std <= SETTLE_STD
    n = len(times)
    run_end = np.full(n, -1, dtype=np.int64)
    end = -1
    for i in range(n - 1, -1, -1):
        if ok[i]:
            end = int(times[i]) if end < 0 else end
            run_end[i] = end
        else:
            end = -1
    step = int(times[1] - times[0]) if n > 1 else 60_000
    return run_end, step


def settle_each(times: np.ndarray, std: np.ndarray, starts: Sequence[int]) -> list[float | None]:
    """Per start, the minutes until ``std ≤ 0.05`` holds for 10 minutes (None if never)."""
    run_end, step = _quiet_runs(times, std)
    out: list[float | None] = []
    for s in starts:
        first = int(np.searchsorted(times, s))
        hit = None
        for i in range(first, len(times)):
            if run_end[i] >= 0 and run_end[i] + step - times[i] >= SETTLE_HOLD_MS:
                hit = i
                break
        out.append(None if hit is None else (int(times[hit]) - s) / 60_000)
    return out


def settle_minutes(times: np.ndarray, std: np.ndarray, starts: Sequence[int]) -> float | None:
    """Worst over ``starts`` of the minutes until ``std ≤ 0.05`` holds for 10 minutes; None if one never does."""
    each = settle_each(times, std, starts)
    if any(v is None for v in each):
        return None
    return max((v for v in each if v is not None), default=0.0)


def reach_minutes(
    times: np.ndarray, loads: np.ndarray, up: np.ndarray, slot: int, at: int, fraction: float
) -> float | None:
    """Minutes from ``at`` until broker ``slot``'s load first reaches ``fraction`` of the fleet average
    (the mean over brokers up); None when it goes down first or never does."""
    first = int(np.searchsorted(times, at))
    for i in range(first, len(times)):
        if not up[i, slot]:
            return None
        fleet = float(loads[i][up[i]].mean())
        if loads[i, slot] >= fraction * fleet:
            return (int(times[i]) - at) / 60_000
    return None


@dataclass
class Record:
    """One run's per-tick arrays (ticks × broker slots) and what the metrics need besides."""

    times: np.ndarray
    loads: np.ndarray  # demand / capacity (weighted max), NaN-free; meaningful where ``up``
    up: np.ndarray
    saturated: np.ndarray  # a broker could not deliver everything offered to it
    brokers: list[str]
    step_ms: int
    overload: float


def _opt(x: float | None) -> float | None:
    return None if x is None else _r(x)


def event_metrics(rec: Record, marks: Sequence[Mark], std: np.ndarray, t: np.ndarray) -> list[dict[str, Any]]:
    """The ``events`` list: settling after each mark and, for a broker that starts, its refill times."""
    settle = settle_each(t, std, [m.time_ms for m in marks])
    out = []
    for m, s in zip(marks, settle, strict=True):
        row: dict[str, Any] = {"time_ms": m.time_ms, "action": m.action, "broker": m.broker, "settle_minutes": _opt(s)}
        starts = m.action in ("add", "return") and m.broker is not None
        for f in REACH:
            key = f"reach_{round(f * 100)}_minutes"
            row[key] = None
            if starts:
                slot = rec.brokers.index(str(m.broker))
                row[key] = _opt(reach_minutes(rec.times, rec.loads, rec.up, slot, m.time_ms, f))
        out.append(row)
    return out


def summarise(
    rec: Record, marks: Sequence[Mark], counters: Counters, undelivered: float, age_ms: int, wall: float
) -> dict[str, Any]:
    """METRICS from the run's record (keys in ``SUMMARY_KEYS`` order)."""
    any_up = rec.up.any(axis=1)
    masked = np.where(rec.up, rec.loads, np.nan)[any_up]
    t = rec.times[any_up]
    minutes = rec.step_ms / 60_000
    metrics: dict[str, Any]
    if len(t):
        std = np.nanstd(masked, axis=1)
        hi, lo = np.nanmax(masked, axis=1), np.nanmin(masked, axis=1)
        metrics = {
            "load_std_mean": _r(float(std.mean())),
            "load_std_p95": _r(float(np.percentile(std, 95))),
            "load_spread_mean": _r(float((hi - lo).mean())),
            "max_load_p99": _r(float(np.percentile(hi, 99))),
            "overloaded_broker_minutes": _r(float(((rec.loads > rec.overload) & rec.up).sum()) * minutes),
        }
    else:
        std = np.zeros(0)
        metrics = {k: None for k in ("load_std_mean", "load_std_p95", "load_spread_mean", "max_load_p99")}
        metrics["overloaded_broker_minutes"] = 0.0
    events = event_metrics(rec, marks, std, t)
    settles = [e["settle_minutes"] for e in events]
    worst = None if not len(t) or None in settles else max(settles, default=0.0)
    metrics.update(unloads=counters.unloads, splits=counters.splits)
    if counters.merges is not None:
        metrics["merges"] = counters.merges
    metrics.update(
        assignments=counters.assignments,
        throughput_moved_bytes=_r(counters.throughput_moved_bytes),
        flaps=counters.flaps,
        settle_minutes=worst,
        topic_unavailable_seconds=_r(counters.topic_unavailable_seconds),
        repeat_unloads=counters.repeat_unloads,
        saturated_broker_minutes=_r(float((rec.saturated & rec.up).sum()) * minutes),
        undelivered_bytes=_r(undelivered),
        backlog_age_max_minutes=_r(age_ms / 60_000),
        wall_seconds=round(wall, 3),
    )
    metrics["events"] = events
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
    "repeat_unloads",
    "saturated_broker_minutes",
    "undelivered_bytes",
    "backlog_age_max_minutes",
    "wall_seconds",
)
"""The scalar metrics, in ``summary.json`` order (then ``events``, then any dispatch metrics)."""
EVENTS_KEY = "events"
LIVE_METRIC_KEYS = (
    "lookup_latency_ms_p50",
    "lookup_latency_ms_p99",
    "lookups",
    "lookups_failed",
    "reassign_seconds_max",
    "leader_failover_seconds_max",
    "double_owner_observations",
    "observer_rounds_per_second",
)
"""What only a live run measures (docs/live/), after METRIC_KEYS in ``summary.json``."""
