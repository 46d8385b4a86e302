"""The static floor of a scenario: what a near-ideal placement that never moves reaches (docs/balanced.md).

A yardstick for the strategies, not a strategy: no Pulsar class does this.  Over each *epoch* -- a run of
ticks with the same brokers up (a start, a stop or a return begins a new one) -- the bundles of the
scenario's initial layout (no splits) are placed once, largest first, each onto the broker whose load after
taking it is lowest (longest-processing-time first, by capacity), from the bundles' mean demand over the
epoch.  Each tick's demand (the generated workload, drawn with the scenario's seed exactly as the engine
draws it) is then charged to that placement, with the engine's cost model (``traffic.cost``), and the
metrics are taken as ``results.measure`` takes them: ``load_std_mean`` (population std-dev over the brokers up,
mean over ticks), ``max_load_p99`` and ``overloaded_broker_minutes``.  CPU jitter is left out.

It is a floor for a static layout only: re-placing at every event is free here, and a strategy that splits a
hot bundle, or follows a burst, can beat it.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from bundlewise.model.bundles import NamespaceBundles
from bundlewise.model.hashing import crc32_hash
from bundlewise.sim.events import transitions
from bundlewise.sim.scenario import Scenario
from bundlewise.traffic.cost import MICROS, Capacities
from bundlewise.traffic.workload import GeneratedWorkload


@dataclass(frozen=True, slots=True)
class Floor:
    load_std_mean: float
    max_load_p99: float
    overloaded_broker_minutes: float

    def to_json(self) -> dict[str, float]:
        return {
            "load_std_mean": self.load_std_mean,
            "max_load_p99": self.max_load_p99,
            "overloaded_broker_minutes": self.overloaded_broker_minutes,
        }


def _bundle_of_topics(wl: GeneratedWorkload, scenario: Scenario) -> tuple[np.ndarray, int]:
    index: list[int] = []
    offsets: dict[str, tuple[NamespaceBundles, int]] = {}
    total = 0
    for spec in scenario.namespaces:
        offsets[spec.name] = (NamespaceBundles.initial(spec.name, spec.bundles), total)
        total += spec.bundles
    for name, ns in zip(wl.topics.names, wl.topics.namespace, strict=True):
        bundles, base = offsets[wl.namespaces[int(ns)]]
        h = crc32_hash(name)
        index.append(base + bisect_index(bundles, h))
    return np.array(index, dtype=np.int64), total


def bisect_index(bundles: NamespaceBundles, h: int) -> int:
    found = bundles.bundle_for_hash(h)
    return bundles.bundles.index(found)


def _up_per_tick(scenario: Scenario, names: list[str], times: np.ndarray) -> np.ndarray:
    up = np.zeros((len(times), len(names)), dtype=bool)
    state = set(scenario.initial)
    changes = sorted(transitions(scenario.initial, scenario.events)[0], key=lambda t: t.at)
    k = 0
    for i, now in enumerate(times):
        while k < len(changes) and changes[k].at <= now:
            t = changes[k]
            (state.add if t.starts else state.discard)(t.broker)
            k += 1
        up[i] = [n in state for n in names]
    return up


def static_floor(scenario: Scenario) -> Floor:
    """The floor of ``scenario`` (module docstring)."""
    wl = GeneratedWorkload(scenario.namespaces, scenario.workload, scenario.seed)
    topic_bundle, n_bundles = _bundle_of_topics(wl, scenario)
    names = [b.name for b in scenario.brokers]
    cap = Capacities.of(scenario.brokers)
    w = scenario.config.weights()
    ticks = scenario.duration // scenario.step
    times = np.arange(ticks, dtype=np.int64) * scenario.step
    demand = np.zeros((ticks, 4, n_bundles))  # rate in, rate out, bytes in, bytes out
    for i, now in enumerate(times):
        for k, col in enumerate(wl.rates(int(now))):
            demand[i, k] = np.bincount(topic_bundle, weights=col, minlength=n_bundles)
    up = _up_per_tick(scenario, names, times)
    owner = np.zeros((ticks, n_bundles), dtype=np.int64)
    start = 0
    for i in range(1, ticks + 1):
        if i == ticks or (up[i] != up[start]).any():
            owner[start:i] = _place(demand[start:i].mean(axis=0), up[start], cap, w)
            start = i
    loads = np.full((ticks, len(names)), np.nan)
    for i in range(ticks):
        r_in, r_out, t_in, t_out = (np.bincount(owner[i], weights=demand[i, k], minlength=len(names)) for k in range(4))
        cores = (
            cap.cpu_base + (r_in + r_out) * cap.us_per_msg * MICROS + (t_in + t_out) / 1024 * cap.us_per_kib * MICROS
        )
        nic = cap.nic_mbps * 1e6
        load = np.maximum(
            np.maximum(cores / cap.cpu_cores * w.cpu, t_in * 8 / nic * w.bandwidth_in),
            t_out * 8 / nic * w.bandwidth_out,
        )
        loads[i, up[i]] = load[up[i]]
    live = up.any(axis=1)
    per_tick = loads[live]
    std = np.nanstd(per_tick, axis=1)
    top = np.nanmax(per_tick, axis=1)
    threshold = float(scenario.config["loadBalancerBrokerOverloadedThresholdPercentage"]) / 100.0
    over = float(np.nansum(per_tick > threshold)) * scenario.step / 60_000
    return Floor(float(std.mean()), float(np.percentile(top, 99)), over)


def _place(mean: np.ndarray, up: np.ndarray, cap: Capacities, w: object) -> np.ndarray:
    """Largest first onto the broker whose load after taking the bundle is lowest."""
    from bundlewise.model.resources import ResourceWeights

    assert isinstance(w, ResourceWeights)
    brokers = np.flatnonzero(up)
    owner = np.zeros(mean.shape[1], dtype=np.int64)
    if len(brokers) == 0:
        return owner
    r_in, r_out, t_in, t_out = mean
    cores = (
        np.outer(cap.us_per_msg[brokers], r_in + r_out) * MICROS
        + np.outer(cap.us_per_kib[brokers], (t_in + t_out) / 1024) * MICROS
    )  # brokers x bundles
    nic = (cap.nic_mbps[brokers] * 1e6)[:, None]
    cpu_frac = cores / cap.cpu_cores[brokers][:, None] * w.cpu
    in_frac = (t_in * 8)[None, :] / nic * w.bandwidth_in
    out_frac = (t_out * 8)[None, :] / nic * w.bandwidth_out
    used = np.stack(
        [cap.cpu_base[brokers] / cap.cpu_cores[brokers] * w.cpu, np.zeros(len(brokers)), np.zeros(len(brokers))]
    )
    size = np.maximum(np.maximum(cpu_frac, in_frac), out_frac).mean(axis=0)
    for b in np.argsort(-size, kind="stable"):
        after = np.stack([used[0] + cpu_frac[:, b], used[1] + in_frac[:, b], used[2] + out_frac[:, b]])
        j = int(np.argmin(after.max(axis=0)))
        used[:, j] = after[:, j]
        owner[b] = brokers[j]
    return owner
